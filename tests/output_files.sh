#!/usr/bin/env bash
# Output files by file type (io/output_file.hpp), end to end with the real binary, each case in
# a scratch folder: devices, FIFOs and symlinks are written through or followed, never
# replaced; modes and hard links survive; unwritable files are errors; an interrupted write
# leaves no temporary file and ends with the signal's status; non-root cases run as nobody.
# The cases that need root (a device node of our own, running as nobody) are a part of their
# own: `output_files.sh ZEROSEARCH WORK_DIR root` exits 77 (the test's SKIP_RETURN_CODE, CTest
# reports it as skipped) when it cannot run them.
# Usage: output_files.sh ZEROSEARCH WORK_DIR [root]
set -u
Z=$1
WORK=$2
PART=${3:-}
if [ "$PART" = root ] && { [ "$(id -u)" -ne 0 ] || ! command -v setpriv > /dev/null; }; then
  echo "skipped: the root cases need root and setpriv (to make a device node, to become nobody)"
  exit 77
fi
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
chmod 755 "$WORK"
failures=0
pass() { echo "ok   $1"; }
fail() { echo "FAIL $1"; failures=$((failures + 1)); }
check() { local name=$1; shift; if "$@"; then pass "$name"; else fail "$name"; fi; }
no_temp_files() { [ -z "$(find . -name '.*.tmp.*' -print -quit)" ]; }
SMALL=(--node_type A10 --num_node 8 --type llama2_13B -q)

if [ "$PART" = root ]; then
  # A character device: written through, never replaced. A node of our own.
  mknod null_dev c 1 3 && chmod 666 null_dev
  "$Z" "${SMALL[@]}" -o null_dev
  check "device node still a character device" [ -c null_dev ]
  check "device written without a sidecar" [ ! -e null_dev.json ]

  # Not root: a read-only file owned by someone else, in a folder anyone may write.
  mkdir -p shared && chmod 1777 shared
  echo "theirs" > shared/theirs.csv && chmod 644 shared/theirs.csv
  as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
  as_nobody "$Z" "${SMALL[@]}" -o shared/theirs.csv 2> err.txt
  check "nobody: read-only file is an error" [ $? -eq 2 ]
  check "nobody: the message says not writable" grep -q "not writable" err.txt
  check "nobody: the file is unchanged" [ "$(cat shared/theirs.csv)" = theirs ]
  as_nobody "$Z" "${SMALL[@]}" -o /dev/stdout > stdout.txt
  check "nobody: -o /dev/stdout works" grep -q '^m,mbs' stdout.txt
  if [ $failures -ne 0 ]; then
    echo "$failures failed"
    exit 1
  fi
  echo "all root output file cases passed"
  exit 0
fi

# A regular file: replaced atomically, mode kept, sidecar written.
echo old > mode600.csv && chmod 600 mode600.csv
"$Z" "${SMALL[@]}" -o mode600.csv
check "mode 600 kept" [ "$(stat -c %a mode600.csv)" = 600 ]
check "regular file replaced with the CSV" grep -q '^m,mbs,tp,pp,dp' mode600.csv
check "sidecar written" grep -q '"command"' mode600.csv.json
check "no temporary file after a write" no_temp_files

# A hard link: both names see the new content.
echo old > h1.csv && ln h1.csv h2.csv
"$Z" "${SMALL[@]}" -o h1.csv
check "hard link kept" [ "$(stat -c %i h1.csv)" = "$(stat -c %i h2.csv)" ]
check "hard link sees the new content" grep -q '^m,mbs' h2.csv

# A symlink: followed, the target replaced, the link kept.
echo old > target.csv && ln -s target.csv link.csv
"$Z" "${SMALL[@]}" -o link.csv
check "symlink still a symlink" [ -L link.csv ]
check "symlink target written" grep -q '^m,mbs' target.csv

# A FIFO: written through.
mkfifo pipe.csv
(cat pipe.csv > from_pipe.txt) &
reader=$!
"$Z" "${SMALL[@]}" -o pipe.csv
wait $reader
check "FIFO still a FIFO" [ -p pipe.csv ]
check "FIFO carried the CSV" grep -q '^m,mbs' from_pipe.txt

"$Z" "${SMALL[@]}" -o /dev/null
check "/dev/null still a character device" [ -c /dev/null ]

# A missing folder: an error, nothing created.
"$Z" "${SMALL[@]}" -o no_such_folder/x.csv 2> err.txt
rc=$?
check "missing folder: exit 2" [ $rc -eq 2 ]
check "missing folder: says so" grep -q "folder 'no_such_folder' does not exist" err.txt
check "missing folder: not created" [ ! -e no_such_folder ]

# --no_clobber and the replace note.
mkdir -p logs
"$Z" "${SMALL[@]}" --record
"$Z" --node_type A10 --num_node 8 --type llama2_13B --record 2> note.txt > /dev/null
check "replacing a record file says so" grep -q "note: replaced the existing record file logs/" note.txt
"$Z" "${SMALL[@]}" --record --no_clobber 2> err.txt
check "--no_clobber refuses to replace" [ $? -eq 2 ]
check "--no_clobber names the file" grep -q "exists and --no_clobber is set" err.txt

# Two outputs to one file.
"$Z" --pareto --node_type A10 A6000 --num_node 1 -f d -q -o same.svg --plot same.svg 2> err.txt
check "-o and --plot on one file: exit 2" [ $? -eq 2 ]
check "-o and --plot on one file: nothing written" [ ! -e same.svg ]

# An interrupted write: a real signal while a large CSV is being written. Job control on, so
# that the background run does not start with SIGINT ignored, as a terminal's Ctrl-C finds it.
set -m
for sig in INT TERM HUP; do
  "$Z" --node_type A10 A6000 --node_type_num_node 256 256 --custom_gbs 512 -q -o big.csv &
  pid=$!
  # Wait for the write to begin (the search before it is slow under the sanitizers).
  for _ in $(seq 1 6000); do
    [ -n "$(find . -name '.big.csv.tmp.*' -print -quit)" ] && break
    sleep 0.01
  done
  kill -$sig $pid
  wait $pid
  rc=$?
  check "SIG$sig during the write: exit status $((128 + $(kill -l $sig)))" [ $rc -eq $((128 + $(kill -l $sig))) ]
  check "SIG$sig during the write: no temporary file left" no_temp_files
  check "SIG$sig during the write: no half CSV" [ ! -e big.csv ]
done
set +m

if [ $failures -ne 0 ]; then
  echo "$failures failed"
  exit 1
fi
echo "all output file cases passed"
