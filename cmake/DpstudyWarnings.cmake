# Warnings for our own targets only; LibTorch's headers are included as system headers.
# -Wundef: an `#if DPSTUDY_CUDA` (or TORCH_VERSION_MAJOR) in a file that lacks
# dpstudy/config.hpp (or torch/version.h) reads 0 without it, and silently takes
# the other branch: a CUDA build would compile its CPU-only half.
function(dpstudy_warnings target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wundef)
    if(DPSTUDY_WARNINGS_AS_ERRORS)
      target_compile_options(${target} PRIVATE -Werror)
    endif()
  endif()
endfunction()
