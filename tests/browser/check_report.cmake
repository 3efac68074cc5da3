# cmake -DZEROSEARCH=... -DSCRIPT=check_report.js -DWORK=dir "-DARGS=..." [-DPARTS=a2a,cp]
#   -P check_report.cmake
# Writes an HTML report with zerosearch and checks it in headless Chromium. Prints "SKIPPED: ..."
# first (the test's SKIP_REGULAR_EXPRESSION, anchored) when chromium or node is missing.
find_program(CHROMIUM NAMES chromium chromium-browser google-chrome)
find_program(NODE NAMES node nodejs)
if(NOT CHROMIUM OR NOT NODE)
  message("SKIPPED: the browser test needs chromium and node (apt-get install chromium nodejs)")
  return()
endif()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
separate_arguments(arg_list UNIX_COMMAND "${ARGS}")
execute_process(COMMAND "${ZEROSEARCH}" ${arg_list} --html report.html -q WORKING_DIRECTORY "${WORK}"
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "zerosearch failed (${rc}): ${err}")
endif()
execute_process(COMMAND "${NODE}" "${SCRIPT}" "${CHROMIUM}" "${WORK}/report.html" "${WORK}/profile"
                        0 "${PARTS}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 90)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "browser check failed (${rc})\n${err}")
endif()
