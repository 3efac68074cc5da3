# cmake -DZEROSEARCH=<zerosearch> -DDOC=docs/usage.md -P check_usage_flags.cmake
# Every flag of `zerosearch --help` has a row in a flag table of docs/usage.md (a table row whose
# first cell names it, e.g. "| `--top N` | all rows | ... |"), and every flag those first cells
# name is one --help lists. A failure names each flag to document or to remove.
cmake_minimum_required(VERSION 3.20)
execute_process(COMMAND "${ZEROSEARCH}" --help RESULT_VARIABLE rc OUTPUT_VARIABLE help
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "zerosearch --help failed (${rc}): ${err}")
endif()

# --help: an option starts a line after two spaces ("  -f,--framework F   ..."); description
# lines, continued ones included, are indented further.
set(help_flags "")
set(section "Options")
# CMake lists split at ';' and group across '[' ... ']': neither may reach a list.
macro(listable var)
  string(REPLACE ";" "," ${var} "${${var}}")
  string(REPLACE "[" "(" ${var} "${${var}}")
  string(REPLACE "]" ")" ${var} "${${var}}")
endmacro()
listable(help)
# A section starts with an unindented line that ends in ':' ("Cluster and model:").
string(REGEX MATCHALL "\n[^\n]*" help_lines "\n${help}")
foreach(line IN LISTS help_lines)
  if(line MATCHES "^\n([A-Z][^\n]*):$")
    string(REGEX REPLACE " \\(.*" "" section "${CMAKE_MATCH_1}")
    continue()
  endif()
  if(NOT line MATCHES "^\n  (-[A-Za-z],)?--[a-z0-9_]+")
    continue()
  endif()
  string(REGEX MATCH "--[a-z0-9_]+" flag "${line}")
  set(section_${flag} "${section}")
  list(APPEND help_flags "${flag}")
  string(STRIP "${line}" line)
  string(REGEX REPLACE "  +" " " line "${line}")
  set(help_line_${flag} "${line}")
endforeach()
list(REMOVE_DUPLICATES help_flags)
list(LENGTH help_flags help_count)
if(help_count LESS 10)
  message(FATAL_ERROR "found only ${help_count} flags in zerosearch --help: has its layout "
                      "changed?\n${help}")
endif()

# docs/usage.md: the flags in the first cell of each table row.
file(READ "${DOC}" doc)
listable(doc)
string(REGEX MATCHALL "\n\\|[^\n]*" rows "\n${doc}")
set(doc_flags "")
foreach(row IN LISTS rows)
  # A cell may hold an escaped pipe (`on\|off`): the first cell ends at the first " | ".
  string(SUBSTRING "${row}" 1 -1 row) # the newline
  string(FIND "${row}" " | " end)
  if(end LESS 0)
    continue()
  endif()
  string(SUBSTRING "${row}" 0 ${end} first)
  string(REGEX MATCHALL "--[a-z0-9_]+" flags "${first}")
  list(APPEND doc_flags ${flags})
endforeach()
list(REMOVE_DUPLICATES doc_flags)

set(problems "")
foreach(flag IN LISTS help_flags)
  if(NOT flag IN_LIST doc_flags)
    string(APPEND problems "\n  ${flag} is not documented: add a row | `${flag} ...` | default "
                           "| meaning | to the flag table of docs/usage.md for the --help "
                           "section '${section_${flag}}' (--help: ${help_line_${flag}})")
  endif()
endforeach()
foreach(flag IN LISTS doc_flags)
  if(NOT flag IN_LIST help_flags)
    string(APPEND problems "\n  ${flag} is in a flag table of docs/usage.md but not in "
                           "zerosearch --help: remove or rename its row")
  endif()
endforeach()
if(NOT problems STREQUAL "")
  message(FATAL_ERROR "docs/usage.md and zerosearch --help disagree:${problems}")
endif()
message("ok: the ${help_count} flags of zerosearch --help all have a row in docs/usage.md")
