# The Vulkan backend's Debian packages (sourced by scripts/lib/common.sh): the headers (and the
# loader, loaded at run time), volk (the tests and tools load Vulkan through it), lavapipe (Mesa's
# CPU driver, the CI device), the Khronos validation layer (the tests enable it with
# synchronization validation in code), vulkaninfo.
STAGING_DEBIAN_PACKAGES+=(libvulkan-dev libvulkan-volk-dev mesa-vulkan-drivers
  vulkan-validationlayers vulkan-tools)
