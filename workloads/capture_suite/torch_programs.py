"""PyTorch programs as users run them, for the capture suite
(tools/capture/capture_suite.sh): each runs one atomic-heavy library or
compiled kernel a few times and checks its result against float64 on the CPU.

  python3 torch_programs.py CASE [--elements N]

eager-index-add     Tensor.index_add_ with random rows (ATen's indexFuncLargeIndex)
compiled-index-add  the same op under torch.compile (Inductor's Triton kernel,
                    compiled with its default worker processes)
graph-index-add     the eager op captured in a torch.cuda.CUDAGraph and replayed
grid-sample-magnified / grid-sample-minified
                    F.grid_sample's bilinear backward on a texture sampled at a
                    finer grid than its texels (many lanes on one texel) or a
                    coarser one
spawn-bincount      the parent runs index_add_, then a worker started by
                    multiprocessing's spawn runs torch.bincount and index_add_
"""
import argparse
import json
import multiprocessing
import sys

import torch
import torch.nn.functional as F


def check(name, got, reference, tolerance=1e-4):
    error = ((got.double().cpu() - reference).norm() / reference.norm().clamp_min(1e-30)).item()
    print(json.dumps({"case": name, "device": torch.cuda.get_device_name(), "relative_error": error,
                      "check": "passed" if error < tolerance else "FAILED"}))
    if error >= tolerance:
        sys.exit(f"torch_programs.py {name}: result differs from the float64 reference by {error:.2e}")


def index_add_inputs(elements, rows=4096, width=8, seed=1):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    index = torch.randint(0, rows, (elements,), device="cuda", generator=gen)
    source = torch.randn(elements, width, device="cuda", generator=gen)
    return index, source, rows, width


def index_add_reference(index, source, rows, width, times):
    out = torch.zeros(rows, width, dtype=torch.float64)
    return out.index_add_(0, index.cpu(), source.double().cpu()) * times


def eager_index_add(a, times=4):
    index, source, rows, width = index_add_inputs(a.elements)
    out = torch.zeros(rows, width, device="cuda")
    for _ in range(times):
        out.index_add_(0, index, source)
    check("eager-index-add", out, index_add_reference(index, source, rows, width, times))


def compiled_index_add(a, times=4):
    index, source, rows, width = index_add_inputs(a.elements)

    @torch.compile
    def accumulate(out, index, source):
        return out.index_add(0, index, source * 2.0)

    out = torch.zeros(rows, width, device="cuda")
    for _ in range(times):
        out = accumulate(out, index, source)
    check("compiled-index-add", out, index_add_reference(index, source, rows, width, times) * 2.0)


def graph_index_add(a, replays=5):
    index, source, rows, width = index_add_inputs(a.elements)
    out = torch.zeros(rows, width, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        out.index_add_(0, index, source)  # warm-up outside the graph
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out.index_add_(0, index, source)
    for _ in range(replays):
        graph.replay()
    check("graph-index-add", out, index_add_reference(index, source, rows, width, replays + 1))


def grid_sample(a, magnified, times=3):
    gen = torch.Generator(device="cuda").manual_seed(2)
    texels = 64 if magnified else 1024
    samples = 512 if magnified else 256  # minified: 4 texels a sample each way
    texture = torch.randn(4, 8, texels, texels, device="cuda", generator=gen, requires_grad=True)
    grid = torch.rand(4, samples, samples, 2, device="cuda", generator=gen) * 2 - 1
    weight = torch.randn(4, 8, samples, samples, device="cuda", generator=gen)
    for _ in range(times):
        texture.grad = None
        (F.grid_sample(texture, grid, mode="bilinear", align_corners=False) * weight).sum().backward()
    t64 = texture.detach().double().cpu().requires_grad_(True)
    (F.grid_sample(t64, grid.double().cpu(), mode="bilinear", align_corners=False) * weight.double().cpu()).sum().backward()
    check("grid-sample-" + ("magnified" if magnified else "minified"), texture.grad, t64.grad, 1e-3)


def spawned_worker(elements, queue):
    index, source, rows, width = index_add_inputs(elements, seed=3)
    counts = torch.bincount(index, minlength=rows)
    out = torch.zeros(rows, width, device="cuda")
    out.index_add_(0, index, source)
    out.index_add_(0, index, source)
    torch.cuda.synchronize()
    ok = torch.equal(counts.cpu(), torch.bincount(index.cpu(), minlength=rows))
    error = ((out.double().cpu() - index_add_reference(index, source, rows, width, 2)).norm()).item()
    queue.put((ok, error))


def spawn_bincount(a):
    index, source, rows, width = index_add_inputs(a.elements)
    out = torch.zeros(rows, width, device="cuda")
    out.index_add_(0, index, source)
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    worker = context.Process(target=spawned_worker, args=(a.elements, queue))
    worker.start()
    ok, error = queue.get()
    worker.join()
    if worker.exitcode != 0 or not ok:
        sys.exit("torch_programs.py spawn-bincount: the spawned worker failed")
    check("spawn-bincount", out, index_add_reference(index, source, rows, width, 1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("case", choices=["eager-index-add", "compiled-index-add", "graph-index-add", "grid-sample-magnified",
                                    "grid-sample-minified", "spawn-bincount"])
    p.add_argument("--elements", type=int, default=1 << 18)
    a = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("torch_programs.py: no CUDA device")
    {"eager-index-add": eager_index_add, "compiled-index-add": compiled_index_add, "graph-index-add": graph_index_add,
     "grid-sample-magnified": lambda a: grid_sample(a, True), "grid-sample-minified": lambda a: grid_sample(a, False),
     "spawn-bincount": spawn_bincount}[a.case](a)


if __name__ == "__main__":
    main()
