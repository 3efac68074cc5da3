#!/usr/bin/env bash
# Framework comparison: the best plan under Megatron-LM (-f m: dp, fsdp) and under DeepSpeed
# (-f d: ZeRO 0-3) for each model, side by side. A framework without a profile for a model is
# reported from zerosearch's own one-line error, which is how a script tells "not available"
# (exit 2) from a failure (exit 1).
#
# Usage:  examples/compare_frameworks.sh [NODES] [NODE_TYPE]     defaults: 8 A10
# Needs jq. Finds the binary as $ZEROSEARCH, else build/zerosearch of this checkout, else on
# the PATH.
#
# How it works: --format json --top 1 --feasible -q prints a JSON array with the best plan
# that fits (or an empty array); jq picks the fields by their CSV column names.
set -euo pipefail

nodes=${1:-8}
node_type=${2:-A10}
here=$(cd "$(dirname "$0")/.." && pwd)
zs=${ZEROSEARCH:-$here/build/zerosearch}
[ -x "$zs" ] || zs=zerosearch
command -v jq >/dev/null || { echo "compare: needs jq (apt-get install jq)" >&2; exit 1; }

printf '%-11s %-9s %-6s %3s %3s %3s %4s %10s %9s %9s\n' \
  model framework method tp pp dp mbs s/step GiB '$/step'
for model in gpt2XL llama2_13B; do
  for framework in m d; do
    set +e
    json=$("$zs" --type "$model" -f "$framework" --node_type "$node_type" --num_node "$nodes" \
                 --format json --top 1 --feasible -q 2>/tmp/compare_frameworks.$$)
    status=$?
    set -e
    if [ "$status" -eq 2 ]; then
      printf '%-11s %-9s not available: %s\n' "$model" "$framework" \
        "$(sed 's/^zerosearch: error: //' /tmp/compare_frameworks.$$)"
      continue
    elif [ "$status" -ne 0 ]; then
      cat /tmp/compare_frameworks.$$ >&2
      rm -f /tmp/compare_frameworks.$$
      exit "$status"
    fi
    jq -r --arg model "$model" --arg f "$framework" '
      if length == 0 then "\($model)\t\($f)\tnothing fits in GPU memory"
      else .[0] | [$model, $f, .["dp method"], .tp, .pp, .dp, .mbs,
                   (.["estimated time (s/step)"] * 1e4 | round / 1e4),
                   (.gpumem * 100 | round / 100), (.price_per_step * 1e5 | round / 1e5)]
                | @tsv end' <<<"$json" |
      awk -F'\t' 'NF == 3 { printf "%-11s %-9s %s\n", $1, $2, $3; next }
                  { printf "%-11s %-9s %-6s %3s %3s %3s %4s %10s %9s %9s\n",
                    $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 }'
  done
done
rm -f /tmp/compare_frameworks.$$
