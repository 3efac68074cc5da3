# Sets `python` to the first of /usr/bin/python3 and python3 that imports torch, or to "" when
# neither does. Included by the script smoke tests (run_calibrate_gpu.cmake,
# run_measure_layers.cmake), which then skip.
set(python "")
foreach(candidate /usr/bin/python3 python3)
  execute_process(COMMAND ${candidate} -c "import torch" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
  if(rc EQUAL 0)
    set(python ${candidate})
    break()
  endif()
endforeach()
