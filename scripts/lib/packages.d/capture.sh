# The capture tests' Debian packages (sourced by scripts/lib/common.sh): GFXReconstruct (its capture
# layer, gfxrecon-convert) captures vkcube (vulkan-tools, listed in vulkan.sh) and
# staging-example-streaming for staging-sim's --gfxr import; vkcube needs a display, which
# xvfb-run gives it (Xvfb and xauth).
STAGING_DEBIAN_PACKAGES+=(gfxreconstruct xvfb xauth)
