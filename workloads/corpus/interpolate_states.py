#!/usr/bin/env python3
"""Times torch-interpolate-up2/up8's upsample_bilinear2d_backward kernel with
torch.profiler (CUPTI activity; median device time of 30 launches after 5
warm-up calls) in six settings: the case's own step (interpolate, multiply,
sum, backward); the ATen op alone on a fixed grad_output; the same after 2 ms
idle; after a 64 MiB fill kernel; on a fresh grad_output; after its
grad_output is rewritten in place. First, in a new process, each of the
first 12 steps of up8 on its own (the capture's timing pass times launches
0-5). On the H200 the kernel's time moves with the allocations around it
(traces/datasets/h200/corpus/torch-interpolate-up8/profiler-variants.json).
  python3 workloads/corpus/interpolate_states.py
"""
import statistics
import time

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

KERNEL = "upsample_bilinear2d_backward"


def kernel_times_us(prof):
    return [e.device_time for e in prof.events() if KERNEL in e.name and e.device_type.name == "CUDA"]


def case(scale):
    """The inputs and the step of the corpus case (workloads/corpus/torch_corpus.py, interpolate)."""
    gen = torch.Generator(device="cuda").manual_seed(15)
    size = 256 // scale
    image = torch.randn(1, 2, size, size, device="cuda", generator=gen, requires_grad=True)
    weight = torch.randn(1, 2, 256, 256, device="cuda", generator=gen)

    def step():
        image.grad = None
        (F.interpolate(image, scale_factor=scale, mode="bilinear", align_corners=False) * weight).sum().backward()

    return size, weight, step


def median_us(fn, launches=30):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(launches):
            fn()
        torch.cuda.synchronize()
    times = kernel_times_us(prof)
    return (statistics.median(times) if times else None), len(times)


def first_steps(count=12):
    _, _, step = case(8)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(count):
            step()
        torch.cuda.synchronize()
    print(f"up8 first {count} steps of a process: kernel us", [round(t, 2) for t in kernel_times_us(prof)])


def settings(scale):
    size, weight, step = case(scale)
    grad_output = weight.clone()
    big = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")

    def alone(grad=None):
        torch.ops.aten.upsample_bilinear2d_backward(grad_output if grad is None else grad, [256, 256],
                                                    [1, 2, size, size], False, None, None)

    def after_idle():
        torch.cuda.synchronize()
        time.sleep(0.002)
        alone()

    return (("program step", step), ("aten op alone", alone), ("aten op after 2 ms idle", after_idle),
            ("aten op after a 64 MiB fill", lambda: (big.fill_(1), alone())),
            ("aten op on a fresh grad_output", lambda: alone(weight * 1.0)),
            ("aten op after its grad_output is rewritten in place", lambda: (grad_output.mul_(1.0), alone())))


def main():
    first_steps()  # before anything else runs in the process
    for scale in (8, 2):
        for name, fn in settings(scale):
            print(f"up{scale} {name}: median kernel us, launches", median_us(fn))


if __name__ == "__main__":
    main()
