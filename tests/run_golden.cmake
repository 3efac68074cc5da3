# cmake -DZEROSEARCH=... -DCHECK=... -DREFERENCE=... -DARGS="..." -DWORK=... [-DPARETO=ON] -P run_golden.cmake
# Runs zerosearch with a golden case's arguments in a fresh folder, writing the ranked CSV with
# --record, and compares the file it wrote under logs/ with the reference.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
separate_arguments(arg_list UNIX_COMMAND "${ARGS}")
execute_process(COMMAND "${ZEROSEARCH}" ${arg_list} --record -q
                WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "zerosearch ${ARGS} failed (${rc}): ${err}")
endif()
file(GLOB written "${WORK}/logs/*.csv")
list(LENGTH written n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected one CSV under logs/, found: ${written}")
endif()
set(extra "")
if(PARETO)
  set(extra "--pareto")
endif()
execute_process(COMMAND "${CHECK}" "${REFERENCE}" ${written} ${extra}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "golden comparison failed")
endif()
