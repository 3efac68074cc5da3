#!/usr/bin/env python3
"""Measure the forward and backward time of real transformer layers on one GPU (docs/analytic.md).

Each point is one transformer layer as one tensor-parallel rank runs it: the attention heads,
key/value heads and FFN width divided by tp, the norms on the full hidden size, no
communication (the collectives are measured by calibrate_gpu.py, not here). Layers are eager
PyTorch modules (torchtitan's style: RMSNorm, RoPE, grouped-query attention through
scaled_dot_product_attention with a causal mask, SwiGLU; or GPT's LayerNorm, GELU and biases).
For each (model shape, tp, micro-batch, sequence length) it records the median over repeats of

  * forward_ms:  one training forward (autograd recording), back to back, GPU synchronised at
                 the end of the repeat only (host issue and GPU time overlap as in training),
  * backward_ms: one forward + backward minus forward_ms,
  * activation_mib: memory the forward keeps for the backward (allocated after the forward,
                 output included, minus before).

The file it writes (JSON, format zerosearch-layer-times/1) carries the GPU, driver, CUDA and
torch versions and the date; tools/validate compares it with the native estimator's per-layer
times (zerosearch_validate --layer_times FILE).

  python3 scripts/measure_layers.py --out layers_h100.json --budget_s 200
  python3 scripts/measure_layers.py --tiny --out /tmp/layers_cpu.json   # CPU smoke test (CI)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def fail(msg):
    print(f"measure_layers.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


# name: (arch, hidden, heads, kv_heads, ffn) -- the models' published config.json values.
MODELS = {
    "llama3.2_1B": ("llama", 2048, 32, 8, 8192),
    "llama3_8B": ("llama", 4096, 32, 8, 14336),
    "llama2_13B": ("llama", 5120, 40, 40, 13824),
    "llama3_70B": ("llama", 8192, 64, 8, 28672),
    "gpt3_175B": ("gpt", 12288, 96, 96, 49152),
}
TINY_MODELS = {"tiny_llama": ("llama", 64, 4, 2, 128), "tiny_gpt": ("gpt", 64, 4, 4, 256)}


def build_layer(torch, arch, h, heads, kv, ffn, tp, seq, device, dtype):
    nn, F = torch.nn, torch.nn.functional
    if heads % tp or ffn % tp:
        return None
    d = h // heads
    lh, lkv, lf = heads // tp, max(1, kv // tp), ffn // tp
    bias = arch == "gpt"

    class RMSNorm(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(n, device=device, dtype=dtype))

        def forward(self, x):
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)).type_as(x) * self.weight

    def norm():
        return nn.LayerNorm(h, device=device, dtype=dtype) if arch == "gpt" else RMSNorm(h)

    inv = 1.0 / (500000.0 ** (torch.arange(0, d, 2, device=device, dtype=torch.float32) / d))
    ang = torch.outer(torch.arange(seq, device=device, dtype=torch.float32), inv)
    cos, sin = ang.cos().to(dtype)[None, None], ang.sin().to(dtype)[None, None]

    def rope(x):  # x: (b, heads, s, d)
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
        c, s_ = cos[..., : x.shape[2], :], sin[..., : x.shape[2], :]
        return torch.cat((x1 * c - x2 * s_, x2 * c + x1 * s_), dim=-1)

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.head_dim = d
            self.n1, self.n2 = norm(), norm()
            self.qkv = nn.Linear(h, (lh + 2 * lkv) * d, bias=bias, device=device, dtype=dtype)
            self.o = nn.Linear(lh * d, h, bias=bias, device=device, dtype=dtype)
            if arch == "gpt":
                self.up = nn.Linear(h, lf, bias=True, device=device, dtype=dtype)
            else:
                self.up = nn.Linear(h, 2 * lf, bias=False, device=device, dtype=dtype)
            self.down = nn.Linear(lf, h, bias=bias, device=device, dtype=dtype)

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = self.qkv(self.n1(x)).split([lh * d, lkv * d, lkv * d], dim=-1)
            q = q.view(b, s, lh, d).transpose(1, 2)
            k = k.view(b, s, lkv, d).transpose(1, 2)
            v = v.view(b, s, lkv, d).transpose(1, 2)
            if arch == "llama":
                q, k = rope(q), rope(k)
            if lkv != lh:
                k = k.repeat_interleave(lh // lkv, dim=1)
                v = v.repeat_interleave(lh // lkv, dim=1)
            if hasattr(F, "scaled_dot_product_attention"):
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:  # torch < 2.0 (the CPU smoke test): the unfused causal attention
                sc = q @ k.transpose(-2, -1) / d ** 0.5
                mask = torch.ones(s, s, device=device, dtype=torch.bool).triu(1)
                a = sc.masked_fill(mask, float("-inf")).softmax(-1) @ v
            x = x + self.o(a.transpose(1, 2).reshape(b, s, lh * d))
            u = self.up(self.n2(x))
            if arch == "gpt":
                m = F.gelu(u, approximate="tanh")
            else:
                g, up = u.chunk(2, dim=-1)
                m = F.silu(g) * up
            return x + self.down(m)

    return Layer()


def sync(torch, device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(torch, layer, mbs, seq, h, device, dtype, iters, repeats):
    x = torch.randn(mbs, seq, h, device=device, dtype=dtype, requires_grad=True)
    grad = torch.randn(mbs, seq, h, device=device, dtype=dtype)
    for _ in range(2):  # warm-up: kernels chosen, allocator settled
        layer(x).backward(grad)
    sync(torch, device)
    act = None
    if device.type == "cuda":
        before = torch.cuda.memory_allocated(device)
        y = layer(x)
        sync(torch, device)
        act = (torch.cuda.memory_allocated(device) - before) / 2**20
        del y
    fwd, both = [], []
    for _ in range(repeats):
        sync(torch, device)
        t0 = time.perf_counter()
        for _ in range(iters):
            y = layer(x)
            del y
        sync(torch, device)
        fwd.append((time.perf_counter() - t0) / iters)
        t0 = time.perf_counter()
        for _ in range(iters):
            layer(x).backward(grad)
        sync(torch, device)
        both.append((time.perf_counter() - t0) / iters)
    f, fb = statistics.median(fwd), statistics.median(both)
    if fb <= f:  # timer noise larger than the backward (a loaded CPU): not a measurement
        return {"error": f"backward not resolved: forward+backward {fb * 1e3:.4f} ms <= "
                         f"forward {f * 1e3:.4f} ms"}
    return {"forward_ms": round(f * 1e3, 4), "backward_ms": round((fb - f) * 1e3, 4),
            "activation_mib": None if act is None else round(act, 2)}


def measure_parts(torch, layer, mbs, seq, h, device, dtype, iters, repeats):
    """The layer's parts alone, on inputs of the layer's shapes: its four linear modules
    (forward; backward = input and weight gradients), and the attention core
    (scaled_dot_product_attention on the rank's heads, key/value heads expanded)."""
    F = torch.nn.functional

    def timed(fn):
        for _ in range(2):
            fn()
        out = []
        for _ in range(repeats):
            sync(torch, device)
            t0 = time.perf_counter()
            for _ in range(iters):
                fn()
            sync(torch, device)
            out.append((time.perf_counter() - t0) / iters)
        return statistics.median(out)

    def inp(n):
        return torch.randn(mbs, seq, n, device=device, dtype=dtype, requires_grad=True)

    lins = [layer.qkv, layer.o, layer.up, layer.down]
    xs = [inp(m.in_features) for m in lins]
    gs = [torch.randn(mbs, seq, m.out_features, device=device, dtype=dtype) for m in lins]

    def gemm_fwd():
        for m, x in zip(lins, xs):
            m(x)

    def gemm_both():
        for m, x, g in zip(lins, xs, gs):
            m(x).backward(g)

    lh = layer.o.in_features // layer.head_dim
    q, k, v = (torch.randn(mbs, lh, seq, layer.head_dim, device=device, dtype=dtype,
                           requires_grad=True) for _ in range(3))
    go = torch.randn(mbs, lh, seq, layer.head_dim, device=device, dtype=dtype)

    def attn_fwd():
        F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def attn_both():
        F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(go)

    gf, gb, af, ab = timed(gemm_fwd), timed(gemm_both), timed(attn_fwd), timed(attn_both)
    return {"gemm_forward_ms": round(gf * 1e3, 4), "gemm_backward_ms": round((gb - gf) * 1e3, 4),
            "attention_forward_ms": round(af * 1e3, 4),
            "attention_backward_ms": round((ab - af) * 1e3, 4)}


def environment(torch, device):
    env = {"date": time.strftime("%Y-%m-%d"), "torch": torch.__version__,
           "cuda": torch.version.cuda, "device": "CPU", "driver": None}
    if device.type == "cuda":
        env["device"] = torch.cuda.get_device_name(device)
        try:
            env["driver"] = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                capture_output=True, text=True, timeout=20).stdout.strip().splitlines()[0]
        except (OSError, subprocess.SubprocessError, IndexError):
            env["driver"] = None
    return env


def write(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="JSON file to write (rewritten after every point)")
    ap.add_argument("--budget_s", type=float, default=300.0,
                    help="stop starting new points after this many seconds; default 300")
    ap.add_argument("--models", nargs="*", default=None, help=f"subset of {sorted(MODELS)}")
    ap.add_argument("--tp", type=int, nargs="*", default=[1, 2, 4, 8])
    ap.add_argument("--mbs", type=int, nargs="*", default=[1, 2, 4])
    ap.add_argument("--seq", type=int, nargs="*", default=[2048, 4096, 8192])
    ap.add_argument("--parts", action="store_true",
                    help="also time the linear modules and the attention core alone (GPU only)")
    ap.add_argument("--tiny", action="store_true", help="tiny layers on the CPU in fp32 (CI)")
    a = ap.parse_args()
    if a.budget_s <= 0:
        fail(f"--budget_s must be > 0, not {a.budget_s}")
    try:
        import torch
    except ImportError:
        fail("PyTorch is not installed (pip install torch, or apt-get install python3-torch)")
    models = TINY_MODELS if a.tiny else MODELS
    if a.models:
        bad = [m for m in a.models if m not in models]
        if bad:
            fail(f"unknown model {bad[0]!r}; allowed: {', '.join(sorted(models))}")
        models = {m: models[m] for m in a.models}
    if a.tiny:
        device, dtype, iters, repeats = torch.device("cpu"), torch.float32, 5, 3
        tps, mbss, seqs = [1, 2], [1], [32]
    else:
        if not torch.cuda.is_available():
            fail("no CUDA device; use --tiny for the CPU smoke test")
        device, dtype, iters, repeats = torch.device("cuda:0"), torch.bfloat16, 4, 3
        tps, mbss, seqs = a.tp, a.mbs, a.seq
    doc = {"format": "zerosearch-layer-times/1", "environment": environment(torch, device),
           "dtype": "fp32" if a.tiny else "bf16", "method": {
               "layer": "eager PyTorch modules, one tensor-parallel rank, no communication",
               "attention": "torch.nn.functional.scaled_dot_product_attention, causal"
                            if hasattr(torch.nn.functional, "scaled_dot_product_attention")
                            else "unfused causal attention (torch < 2.0)",
               "iters_per_repeat": iters, "repeats": repeats, "statistic": "median"},
           "points": []}
    start = time.perf_counter()
    stopped = None
    for mbs in mbss:
        for seq in seqs:
            for name, (arch, h, heads, kv, ffn) in models.items():
                for tp in tps:
                    if time.perf_counter() - start > a.budget_s:
                        stopped = stopped or f"budget of {a.budget_s:g} s spent"
                        continue
                    layer = build_layer(torch, arch, h, heads, kv, ffn, tp, seq, device, dtype)
                    if layer is None:
                        continue
                    try:
                        r = measure(torch, layer, mbs, seq, h, device, dtype, iters, repeats)
                        if a.parts and device.type == "cuda":
                            r.update(measure_parts(torch, layer, mbs, seq, h, device, dtype,
                                                   iters, repeats))
                    except RuntimeError as e:  # out of memory: recorded, not fatal
                        r = {"error": str(e).splitlines()[0][:200]}
                    del layer
                    if device.type == "cuda":
                        torch.cuda.empty_cache()
                    point = {"model": name, "arch": arch, "hidden": h, "heads": heads,
                             "kv_heads": kv, "ffn": ffn, "tp": tp, "mbs": mbs, "seq": seq, **r}
                    doc["points"].append(point)
                    print(json.dumps(point), flush=True)
                    doc["stopped"] = stopped
                    write(a.out, doc)
    doc["stopped"] = stopped
    doc["elapsed_s"] = round(time.perf_counter() - start, 1)
    write(a.out, doc)
    print(f"wrote {a.out}: {len(doc['points'])} points in {doc['elapsed_s']} s"
          + (f" ({stopped})" if stopped else ""))


if __name__ == "__main__":
    main()
