# Component "vulkan" of the installed staging package, loaded by stagingConfig.cmake when asked
# for: staging::vulkan needs the Vulkan headers (the Vulkan loader is loaded at run time). Sets
# _staging_missing_dependency when they are not found (stagingConfig.cmake loads the target
# otherwise).
include("${CMAKE_CURRENT_LIST_DIR}/StagingFindVulkanHeaders.cmake")
if(NOT TARGET Vulkan::Headers)
  set(_staging_missing_dependency "the Vulkan headers were not found (Vulkan::Headers)")
endif()
