# The Vulkan backend's Debian packages (sourced by scripts/lib/common.sh): headers and loader,
# lavapipe (Mesa's CPU driver, the CI device), the Khronos validation layer (the tests enable it
# with synchronization validation in code), vulkaninfo. Already in the common list too.
STAGING_DEBIAN_PACKAGES+=(libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers vulkan-tools)
