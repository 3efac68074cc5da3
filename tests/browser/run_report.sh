#!/bin/sh
# run_report.sh ZEROSEARCH CHECK_REPORT_JS WORK LOAD_LIMIT_MS ARGS...
# Writes an HTML report of ARGS with zerosearch into WORK and checks it in headless Chromium
# (check_report.js), the page's load within LOAD_LIMIT_MS. Exits 77 (CTest SKIP_RETURN_CODE),
# saying "skipped", when chromium or node is missing.
set -u
zerosearch=$1 script=$2 work=$3 limit=$4
shift 4
chromium=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
node=$(command -v node || command -v nodejs || true)
if [ -z "$chromium" ] || [ -z "$node" ]; then
  echo "skipped: the browser test needs chromium and node (apt-get install chromium nodejs)"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work" || exit 1
"$zerosearch" "$@" --html "$work/report.html" -q || { echo "zerosearch failed"; exit 1; }
echo "report: $(wc -c <"$work/report.html") bytes"
exec "$node" "$script" "$chromium" "$work/report.html" "$work/profile" "$limit"
