#!/usr/bin/env python3
"""Times torch-interpolate-up2/up8's upsample_bilinear2d_backward kernel with
torch.profiler (CUPTI activity; median device time of 30 launches after 5
warm-up calls) in four settings: the case's own step (interpolate, multiply,
sum, backward); the ATen op alone on a fixed grad_output; the same after 2 ms
idle; the same after a 64 MiB fill kernel. On the H200 the kernel's time
depends on what ran before it (traces/datasets/h200/corpus/torch-interpolate-up8/
profiler-variants.json).
  python3 workloads/corpus/interpolate_states.py
"""
import torch, torch.nn.functional as F, statistics, time
from torch.profiler import profile, ProfilerActivity
def kernel_us(fn, n=30):
    for _ in range(5): fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(n): fn()
        torch.cuda.synchronize()
    ts=[e.device_time for e in p.events() if 'upsample_bilinear2d_backward' in e.name and e.device_type.name=='CUDA']
    return statistics.median(ts) if ts else None, len(ts)
# The program's first launches, from a new process's start: each of the first
# 12 steps timed on its own (the capture's timing pass times launches 0-5);
# run before anything else in the process.
def first_steps():
    scale = 8
    size = 256 // scale
    gen = torch.Generator(device="cuda").manual_seed(15)
    image = torch.randn(1, 2, size, size, device="cuda", generator=gen, requires_grad=True)
    weight = torch.randn(1, 2, 256, 256, device="cuda", generator=gen)
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(12):
            image.grad = None
            (F.interpolate(image, scale_factor=scale, mode="bilinear", align_corners=False) * weight).sum().backward()
        torch.cuda.synchronize()
    print("up8 first 12 steps of a process: kernel us",
          [round(e.device_time, 2) for e in p.events() if 'upsample_bilinear2d_backward' in e.name and e.device_type.name == 'CUDA'])


first_steps()
for scale in (8, 2):
    size = 256 // scale
    gen = torch.Generator(device="cuda").manual_seed(15)
    image = torch.randn(1, 2, size, size, device="cuda", generator=gen, requires_grad=True)
    weight = torch.randn(1, 2, 256, 256, device="cuda", generator=gen)
    def step():
        image.grad = None
        (F.interpolate(image, scale_factor=scale, mode="bilinear", align_corners=False) * weight).sum().backward()
    go = weight.clone()
    def alone():
        torch.ops.aten.upsample_bilinear2d_backward(go, [256, 256], [1, 2, size, size], False, None, None)
    def alone_idle():
        torch.cuda.synchronize(); time.sleep(0.002); alone()
    big = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    def after_big_write():
        big.fill_(1); alone()
    def alone_fresh():
        torch.ops.aten.upsample_bilinear2d_backward(weight * 1.0, [256, 256], [1, 2, size, size], False, None, None)
    def alone_rewritten():
        go.mul_(1.0); alone()
    for name, fn in (("program step", step), ("aten op alone", alone), ("aten op after 2 ms idle", alone_idle),
                     ("aten op after a 64 MiB fill", after_big_write), ("aten op on a fresh grad_output", alone_fresh),
                     ("aten op after its grad_output is rewritten in place", alone_rewritten)):
        print(f"up{scale} {name}: median kernel us, launches", kernel_us(fn))
