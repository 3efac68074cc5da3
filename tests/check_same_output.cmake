# cmake -DZEROSEARCH=... "-DARGS_A=..." "-DARGS_B=..." -DWORK=dir -P check_same_output.cmake
# Runs zerosearch twice (each writing -o out.csv in its own folder) and fails unless both
# succeed and write the same bytes: for reproducibility checks (same seed, any thread count).
file(REMOVE_RECURSE "${WORK}")
foreach(run A B)
  file(MAKE_DIRECTORY "${WORK}/${run}")
  separate_arguments(arg_list UNIX_COMMAND "${ARGS_${run}}")
  execute_process(COMMAND "${ZEROSEARCH}" ${arg_list} -q -o out.csv WORKING_DIRECTORY "${WORK}/${run}"
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "zerosearch ${ARGS_${run}} failed (${rc}): ${err}")
  endif()
endforeach()
file(SHA256 "${WORK}/A/out.csv" a)
file(SHA256 "${WORK}/B/out.csv" b)
if(NOT a STREQUAL b)
  message(FATAL_ERROR "outputs differ:\n  ${ARGS_A}\n  ${ARGS_B}")
endif()
