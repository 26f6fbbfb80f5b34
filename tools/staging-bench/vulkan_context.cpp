#include "vulkan_context.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace staging::bench::vk {
namespace {

std::atomic<int> g_messages{0};
// The counting dispatch: the real functions, and how often the ring (or a DefaultMemory made with
// that table) called them. One Context at a time.
PFN_vkCreateBuffer g_create_buffer = nullptr;
PFN_vkAllocateMemory g_allocate_memory = nullptr;
std::atomic<uint64_t> g_buffers{0};
std::atomic<uint64_t> g_memories{0};

VKAPI_ATTR VkResult VKAPI_CALL counting_create_buffer(VkDevice device,
                                                      const VkBufferCreateInfo* info,
                                                      const VkAllocationCallbacks* allocator,
                                                      VkBuffer* buffer) {
  g_buffers.fetch_add(1, std::memory_order_relaxed);
  return g_create_buffer(device, info, allocator, buffer);
}

VKAPI_ATTR VkResult VKAPI_CALL counting_allocate_memory(VkDevice device,
                                                        const VkMemoryAllocateInfo* info,
                                                        const VkAllocationCallbacks* allocator,
                                                        VkDeviceMemory* memory) {
  g_memories.fetch_add(1, std::memory_order_relaxed);
  return g_allocate_memory(device, info, allocator, memory);
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  const std::string_view id = data->pMessageIdName ? data->pMessageIdName : "";
  if (severity <= VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT &&
      (id == "Loader Message" ||
       id == "UNASSIGNED-khronos-validation-createinstance-status-message")) {
    return VK_FALSE;
  }
  ++g_messages;
  std::fprintf(stderr, "validation: %s\n", data->pMessage ? data->pMessage : "");
  return VK_FALSE;
}

constexpr const char* kLayer = "VK_LAYER_KHRONOS_validation";

bool has_layer(const char* name) {
  uint32_t n = 0;
  vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  vkEnumerateInstanceLayerProperties(&n, layers.data());
  return std::any_of(layers.begin(), layers.end(), [&](const VkLayerProperties& l) {
    return std::strcmp(l.layerName, name) == 0;
  });
}

std::string version(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) +
         "." + std::to_string(VK_API_VERSION_PATCH(v));
}

}  // namespace

std::unique_ptr<Context> Context::create(const Options& options, std::string& why) {
  std::unique_ptr<Context> c(new Context());
  if (!c->init(options, why)) return nullptr;
  return c;
}

bool Context::init(const Options& options, std::string& why) {
  validation_ = options.validate;
  if (validation_ && !has_layer(kLayer)) {
    why = "--validate: VK_LAYER_KHRONOS_validation is not installed";
    return false;
  }
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
                              .pApplicationName = "staging-bench",
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
    why = "no Vulkan driver (vkCreateInstance failed)";
    return false;
  }
  if (validation_) {
    messenger.pNext = nullptr;
    const auto make = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
    if (make) make(instance_, &messenger, nullptr, &messenger_);
  }

  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance_, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  vkEnumeratePhysicalDevices(instance_, &count, devices.data());
  std::stable_sort(devices.begin(), devices.end(), [](VkPhysicalDevice a, VkPhysicalDevice b) {
    VkPhysicalDeviceProperties pa, pb;
    vkGetPhysicalDeviceProperties(a, &pa);
    vkGetPhysicalDeviceProperties(b, &pb);
    return (pa.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) >
           (pb.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU);
  });
  VkPhysicalDeviceVulkan12Features have12{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceFeatures2 have{};
  for (VkPhysicalDevice d : devices) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(d, &p);
    if (p.apiVersion < VK_API_VERSION_1_3) continue;
    if (!options.device_filter.empty() &&
        std::string_view(p.deviceName).find(options.device_filter) == std::string_view::npos) {
      continue;
    }
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
      have12 = v12;
      have = f2;
      break;
    }
  }
  if (physical_ == VK_NULL_HANDLE) {
    why = "no Vulkan 1.3 device with timeline semaphores and synchronization2";
    if (!options.device_filter.empty()) why += " named like '" + options.device_filter + "'";
    return false;
  }
  vkGetPhysicalDeviceMemoryProperties(physical_, &memory_properties_);
  VkPhysicalDeviceDriverProperties driver{.sType =
                                              VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceProperties2 props2{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                     .pNext = &driver};
  vkGetPhysicalDeviceProperties2(physical_, &props2);
  driver_ = std::string(driver.driverName) + " " + driver.driverInfo;
  host_query_reset_ = have12.hostQueryReset == VK_TRUE;
  bc_ = have.features.textureCompressionBC == VK_TRUE;

  uint32_t family_count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical_, &family_count, nullptr);
  std::vector<VkQueueFamilyProperties> families(family_count);
  vkGetPhysicalDeviceQueueFamilyProperties(physical_, &family_count, families.data());
  std::optional<uint32_t> universal, transfer_only;
  for (uint32_t i = 0; i < family_count; ++i) {
    const VkQueueFlags f = families[i].queueFlags;
    if (!universal && (f & VK_QUEUE_GRAPHICS_BIT) && (f & VK_QUEUE_COMPUTE_BIT)) universal = i;
    if (!transfer_only && (f & VK_QUEUE_TRANSFER_BIT) &&
        !(f & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT))) {
      transfer_only = i;
    }
  }
  if (!universal) {
    why = "the device has no graphics+compute queue family";
    return false;
  }
  const float priority = 1.0f;
  std::vector<VkDeviceQueueCreateInfo> queue_infos;
  queue_infos.push_back({.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                         .queueFamilyIndex = *universal,
                         .queueCount = 1,
                         .pQueuePriorities = &priority});
  if (transfer_only) {
    queue_infos.push_back({.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                           .queueFamilyIndex = *transfer_only,
                           .queueCount = 1,
                           .pQueuePriorities = &priority});
  }
  VkPhysicalDeviceVulkan13Features v13{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES, .synchronization2 = VK_TRUE};
  VkPhysicalDeviceVulkan12Features v12{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
      .pNext = &v13,
      .hostQueryReset = host_query_reset_ ? VK_TRUE : VK_FALSE,
      .timelineSemaphore = VK_TRUE};
  VkPhysicalDeviceFeatures2 f2{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                               .pNext = &v12};
  f2.features.textureCompressionBC = bc_ ? VK_TRUE : VK_FALSE;
  const VkDeviceCreateInfo device_info{
      .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
      .pNext = &f2,
      .queueCreateInfoCount = static_cast<uint32_t>(queue_infos.size()),
      .pQueueCreateInfos = queue_infos.data()};
  if (vkCreateDevice(physical_, &device_info, nullptr, &device_) != VK_SUCCESS) {
    device_ = VK_NULL_HANDLE;
    why = "vkCreateDevice failed";
    return false;
  }
  const auto make_queue = [&](Queue& q, uint32_t family, const char* name) {
    q.family = family;
    q.name = name;
    q.timestamp_bits = families[family].timestampValidBits;
    vkGetDeviceQueue(device_, family, 0, &q.queue);
    const VkCommandPoolCreateInfo pool{.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                       .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                       .queueFamilyIndex = family};
    vkCreateCommandPool(device_, &pool, nullptr, &q.pool);
    families_.push_back(family);
  };
  make_queue(graphics_, *universal, "graphics");
  if (transfer_only) make_queue(transfer_, *transfer_only, "transfer");
  const VkFenceCreateInfo fence{.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  vkCreateFence(device_, &fence, nullptr, &fence_);

  dispatch_ = staging::vulkan::Dispatch::from_loader(instance_, device_);
  g_create_buffer = dispatch_.vkCreateBuffer;
  g_allocate_memory = dispatch_.vkAllocateMemory;
  dispatch_.vkCreateBuffer = counting_create_buffer;
  dispatch_.vkAllocateMemory = counting_allocate_memory;
  return true;
}

Context::~Context() {
  if (device_ != VK_NULL_HANDLE) {
    vkDeviceWaitIdle(device_);
    for (VkQueryPool p : query_pools_)
      vkDestroyQueryPool(device_, p, nullptr);
    for (VkSemaphore s : semaphores_)
      vkDestroySemaphore(device_, s, nullptr);
    vkDestroyFence(device_, fence_, nullptr);
    vkDestroyCommandPool(device_, graphics_.pool, nullptr);
    if (transfer_.pool != VK_NULL_HANDLE) vkDestroyCommandPool(device_, transfer_.pool, nullptr);
    vkDestroyDevice(device_, nullptr);
  }
  if (messenger_ != VK_NULL_HANDLE) {
    const auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(instance_, messenger_, nullptr);
  }
  if (instance_ != VK_NULL_HANDLE) vkDestroyInstance(instance_, nullptr);
}

std::string Context::describe() const {
  const char* type = properties_.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ? "discrete GPU"
                     : properties_.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU
                         ? "integrated GPU"
                     : properties_.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? "CPU"
                                                                             : "other";
  return std::string(properties_.deviceName) + " (" + type + ", Vulkan " +
         version(properties_.apiVersion) + ")";
}

int Context::validation_messages() const {
  return g_messages.load();
}

staging::vulkan::Device Context::staging_device() const {
  return {physical_, device_, dispatch_};
}

ObjectCounts Context::counts() {
  return {g_buffers.load(), g_memories.load()};
}

std::optional<uint32_t> Context::staging_type(bool prefer_device_local) const {
  const VkBufferCreateInfo info{.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                                .size = 65536,
                                .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                                .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
  VkBuffer probe = VK_NULL_HANDLE;
  if (vkCreateBuffer(device_, &info, nullptr, &probe) != VK_SUCCESS) return std::nullopt;
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device_, probe, &req);
  vkDestroyBuffer(device_, probe, nullptr);
  return staging::vulkan::choose_staging_memory_type(memory_properties_, req.memoryTypeBits,
                                                     {.prefer_device_local = prefer_device_local});
}

std::optional<uint32_t> Context::cached_type() const {
  const std::optional<uint32_t> system = staging_type(false);
  for (uint32_t i = 0; i < memory_properties_.memoryTypeCount; ++i) {
    const VkMemoryPropertyFlags f = memory_properties_.memoryTypes[i].propertyFlags;
    if ((f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) && (f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) &&
        !(f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) && i != system) {
      return i;
    }
  }
  return std::nullopt;
}

std::string Context::type_flags(uint32_t index) const {
  if (index >= memory_properties_.memoryTypeCount) return "?";
  const VkMemoryPropertyFlags f = memory_properties_.memoryTypes[index].propertyFlags;
  // (snprintf: GCC 12's -Wrestrict misfires on short std::string appends at -O3.)
  char buf[96];
  std::snprintf(buf, sizeof buf, "type %u %s%s%s%s%s", index,
                f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT ? "DEVICE_LOCAL|" : "",
                f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT ? "HOST_VISIBLE|" : "",
                f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT ? "HOST_COHERENT|" : "",
                f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT ? "HOST_CACHED|" : "",
                (f & 0xF) == 0 ? "0|" : "");
  std::string out = buf;
  out.pop_back();  // the last '|'
  return out;
}

uint32_t Context::find_type(uint32_t bits, Memory memory) const {
  if (memory == Memory::Staging) {
    return staging::vulkan::choose_staging_memory_type(memory_properties_, bits)
        .value_or(UINT32_MAX);
  }
  const auto first = [&](VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid) -> uint32_t {
    for (uint32_t i = 0; i < memory_properties_.memoryTypeCount; ++i) {
      const VkMemoryPropertyFlags f = memory_properties_.memoryTypes[i].propertyFlags;
      if ((bits & (1u << i)) && (f & want) == want && (f & avoid) == 0) return i;
    }
    return UINT32_MAX;
  };
  if (memory == Memory::DeviceLocal) {
    uint32_t t = first(VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
    return t != UINT32_MAX ? t : first(VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
  }
  uint32_t t = first(VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
                         VK_MEMORY_PROPERTY_HOST_CACHED_BIT,
                     VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  if (t == UINT32_MAX)
    t = first(VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, 0);
  return t;
}

Buffer Context::make_buffer(uint64_t size, VkBufferUsageFlags usage, Memory memory) {
  Buffer b;
  const bool concurrent = families_.size() > 1;
  const VkBufferCreateInfo info{
      .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
      .size = size,
      .usage = usage,
      .sharingMode = concurrent ? VK_SHARING_MODE_CONCURRENT : VK_SHARING_MODE_EXCLUSIVE,
      .queueFamilyIndexCount = concurrent ? static_cast<uint32_t>(families_.size()) : 0u,
      .pQueueFamilyIndices = concurrent ? families_.data() : nullptr};
  if (vkCreateBuffer(device_, &info, nullptr, &b.buffer) != VK_SUCCESS) return {};
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device_, b.buffer, &req);
  const uint32_t type = find_type(req.memoryTypeBits, memory);
  const VkMemoryAllocateInfo alloc{.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                   .allocationSize = req.size,
                                   .memoryTypeIndex = type};
  if (type == UINT32_MAX || vkAllocateMemory(device_, &alloc, nullptr, &b.memory) != VK_SUCCESS) {
    vkDestroyBuffer(device_, b.buffer, nullptr);
    return {};
  }
  vkBindBufferMemory(device_, b.buffer, b.memory, 0);
  b.size = size;
  b.memory_type = type;
  if (memory_properties_.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
    void* p = nullptr;
    if (vkMapMemory(device_, b.memory, 0, VK_WHOLE_SIZE, 0, &p) != VK_SUCCESS) {
      destroy(b);
      return {};
    }
    b.mapped = static_cast<std::byte*>(p);
  }
  return b;
}

void Context::destroy(Buffer& b) {
  if (b.buffer != VK_NULL_HANDLE) vkDestroyBuffer(device_, b.buffer, nullptr);
  if (b.memory != VK_NULL_HANDLE) vkFreeMemory(device_, b.memory, nullptr);
  b = {};
}

Image Context::make_image(VkFormat format, uint32_t width, uint32_t height, uint32_t mips) {
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
  if (vkCreateImage(device_, &info, nullptr, &img.image) != VK_SUCCESS) return {};
  VkMemoryRequirements req;
  vkGetImageMemoryRequirements(device_, img.image, &req);
  const uint32_t type = find_type(req.memoryTypeBits, Memory::DeviceLocal);
  const VkMemoryAllocateInfo alloc{.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                   .allocationSize = req.size,
                                   .memoryTypeIndex = type};
  if (type == UINT32_MAX || vkAllocateMemory(device_, &alloc, nullptr, &img.memory) != VK_SUCCESS) {
    vkDestroyImage(device_, img.image, nullptr);
    return {};
  }
  vkBindImageMemory(device_, img.image, img.memory, 0);
  return img;
}

void Context::destroy(Image& img) {
  if (img.image != VK_NULL_HANDLE) vkDestroyImage(device_, img.image, nullptr);
  if (img.memory != VK_NULL_HANDLE) vkFreeMemory(device_, img.memory, nullptr);
  img = {};
}

bool Context::image_format_ok(VkFormat format) const {
  VkFormatProperties p;
  vkGetPhysicalDeviceFormatProperties(physical_, format, &p);
  const VkFormatFeatureFlags need =
      VK_FORMAT_FEATURE_TRANSFER_DST_BIT | VK_FORMAT_FEATURE_TRANSFER_SRC_BIT;
  return (p.optimalTilingFeatures & need) == need;
}

VkCommandBuffer Context::allocate_commands(const Queue& queue) {
  const VkCommandBufferAllocateInfo info{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                         .commandPool = queue.pool,
                                         .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                         .commandBufferCount = 1};
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  if (vkAllocateCommandBuffers(device_, &info, &cmd) != VK_SUCCESS) return VK_NULL_HANDLE;
  return cmd;
}

void Context::free_commands(const Queue& queue, VkCommandBuffer cmd) {
  if (cmd != VK_NULL_HANDLE) vkFreeCommandBuffers(device_, queue.pool, 1, &cmd);
}

void Context::begin(VkCommandBuffer cmd) {
  const VkCommandBufferBeginInfo begin{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                       .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
  vkBeginCommandBuffer(cmd, &begin);
}

void Context::submit(const Queue& queue, VkCommandBuffer cmd, const VkSemaphoreSubmitInfo* signal,
                     const VkSemaphoreSubmitInfo* wait) {
  vkEndCommandBuffer(cmd);
  const VkCommandBufferSubmitInfo cmd_info{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
                                           .commandBuffer = cmd};
  const bool signals = signal != nullptr && signal->semaphore != VK_NULL_HANDLE;
  const VkSubmitInfo2 submit{.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO_2,
                             .waitSemaphoreInfoCount = wait != nullptr ? 1u : 0u,
                             .pWaitSemaphoreInfos = wait,
                             .commandBufferInfoCount = 1,
                             .pCommandBufferInfos = &cmd_info,
                             .signalSemaphoreInfoCount = signals ? 1u : 0u,
                             .pSignalSemaphoreInfos = signals ? signal : nullptr};
  vkQueueSubmit2(queue.queue, 1, &submit, VK_NULL_HANDLE);
}

void Context::full_barrier(VkCommandBuffer cmd) {
  const VkMemoryBarrier2 all{
      .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER_2,
      .srcStageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
      .srcAccessMask = VK_ACCESS_2_MEMORY_WRITE_BIT,
      .dstStageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
      .dstAccessMask = VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT};
  const VkDependencyInfo dep{
      .sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO, .memoryBarrierCount = 1, .pMemoryBarriers = &all};
  vkCmdPipelineBarrier2(cmd, &dep);
}

bool Context::run_once(const Queue& queue, const std::function<void(VkCommandBuffer)>& body) {
  VkCommandBuffer cmd = allocate_commands(queue);
  if (cmd == VK_NULL_HANDLE) return false;
  begin(cmd);
  full_barrier(cmd);
  body(cmd);
  full_barrier(cmd);
  // Host reads of what the commands wrote: the fence wait makes the writes available to the host
  // only together with a barrier to HOST; full_barrier covers ALL_COMMANDS, add the host stage.
  const VkMemoryBarrier2 host{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER_2,
                              .srcStageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
                              .srcAccessMask = VK_ACCESS_2_MEMORY_WRITE_BIT,
                              .dstStageMask = VK_PIPELINE_STAGE_2_HOST_BIT,
                              .dstAccessMask = VK_ACCESS_2_HOST_READ_BIT};
  const VkDependencyInfo dep{.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
                             .memoryBarrierCount = 1,
                             .pMemoryBarriers = &host};
  vkCmdPipelineBarrier2(cmd, &dep);
  vkEndCommandBuffer(cmd);
  const VkCommandBufferSubmitInfo cmd_info{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
                                           .commandBuffer = cmd};
  const VkSubmitInfo2 submit{.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO_2,
                             .commandBufferInfoCount = 1,
                             .pCommandBufferInfos = &cmd_info};
  vkResetFences(device_, 1, &fence_);
  bool ok = vkQueueSubmit2(queue.queue, 1, &submit, fence_) == VK_SUCCESS &&
            vkWaitForFences(device_, 1, &fence_, VK_TRUE, uint64_t{60} * 1000000000) == VK_SUCCESS;
  if (ok) free_commands(queue, cmd);  // (a command buffer still pending is leaked, not freed)
  return ok;
}

VkSemaphore Context::make_timeline() {
  const VkSemaphoreTypeCreateInfo type{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                       .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
  const VkSemaphoreCreateInfo info{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
                                   .pNext = &type};
  VkSemaphore s = VK_NULL_HANDLE;
  if (vkCreateSemaphore(device_, &info, nullptr, &s) != VK_SUCCESS) return VK_NULL_HANDLE;
  semaphores_.push_back(s);
  return s;
}

void Context::signal(VkSemaphore semaphore, uint64_t value) {
  const VkSemaphoreSignalInfo info{
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, .semaphore = semaphore, .value = value};
  vkSignalSemaphore(device_, &info);
}

VkQueryPool Context::make_query_pool(uint32_t count) {
  if (count == 0) return VK_NULL_HANDLE;
  const VkQueryPoolCreateInfo info{.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                   .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                   .queryCount = count};
  VkQueryPool pool = VK_NULL_HANDLE;
  if (vkCreateQueryPool(device_, &info, nullptr, &pool) != VK_SUCCESS) return VK_NULL_HANDLE;
  query_pools_.push_back(pool);
  return pool;
}

TypedMemory::TypedMemory(Context& vk, uint32_t type)
    : vk_(vk), dispatch_(vk.staging_device().dispatch), type_(type) {}

Expected<staging::vulkan::StagingMemory, AllocError> TypedMemory::allocate(uint64_t size) {
  staging::vulkan::StagingMemory m;
  m.size = size;
  m.memory_type = type_;
  const VkBufferCreateInfo info{.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                                .size = size,
                                .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                                .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
  if (VkResult r = dispatch_.vkCreateBuffer(vk_.device(), &info, nullptr, &m.buffer);
      r != VK_SUCCESS) {
    return unexpected(staging::vulkan::to_alloc_error(r));
  }
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(vk_.device(), m.buffer, &req);
  const VkMemoryAllocateInfo alloc{.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                   .allocationSize = req.size,
                                   .memoryTypeIndex = type_};
  VkResult r = (req.memoryTypeBits & (1u << type_)) != 0
                   ? dispatch_.vkAllocateMemory(vk_.device(), &alloc, nullptr, &m.memory)
                   : VK_ERROR_FEATURE_NOT_PRESENT;
  void* p = nullptr;
  if (r == VK_SUCCESS) r = vkBindBufferMemory(vk_.device(), m.buffer, m.memory, 0);
  if (r == VK_SUCCESS) r = vkMapMemory(vk_.device(), m.memory, 0, VK_WHOLE_SIZE, 0, &p);
  if (r != VK_SUCCESS) {
    release(m);
    return unexpected(staging::vulkan::to_alloc_error(r));
  }
  m.mapped = static_cast<std::byte*>(p);
  m.memory_size = req.size;
  m.coherent = (vk_.memory_properties().memoryTypes[type_].propertyFlags &
                VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
  return m;
}

void TypedMemory::flush(const staging::vulkan::StagingMemory& m, uint64_t offset, uint64_t size) {
  const staging::vulkan::FlushRange f = staging::vulkan::flush_range(
      offset, size, vk_.properties().limits.nonCoherentAtomSize, m.memory_size);
  const VkMappedMemoryRange range{.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
                                  .memory = m.memory,
                                  .offset = f.offset,
                                  .size = f.size};
  vkFlushMappedMemoryRanges(vk_.device(), 1, &range);
}

void TypedMemory::release(const staging::vulkan::StagingMemory& m) noexcept {
  if (m.buffer != VK_NULL_HANDLE) vkDestroyBuffer(vk_.device(), m.buffer, nullptr);
  if (m.memory != VK_NULL_HANDLE) vkFreeMemory(vk_.device(), m.memory, nullptr);
}

}  // namespace staging::bench::vk
