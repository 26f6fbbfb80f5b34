# staging::webgpu (installed from the Emscripten sub-build) needs nothing found: WebGPU comes with
# Emscripten itself, and the target carries -sUSE_WEBGPU=1 in its link options. Consumers build
# with Emscripten's toolchain file.
