# -DZEROSEARCH_SANITIZE=ON builds everything with ASan and UBSan; UBSan findings abort.
add_library(zerosearch_sanitizers INTERFACE)
if(ZEROSEARCH_SANITIZE)
  target_compile_options(zerosearch_sanitizers INTERFACE
    -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  target_link_options(zerosearch_sanitizers INTERFACE -fsanitize=address,undefined)
endif()
