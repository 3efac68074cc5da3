# Project-wide warnings, applied through an interface target so that third-party headers
# (found as system includes) stay quiet.
add_library(zerosearch_warnings INTERFACE)
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  target_compile_options(zerosearch_warnings INTERFACE
    -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion -Wold-style-cast
    -Wnon-virtual-dtor -Wcast-align -Wunused -Woverloaded-virtual -Wnull-dereference
    -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough
    # Every switch over an enum names every value, default or not: a new row of a table
    # (schedules, formats, columns, methods) fails to compile where its own code is missing.
    -Wswitch-enum)
  if(ZEROSEARCH_WARNINGS_AS_ERRORS)
    target_compile_options(zerosearch_warnings INTERFACE -Werror)
  endif()
endif()
# GCC 12 reports -Wrestrict false positives inside std::string concatenation at -O3 (GCC bug
# 105329); they are not in our code.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12
   AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(zerosearch_warnings INTERFACE -Wno-restrict)
endif()
