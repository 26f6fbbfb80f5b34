#include "example_device.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace example {

namespace {

int g_messages = 0;

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  const std::string_view id = data->pMessageIdName ? data->pMessageIdName : "";
  // The loader's and the layer's own status notes are not findings.
  if (severity <= VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT &&
      (id == "Loader Message" ||
       id == "UNASSIGNED-khronos-validation-createinstance-status-message"))
    return VK_FALSE;
  ++g_messages;
  std::fprintf(stderr, "validation: %s\n", data->pMessage ? data->pMessage : "");
  return VK_FALSE;
}

bool has_layer(const char* name) {
  uint32_t n = 0;
  vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  vkEnumerateInstanceLayerProperties(&n, layers.data());
  return std::any_of(layers.begin(), layers.end(), [&](const VkLayerProperties& l) {
    return std::strcmp(l.layerName, name) == 0;
  });
}

constexpr const char* kLayer = "VK_LAYER_KHRONOS_validation";

}  // namespace

Device::Device() {
  const char* mode = std::getenv("STAGING_VULKAN_VALIDATION");
  validation_ = has_layer(kLayer) && !(mode && std::string_view(mode) == "off");
  const VkValidationFeatureEnableEXT sync =
      VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
  const VkValidationFeaturesEXT features{.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
                                         .enabledValidationFeatureCount = 1,
                                         .pEnabledValidationFeatures = &sync};
  VkDebugUtilsMessengerCreateInfoEXT messenger{
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
      .pNext = &features,
      .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
      .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
      .pfnUserCallback = on_message};
  const char* extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME,
                              VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME};
  const VkApplicationInfo app{.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                              .pApplicationName = "staging-example-vulkan",
                              .apiVersion = VK_API_VERSION_1_3};
  const VkInstanceCreateInfo instance_info{.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                           .pNext = validation_ ? &messenger : nullptr,
                                           .pApplicationInfo = &app,
                                           .enabledLayerCount = validation_ ? 1u : 0u,
                                           .ppEnabledLayerNames = &kLayer,
                                           .enabledExtensionCount = validation_ ? 2u : 0u,
                                           .ppEnabledExtensionNames = extensions};
  if (vkCreateInstance(&instance_info, nullptr, &instance_) != VK_SUCCESS) {
    instance_ = VK_NULL_HANDLE;
    why_ = "no Vulkan driver";
    return;
  }
  if (validation_) {
    messenger.pNext = nullptr;
    const auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
    if (create) create(instance_, &messenger, nullptr, &messenger_);
  }

  // The first device (discrete GPUs first) with Vulkan 1.3, timeline semaphores and
  // synchronization2; STAGING_VULKAN_DEVICE=<part of the name> picks another.
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance_, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  vkEnumeratePhysicalDevices(instance_, &count, devices.data());
  const char* want = std::getenv("STAGING_VULKAN_DEVICE");
  std::stable_sort(devices.begin(), devices.end(), [](VkPhysicalDevice a, VkPhysicalDevice b) {
    VkPhysicalDeviceProperties pa, pb;
    vkGetPhysicalDeviceProperties(a, &pa);
    vkGetPhysicalDeviceProperties(b, &pb);
    return (pa.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) >
           (pb.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU);
  });
  for (VkPhysicalDevice d : devices) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(d, &p);
    if (p.apiVersion < VK_API_VERSION_1_3) continue;
    if (want && std::string_view(p.deviceName).find(want) == std::string_view::npos) continue;
    VkPhysicalDeviceVulkan13Features v13{.sType =
                                             VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
    VkPhysicalDeviceVulkan12Features v12{
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, .pNext = &v13};
    VkPhysicalDeviceFeatures2 f2{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                 .pNext = &v12};
    vkGetPhysicalDeviceFeatures2(d, &f2);
    if (v12.timelineSemaphore && v13.synchronization2) {
      physical_ = d;
      properties_ = p;
      break;
    }
  }
  if (physical_ == VK_NULL_HANDLE) {
    why_ = "no Vulkan 1.3 device with timeline semaphores and synchronization2";
    return;
  }
  uint32_t family_count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical_, &family_count, nullptr);
  std::vector<VkQueueFamilyProperties> families(family_count);
  vkGetPhysicalDeviceQueueFamilyProperties(physical_, &family_count, families.data());
  uint32_t family = 0;
  while (family < family_count && (families[family].queueFlags & VK_QUEUE_GRAPHICS_BIT) == 0)
    ++family;
  const float priority = 1.0f;
  const VkDeviceQueueCreateInfo queue_info{.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                           .queueFamilyIndex = family,
                                           .queueCount = 1,
                                           .pQueuePriorities = &priority};
  VkPhysicalDeviceVulkan13Features v13{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES, .synchronization2 = VK_TRUE};
  VkPhysicalDeviceVulkan12Features v12{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
      .pNext = &v13,
      .timelineSemaphore = VK_TRUE};
  const VkDeviceCreateInfo device_info{.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                                       .pNext = &v12,
                                       .queueCreateInfoCount = 1,
                                       .pQueueCreateInfos = &queue_info};
  if (family == family_count ||
      vkCreateDevice(physical_, &device_info, nullptr, &device_) != VK_SUCCESS) {
    device_ = VK_NULL_HANDLE;
    why_ = "vkCreateDevice failed";
    return;
  }
  vkGetDeviceQueue(device_, family, 0, &queue_);
  const VkCommandPoolCreateInfo pool_info{.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                          .queueFamilyIndex = family};
  vkCreateCommandPool(device_, &pool_info, nullptr, &pool_);
  submit2_ = reinterpret_cast<PFN_vkQueueSubmit2>(vkGetDeviceProcAddr(device_, "vkQueueSubmit2"));
  barrier2_ = reinterpret_cast<PFN_vkCmdPipelineBarrier2>(
      vkGetDeviceProcAddr(device_, "vkCmdPipelineBarrier2"));
}

Device::~Device() {
  if (device_ != VK_NULL_HANDLE) {
    vkDeviceWaitIdle(device_);
    vkDestroyCommandPool(device_, pool_, nullptr);
    vkDestroyDevice(device_, nullptr);
  }
  if (messenger_ != VK_NULL_HANDLE) {
    const auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(instance_, messenger_, nullptr);
  }
  if (instance_ != VK_NULL_HANDLE) vkDestroyInstance(instance_, nullptr);
}

std::string Device::describe() const {
  const char* type = properties_.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ? "discrete GPU"
                     : properties_.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU
                         ? "integrated GPU"
                     : properties_.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? "CPU"
                                                                             : "other";
  char line[400];
  std::snprintf(line, sizeof line, "%s (%s, Vulkan %u.%u.%u), validation %s",
                properties_.deviceName, type, VK_API_VERSION_MAJOR(properties_.apiVersion),
                VK_API_VERSION_MINOR(properties_.apiVersion),
                VK_API_VERSION_PATCH(properties_.apiVersion),
                validation_ ? "on (with synchronization validation)" : "off");
  return line;
}

int Device::validation_messages() const {
  return g_messages;
}

staging::vulkan::Device Device::staging_device() const {
  return {physical_, device_, staging::vulkan::Dispatch::from_loader(instance_, device_)};
}

uint32_t Device::memory_type(uint32_t bits, VkMemoryPropertyFlags want) {
  VkPhysicalDeviceMemoryProperties props;
  vkGetPhysicalDeviceMemoryProperties(physical_, &props);
  for (uint32_t i = 0; i < props.memoryTypeCount; ++i) {
    if ((bits & (1u << i)) && (props.memoryTypes[i].propertyFlags & want) == want) return i;
  }
  for (uint32_t i = 0; i < props.memoryTypeCount; ++i) {
    if (bits & (1u << i)) return i;
  }
  return 0;
}

Buffer Device::make_buffer(uint64_t size, VkBufferUsageFlags usage, bool host_visible) {
  Buffer b;
  const VkBufferCreateInfo info{.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                                .size = size,
                                .usage = usage,
                                .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
  vkCreateBuffer(device_, &info, nullptr, &b.buffer);
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device_, b.buffer, &req);
  const VkMemoryAllocateInfo alloc{
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
      .allocationSize = req.size,
      .memoryTypeIndex =
          memory_type(req.memoryTypeBits, host_visible ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                             VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                                                       : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)};
  vkAllocateMemory(device_, &alloc, nullptr, &b.memory);
  vkBindBufferMemory(device_, b.buffer, b.memory, 0);
  if (host_visible) {
    void* p = nullptr;
    vkMapMemory(device_, b.memory, 0, VK_WHOLE_SIZE, 0, &p);
    b.mapped = static_cast<std::byte*>(p);
  }
  return b;
}

Image Device::make_texture(VkFormat format, uint32_t width, uint32_t height, uint32_t mips) {
  Image img;
  const VkImageCreateInfo info{.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
                               .imageType = VK_IMAGE_TYPE_2D,
                               .format = format,
                               .extent = {width, height, 1},
                               .mipLevels = mips,
                               .arrayLayers = 1,
                               .samples = VK_SAMPLE_COUNT_1_BIT,
                               .tiling = VK_IMAGE_TILING_OPTIMAL,
                               .usage = VK_IMAGE_USAGE_SAMPLED_BIT |
                                        VK_IMAGE_USAGE_TRANSFER_DST_BIT |
                                        VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                               .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
                               .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED};
  vkCreateImage(device_, &info, nullptr, &img.image);
  VkMemoryRequirements req;
  vkGetImageMemoryRequirements(device_, img.image, &req);
  const VkMemoryAllocateInfo alloc{
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
      .allocationSize = req.size,
      .memoryTypeIndex = memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)};
  vkAllocateMemory(device_, &alloc, nullptr, &img.memory);
  vkBindImageMemory(device_, img.image, img.memory, 0);
  return img;
}

void Device::destroy(Buffer& b) {
  vkDestroyBuffer(device_, b.buffer, nullptr);
  vkFreeMemory(device_, b.memory, nullptr);
  b = {};
}

void Device::destroy(Image& img) {
  vkDestroyImage(device_, img.image, nullptr);
  vkFreeMemory(device_, img.memory, nullptr);
  img = {};
}

VkCommandBuffer Device::begin_commands() {
  const VkCommandBufferAllocateInfo info{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                         .commandPool = pool_,
                                         .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                         .commandBufferCount = 1};
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  vkAllocateCommandBuffers(device_, &info, &cmd);
  const VkCommandBufferBeginInfo begin{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                       .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
  vkBeginCommandBuffer(cmd, &begin);
  return cmd;
}

void Device::submit(VkCommandBuffer cmd, const VkSemaphoreSubmitInfo& signal) {
  vkEndCommandBuffer(cmd);
  const VkCommandBufferSubmitInfo cmd_info{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
                                           .commandBuffer = cmd};
  const VkSubmitInfo2 submit{.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO_2,
                             .commandBufferInfoCount = 1,
                             .pCommandBufferInfos = &cmd_info,
                             .signalSemaphoreInfoCount = 1,
                             .pSignalSemaphoreInfos = &signal};
  submit2_(queue_, 1, &submit, VK_NULL_HANDLE);
}

void Device::free_commands(VkCommandBuffer cmd) {
  vkFreeCommandBuffers(device_, pool_, 1, &cmd);
}

void Device::record_readback(VkCommandBuffer cmd, VkBuffer src, uint64_t size, VkBuffer dst) {
  // The frame made the vertex data visible to vertex input; chain on to the copy that reads it.
  const VkMemoryBarrier2 before{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER_2,
                                .srcStageMask = VK_PIPELINE_STAGE_2_VERTEX_ATTRIBUTE_INPUT_BIT,
                                .dstStageMask = VK_PIPELINE_STAGE_2_COPY_BIT,
                                .dstAccessMask = VK_ACCESS_2_TRANSFER_READ_BIT};
  const VkDependencyInfo dep{.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
                             .memoryBarrierCount = 1,
                             .pMemoryBarriers = &before};
  barrier2_(cmd, &dep);
  const VkBufferCopy region{0, 0, size};
  vkCmdCopyBuffer(cmd, src, dst, 1, &region);
  const VkMemoryBarrier2 after{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER_2,
                               .srcStageMask = VK_PIPELINE_STAGE_2_COPY_BIT,
                               .srcAccessMask = VK_ACCESS_2_TRANSFER_WRITE_BIT,
                               .dstStageMask = VK_PIPELINE_STAGE_2_HOST_BIT,
                               .dstAccessMask = VK_ACCESS_2_HOST_READ_BIT};
  const VkDependencyInfo dep_after{.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
                                   .memoryBarrierCount = 1,
                                   .pMemoryBarriers = &after};
  barrier2_(cmd, &dep_after);
}

void Device::record_texture_readback(VkCommandBuffer cmd, VkImage image, uint32_t width,
                                     uint32_t height, uint32_t mips, uint32_t texel_bytes,
                                     VkBuffer dst, uint64_t dst_offset) {
  // SHADER_READ_ONLY (where the frame left it for the fragment shader) -> TRANSFER_SRC.
  const VkImageMemoryBarrier2 to_src{
      .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER_2,
      .srcStageMask = VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT,
      .dstStageMask = VK_PIPELINE_STAGE_2_COPY_BIT,
      .dstAccessMask = VK_ACCESS_2_TRANSFER_READ_BIT,
      .oldLayout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL,
      .newLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
      .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
      .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
      .image = image,
      .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, mips, 0, 1}};
  const VkDependencyInfo dep{.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
                             .imageMemoryBarrierCount = 1,
                             .pImageMemoryBarriers = &to_src};
  barrier2_(cmd, &dep);
  std::vector<VkBufferImageCopy> regions;
  uint64_t offset = dst_offset;
  for (uint32_t m = 0; m < mips; ++m) {
    const uint32_t w = std::max(1u, width >> m), h = std::max(1u, height >> m);
    regions.push_back({.bufferOffset = offset,
                       .imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, m, 0, 1},
                       .imageExtent = {w, h, 1}});
    offset += uint64_t{w} * h * texel_bytes;
  }
  vkCmdCopyImageToBuffer(cmd, image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, dst,
                         static_cast<uint32_t>(regions.size()), regions.data());
  // Back to SHADER_READ_ONLY for the next frame, and the copies visible to the host.
  VkImageMemoryBarrier2 back = to_src;
  back.srcStageMask = VK_PIPELINE_STAGE_2_COPY_BIT;
  back.srcAccessMask = 0;
  back.dstStageMask = VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT;
  back.dstAccessMask = 0;
  back.oldLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
  back.newLayout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL;
  const VkMemoryBarrier2 host{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER_2,
                              .srcStageMask = VK_PIPELINE_STAGE_2_COPY_BIT,
                              .srcAccessMask = VK_ACCESS_2_TRANSFER_WRITE_BIT,
                              .dstStageMask = VK_PIPELINE_STAGE_2_HOST_BIT,
                              .dstAccessMask = VK_ACCESS_2_HOST_READ_BIT};
  const VkDependencyInfo dep_after{.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
                                   .memoryBarrierCount = 1,
                                   .pMemoryBarriers = &host,
                                   .imageMemoryBarrierCount = 1,
                                   .pImageMemoryBarriers = &back};
  barrier2_(cmd, &dep_after);
}

}  // namespace example
