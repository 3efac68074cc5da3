#!/usr/bin/env bash
# Sweep over the global batch with --record, keeping every run's results. The original's
# record file name leaves out the global batch, so without a name part each run would
# replace the last one's file (zerosearch says so with a note). --add_exp_name gives each run
# its own file, and --no_clobber makes a sweep stop rather than replace a file of an earlier
# sweep. Each CSV comes with NAME.csv.json: the command line, inputs and date that produced it.
#
# Usage:  examples/sweep_gbs_record.sh [NODE_TYPE] [NODES]     defaults: A10 8
# Writes logs/ in the current folder. Finds the binary as $ZEROSEARCH, else build/zerosearch
# of this checkout, else on the PATH.
set -euo pipefail

node_type=${1:-A10}
nodes=${2:-8}
here=$(cd "$(dirname "$0")/.." && pwd)
zs=${ZEROSEARCH:-$here/build/zerosearch}
[ -x "$zs" ] || zs=zerosearch

for gbs in 32 64 128 256; do
  "$zs" --node_type "$node_type" --num_node "$nodes" --custom_gbs "$gbs" \
        --record --add_exp_name "_gbs$gbs" --no_clobber -q
done
# The record file holds every row, OOM ones too (the original's format), fastest first: the
# fastest plan that fits is the first row with is_oom False (True appears in no other column).
for csv in logs/*_gbs*.csv; do
  best=$(sed 1d "$csv" | grep -m1 -v ',True,' | cut -d, -f1-6 || true)
  echo "$csv: $(($(wc -l <"$csv") - 1)) rows; fastest row that fits (m,mbs,tp,pp,dp,method): ${best:-none}"
done
