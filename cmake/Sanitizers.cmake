# -DZEROSEARCH_SANITIZE=ON builds everything with ASan and UBSan; UBSan findings abort.
# -DZEROSEARCH_SANITIZE_THREAD=ON builds everything with ThreadSanitizer (the search's worker
# threads); it cannot be combined with ASan.
add_library(zerosearch_sanitizers INTERFACE)
if(ZEROSEARCH_SANITIZE AND ZEROSEARCH_SANITIZE_THREAD)
  message(FATAL_ERROR "ZEROSEARCH_SANITIZE (ASan) and ZEROSEARCH_SANITIZE_THREAD (TSan) "
                      "cannot be combined: use separate build folders (presets asan and tsan)")
endif()
if(ZEROSEARCH_SANITIZE)
  target_compile_options(zerosearch_sanitizers INTERFACE
    -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  target_link_options(zerosearch_sanitizers INTERFACE -fsanitize=address,undefined)
  # GCC's -Wmaybe-uninitialized reports false positives in libstdc++ (std::regex, std::function)
  # once ASan instruments the code; the release build keeps the warning.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(zerosearch_sanitizers INTERFACE -Wno-maybe-uninitialized)
  endif()
endif()
if(ZEROSEARCH_SANITIZE_THREAD)
  target_compile_options(zerosearch_sanitizers INTERFACE -fsanitize=thread -fno-omit-frame-pointer)
  target_link_options(zerosearch_sanitizers INTERFACE -fsanitize=thread)
  # GCC 12 reports a -Wnull-dereference false positive in libstdc++'s std::string move, inlined
  # into CLI11's CLI::detail::split, once TSan instruments the code; the other builds keep it.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(zerosearch_sanitizers INTERFACE -Wno-null-dereference)
  endif()
endif()
