# cmake -DZEROSEARCH=... -P run_progress.cmake                          (no terminal)
# cmake -DZEROSEARCH=... -DTERMINAL=ON -DSCRIPT=/usr/bin/script -P run_progress.cmake
# A search draws a progress bar when stderr is a terminal (run under script(1) for a
# pseudo-terminal). When it is not (issue 25 item 9) it writes a start line with the work and
# a progress line every ZEROSEARCH_PROGRESS_INTERVAL_MS (10 s by default; 0 here: every update);
# -q hides both. The bar normally waits one second; ZEROSEARCH_PROGRESS_DELAY_MS=0 shows it at
# once, so the test needs no long search. With TERMINAL and no script(1) it prints
# "SKIPPED: ..." first (the test's SKIP_REGULAR_EXPRESSION), so CTest reports it as skipped.
set(ENV{ZEROSEARCH_PROGRESS_DELAY_MS} 0)
set(args --node_type A10 A6000 --node_type_num_node 64 64 --custom_gbs 1024 -j 1
         --format csv --top 1)
if(NOT TERMINAL)
  set(ENV{ZEROSEARCH_PROGRESS_INTERVAL_MS} 0)
  execute_process(COMMAND "${ZEROSEARCH}" ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT err MATCHES "^zerosearch: searching [0-9]+ estimates \\([0-9]+ design points x 128 placements\\) on 1 thread, about [0-9]+ s; progress every 0 s on stderr \\(-q hides it\\)\n"
     OR NOT err MATCHES "\nzerosearch: progress: \\[[#.]+\\] +[0-9]+%  [0-9]+/[0-9]+ estimates")
    message(FATAL_ERROR "without a terminal, interval 0: exit ${rc}, stderr '${err}' (expected a start line and progress lines)")
  endif()
  execute_process(COMMAND "${ZEROSEARCH}" ${args} -q RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT err STREQUAL "")
    message(FATAL_ERROR "with -q: exit ${rc}, stderr '${err}' (expected empty)")
  endif()
  message("ok: a start line and progress lines without a terminal, nothing with -q")
  return()
endif()
unset(ENV{ZEROSEARCH_PROGRESS_INTERVAL_MS})
if(NOT SCRIPT)
  message("SKIPPED: script(1) not found (apt-get install bsdutils), so no terminal to draw on")
  return()
endif()
list(JOIN args " " joined)
execute_process(COMMAND "${SCRIPT}" -qec "'${ZEROSEARCH}' ${joined} > /dev/null" /dev/null
                RESULT_VARIABLE rc OUTPUT_VARIABLE tty)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "under script(1): exit ${rc}")
endif()
if(NOT tty MATCHES "estimates +[0-9]+/s +[0-9:]+ left")
  message(FATAL_ERROR "no progress bar on the terminal: '${tty}'")
endif()
string(ASCII 27 esc)
if(NOT tty MATCHES "\r${esc}\\[K")
  message(FATAL_ERROR "the progress bar is not erased at the end: '${tty}'")
endif()
message("ok: progress bar on a terminal, erased at the end")
