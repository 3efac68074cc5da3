#!/usr/bin/env bash
# Sweep over cluster sizes: the best plan that fits in GPU memory for 2, 4, 8 and 16 nodes of
# one type, collected into one CSV (a "nodes" column, then zerosearch's usual columns).
#
# Usage:  examples/sweep_node_counts.sh [OUT.csv] [NODE_TYPE] [MODEL]
#         defaults: sweep_node_counts.csv A10 llama2_13B
# Finds the binary as $ZEROSEARCH, else build/zerosearch of this checkout, else on the PATH.
#
# How it works: --format csv --top 1 --feasible -q prints the CSV header and at most one row
# (the fastest plan that fits) and nothing else; a size where nothing fits gives the header
# only. A size zerosearch refuses (exit 2, one line on stderr) is reported and skipped.
set -euo pipefail

out=${1:-sweep_node_counts.csv}
node_type=${2:-A10}
model=${3:-llama2_13B}
here=$(cd "$(dirname "$0")/.." && pwd)
zs=${ZEROSEARCH:-$here/build/zerosearch}
[ -x "$zs" ] || zs=zerosearch

tmp=$(mktemp "${out}.XXXXXX")
trap 'rm -f "$tmp"' EXIT
have_header=no
for nodes in 2 4 8 16; do
  if ! rows=$("$zs" --node_type "$node_type" --num_node "$nodes" --type "$model" \
                    --format csv --top 1 --feasible -q); then
    echo "sweep: $nodes nodes skipped (see the error above)" >&2
    continue
  fi
  if [ "$have_header" = no ]; then
    printf 'nodes,%s\n' "$(head -n 1 <<<"$rows")" >"$tmp"
    have_header=yes
  fi
  best=$(sed -n 2p <<<"$rows")
  if [ -n "$best" ]; then
    printf '%s,%s\n' "$nodes" "$best" >>"$tmp"
  else
    echo "sweep: $nodes x $node_type: no plan fits in GPU memory" >&2
  fi
done
[ "$have_header" = yes ] || { echo "sweep: no size could be searched" >&2; exit 1; }
mv "$tmp" "$out"
trap - EXIT
echo "sweep: wrote $out ($(($(wc -l <"$out") - 1)) sizes)"
