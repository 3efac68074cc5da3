#!/usr/bin/env bash
# Benchmark: builds a Release zerosearch, times the search in-process (zerosearch_bench: median
# of 7 runs per case, 1 thread and all cores), then the whole command line as a user runs it
# (hyperfine when installed: apt-get install hyperfine; else the median of 7 timed runs).
#   bench/run.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DZEROSEARCH_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target zerosearch zerosearch_bench >/dev/null

echo "== in-process search (enumerate + estimate + rank), $(nproc) cores"
"$build/zerosearch_bench" --runs 7

echo
echo "== the writers alone (CSV, JSON, table of the rows of one search, to /dev/null)"
"$build/zerosearch_bench" --runs 7 --case writers_gpus128
"$build/zerosearch_bench" --runs 5 --case writers_gpus1024_gbs1024

echo
echo "== whole command line, end to end (load data, search, rank, print summary)"
cases=(
  "--node_type A10 A6000 --node_type_num_node 16 16 --type llama2_13B -f d"
  "--node_type A10 A6000 --node_type_num_node 128 128 --type llama2_13B -f d"
  "--node_type A10 A6000 --node_type_num_node 16 16 --type llama2_13B -f d --search_method optimal"
  # issue 13's "full CSV" case: every row in the original's format, to the null device (the
  # tool's own cost) and to a file on this disk (adds the write, fsync and rename)
  "--node_type A10 A6000 --node_type_num_node 16 16 --type llama2_13B -f d -o /dev/null"
  "--node_type A10 A6000 --node_type_num_node 16 16 --type llama2_13B -f d -o $build/bench_g128.csv"
)
for args in "${cases[@]}"; do
  if command -v hyperfine >/dev/null; then
    hyperfine --warmup 2 --runs 10 --style basic -N "$build/zerosearch $args -q" 2>&1 | grep -E "Time|Range"
  else
    times=()
    for _ in 1 2 3 4 5 6 7; do
      s=$(date +%s.%N); "$build/zerosearch" $args -q; e=$(date +%s.%N)
      times+=("$(echo "$e - $s" | bc)")
    done
    printf '%s\n' "${times[@]}" | sort -n | sed -n 4p | xargs printf "zerosearch %s: median %.4f s\n" "$args"
  fi
  /usr/bin/time -f "  peak memory %M KB" "$build/zerosearch" $args -q 2>&1 | tail -1 || true
done
