# The examples' Debian packages (sourced by scripts/lib/common.sh): glslangValidator compiles
# staging-example-streaming's shaders from source at build time; zlib writes its PNG.
STAGING_DEBIAN_PACKAGES+=(glslang-tools zlib1g-dev)
