# Runs scripts/calibrate_gpu.py --tiny (CPU) and checks that zerosearch accepts the file it
# writes and searches with it as a calibrated analytic GPU. Prints "SKIPPED: ..." first (the
# test's SKIP_REGULAR_EXPRESSION, anchored: a failure's output never starts with it) when no
# Python with PyTorch is found.
# Usage: cmake -DZEROSEARCH=... -DSCRIPT=... -DWORK=... -P run_calibrate_gpu.cmake
include(${CMAKE_CURRENT_LIST_DIR}/find_python_torch.cmake)
if(python STREQUAL "")
  message("SKIPPED: no python3 with PyTorch (apt-get install python3-torch)")
  return()
endif()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
execute_process(COMMAND ${python} ${SCRIPT} --tiny --name TinyCPU --price_per_gpu_hour 0.1
                        --out ${WORK}/tiny.json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT EXISTS ${WORK}/tiny.json)
  message(FATAL_ERROR "calibrate_gpu.py --tiny failed (${rc}):\n${out}\n${err}")
endif()
if(NOT out MATCHES "all-reduce: skipped")
  message(FATAL_ERROR "expected the all-reduce to be skipped on CPU:\n${out}")
endif()
execute_process(COMMAND ${ZEROSEARCH} --estimator zerosearch --hardware ${WORK}/tiny.json --node_type tinycpu
                        --gpu_per_node 1 --num_node 2 --type gpt2XL --top 1
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "zerosearch rejected the file (${rc}):\n${out}\n${err}")
endif()
if(NOT out MATCHES "profiles: analytic \\(calibrated\\)" OR NOT err MATCHES "TinyCPU: analytic profile of gpt2XL \\(calibrated, benchmark calibrate_gpu.py")
  message(FATAL_ERROR "zerosearch did not use the benchmark calibration:\n${out}\n${err}")
endif()
message("ok: calibrate_gpu.py --tiny wrote a file zerosearch searches with")
