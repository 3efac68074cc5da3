#!/usr/bin/env bash
# Why the modelled ZB-H1 gain over 1F1B differs from Qi et al.'s (ICLR 2024) on their Table 3
# settings (check.sh runs them): the native estimator's pass times of a middle stage (stage 1:
# F, the full backward B and its weight part W) beside what the paper's Table 5 bubble rates
# imply, read with both schedules paying a per-hop communication time c on every micro-batch
# (1F1B: cost = (m + p - 1) T + 2 (m + p - 2) c with T = F + B; ZB-H1: the same less (p - 1) 2 W),
# the reading under which c comes out the same for every m of a model. Implied c from the 1F1B
# rate, then the implied W / T from the ZB-H1 rate. docs/native.md §2.3 ("Against the paper").
#   validation/zero_bubble/diagnose.sh [ZEROSEARCH]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-$here/../../build/zerosearch}
even() {
  local pp=$1 layers=$2 out="" j
  for ((j = 0; j < pp; ++j)); do out+="${out:+,}$(( (layers + 2) / pp ))"; done
  echo "$out"
}
printf '| model | p | m | F | B | W | W / (F + B) | send | Table 5: c | c / send | Table 5: W / (F + B) |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|\n'
while read -r model layers pp mbs rest; do
  part=$(even "$pp" "$layers")
  for cell in $rest; do
    IFS=: read -r m r1 rz <<<"$cell"
    "$bin" --node_type A100-80GB --num_node $(( pp / 8 )) --gpu_per_node 8 \
      --type "$here/zb_gpt_$model.json" --custom_gbs $(( mbs * m )) --exhaustive --dp_method dp \
      --tp 1 --pp "$pp" --dp 1 --mbs "$mbs" --partition "$part" --schedule zb-h1 |
      awk -v M="$model" -v p="$pp" -v m="$m" -v r1="$r1" -v rz="$rz" '
        /^time of one micro-batch/ {t = 1} /^backward split/ {s = 1; t = 0}
        t && $1 == "1" && NF >= 9 {f = $4; b = $5; send = $8}
        s && $1 == "1" && NF == 3 {w = $3; s = 0}
        END {
          T = f + b
          c = (m / (1 - r1) - (m + p - 1)) / (2 * (m + p - 2))      # in units of T
          wz = (m + 2 * (m + p - 2) * c + (p - 1) - m / (1 - rz)) / (2 * (p - 1))
          printf "| %s | %d | %d | %.5f | %.5f | %.5f | %.3f | %.3f ms | %.2f ms | %.1f | %.3f |\n",
            M, p, m, f, b, w, w / T, 1e3 * send, 1e3 * c * T, c * T / send, wz }'
  done
done <<'TABLE'
1.5B 22 8 6 24:0.2431:0.1585 32:0.1985:0.1242 64:0.1240:0.0674
6.2B 30 8 3 24:0.2347:0.1323 32:0.1898:0.1045 64:0.1091:0.0554
14.6B 46 16 1 48:0.2552:0.1397 64:0.2082:0.1088 128:0.1251:0.0576
28.3B 62 32 1 96:0.2646:0.1421 128:0.2168:0.1106 256:0.1352:0.0594
TABLE
