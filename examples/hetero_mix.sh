#!/usr/bin/env bash
# Heterogeneous mix: eight nodes split between A10 and A6000 in different proportions. For
# each mix, prints the three fastest plans that fit (the readable --pretty table, placements
# written like "A10x2 A6000x5 A10x1") and keeps the full ranked CSV, in the original's
# format, under OUT_DIR.
#
# Usage:  examples/hetero_mix.sh [OUT_DIR] [MODEL]     defaults: hetero_mix llama2_13B
# Finds the binary as $ZEROSEARCH, else build/zerosearch of this checkout, else on the PATH.
#
# How it works: -o FILE -q writes the whole ranking atomically (a failed run never leaves half
# a file) and prints nothing; --pretty --top 3 --feasible prints the short table. --top and
# --feasible apply to every output, so the two are separate runs.
set -euo pipefail

out_dir=${1:-hetero_mix}
model=${2:-llama2_13B}
here=$(cd "$(dirname "$0")/.." && pwd)
zs=${ZEROSEARCH:-$here/build/zerosearch}
[ -x "$zs" ] || zs=zerosearch

mkdir -p "$out_dir"
for mix in "2 6" "3 5" "4 4" "6 2"; do
  read -r a10 a6000 <<<"$mix"
  csv="$out_dir/A10x${a10}_A6000x${a6000}.csv"
  echo "== $a10 x A10 + $a6000 x A6000 ($model)"
  cluster=(--node_type A10 A6000 --node_type_num_node "$a10" "$a6000" --type "$model")
  "$zs" "${cluster[@]}" -o "$csv" -q
  "$zs" "${cluster[@]}" --pretty --top 3 --feasible -q
  echo "   full ranking: $csv ($(($(wc -l <"$csv") - 1)) rows)"
done
