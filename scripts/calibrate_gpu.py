#!/usr/bin/env python3
"""Calibrate zerosearch's analytic profiles for your own GPU (docs/analytic.md).

Run once on one node. It measures, with PyTorch:
  * GEMM throughput over a range of sizes (square matmuls, bf16/fp16/fp32),
  * memory bandwidth (a large device-to-device copy),
  * all-reduce bus bandwidth for 2, 4 and 8 GPUs (NCCL; skipped with one device or on CPU),
fits the GEMM efficiency curve e(F) = e_max * (1 - exp(-F / x0)) of the given peak, and writes
a hardware file that `zerosearch --hardware FILE --node_type NAME` reads.

  python3 scripts/calibrate_gpu.py --name MyH100 --peak_tflops 989.4 \
      --price_per_gpu_hour 3.5 --out my_h100.json
  python3 scripts/calibrate_gpu.py --tiny --name CPU --price_per_gpu_hour 0.1 --out cpu.json

--tiny runs a few small sizes on the CPU in fp32 (for CI: checks the script and the format).
"""
import argparse
import json
import math
import os
import sys
import time


def fail(msg):
    print(f"calibrate_gpu.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


def sync(torch, device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(torch, device, fn, repeats):
    fn()  # warm-up
    sync(torch, device)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync(torch, device)
        best = min(best, time.perf_counter() - t0)
    return best


def gemm_sweep(torch, device, dtype, sizes, repeats):
    points = []
    for n in sizes:
        a = torch.randn(n, n, device=device, dtype=dtype)
        b = torch.randn(n, n, device=device, dtype=dtype)
        t = timed(torch, device, lambda: torch.matmul(a, b), repeats)
        flops = 2.0 * n * n * n
        points.append({"n": n, "flops": flops, "seconds": t, "tflops": flops / t / 1e12})
    return points


def fit_curve(points, peak_flops):
    """Least squares of e = e_max (1 - exp(-F/x0)) over a log grid of x0 (e_max closed form)."""
    best = None
    for k in range(0, 161):
        x0 = 10 ** (5 + k * 0.05)  # 1e5 .. 1e13 FLOP
        g = [1 - math.exp(-p["flops"] / x0) for p in points]
        e = [p["flops"] / p["seconds"] / peak_flops for p in points]
        den = sum(v * v for v in g)
        if den <= 0:
            continue
        e_max = min(1.0, sum(a * b for a, b in zip(e, g)) / den)
        err = sum((math.log(max(e_max * gi, 1e-12)) - math.log(ei)) ** 2 for gi, ei in zip(g, e))
        if best is None or err < best[0]:
            best = (err, e_max, x0)
    return best[1], best[2]


def copy_bandwidth(torch, device, nbytes, repeats):
    src = torch.empty(nbytes // 4, device=device, dtype=torch.float32).fill_(1.0)
    dst = torch.empty_like(src)
    t = timed(torch, device, lambda: dst.copy_(src), repeats)
    return 2.0 * src.numel() * 4 / t / 1e9  # read + write, GB/s


def _allreduce_worker(rank, world, nbytes, repeats, port, out):
    import torch
    import torch.distributed as dist
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    torch.cuda.set_device(rank)
    x = torch.ones(nbytes // 2, device="cuda", dtype=torch.float16)
    dist.all_reduce(x)
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(repeats):
        dist.barrier()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        dist.all_reduce(x)
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    if rank == 0:
        out.put(2.0 * (world - 1) / world * nbytes / best / 1e9)
    dist.destroy_process_group()


def allreduce_bus(torch, world, nbytes, repeats):
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    out = ctx.SimpleQueue()
    port = 29500 + world
    mp.start_processes(_allreduce_worker, args=(world, nbytes, repeats, port, out), nprocs=world,
                       join=True, start_method="spawn")
    return out.get()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--name", required=True, help="GPU name for --node_type")
    ap.add_argument("--out", required=True, help="hardware JSON to write")
    ap.add_argument("--price_per_gpu_hour", type=float, required=True, help="USD per GPU-hour")
    ap.add_argument("--price_source", default="given to calibrate_gpu.py")
    ap.add_argument("--peak_tflops", type=float,
                    help="dense peak of --dtype from the datasheet; default: the best measured")
    ap.add_argument("--dtype", choices=["bf16", "fp16", "fp32"], default=None,
                    help="GEMM dtype; default bf16 on GPUs, fp32 on CPU")
    ap.add_argument("--memory_gbps", type=float, help="datasheet memory bandwidth in GB/s; default: measured")
    ap.add_argument("--memory_gib", type=float, help="usable memory; default: the device's - 1 GiB")
    ap.add_argument("--class", dest="gpu_class", default=None,
                    choices=["hbm-nvlink", "hbm-pcie", "gddr-pcie"])
    ap.add_argument("--link", default=None, help="intra-node link name (nvlink4, pcie4, ...)")
    ap.add_argument("--link_gbps_per_dir", type=float, default=None,
                    help="intra-node GB/s per GPU and direction; default 32 (PCIe 4)")
    ap.add_argument("--gpus_per_node", type=int, default=None)
    ap.add_argument("--inter_node_gbit", type=float, default=100.0,
                    help="network of the node, Gbit/s; default 100")
    ap.add_argument("--device", choices=["cuda", "cpu"], default=None)
    ap.add_argument("--tiny", action="store_true", help="a few small sizes on the CPU (CI)")
    a = ap.parse_args()
    if a.price_per_gpu_hour <= 0:
        fail(f"--price_per_gpu_hour must be > 0, not {a.price_per_gpu_hour}")
    try:
        import torch
    except ImportError:
        fail("PyTorch is not installed (pip install torch, or apt-get install python3-torch)")

    use_cuda = (a.device or ("cpu" if a.tiny else "cuda")) == "cuda"
    if use_cuda and not torch.cuda.is_available():
        fail("no CUDA device; use --device cpu or --tiny")
    device = torch.device("cuda:0" if use_cuda else "cpu")
    dtype_name = a.dtype or ("bf16" if use_cuda else "fp32")
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype_name]
    if a.tiny:
        sizes, repeats, copy_bytes = [32, 64, 128, 256], 3, 8 << 20
    else:
        sizes, repeats, copy_bytes = [128, 256, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144,
                                      8192, 12288], 10, 1 << 30

    points = gemm_sweep(torch, device, dtype, sizes, repeats)
    best = max(p["tflops"] for p in points)
    peak = a.peak_tflops or best
    e_max, x0 = fit_curve(points, peak * 1e12)
    for p in points:
        print(f"GEMM n={p['n']:>6}: {p['tflops']:8.2f} TFLOP/s ({100 * p['tflops'] / peak:5.1f} % of {peak:.1f})")
    print(f"fit: e_max {e_max:.3f}, x0 {x0:.3g} FLOP")

    measured_bw = copy_bandwidth(torch, device, copy_bytes, repeats)
    spec_bw = a.memory_gbps or measured_bw
    print(f"copy: {measured_bw:.1f} GB/s")

    count = torch.cuda.device_count() if use_cuda else 1
    bus = {}
    if count < 2:
        print("all-reduce: skipped (one device" + ("" if use_cuda else ", CPU") + ")")
    else:
        for world in (2, 4, 8):
            if world <= count:
                bus[str(world)] = allreduce_bus(torch, world, 256 << 20 if not a.tiny else 4 << 20,
                                                repeats)
                print(f"all-reduce {world} GPUs: bus {bus[str(world)]:.1f} GB/s")

    if a.memory_gib:
        mem_gib = a.memory_gib
    elif use_cuda:
        mem_gib = torch.cuda.get_device_properties(0).total_memory / 2**30 - 1.0
    else:
        mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    p2p = bool(use_cuda and count >= 2 and torch.cuda.can_device_access_peer(0, 1))
    device_name = torch.cuda.get_device_name(0) if use_cuda else "CPU"
    peak_tflops = {"fp32": peak if dtype_name == "fp32" else peak / 8.0, "fp16": peak}
    if dtype_name == "bf16":
        peak_tflops["bf16"] = peak
    entry = {
        "memory_gib": round(mem_gib, 2),
        "class": a.gpu_class or ("gddr-pcie" if not use_cuda else "hbm-nvlink" if p2p else "gddr-pcie"),
        "peak_tflops": peak_tflops,
        "memory_GBps": round(spec_bw, 1),
        "intra_node": {"link": a.link or ("pcie4" if not p2p else "nvlink"), "p2p": p2p,
                       "GBps_per_dir": a.link_gbps_per_dir or 32.0},
        "gpus_per_node": a.gpus_per_node or max(1, count),
        "inter_node_gbit_per_node": a.inter_node_gbit,
        "price_per_gpu_hour_usd": a.price_per_gpu_hour,
        "price_source": a.price_source,
        "price_date": time.strftime("%Y-%m-%d"),
        "spec_source": f"scripts/calibrate_gpu.py on {device_name}" +
                       ("" if a.peak_tflops else " (peak = best measured GEMM)"),
        "benchmark": {
            "gemm_e_max": round(e_max, 4),
            "gemm_x0_flops": x0,
            "memory_efficiency": round(min(1.0, measured_bw / spec_bw), 4),
            "allreduce_bus_GBps": bus,
            "dtype": dtype_name,
            "device": device_name,
            "gemm_points": [{"n": p["n"], "tflops": round(p["tflops"], 4)} for p in points],
            "source": f"calibrate_gpu.py {time.strftime('%Y-%m-%d')}" + (" --tiny" if a.tiny else ""),
        },
    }
    doc = {"format": "zerosearch-hardware/1", "gpus": {a.name: entry}}
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    os.replace(tmp, a.out)
    print(f"wrote {a.out}: zerosearch --hardware {a.out} --node_type {a.name} ...")


if __name__ == "__main__":
    main()
