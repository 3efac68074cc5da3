# Runs scripts/measure_layers.py --tiny (CPU) and checks that zerosearch_layer_times reads the
# file it writes (the format the GPU measurements in validation/gpu/ are in). Prints
# "SKIPPED: ..." first (the test's SKIP_REGULAR_EXPRESSION, anchored) when no Python with
# PyTorch is found.
# Usage: cmake -DTOOL=... -DSCRIPT=... -DWORK=... -P run_measure_layers.cmake
include(${CMAKE_CURRENT_LIST_DIR}/find_python_torch.cmake)
if(python STREQUAL "")
  message("SKIPPED: no python3 with PyTorch (apt-get install python3-torch)")
  return()
endif()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
execute_process(COMMAND ${python} ${SCRIPT} --tiny --out ${WORK}/tiny.json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT EXISTS ${WORK}/tiny.json)
  message(FATAL_ERROR "measure_layers.py --tiny failed (${rc}):\n${out}\n${err}")
endif()
if(NOT out MATCHES "wrote .*tiny.json: 4 points")
  message(FATAL_ERROR "expected 4 points (2 tiny models x tp 1, 2):\n${out}")
endif()
execute_process(COMMAND ${TOOL} ${WORK}/tiny.json --points
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "zerosearch_layer_times rejected the file (${rc}):\n${out}\n${err}")
endif()
# A point whose backward the loaded CPU's timer noise hides is recorded as failed, not as a
# time; the tool counts it apart.
if(NOT out MATCHES "([1-4]) points measured on CPU [^\n]*, ([0-3]) failed")
  message(FATAL_ERROR "zerosearch_layer_times did not read the points:\n${out}")
endif()
math(EXPR total "${CMAKE_MATCH_1} + ${CMAKE_MATCH_2}")
if(NOT total EQUAL 4)
  message(FATAL_ERROR "expected 4 points, measured or failed:\n${out}")
endif()
message("ok: measure_layers.py --tiny wrote a file zerosearch_layer_times reads")
