#!/usr/bin/env python3
"""Run the frameworks' own parsers and validators on zerosearch's launch files (issue 24).

Emits a set of plans with a built zerosearch (--emit), then, for each framework whose checkout
is given, runs its real code on every file written for it:

  Megatron-LM         megatron.training.arguments parse_args + validate_args (sys.argv =
                      pretrain_gpt.py + MEGATRON_ARGS, WORLD_SIZE = the plan's GPUs, the
                      launcher's CUDA_DEVICE_MAX_CONNECTIONS)
  Megatron-DeepSpeed  megatron.arguments parse_args + validate_args (same)
  DeepSpeed           deepspeed.runtime.config.DeepSpeedConfig(ds_config.json) with the plan's
                      data-parallel size, plus PipelineEngine's ZeRO-2/3 check
  torchtitan          torchtitan.config.ConfigManager().parse_args(--job.config_file ...) and
                      ParallelDims(...) with the plan's GPUs

Each check runs in its own Python process; the result is PASS, FAIL (the framework's message)
or BLOCKED (its import chain cannot run here: the module that failed is printed). Usage:

  scripts/check_launch_files.py --zerosearch build/zerosearch \\
      [--megatron-lm DIR] [--megatron-deepspeed DIR] [--deepspeed DIR] [--torchtitan DIR]

Each checkout defaults to an environment variable: ZEROSEARCH_MEGATRON_LM,
ZEROSEARCH_MEGATRON_DEEPSPEED, ZEROSEARCH_DEEPSPEED, ZEROSEARCH_TORCHTITAN (CTest's
launch.frameworks_validate passes none, so it runs only when they are set).

Exit status: 0 every check passed, 1 a check failed or was blocked, 77 no framework checkout was
given (CTest reports the test as skipped: SKIP_RETURN_CODE 77).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77

# The plans: the mission command, 3 A10 + 5 A6000, and native plans covering ZeRO-1/2/3, FSDP,
# offload, recompute, interleaving, fp8, fp16 (no bf16), GQA, MoE and a QKV bias.
PLANS = [
    ("mission", "--node_type A10 --num_node 8 --type llama2_13B"),
    ("hetero", "--node_type A10 A6000 --node_type_num_node 3 5 --type llama2_13B"),
    ("zero1_tp2_pp4", "--exhaustive --estimator native --node_type A100-80GB --num_node 4 "
     "--gpu_per_node 8 --type llama2_13B --custom_gbs 128 --dp_method zero1 --tp 2 --pp 4 --dp 4 "
     "--mbs 1 --recompute full --sequence_parallel off"),
    ("zero2_pp1", "--exhaustive --estimator native --node_type A100-80GB --num_node 4 "
     "--gpu_per_node 8 --type llama2_7B --custom_gbs 256 --dp_method zero2 --tp 1 --pp 1 --dp 32 "
     "--mbs 2"),
    ("zero3_offload", "--exhaustive --estimator native --node_type H100-SXM --num_node 4 "
     "--gpu_per_node 8 --type llama3_70B --custom_gbs 64 --dp_method zero3 --tp 1 --pp 1 --dp 32 "
     "--mbs 1 --recompute full --offload optimizer+params"),
    # ZeRO-3 beside Megatron tp under zero.Init(mpu=...), without Megatron's sequence parallelism
    # (Megatron-DeepSpeed files are refused with it: docs/launch.md).
    ("zero3_tp2", "--exhaustive --estimator native --node_type H100-SXM --num_node 2 "
     "--gpu_per_node 8 --type llama3_8B --custom_gbs 64 --dp_method zero3 --tp 2 --pp 1 --dp 8 "
     "--mbs 1 --sequence_parallel off"),
    # ZeRO-1 as Megatron-Core's distributed optimizer at tp 2 with sequence parallelism (the
    # native default) and interleaving: Megatron-LM alone writes it (docs/launch.md).
    ("zero1_tp2_sp_interleaved", "--exhaustive --estimator native --node_type H100-SXM "
     "--num_node 2 --gpu_per_node 8 --type llama3_8B --custom_gbs 64 --dp_method zero1 --tp 2 "
     "--pp 4 --dp 2 --mbs 1 --virtual_stages 2"),
    ("fsdp_gqa", "--exhaustive --estimator native --node_type H100-SXM --num_node 4 "
     "--gpu_per_node 8 --type llama3_8B --custom_gbs 256 --dp_method fsdp --tp 1 --pp 1 --dp 32 "
     "--mbs 1"),
    ("fsdp_tp2_fp8", "--exhaustive --estimator native --node_type H100-SXM --num_node 4 "
     "--gpu_per_node 8 --type llama3_8B --custom_gbs 256 --dp_method fsdp --tp 2 --pp 1 --dp 16 "
     "--mbs 1 --dtype fp8"),
    ("fsdp_pp_interleaved", "--exhaustive --estimator native --node_type H100-SXM --num_node 2 "
     "--gpu_per_node 8 --type llama3_70B --custom_gbs 64 --dp_method fsdp --tp 8 --pp 2 --dp 1 "
     "--mbs 1 --recompute full --virtual_stages 2"),
    ("dp_interleaved_selective", "--exhaustive --estimator native --node_type H100-SXM "
     "--num_node 2 --gpu_per_node 8 --type llama3_8B --custom_gbs 64 --dp_method dp --tp 2 --pp 4 "
     "--dp 2 --mbs 1 --recompute selective --virtual_stages 2"),
    ("moe_mixtral", "--exhaustive --estimator native --node_type H100-SXM --num_node 8 "
     "--gpu_per_node 8 --type mixtral_8x7B --custom_gbs 512 --dp_method fsdp --tp 1 --pp 1 "
     "--dp 64 --mbs 1 --recompute full"),
    ("qwen_qkv_bias", "--exhaustive --estimator native --node_type H100-SXM --num_node 2 "
     "--gpu_per_node 8 --type qwen2.5_7B --custom_gbs 64 --dp_method dp --tp 2 --pp 1 --dp 8 "
     "--mbs 1 --recompute full"),
    ("v100_fp16", "--exhaustive --estimator native --node_type V100-32GB --num_node 4 "
     "--gpu_per_node 8 --type llama2_7B --custom_gbs 128 --dp_method zero1 --tp 2 --pp 2 --dp 8 "
     "--mbs 1 --recompute full --sequence_parallel off"),
]

PRELUDE = r'''
import json, os, sys, traceback
def report(status, text):
    print("@@RESULT@@" + json.dumps({"status": status, "text": text}))
    sys.exit(0)
def guarded_import(fn):
    try:
        return fn()
    except (ImportError, AttributeError, OSError, RuntimeError, TypeError, SyntaxError) as e:
        tb = traceback.extract_tb(e.__traceback__)
        where = [f"{os.path.relpath(f.filename)}:{f.lineno}" for f in tb[-3:]]
        report("BLOCKED", f"{type(e).__name__}: {e} (at {' <- '.join(reversed(where))})")
'''

MEGATRON = PRELUDE + r'''
args_list = json.loads(os.environ["ZS_ARGS"])
sys.argv = ["pretrain_gpt.py"] + args_list
def load():
    if os.environ["ZS_KIND"] == "megatron_lm":
        from megatron.training.arguments import parse_args, validate_args
    else:
        from megatron.arguments import parse_args, validate_args
    return parse_args, validate_args
parse_args, validate_args = guarded_import(load)
try:
    a = parse_args()
    validate_args(a)
except AssertionError as e:
    report("FAIL", f"AssertionError: {e}")
except (ValueError, SystemExit) as e:
    report("FAIL", f"{type(e).__name__}: {e}")
except Exception as e:
    report("BLOCKED", f"{type(e).__name__}: {e}")
report("PASS", f"tp {a.tensor_model_parallel_size} pp {a.pipeline_model_parallel_size} "
               f"dp {a.data_parallel_size} mbs {a.micro_batch_size} gbs {a.global_batch_size}")
'''

DEEPSPEED = PRELUDE + r'''
dp = int(os.environ["ZS_DP"]); pp = int(os.environ["ZS_PP"])
cfg = json.load(open(os.environ["ZS_FILE"]))
os.environ.setdefault("DS_ACCELERATOR", "cpu")
def load():
    import deepspeed.runtime.config as c
    return c
c = guarded_import(load)
class _Dist:
    def get_rank(self, *a, **k): return 0
    def get_world_size(self, *a, **k): return dp
    def is_initialized(self): return True
c.dist = _Dist()
class _Mpu:
    def get_data_parallel_world_size(self): return dp
    def get_data_parallel_rank(self): return 0
    def get_model_parallel_world_size(self): return 1
    def get_sequence_parallel_world_size(self): return 1
    def get_sequence_data_parallel_world_size(self): return dp
try:
    ds = c.DeepSpeedConfig(cfg, mpu=_Mpu())
except AssertionError as e:
    report("FAIL", f"AssertionError: {e}")
except Exception as e:
    report("FAIL", f"{type(e).__name__}: {e}")
# deepspeed/runtime/pipe/engine.py:76-77, checked in PipelineEngine.__init__ (needs GPUs).
if pp > 1 and ds.zero_optimization_stage >= 2:
    report("FAIL", "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism")
report("PASS", f"train_batch_size {ds.train_batch_size} = {ds.train_micro_batch_size_per_gpu} x "
               f"{ds.gradient_accumulation_steps} x dp {dp}, zero stage {ds.zero_optimization_stage}, "
               f"bf16 {ds.bfloat16_config.enabled} fp16 {ds.float16_config.enabled}")
'''

TORCHTITAN = PRELUDE + r'''
world = int(os.environ["ZS_WORLD"])
def load():
    from torchtitan.config import ConfigManager
    from torchtitan.distributed import ParallelDims
    return ConfigManager, ParallelDims
ConfigManager, ParallelDims = guarded_import(load)
try:
    cfg = ConfigManager().parse_args(["--job.config_file", os.environ["ZS_FILE"]])
    p = cfg.parallelism
    dims = ParallelDims(dp_shard=p.data_parallel_shard_degree, dp_replicate=p.data_parallel_replicate_degree,
                        cp=p.context_parallel_degree, tp=p.tensor_parallel_degree,
                        pp=p.pipeline_parallel_degree, ep=p.expert_parallel_degree,
                        etp=p.expert_tensor_parallel_degree, world_size=world)
except Exception as e:
    report("FAIL", f"{type(e).__name__}: {e}")
report("PASS", f"flavor {cfg.model.flavor}, local_batch_size {cfg.training.local_batch_size}, "
               f"ac {cfg.activation_checkpoint.mode}")
'''


def bash_array(path, env):
    """MEGATRON_ARGS of an args file, expanded by bash as the launcher would."""
    out = subprocess.run(["bash", "-c", 'source "$1"; printf "%s\\0" "${MEGATRON_ARGS[@]}"', "x", path],
                         env=env, capture_output=True, check=True)
    return [a.decode() for a in out.stdout.split(b"\0") if a]


def launcher_env(path):
    """The CUDA_DEVICE_MAX_CONNECTIONS a launcher sets (None: unset)."""
    value = None
    with open(path) as f:
        for line in f:
            if line.startswith("export CUDA_DEVICE_MAX_CONNECTIONS="):
                value = line.split("=", 1)[1].split()[0]
            if line.startswith("unset CUDA_DEVICE_MAX_CONNECTIONS"):
                value = None
    return value


def run_check(code, pythonpath, env_extra, cwd):
    env = {k: v for k, v in os.environ.items() if k != "CUDA_DEVICE_MAX_CONNECTIONS"}
    env.update({k: v for k, v in env_extra.items() if v is not None})
    env["PYTHONPATH"] = os.pathsep.join(pythonpath)
    env.setdefault("RANK", "0")
    env.setdefault("LOCAL_RANK", "0")
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=600)
    for line in proc.stdout.splitlines():
        if line.startswith("@@RESULT@@"):
            r = json.loads(line[len("@@RESULT@@"):])
            return r["status"], r["text"]
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    return "BLOCKED", f"exit {proc.returncode}: " + " | ".join(tail)


def plan_facts(plan_dir):
    """dp, pp and GPUs of a plan from its hostfile header and ds/megatron files."""
    with open(os.path.join(plan_dir, "hostfile")) as f:
        header = f.readline()
        slots = [int(l.split("slots=")[1].split()[0]) for l in f if l.strip() and not l.startswith("#")]
    import re
    m = re.search(r"tp (\d+), pp (\d+), dp (\d+)", header)
    tp, pp, dp = (int(x) for x in m.groups())
    return tp, pp, dp, sum(slots)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zerosearch", required=True)
    ap.add_argument("--megatron-lm", default=os.environ.get("ZEROSEARCH_MEGATRON_LM"))
    ap.add_argument("--megatron-deepspeed", default=os.environ.get("ZEROSEARCH_MEGATRON_DEEPSPEED"))
    ap.add_argument("--deepspeed", default=os.environ.get("ZEROSEARCH_DEEPSPEED"))
    ap.add_argument("--torchtitan", default=os.environ.get("ZEROSEARCH_TORCHTITAN"))
    ap.add_argument("--work", help="folder for the emitted plans (default: a temporary one)")
    ap.add_argument("--plan", action="append", help="only these plans (names as listed)")
    o = ap.parse_args()
    given = {k: v for k, v in {"megatron_lm": o.megatron_lm, "megatron_deepspeed": o.megatron_deepspeed,
                               "deepspeed": o.deepspeed, "torchtitan": o.torchtitan}.items() if v}
    if not given:
        print("check_launch_files: no framework checkout given (--megatron-lm, "
              "--megatron-deepspeed, --deepspeed, --torchtitan): SKIPPED")
        return SKIP
    for k, v in given.items():
        if not os.path.isdir(v):
            print(f"check_launch_files: {k} checkout '{v}' is not a folder", file=sys.stderr)
            return 2
    work = o.work or tempfile.mkdtemp(prefix="zs_launch_check_")
    results = []
    dummy = {"TOKENIZER_MODEL": "tokenizer.model", "DATA_PREFIX": "data/text_document",
             "VOCAB_FILE": "vocab.json", "MERGE_FILE": "merges.txt", "TRAIN_ITERS": "10"}
    for name, args in PLANS:
        if o.plan and name not in o.plan:
            continue
        plan_dir = os.path.join(work, name)
        shutil.rmtree(plan_dir, ignore_errors=True)
        proc = subprocess.run([o.zerosearch] + args.split() + ["--emit", plan_dir, "-q"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            results.append((name, "zerosearch --emit", "FAIL", proc.stderr.strip()))
            continue
        tp, pp, dp, world = plan_facts(plan_dir)
        env = dict(os.environ, PLAN_DIR=plan_dir, **dummy)
        files = set(os.listdir(plan_dir))
        if "megatron_lm_args.sh" in files and "megatron_lm" in given:
            argv = bash_array(os.path.join(plan_dir, "megatron_lm_args.sh"), env)
            status, text = run_check(MEGATRON, [given["megatron_lm"]], {
                "ZS_ARGS": json.dumps(argv), "ZS_KIND": "megatron_lm", "WORLD_SIZE": str(world),
                "CUDA_DEVICE_MAX_CONNECTIONS": launcher_env(os.path.join(plan_dir, "launch_megatron_lm.sh"))},
                given["megatron_lm"])
            results.append((name, "megatron_lm_args.sh", status, text))
        if "megatron_deepspeed_args.sh" in files and "megatron_deepspeed" in given:
            argv = bash_array(os.path.join(plan_dir, "megatron_deepspeed_args.sh"), env)
            path = [given["megatron_deepspeed"]] + ([given["deepspeed"]] if "deepspeed" in given else [])
            status, text = run_check(MEGATRON, path, {
                "ZS_ARGS": json.dumps(argv), "ZS_KIND": "megatron_deepspeed", "WORLD_SIZE": str(world),
                "CUDA_DEVICE_MAX_CONNECTIONS": launcher_env(os.path.join(plan_dir, "launch_deepspeed.sh"))},
                given["megatron_deepspeed"])
            results.append((name, "megatron_deepspeed_args.sh", status, text))
        if "ds_config.json" in files and "deepspeed" in given:
            status, text = run_check(DEEPSPEED, [given["deepspeed"]], {
                "ZS_FILE": os.path.join(plan_dir, "ds_config.json"), "ZS_DP": str(dp), "ZS_PP": str(pp)},
                work)
            results.append((name, "ds_config.json", status, text))
        if "torchtitan.toml" in files and "torchtitan" in given:
            status, text = run_check(TORCHTITAN, [given["torchtitan"]], {
                "ZS_FILE": os.path.join(plan_dir, "torchtitan.toml"), "ZS_WORLD": str(world)}, work)
            results.append((name, "torchtitan.toml", status, text))
        for script in sorted(f for f in files if f.endswith(".sh") or f.endswith(".sbatch")):
            rc = subprocess.run(["bash", "-n", os.path.join(plan_dir, script)], capture_output=True, text=True)
            results.append((name, script + " (bash -n)", "PASS" if rc.returncode == 0 else "FAIL",
                            rc.stderr.strip()))
    width = max(len(f"{p}/{f}") for p, f, _, _ in results) if results else 10
    for p, f, status, text in results:
        print(f"{status:8} {p + '/' + f:{width}}  {text}")
    counts = {s: sum(1 for r in results if r[2] == s) for s in ("PASS", "FAIL", "BLOCKED")}
    print(f"check_launch_files: {counts['PASS']} passed, {counts['FAIL']} failed, "
          f"{counts['BLOCKED']} blocked (import chain cannot run here); plans in {work}")
    return 0 if counts["FAIL"] == 0 and counts["BLOCKED"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
