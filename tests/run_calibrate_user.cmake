# zerosearch_calibrate fits a GPU from one profile file and writes a calibration file;
# zerosearch --calibration FILE then searches another model on that GPU with it.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
execute_process(COMMAND ${CALIBRATE} --holdout -o ${WORK}/mine.json ${PROFILE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT EXISTS ${WORK}/mine.json)
  message(FATAL_ERROR "zerosearch_calibrate failed (${rc}):\n${out}\n${err}")
endif()
foreach(re "A6000: e_max" "leave tp 4 out: max error" "worst fitted point: [0-9.]+ %")
  if(NOT out MATCHES "${re}")
    message(FATAL_ERROR "output does not match '${re}':\n${out}")
  endif()
endforeach()
execute_process(COMMAND ${ZEROSEARCH} --estimator zerosearch --calibration ${WORK}/mine.json --node_type A6000
                        --type gpt2XL --top 1
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT err MATCHES "A6000: analytic profile of gpt2XL \\(calibrated, fit of 9")
  message(FATAL_ERROR "zerosearch did not use the calibration (${rc}):\n${out}\n${err}")
endif()
message("ok")
