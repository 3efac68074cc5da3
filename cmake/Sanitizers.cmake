# -DZEROSEARCH_SANITIZE=ON builds everything with ASan and UBSan; UBSan findings abort.
add_library(zerosearch_sanitizers INTERFACE)
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
