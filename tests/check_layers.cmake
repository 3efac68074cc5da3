# Fails when a source or header includes a layer above its own (docs/ARCHITECTURE.md):
#   core <- model <- search <- io <- cli
# and when core, model or search do file or console I/O (only io and cli may).
# Usage: cmake -DROOT=<tree with src/ and include/zerosearch/> -P check_layers.cmake
set(layers core model search io cli)
set(io_patterns "<fstream>" "<iostream>" "<cstdio>" "nlohmann/json" "<filesystem>")
set(violations "")
foreach(own IN LISTS layers)
  list(FIND layers ${own} own_rank)
  file(GLOB_RECURSE files "${ROOT}/src/${own}/*.cpp" "${ROOT}/src/${own}/*.hpp"
                          "${ROOT}/include/zerosearch/${own}/*.hpp")
  foreach(file IN LISTS files)
    file(STRINGS "${file}" includes REGEX "^[ \t]*#[ \t]*include")
    foreach(line IN LISTS includes)
      if(line MATCHES "\"zerosearch/([a-z_]+)/")
        set(used ${CMAKE_MATCH_1})
        list(FIND layers ${used} used_rank)
        if(used_rank GREATER own_rank)
          string(APPEND violations "\n  ${file}: ${own} includes ${used}: ${line}")
        endif()
      endif()
      if(own_rank LESS 3)
        foreach(pattern IN LISTS io_patterns)
          string(FIND "${line}" "${pattern}" at)
          if(at GREATER -1)
            string(APPEND violations "\n  ${file}: ${own} does I/O: ${line}")
          endif()
        endforeach()
      endif()
    endforeach()
  endforeach()
endforeach()
# The estimator seam (docs/ARCHITECTURE.md, "Estimators"): above the model layer, no file reads
# an estimator's own data or calls its internals; they ask model/estimator.hpp and
# model/estimator_ops.hpp, one overload per estimator. Reaching past them: NativeContext, a
# context's `native` member, the native_* functions of model/native.hpp, or a comparison with
# Estimator::native.
set(seam_patterns
    "NativeContext"
    "(ctx|context)\\.native([^A-Za-z0-9_.]|$)"
    "(^|[^A-Za-z0-9_])native_(placement|estimate|invalid_reason|token_pipeline|pipe_run|partition|layer_settings)[ ]*\\("
    "Estimator::native")
foreach(own search io cli)
  file(GLOB_RECURSE files "${ROOT}/src/${own}/*.cpp" "${ROOT}/src/${own}/*.hpp"
                          "${ROOT}/include/zerosearch/${own}/*.hpp")
  foreach(file IN LISTS files)
    foreach(pattern IN LISTS seam_patterns)
      file(STRINGS "${file}" hits REGEX "${pattern}")
      foreach(hit IN LISTS hits)
        string(STRIP "${hit}" hit)
        string(APPEND violations "\n  ${file}: ${own} reaches past the estimator seam: ${hit}")
      endforeach()
    endforeach()
  endforeach()
endforeach()
if(violations)
  message(FATAL_ERROR "layering violations (a layer may include only itself and the layers below "
                      "it: core <- model <- search <- io <- cli):${violations}")
endif()
message(STATUS "layering: ok")
