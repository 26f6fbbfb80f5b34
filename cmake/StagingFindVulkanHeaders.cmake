# Defines Vulkan::Headers, from the Vulkan-Headers package's own config, else from CMake's
# FindVulkan; leaves it undefined when neither finds the headers. Included by the project (the
# backend, the destination fuzzer) and, installed next to stagingConfig.cmake, by the package's
# vulkan component (staging-vulkan.cmake), so that a consumer finds the headers as the build did.
if(NOT TARGET Vulkan::Headers)
  find_package(VulkanHeaders CONFIG QUIET)
endif()
if(NOT TARGET Vulkan::Headers)
  find_package(Vulkan QUIET)
endif()
