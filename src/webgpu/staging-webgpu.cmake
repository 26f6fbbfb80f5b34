# Component "webgpu" of the installed staging package (an Emscripten build), loaded by
# stagingConfig.cmake when asked for. staging::webgpu needs nothing found: WebGPU comes with
# Emscripten, and the target carries -sUSE_WEBGPU=1 in its link options. Consumers build with
# Emscripten's toolchain file. Sets _staging_missing_dependency outside Emscripten
# (stagingConfig.cmake loads the target otherwise).
if(NOT EMSCRIPTEN)
  set(_staging_missing_dependency "staging::webgpu is WebAssembly: build with Emscripten")
endif()
