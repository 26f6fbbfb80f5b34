# Installed next to stagingConfig.cmake: what staging::vulkan needs from its consumer's system.
include(CMakeFindDependencyMacro)
find_dependency(Vulkan)
