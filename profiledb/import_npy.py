#!/usr/bin/env python3
"""Convert measured per-layer profiles from NumPy .npy files into zerosearch's JSON format.

Usage: import_npy.py OUT_DIR FILE.npy [FILE.npy ...]

Input file names follow the profiler's convention MODEL_GPU_TP[_ds].npy: a 1-D float64 array of
per-layer forward times in seconds, one entry per layer (embedding, transformers, post_process).
The "_ds" suffix marks DeepSpeed (ZeRO) measurements, no suffix Megatron-LM (dp/fsdp).
All TP files for one (model, GPU, framework) are merged into OUT_DIR/MODEL_GPU_FRAMEWORK.json.
Values are written with Python's repr, which round-trips every float64 exactly.
Standard library only, so no NumPy is needed.
"""
import ast
import json
import os
import re
import struct
import sys

NAME = re.compile(r"^(?P<model>.+)_(?P<gpu>[^_]+)_(?P<tp>\d+)(?P<ds>_ds)?\.npy$")

# GPUs whose profiler measured the embedding and post_process layers per micro-batch already.
ENDS_PER_MICRO_BATCH = {"A100"}


def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise SystemExit(f"{path}: not a .npy file")
    major = data[6]
    if major == 1:
        (hlen,) = struct.unpack("<H", data[8:10])
        start = 10
    else:
        (hlen,) = struct.unpack("<I", data[8:12])
        start = 12
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    if header["descr"] != "<f8" or header["fortran_order"] or len(header["shape"]) != 1:
        raise SystemExit(f"{path}: expected a 1-D little-endian float64 array, got {header}")
    body = data[start + hlen:]
    count = header["shape"][0]
    return list(struct.unpack(f"<{count}d", body[: 8 * count]))


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = argv[1]
    groups = {}
    for path in argv[2:]:
        m = NAME.match(os.path.basename(path))
        if not m:
            raise SystemExit(f"{path}: name is not MODEL_GPU_TP[_ds].npy")
        framework = "deepspeed" if m["ds"] else "megatron"
        key = (m["model"], m["gpu"], framework)
        groups.setdefault(key, {})[int(m["tp"])] = (os.path.basename(path), read_npy(path))
    os.makedirs(out_dir, exist_ok=True)
    for (model, gpu, framework), by_tp in sorted(groups.items()):
        doc = {
            "model": model,
            "gpu": gpu,
            "framework": framework,
            "ends_per_micro_batch": gpu in ENDS_PER_MICRO_BATCH,
            "sources": [by_tp[tp][0] for tp in sorted(by_tp)],
            "layer_times_s": {str(tp): by_tp[tp][1] for tp in sorted(by_tp)},
        }
        out = os.path.join(out_dir, f"{model}_{gpu}_{framework}.json")
        with open(out, "w") as f:
            f.write("{\n")
            keys = list(doc)
            for i, k in enumerate(keys):
                sep = "," if i + 1 < len(keys) else ""
                if k == "layer_times_s":
                    f.write('  "layer_times_s": {\n')
                    tps = list(doc[k])
                    for j, tp in enumerate(tps):
                        vals = ", ".join(repr(v) for v in doc[k][tp])
                        f.write(f'    "{tp}": [{vals}]{"," if j + 1 < len(tps) else ""}\n')
                    f.write(f"  }}{sep}\n")
                else:
                    f.write(f"  {json.dumps(k)}: {json.dumps(doc[k])}{sep}\n")
            f.write("}\n")
        print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
