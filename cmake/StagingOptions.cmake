# Compiler settings shared by the project's own targets (never forced on consumers).

# staging_target_defaults(<target>): warnings (and -Werror when STAGING_WERROR) for a target of
# this project.
function(staging_target_defaults target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
        -Woverloaded-virtual -Wcast-align -Wimplicit-fallthrough -Wmissing-declarations>)
    if(STAGING_WERROR)
      target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
    endif()
  endif()
endfunction()

if(STAGING_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=address,undefined)
endif()

# libFuzzer builds (STAGING_FUZZ, clang): the library code is instrumented for coverage too, so the
# fuzzer is guided by the branches of the code it tests, not only of the fuzz target's driver.
if(STAGING_FUZZ AND CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
endif()

# ThreadSanitizer: the C++ code of every target of this project (the CUDA test kernels, compiled
# by nvcc, stay uninstrumented). It cannot share a process with AddressSanitizer or libFuzzer's
# build, so it refuses to combine with STAGING_SANITIZE and STAGING_FUZZ. The tests that share
# state between threads carry the CTest label `threads` (scripts/test runs them in build-tsan/).
if(STAGING_TSAN)
  if(STAGING_SANITIZE OR STAGING_FUZZ)
    message(FATAL_ERROR "STAGING_TSAN=ON cannot be combined with STAGING_SANITIZE or STAGING_FUZZ "
      "(ThreadSanitizer and AddressSanitizer exclude each other): use a build directory of its own")
  endif()
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=thread> $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=thread)
endif()
