# cmake -DTESTS=<zerosearch_tests> -DCTEST=<ctest> -DBUILD=<build dir> -P check_unit_count.cmake
# Every Catch2 test case is one CTest entry, and every entry that runs zerosearch_tests fails
# when its name matches no test case. A case whose name CTest splits (at a ';') would otherwise
# become two entries that match nothing, print "No tests ran" and pass.
cmake_minimum_required(VERSION 3.20)
execute_process(COMMAND "${TESTS}" --list-test-names-only RESULT_VARIABLE rc
                OUTPUT_VARIABLE names ERROR_VARIABLE err)
# --list-test-names-only exits with the number of test cases it listed.
if(rc LESS_EQUAL 0)
  message(FATAL_ERROR "${TESTS} --list-test-names-only listed no test case (exit ${rc}): ${err}")
endif()
string(REGEX MATCHALL "[^\n]*;[^\n]*" split_names "${names}")
if(split_names)
  string(REPLACE ";" "\\;" split_names "${split_names}")
  message(FATAL_ERROR "test case names with ';', which CTest splits into two entries that run "
                      "nothing (rename them): ${split_names}")
endif()
# Brackets group CMake list items; CatchAddTests escapes them, so they may stay in names.
string(REPLACE "[" "(" listable_names "${names}")
string(REPLACE "]" ")" listable_names "${listable_names}")
string(REGEX MATCHALL "[^\n]+" name_lines "${listable_names}")
list(LENGTH name_lines cases)
# A name that Catch2 reads as a pattern would run other cases, or none, under its own entry:
# '~' first (negation), '*' first or last (wildcard), a backslash (escape).
set(pattern_names "")
foreach(name IN LISTS name_lines)
  if(name MATCHES "^[~*]|[*]$|[\\]")
    list(APPEND pattern_names "'${name}'")
  endif()
endforeach()
if(pattern_names)
  message(FATAL_ERROR "test case names Catch2 reads as patterns (rename them): ${pattern_names}")
endif()

execute_process(COMMAND "${CTEST}" --test-dir "${BUILD}" --show-only=json-v1 RESULT_VARIABLE rc
                OUTPUT_VARIABLE json ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ctest --show-only=json-v1 failed (${rc}): ${err}")
endif()
string(JSON tests GET "${json}" tests)
string(JSON total LENGTH "${tests}")
set(entries 0)
set(without_no_tests "")
set(sample "")
math(EXPR last "${total} - 1")
foreach(i RANGE ${last})
  string(JSON test GET "${tests}" ${i})
  string(JSON program GET "${test}" command 0)
  if(NOT program STREQUAL TESTS)
    continue()
  endif()
  math(EXPR entries "${entries} + 1")
  string(JSON command GET "${test}" command)
  if(NOT command MATCHES "\"-w\",[ \n]*\"NoTests\"")
    string(JSON name GET "${test}" name)
    list(APPEND without_no_tests "${name}")
  endif()
  if(sample STREQUAL "")
    string(JSON sample GET "${test}" name)
  endif()
endforeach()
if(without_no_tests)
  message(FATAL_ERROR "CTest entries that pass when their name matches nothing (no -w NoTests): "
                      "${without_no_tests}")
endif()
if(NOT entries EQUAL cases)
  message(FATAL_ERROR "${cases} Catch2 test cases but ${entries} CTest entries run them: "
                      "re-run the build (test discovery) or look for names CTest splits")
endif()

# The option really fails a run whose name matches nothing.
execute_process(COMMAND "${TESTS}" "no test case has this name" -w NoTests RESULT_VARIABLE rc
                OUTPUT_QUIET ERROR_QUIET)
if(rc EQUAL 0)
  message(FATAL_ERROR "a run with -w NoTests and a name that matches nothing passed")
endif()
message("ok: ${cases} Catch2 test cases, ${entries} CTest entries, each fails on an empty match "
        "(e.g. '${sample}')")
