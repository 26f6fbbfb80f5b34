# Component "webgpu" of the installed staging package (an Emscripten build), loaded by
# stagingConfig.cmake when asked for. staging::webgpu needs nothing found: WebGPU comes with
# Emscripten, and the target carries -sUSE_WEBGPU=1 in its link options. Consumers build with
# Emscripten's toolchain file.
if(NOT EMSCRIPTEN)
  set(staging_webgpu_FOUND FALSE)
  set(staging_webgpu_NOT_FOUND_REASON "staging::webgpu is WebAssembly: build with Emscripten")
  return()
endif()
include("${CMAKE_CURRENT_LIST_DIR}/staging-webgpu-targets.cmake")
set(staging_webgpu_FOUND TRUE)
