# The Vulkan backend's Debian packages (sourced by scripts/lib/common.sh): the headers (and the
# loader, loaded at run time), volk (the tests and tools load Vulkan through it), lavapipe (Mesa's
# CPU driver, the CI device), the Khronos validation layer (the tests enable it with
# synchronization validation in code), vulkaninfo, and GFXReconstruct (its capture layer: a test
# runs the example with it enabled; captures of applications for staging-sim --gfxr).
STAGING_DEBIAN_PACKAGES+=(libvulkan-dev libvulkan-volk-dev mesa-vulkan-drivers
  vulkan-validationlayers vulkan-tools gfxreconstruct)
