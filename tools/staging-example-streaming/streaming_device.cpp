#include "streaming_device.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "vulkan_messages.hpp"

namespace example {

namespace {

std::atomic<int> g_messages{0};

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT types,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  const std::string_view id = data->pMessageIdName ? data->pMessageIdName : "";
  // The loader's and the layer's notes about their own set-up (drivers found, the layer's status,
  // its shader cache file on a first run) are not findings: the one filter every clean run uses.
  if (staging::vulkan::support::classify(severity, types, id) ==
      staging::vulkan::support::MessageKind::SetUp) {
    return VK_FALSE;
  }
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

int rank(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return 2;
    default:
      return 3;
  }
}

}  // namespace

StreamingDevice::StreamingDevice(const std::string& device_filter) {
  // The loader (libvulkan.so.1) is opened here, at run time: the program starts without it.
  if (volkInitialize() != VK_SUCCESS) {
    why_ = "no Vulkan loader (libvulkan.so.1)";
    return;
  }
  const char* mode = std::getenv("STAGING_VULKAN_VALIDATION");
  validation = has_layer(kLayer) && !(mode && std::string_view(mode) == "off");
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
                     VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
      .pfnUserCallback = on_message};
  const VkApplicationInfo app{.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                              .pApplicationName = "staging-example-streaming",
                              .apiVersion = VK_API_VERSION_1_3};
  const char* ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
  const VkInstanceCreateInfo instance_info{.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                           .pNext = validation ? &messenger : nullptr,
                                           .pApplicationInfo = &app,
                                           .enabledLayerCount = validation ? 1u : 0u,
                                           .ppEnabledLayerNames = &kLayer,
                                           .enabledExtensionCount = validation ? 1u : 0u,
                                           .ppEnabledExtensionNames = &ext};
  if (vkCreateInstance(&instance_info, nullptr, &instance) != VK_SUCCESS) {
    why_ = "no Vulkan driver (vkCreateInstance failed)";
    return;
  }
  volkLoadInstance(instance);
  if (validation) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
    messenger.pNext = nullptr;
    if (create) create(instance, &messenger, nullptr, &messenger_);
  }

  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  vkEnumeratePhysicalDevices(instance, &count, devices.data());
  int best = 99;
  for (VkPhysicalDevice pd : devices) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(pd, &p);
    if (p.apiVersion < VK_API_VERSION_1_3) continue;
    if (!device_filter.empty() &&
        std::string_view(p.deviceName).find(device_filter) == std::string_view::npos) {
      continue;
    }
    VkPhysicalDeviceVulkan13Features f13{.sType =
                                             VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
    VkPhysicalDeviceVulkan12Features f12{
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, .pNext = &f13};
    VkPhysicalDeviceFeatures2 f2{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                 .pNext = &f12};
    vkGetPhysicalDeviceFeatures2(pd, &f2);
    if (!f12.timelineSemaphore || !f13.synchronization2 || !f13.dynamicRendering) continue;
    if (rank(p.deviceType) < best) {
      best = rank(p.deviceType);
      physical_device = pd;
      properties = p;
      bc_formats = f2.features.textureCompressionBC == VK_TRUE;
    }
  }
  if (physical_device == VK_NULL_HANDLE) {
    why_ = "no Vulkan 1.3 device with dynamic rendering, synchronization2 and timeline semaphores";
    return;
  }
  vkGetPhysicalDeviceMemoryProperties(physical_device, &memory_);

  vkGetPhysicalDeviceQueueFamilyProperties(physical_device, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  vkGetPhysicalDeviceQueueFamilyProperties(physical_device, &count, families.data());
  graphics_family = UINT32_MAX;
  for (uint32_t i = 0; i < count; ++i) {
    if ((families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) != 0) {
      graphics_family = i;
      break;
    }
  }
  if (graphics_family == UINT32_MAX) {
    why_ = "the device has no graphics queue";
    return;
  }
  // The copy engine, where there is one: what the streamer is for.
  transfer_family =
      staging::vulkan::transfer_only_family(families.data(), count).value_or(graphics_family);

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queues[2] = {
      {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
       .queueFamilyIndex = graphics_family,
       .queueCount = 1,
       .pQueuePriorities = &priority},
      {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
       .queueFamilyIndex = transfer_family,
       .queueCount = 1,
       .pQueuePriorities = &priority},
  };
  VkPhysicalDeviceVulkan13Features f13{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
      .synchronization2 = VK_TRUE,
      .dynamicRendering = VK_TRUE};
  VkPhysicalDeviceVulkan12Features f12{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
      .pNext = &f13,
      .timelineSemaphore = VK_TRUE};
  VkPhysicalDeviceFeatures2 f2{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                               .pNext = &f12};
  f2.features.textureCompressionBC = bc_formats ? VK_TRUE : VK_FALSE;
  const VkDeviceCreateInfo device_info{.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                                       .pNext = &f2,
                                       .queueCreateInfoCount = dedicated_transfer() ? 2u : 1u,
                                       .pQueueCreateInfos = queues};
  if (vkCreateDevice(physical_device, &device_info, nullptr, &device) != VK_SUCCESS) {
    why_ = "vkCreateDevice failed";
    device = VK_NULL_HANDLE;
    return;
  }
  volkLoadDevice(device);
  vkGetDeviceQueue(device, graphics_family, 0, &graphics);
  vkGetDeviceQueue(device, transfer_family, 0, &transfer);
}

StreamingDevice::~StreamingDevice() {
  if (device != VK_NULL_HANDLE) {
    vkDeviceWaitIdle(device);
    vkDestroyDevice(device, nullptr);
  }
  if (messenger_ != VK_NULL_HANDLE) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(instance, messenger_, nullptr);
  }
  if (instance != VK_NULL_HANDLE) vkDestroyInstance(instance, nullptr);
}

std::string StreamingDevice::describe() const {
  static constexpr const char* kTypes[] = {"other", "integrated", "discrete", "virtual", "CPU"};
  const uint32_t v = properties.apiVersion;
  std::string s = std::string(properties.deviceName) + " (" +
                  kTypes[std::min<uint32_t>(properties.deviceType, 4)] + ", Vulkan " +
                  std::to_string(VK_API_VERSION_MAJOR(v)) + "." +
                  std::to_string(VK_API_VERSION_MINOR(v)) + "." +
                  std::to_string(VK_API_VERSION_PATCH(v)) + "), ";
  s += dedicated_transfer() ? "transfer queue family " + std::to_string(transfer_family)
                            : std::string("no transfer-only family (the graphics queue is shared)");
  s += validation ? ", validation on" : ", validation off";
  return s;
}

int StreamingDevice::validation_messages() const {
  return g_messages.load();
}

staging::vulkan::Device StreamingDevice::staging_device() const {
  return {physical_device, device, staging::vulkan::Dispatch::from_loader(instance, device)};
}

uint32_t StreamingDevice::memory_type(uint32_t bits, VkMemoryPropertyFlags want) const {
  for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
    if ((bits & (1u << i)) != 0 && (memory_.memoryTypes[i].propertyFlags & want) == want) return i;
  }
  return UINT32_MAX;
}

}  // namespace example

namespace example {

HostBuffer StreamingDevice::make_host_buffer(uint64_t bytes, VkBufferUsageFlags usage) const {
  HostBuffer b;
  const VkBufferCreateInfo info{
      .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = bytes, .usage = usage};
  if (vkCreateBuffer(device, &info, nullptr, &b.buffer) != VK_SUCCESS) return {};
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device, b.buffer, &req);
  const VkMemoryAllocateInfo alloc{
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
      .allocationSize = req.size,
      .memoryTypeIndex = memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                             VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)};
  void* mapped = nullptr;
  if (vkAllocateMemory(device, &alloc, nullptr, &b.memory) != VK_SUCCESS ||
      vkBindBufferMemory(device, b.buffer, b.memory, 0) != VK_SUCCESS ||
      vkMapMemory(device, b.memory, 0, bytes, 0, &mapped) != VK_SUCCESS) {
    destroy(b);
    return {};
  }
  b.mapped = static_cast<std::byte*>(mapped);
  return b;
}

void StreamingDevice::destroy(HostBuffer& b) const {
  if (b.buffer != VK_NULL_HANDLE) vkDestroyBuffer(device, b.buffer, nullptr);
  if (b.memory != VK_NULL_HANDLE) vkFreeMemory(device, b.memory, nullptr);
  b = {};
}

void StreamingDevice::run_once(const std::function<void(VkCommandBuffer)>& body) {
  VkCommandPool pool = VK_NULL_HANDLE;
  const VkCommandPoolCreateInfo pool_info{.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                          .flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
                                          .queueFamilyIndex = graphics_family};
  vkCreateCommandPool(device, &pool_info, nullptr, &pool);
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  const VkCommandBufferAllocateInfo cmd_info{
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
      .commandPool = pool,
      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
      .commandBufferCount = 1};
  vkAllocateCommandBuffers(device, &cmd_info, &cmd);
  const VkCommandBufferBeginInfo begin{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                       .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
  vkBeginCommandBuffer(cmd, &begin);
  body(cmd);
  // What the commands wrote, for the host.
  const VkMemoryBarrier2 to_host{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER_2,
                                 .srcStageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
                                 .srcAccessMask = VK_ACCESS_2_MEMORY_WRITE_BIT,
                                 .dstStageMask = VK_PIPELINE_STAGE_2_HOST_BIT,
                                 .dstAccessMask = VK_ACCESS_2_HOST_READ_BIT};
  const VkDependencyInfo dep{.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
                             .memoryBarrierCount = 1,
                             .pMemoryBarriers = &to_host};
  vkCmdPipelineBarrier2(cmd, &dep);
  vkEndCommandBuffer(cmd);
  const VkCommandBufferSubmitInfo submit_cmd{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
                                             .commandBuffer = cmd};
  const VkSubmitInfo2 submit{.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO_2,
                             .commandBufferInfoCount = 1,
                             .pCommandBufferInfos = &submit_cmd};
  {
    std::lock_guard lock(graphics_mutex);
    vkQueueSubmit2(graphics, 1, &submit, VK_NULL_HANDLE);
    vkQueueWaitIdle(graphics);
  }
  vkDestroyCommandPool(device, pool, nullptr);
}

}  // namespace example
