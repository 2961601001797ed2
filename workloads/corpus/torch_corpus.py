"""Corpus kernels from PyTorch (eager ATen kernels, Inductor's Triton kernels)
and torch_geometric, as users run them: each case runs its op once to warm up
and then REPEATS times, and checks the result against float64 on the CPU.
tools/capture/capture_corpus.sh captures them; workloads/corpus/corpus.json
names each case's kernel and family.

  python3 torch_corpus.py CASE
  python3 torch_corpus.py --list
"""
import argparse
import json
import sys

import torch
import torch.nn.functional as F

REPEATS = 5
ROWS = 1 << 16


def indices(pattern, count, rows, gen):
    """uniform: every row alike; zipf: a power law over rows (row 0 the hottest,
    a few percent of all updates on it); sorted: the uniform indices in order,
    so that a warp's lanes share a few rows."""
    if pattern == "zipf":
        u = torch.rand(count, device="cuda", generator=gen, dtype=torch.float64)
        return ((rows ** u - 1).floor().long().clamp_(0, rows - 1))
    index = torch.randint(0, rows, (count,), device="cuda", generator=gen)
    return index.sort().values if pattern == "sorted" else index


def check(name, got, reference, tolerance=1e-4):
    error = ((got.double().cpu() - reference).norm() / reference.norm().clamp_min(1e-30)).item()
    print(json.dumps({"case": name, "device": torch.cuda.get_device_name(), "relative_error": error,
                      "check": "passed" if error < tolerance else "FAILED"}))
    if error >= tolerance:
        sys.exit(f"torch_corpus.py {name}: result differs from the reference by {error:.2e}")


def repeat(op):
    for _ in range(REPEATS + 1):
        result = op()
    torch.cuda.synchronize()
    return result


def index_add(name, pattern, compiled=False, width=8, count=1 << 16):
    gen = torch.Generator(device="cuda").manual_seed(11)
    index = indices(pattern, count, ROWS, gen)
    source = torch.randn(count, width, device="cuda", generator=gen)
    out = torch.zeros(ROWS, width, device="cuda")

    def eager():
        out.index_add_(0, index, source)

    step = eager
    if compiled:
        fn = torch.compile(lambda o, i, s: o.index_add_(0, i, s * 2.0))
        step = lambda: fn(out, index, source)  # noqa: E731
    repeat(step)
    reference = torch.zeros(ROWS, width, dtype=torch.float64).index_add_(0, index.cpu(), source.double().cpu())
    check(name, out, reference * (REPEATS + 1) * (2.0 if compiled else 1.0))


def scatter(name, pattern, reduce="sum", compiled=False, count=1 << 18):
    gen = torch.Generator(device="cuda").manual_seed(12)
    index = indices(pattern, count, ROWS, gen)
    source = torch.randn(count, device="cuda", generator=gen)
    out = torch.zeros(ROWS, device="cuda")
    if reduce == "sum":
        step = lambda: out.scatter_add_(0, index, source)  # noqa: E731
        if compiled:
            fn = torch.compile(lambda o, i, s: o.scatter_add_(0, i, s))
            step = lambda: fn(out, index, source)  # noqa: E731
        repeat(step)
        reference = torch.zeros(ROWS, dtype=torch.float64).scatter_add_(0, index.cpu(), source.double().cpu())
        check(name, out, reference * (REPEATS + 1))
    else:
        out.fill_(-1e30)
        repeat(lambda: out.scatter_reduce_(0, index, source, reduce=reduce, include_self=True))
        reference = torch.full((ROWS,), -1e30, dtype=torch.float64).scatter_reduce_(
            0, index.cpu(), source.double().cpu(), reduce=reduce, include_self=True)
        check(name, out, reference)


def histogram(name, pattern, count=1 << 20):
    gen = torch.Generator(device="cuda").manual_seed(13)
    if pattern == "normal":  # histc of normal samples: the middle bins are hot
        x = torch.randn(count, device="cuda", generator=gen)
        got = repeat(lambda: torch.histc(x, bins=1024, min=-4, max=4))
        # float32 on both sides: a sample a rounding away from a bin edge may
        # land on either side of it, so a few moved counts in a million are allowed.
        check(name, got, torch.histc(x.cpu(), bins=1024, min=-4, max=4), tolerance=1e-3)
        return
    x = indices(pattern, count, 4096, gen)
    got = repeat(lambda: torch.bincount(x, minlength=4096))
    check(name, got, torch.bincount(x.cpu(), minlength=4096).double())


def grid_sample(name, pattern):
    gen = torch.Generator(device="cuda").manual_seed(14)
    if pattern == "volume":  # 3D: a 16^3 volume sampled at 32^3 points
        texture = torch.randn(1, 2, 16, 16, 16, device="cuda", generator=gen, requires_grad=True)
        grid = torch.rand(1, 32, 32, 32, 3, device="cuda", generator=gen) * 2 - 1
        weight = torch.randn(1, 2, 32, 32, 32, device="cuda", generator=gen)
    else:
        texels = 32 if pattern == "magnified" else 512
        samples = 128  # magnified: 4 samples a texel each way; minified: 4 texels a sample
        texture = torch.randn(2, 2, texels, texels, device="cuda", generator=gen, requires_grad=True)
        grid = torch.rand(2, samples, samples, 2, device="cuda", generator=gen) * 2 - 1
        weight = torch.randn(2, 2, samples, samples, device="cuda", generator=gen)

    def step():
        texture.grad = None
        (F.grid_sample(texture, grid, mode="bilinear", align_corners=False) * weight).sum().backward()

    repeat(step)
    t64 = texture.detach().double().cpu().requires_grad_(True)
    (F.grid_sample(t64, grid.double().cpu(), mode="bilinear", align_corners=False) * weight.double().cpu()).sum().backward()
    check(name, texture.grad, t64.grad, 1e-3)


def interpolate(name, scale):
    """Bilinear upsampling's backward: each input pixel gathers the gradients
    of scale^2 output pixels by atomic adds."""
    gen = torch.Generator(device="cuda").manual_seed(15)
    size = 256 // scale
    image = torch.randn(1, 2, size, size, device="cuda", generator=gen, requires_grad=True)
    weight = torch.randn(1, 2, 256, 256, device="cuda", generator=gen)

    def step():
        image.grad = None
        (F.interpolate(image, scale_factor=scale, mode="bilinear", align_corners=False) * weight).sum().backward()

    repeat(step)
    i64 = image.detach().double().cpu().requires_grad_(True)
    (F.interpolate(i64, scale_factor=scale, mode="bilinear", align_corners=False) * weight.double().cpu()).sum().backward()
    check(name, image.grad, i64.grad, 1e-3)


def embedding_backward(name, pattern, count=1 << 13, dim=64):
    """Inductor's embedding backward: an atomic add per index and feature."""
    gen = torch.Generator(device="cuda").manual_seed(16)
    index = indices(pattern, count, ROWS, gen)
    grad = torch.randn(count, dim, device="cuda", generator=gen)
    fn = torch.compile(lambda g, i: torch.ops.aten.embedding_dense_backward(g, i, ROWS, -1, False))
    got = repeat(lambda: fn(grad, index))
    reference = torch.zeros(ROWS, dim, dtype=torch.float64).index_add_(0, index.cpu(), grad.double().cpu())
    check(name, got, reference)


def message_passing(name, pattern, nodes=1 << 14, edges=1 << 16, features=8):
    """torch_geometric's sum aggregation over a graph's edges: an Erdos-Renyi
    graph (uniform in-degrees) or a power-law one (a few hubs)."""
    from torch_geometric.nn import SimpleConv
    gen = torch.Generator(device="cuda").manual_seed(17)
    source = torch.randint(0, nodes, (edges,), device="cuda", generator=gen)
    target = indices("zipf" if pattern == "power-law" else "uniform", edges, nodes, gen)
    edge_index = torch.stack([source, target])
    x = torch.randn(nodes, features, device="cuda", generator=gen)
    conv = SimpleConv(aggr="sum")
    got = repeat(lambda: conv(x, edge_index))
    reference = torch.zeros(nodes, features, dtype=torch.float64).index_add_(0, target.cpu(), x.double().cpu()[source.cpu()])
    check(name, got, reference)


CASES = {
    "torch-index-add-uniform": lambda n: index_add(n, "uniform"),
    "torch-index-add-zipf": lambda n: index_add(n, "zipf"),
    "torch-index-add-sorted": lambda n: index_add(n, "sorted"),
    "torch-scatter-add-uniform": lambda n: scatter(n, "uniform"),
    "torch-scatter-add-zipf": lambda n: scatter(n, "zipf"),
    "torch-scatter-add-sorted": lambda n: scatter(n, "sorted"),
    "torch-scatter-amax-uniform": lambda n: scatter(n, "uniform", reduce="amax"),
    "torch-scatter-amax-zipf": lambda n: scatter(n, "zipf", reduce="amax"),
    "torch-bincount-uniform": lambda n: histogram(n, "uniform"),
    "torch-bincount-zipf": lambda n: histogram(n, "zipf"),
    "torch-histc-normal": lambda n: histogram(n, "normal"),
    "torch-grid-sample-magnified": lambda n: grid_sample(n, "magnified"),
    "torch-grid-sample-minified": lambda n: grid_sample(n, "minified"),
    "torch-grid-sample-3d": lambda n: grid_sample(n, "volume"),
    "torch-interpolate-up2": lambda n: interpolate(n, 2),
    "torch-interpolate-up8": lambda n: interpolate(n, 8),
    "inductor-index-add-uniform": lambda n: index_add(n, "uniform", compiled=True),
    "inductor-index-add-sorted": lambda n: index_add(n, "sorted", compiled=True),
    "inductor-scatter-add-uniform": lambda n: scatter(n, "uniform", compiled=True),
    "inductor-scatter-add-zipf": lambda n: scatter(n, "zipf", compiled=True),
    "inductor-embedding-backward-zipf": lambda n: embedding_backward(n, "zipf"),
    "pyg-sum-uniform": lambda n: message_passing(n, "uniform"),
    "pyg-sum-power-law": lambda n: message_passing(n, "power-law"),
}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("case", nargs="?", choices=sorted(CASES))
    p.add_argument("--list", action="store_true", help="print the cases")
    a = p.parse_args()
    if a.list or not a.case:
        print("\n".join(CASES))
        return
    if not torch.cuda.is_available():
        sys.exit("torch_corpus.py: no CUDA device")
    CASES[a.case](a.case)


if __name__ == "__main__":
    main()
