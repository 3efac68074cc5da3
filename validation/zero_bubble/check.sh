#!/usr/bin/env bash
# ZB-H1's throughput gain over 1F1B as the native estimator models it, on the settings of
# Qi et al., "Zero Bubble Pipeline Parallelism" (ICLR 2024), Table 3, against the gains of
# ZB-1p over 1F1B they measured (Table 4, samples per GPU per second) and the bubble rates
# they computed from their profiled pass times (Table 5). ZB-1p is their searched schedule at
# 1F1B's memory; Table 5 gives it ZB-H1's bubble rate in every one of these settings. Pure
# pipelines (tp 1, dp 1) on A100-SXM 80 GB, 8 per node; the first and last stages hold one
# layer fewer than the others, as in the paper (--partition, which counts the embedding and
# the LM head as entries). Bubble rate as Table 5 defines it: (pipeline time - m x (F + B) of
# a middle stage) / pipeline time. docs/native.md §2.3 shows the output.
# The last two columns put Table 4's throughputs as seconds per step (micro-batch x m / (p x
# samples per GPU per second)) and the seconds ZB saves, modelled and measured.
#   validation/zero_bubble/check.sh [ZEROSEARCH]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-$here/../../build/zerosearch}
run() { # model pp mbs m partition schedule -> "step pipeline F+B of stage 1", seconds
  "$bin" --node_type A100-80GB --num_node $(( $2 / 8 )) --gpu_per_node 8 \
    --type "$here/zb_gpt_$1.json" --custom_gbs $(( $3 * $4 )) --exhaustive --dp_method dp \
    --tp 1 --pp "$2" --dp 1 --mbs "$3" --partition "$5" --schedule "$6" |
    awk '/^step time/ {s = $3} /^  pipeline/ {p = $2} $1 == "1" && NF >= 9 && !t {t = $4 + $5}
         END {print s, p, t}'
}
even() { # entries per stage: the layers spread evenly, plus the embedding and LM head
  local pp=$1 layers=$2 out="" j
  for ((j = 0; j < pp; ++j)); do out+="${out:+,}$(( (layers + 2) / pp ))"; done
  echo "$out"
}
printf '| model | p | micro-batch | m | 1F1B s/step | ZB-H1 s/step | bubble 1F1B / ZB-H1 | Table 5 | gain | Table 5 gain | measured (Table 4) | Table 4 s/step 1F1B / ZB-1p | saved s/step, model / Table 4 |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|---|---|\n'
# model, layers, pp, micro-batch size, then per m:
# m:ZB-1p samples/GPU/s:1F1B samples/GPU/s:1F1B bubble rate:ZB-H1 bubble rate (Tables 4, 5).
while read -r model layers pp mbs rest; do
  part=$(even "$pp" "$layers")
  for cell in $rest; do
    IFS=: read -r m zb one r1 rz <<<"$cell"
    read -r a pa ta <<<"$(run "$model" "$pp" "$mbs" "$m" "$part" 1f1b)"
    read -r b pb tb <<<"$(run "$model" "$pp" "$mbs" "$m" "$part" zb-h1)"
    awk -v M="$model" -v p="$pp" -v s="$mbs" -v m="$m" -v a="$a" -v b="$b" -v pa="$pa" -v pb="$pb" \
      -v ta="$ta" -v tb="$tb" -v zb="$zb" -v one="$one" -v r1="$r1" -v rz="$rz" 'BEGIN {
        s1 = s * m / (p * one); sz = s * m / (p * zb)   # samples per GPU per second -> s/step
        printf "| %s | %d | %d | %d | %.4f | %.4f | %.3f / %.3f | %.3f / %.3f | %.1f %% | %.1f %% | %.1f %% | %.3f / %.3f | %.3f / %.3f |\n",
          M, p, s, m, a, b, (pa - m * ta) / pa, (pb - m * tb) / pb, r1, rz, 100 * (a / b - 1),
          100 * ((1 - rz) / (1 - r1) - 1), 100 * (zb / one - 1), s1, sz, a - b, s1 - sz }'
  done
done <<'TABLE'
1.5B 22 8 6 24:12.9:11.8:0.2431:0.1585 32:13.4:12.5:0.1985:0.1242 64:14.2:13.6:0.1240:0.0674
6.2B 30 8 3 24:3.88:3.50:0.2347:0.1323 32:4.00:3.70:0.1898:0.1045 64:4.20:4.03:0.1091:0.0554
14.6B 46 16 1 48:1.61:1.40:0.2552:0.1397 64:1.67:1.49:0.2082:0.1088 128:1.76:1.64:0.1251:0.0576
28.3B 62 32 1 96:0.87:0.76:0.2646:0.1421 128:0.90:0.80:0.2168:0.1106 256:0.96:0.88:0.1352:0.0594
TABLE
