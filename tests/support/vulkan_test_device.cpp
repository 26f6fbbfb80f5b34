#include "vulkan_test_device.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "vulkan_commands.hpp"

namespace staging::vulkan::support {

namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

bool has_extension(const std::vector<VkExtensionProperties>& list, const char* name) {
  return std::any_of(list.begin(), list.end(), [&](const VkExtensionProperties& e) {
    return std::strcmp(e.extensionName, name) == 0;
  });
}

std::vector<VkExtensionProperties> instance_extensions(const char* layer) {
  uint32_t n = 0;
  vkEnumerateInstanceExtensionProperties(layer, &n, nullptr);
  std::vector<VkExtensionProperties> out(n);
  vkEnumerateInstanceExtensionProperties(layer, &n, out.data());
  out.resize(n);
  return out;
}

bool has_layer(const char* name) {
  uint32_t n = 0;
  vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  vkEnumerateInstanceLayerProperties(&n, layers.data());
  return std::any_of(layers.begin(), layers.begin() + n, [&](const VkLayerProperties& l) {
    return std::strcmp(l.layerName, name) == 0;
  });
}

// Lower is better: discrete, integrated, virtual, CPU, other.
int type_rank(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return 3;
    default:
      return 4;
  }
}

const char* type_name(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "CPU";
    default:
      return "other";
  }
}

}  // namespace

std::optional<Validation> validation_from_environment(Validation fallback) {
  const char* value = std::getenv("STAGING_VULKAN_VALIDATION");
  if (value == nullptr || *value == '\0') return fallback;
  const std::string_view v = value;
  if (v == "auto") return Validation::Auto;
  if (v == "require") return Validation::Require;
  if (v == "off") return Validation::Off;
  return std::nullopt;
}

std::unique_ptr<TestDevice> TestDevice::create(Options options, Failure& failure) {
  failure = {};
  if (volkInitialize() != VK_SUCCESS) {
    failure.reason = "Vulkan loader not found (libvulkan.so.1; Debian: libvulkan1)";
    return nullptr;
  }
  std::unique_ptr<TestDevice> d(new TestDevice());
  d->options_ = std::move(options);
  if (!d->create_instance(failure) || !d->pick_device(failure) || !d->create_device(failure)) {
    return nullptr;
  }
  return d;
}

VKAPI_ATTR VkBool32 VKAPI_CALL TestDevice::on_message(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT types,
    const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  auto* self = static_cast<TestDevice*>(user);
  Message m{.kind = MessageKind::Finding,
            .severity = severity,
            .id = data->pMessageIdName ? data->pMessageIdName : "",
            .text = data->pMessage ? data->pMessage : ""};
  m.kind = classify(severity, types, m.id);
  if (m.kind == MessageKind::Environment) {
    self->environment_.fetch_add(1);
    std::fprintf(stderr, "vulkan loader (not a validation finding): %s\n", m.text.c_str());
    return VK_FALSE;
  }
  if (m.kind == MessageKind::SetUp) {
    self->set_up_.fetch_add(1);
    const std::lock_guard lock(self->status_mutex_);
    if (m.id == kLayerStatusId && self->layer_status_.empty()) self->layer_status_ = m.text;
    auto& ids = self->set_up_ids_;
    if (std::find(ids.begin(), ids.end(), m.id) == ids.end()) ids.push_back(m.id);
    return VK_FALSE;
  }
  self->findings_.fetch_add(1);
  if (self->options_.on_finding) {
    self->options_.on_finding(m);
  } else {
    std::fprintf(stderr, "validation message [%s]: %s\n", m.id.c_str(), m.text.c_str());
  }
  return VK_FALSE;
}

bool TestDevice::create_instance(Failure& failure) {
  const bool layer_found = options_.validation != Validation::Off && has_layer(kValidationLayer);
  if (options_.validation == Validation::Require && !layer_found) {
    failure = {
        "validation required, but VK_LAYER_KHRONOS_validation is not installed (Debian: "
        "vulkan-validationlayers)",
        true};
    return false;
  }
  validation_ = layer_found;
  const auto loader_extensions = instance_extensions(nullptr);
  const auto layer_extensions =
      validation_ ? instance_extensions(kValidationLayer) : std::vector<VkExtensionProperties>{};
  const bool debug_utils = has_extension(loader_extensions, VK_EXT_DEBUG_UTILS_EXTENSION_NAME) ||
                           has_extension(layer_extensions, VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  if (validation_ && !debug_utils) {
    failure = {
        "the validation layer is present but VK_EXT_debug_utils is not: its messages would "
        "go unseen",
        true};
    return false;
  }
  sync_validation_ =
      validation_ && has_extension(layer_extensions, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
  std::vector<const char*> extensions;
  if (debug_utils) extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  if (sync_validation_) extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);

  const VkValidationFeatureEnableEXT enables[] = {
      VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  const VkValidationFeaturesEXT features{
      .sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
      .enabledValidationFeatureCount = 1,
      .pEnabledValidationFeatures = enables,
  };
  VkDebugUtilsMessengerCreateInfoEXT messenger_info{
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
      .pNext = sync_validation_ ? &features : nullptr,
      .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
      .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
      .pfnUserCallback = &TestDevice::on_message,
      .pUserData = this,
  };
  const VkApplicationInfo app{
      .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
      .pApplicationName = options_.application.c_str(),
      .apiVersion = VK_API_VERSION_1_3,
  };
  const VkInstanceCreateInfo instance_info{
      .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
      .pNext = debug_utils ? &messenger_info : nullptr,
      .pApplicationInfo = &app,
      .enabledLayerCount = validation_ ? 1u : 0u,
      .ppEnabledLayerNames = &kValidationLayer,
      .enabledExtensionCount = static_cast<uint32_t>(extensions.size()),
      .ppEnabledExtensionNames = extensions.data(),
  };
  if (VkResult r = vkCreateInstance(&instance_info, nullptr, &instance_); r != VK_SUCCESS) {
    instance_ = VK_NULL_HANDLE;
    failure = {"vkCreateInstance failed (" + std::to_string(r) + "): no Vulkan driver", false};
    return false;
  }
  volkLoadInstance(instance_);
  if (debug_utils) {
    messenger_info.pNext = nullptr;  // the validation features belong to vkCreateInstance only
    if (vkCreateDebugUtilsMessengerEXT != nullptr) {
      vkCreateDebugUtilsMessengerEXT(instance_, &messenger_info, nullptr, &messenger_);
    }
  }
  const std::string status = layer_status();
  if (sync_validation_ && !status.empty() &&
      status.find("VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION") == std::string::npos) {
    failure = {"the validation layer did not confirm synchronization validation: " + status, true};
    return false;
  }
  return true;
}

bool TestDevice::pick_device(Failure& failure) {
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance_, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  vkEnumeratePhysicalDevices(instance_, &count, devices.data());
  devices.resize(count);
  int best_rank = 1 << 30;
  for (VkPhysicalDevice d : devices) {
    VkPhysicalDeviceProperties p{};
    vkGetPhysicalDeviceProperties(d, &p);
    if (p.apiVersion < options_.api_version || p.apiVersion < VK_API_VERSION_1_2) continue;
    if (!options_.device_name.empty() &&
        std::string_view(p.deviceName).find(options_.device_name) == std::string_view::npos) {
      continue;
    }
    const bool core_sync2 = p.apiVersion >= VK_API_VERSION_1_3;
    if (!core_sync2) {
      uint32_t n = 0;
      vkEnumerateDeviceExtensionProperties(d, nullptr, &n, nullptr);
      std::vector<VkExtensionProperties> extensions(n);
      vkEnumerateDeviceExtensionProperties(d, nullptr, &n, extensions.data());
      if (!has_extension(extensions, VK_KHR_SYNCHRONIZATION_2_EXTENSION_NAME)) continue;
    }
    VkPhysicalDeviceSynchronization2Features sync2{
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SYNCHRONIZATION_2_FEATURES};
    VkPhysicalDeviceVulkan12Features v12{
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, .pNext = &sync2};
    VkPhysicalDeviceFeatures2 f2{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                 .pNext = &v12};
    vkGetPhysicalDeviceFeatures2(d, &f2);
    if (!v12.timelineSemaphore || !sync2.synchronization2) continue;
    if (options_.dynamic_rendering) {
      VkPhysicalDeviceDynamicRenderingFeatures rendering{
          .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DYNAMIC_RENDERING_FEATURES};
      VkPhysicalDeviceFeatures2 query{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                      .pNext = &rendering};
      vkGetPhysicalDeviceFeatures2(d, &query);
      if (!core_sync2 || !rendering.dynamicRendering) continue;
    }
    const int rank = type_rank(p.deviceType);
    if (rank >= best_rank) continue;
    best_rank = rank;
    physical_ = d;
    properties_ = p;
    core_sync2_ = core_sync2;
    bc_formats_ = f2.features.textureCompressionBC == VK_TRUE;
    host_query_reset_ = v12.hostQueryReset == VK_TRUE;
  }
  if (physical_ == VK_NULL_HANDLE) {
    failure.reason = options_.api_version >= VK_API_VERSION_1_3 || options_.dynamic_rendering
                         ? "no Vulkan 1.3 device with timeline semaphores and synchronization2"
                         : "no Vulkan 1.2+ device with timeline semaphores and synchronization2";
    if (options_.dynamic_rendering) failure.reason += " and dynamic rendering";
    if (!options_.device_name.empty())
      failure.reason += " named like '" + options_.device_name + "'";
    return false;
  }
  vkGetPhysicalDeviceMemoryProperties(physical_, &memory_properties_);
  VkPhysicalDeviceDriverProperties driver{.sType =
                                              VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceProperties2 properties2{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                          .pNext = &driver};
  vkGetPhysicalDeviceProperties2(physical_, &properties2);
  driver_ = std::string(driver.driverName) + " " + driver.driverInfo;
  return true;
}

bool TestDevice::create_device(Failure& failure) {
  uint32_t family_count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical_, &family_count, nullptr);
  std::vector<VkQueueFamilyProperties> families(family_count);
  vkGetPhysicalDeviceQueueFamilyProperties(physical_, &family_count, families.data());
  // The universal family: graphics+compute, else graphics, compute or transfer alone.
  std::optional<uint32_t> universal;
  for (VkQueueFlags need : {VkQueueFlags{VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT},
                            VkQueueFlags{VK_QUEUE_GRAPHICS_BIT}, VkQueueFlags{VK_QUEUE_COMPUTE_BIT},
                            VkQueueFlags{VK_QUEUE_TRANSFER_BIT}}) {
    for (uint32_t i = 0; i < family_count && !universal; ++i) {
      if ((families[i].queueFlags & need) == need && families[i].queueCount > 0) universal = i;
    }
  }
  std::optional<uint32_t> transfer_only;
  for (uint32_t i = 0; i < family_count && options_.transfer_queue && !transfer_only; ++i) {
    const VkQueueFlags f = families[i].queueFlags;
    if ((f & VK_QUEUE_TRANSFER_BIT) && !(f & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT)) &&
        families[i].queueCount > 0) {
      transfer_only = i;
    }
  }
  if (!universal) {
    failure.reason = "the device has no queue family for transfers";
    return false;
  }
  const float priority = 1.0f;
  std::vector<VkDeviceQueueCreateInfo> queue_infos;
  for (std::optional<uint32_t> family : {universal, transfer_only}) {
    if (!family) continue;
    queue_infos.push_back({.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                           .queueFamilyIndex = *family,
                           .queueCount = 1,
                           .pQueuePriorities = &priority});
  }
  VkPhysicalDeviceSynchronization2Features sync2{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SYNCHRONIZATION_2_FEATURES,
      .synchronization2 = VK_TRUE};
  VkPhysicalDeviceVulkan13Features v13{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
      .synchronization2 = VK_TRUE,
      .dynamicRendering = options_.dynamic_rendering ? VK_TRUE : VK_FALSE};
  VkPhysicalDeviceVulkan12Features v12{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
      .pNext = core_sync2_ ? static_cast<void*>(&v13) : static_cast<void*>(&sync2),
      .hostQueryReset = host_query_reset_ ? VK_TRUE : VK_FALSE,
      .timelineSemaphore = VK_TRUE};
  VkPhysicalDeviceFeatures2 f2{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                               .pNext = &v12};
  f2.features.textureCompressionBC = bc_formats_ ? VK_TRUE : VK_FALSE;
  const char* sync2_extension = VK_KHR_SYNCHRONIZATION_2_EXTENSION_NAME;
  const VkDeviceCreateInfo device_info{
      .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
      .pNext = &f2,
      .queueCreateInfoCount = static_cast<uint32_t>(queue_infos.size()),
      .pQueueCreateInfos = queue_infos.data(),
      .enabledExtensionCount = core_sync2_ ? 0u : 1u,
      .ppEnabledExtensionNames = &sync2_extension,
  };
  if (VkResult r = vkCreateDevice(physical_, &device_info, nullptr, &device_); r != VK_SUCCESS) {
    device_ = VK_NULL_HANDLE;
    failure.reason = "vkCreateDevice failed (" + std::to_string(r) + ")";
    return false;
  }
  volkLoadDevice(device_);
  const auto make_queue = [&](Queue& q, uint32_t family) {
    q.family = family;
    q.timestamp_bits = families[family].timestampValidBits;
    vkGetDeviceQueue(device_, family, 0, &q.queue);
    const VkCommandPoolCreateInfo pool{.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                       .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                       .queueFamilyIndex = family};
    return vkCreateCommandPool(device_, &pool, nullptr, &q.pool) == VK_SUCCESS;
  };
  if (!make_queue(universal_, *universal) ||
      (transfer_only && !make_queue(transfer_, *transfer_only))) {
    failure.reason = "vkCreateCommandPool failed";
    return false;
  }
  submit2_ = core_sync2_ ? vkQueueSubmit2 : vkQueueSubmit2KHR;
  dispatch_ = Dispatch::load(vkGetInstanceProcAddr, instance_, device_);
  if (!dispatch_.missing().empty() || submit2_ == nullptr) {
    failure = {"the device lacks " +
                   std::string(submit2_ == nullptr ? "vkQueueSubmit2" : dispatch_.missing()),
               true};
    return false;
  }
  return true;
}

TestDevice::~TestDevice() {
  if (device_ != VK_NULL_HANDLE) {
    vkDeviceWaitIdle(device_);
    for (const Queue* q : {&universal_, &transfer_}) {
      if (q->pool != VK_NULL_HANDLE) vkDestroyCommandPool(device_, q->pool, nullptr);
    }
    vkDestroyDevice(device_, nullptr);
  }
  if (messenger_ != VK_NULL_HANDLE) vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  if (instance_ != VK_NULL_HANDLE) vkDestroyInstance(instance_, nullptr);
}

std::string TestDevice::layer_status() const {
  const std::lock_guard lock(status_mutex_);
  return layer_status_;
}

std::vector<std::string> TestDevice::set_up_ids() const {
  const std::lock_guard lock(status_mutex_);
  return set_up_ids_;
}

std::string TestDevice::describe() const {
  char line[512];
  std::snprintf(line, sizeof line, "%s (%s, Vulkan %u.%u.%u)", properties_.deviceName,
                type_name(properties_.deviceType), VK_API_VERSION_MAJOR(properties_.apiVersion),
                VK_API_VERSION_MINOR(properties_.apiVersion),
                VK_API_VERSION_PATCH(properties_.apiVersion));
  return line;
}

std::string TestDevice::validation_state() const {
  if (!validation_) return "off";
  if (!sync_validation_) return "on";
  return layer_status().find("SYNCHRONIZATION_VALIDATION") != std::string::npos
             ? "on, with synchronization validation (the layer confirms it)"
             : "on, with synchronization validation";
}

std::optional<uint32_t> TestDevice::memory_type(uint32_t bits, VkMemoryPropertyFlags want,
                                                VkMemoryPropertyFlags avoid) const {
  for (int pass = 0; pass < 3; ++pass) {
    for (uint32_t i = 0; i < memory_properties_.memoryTypeCount; ++i) {
      const VkMemoryPropertyFlags f = memory_properties_.memoryTypes[i].propertyFlags;
      if ((bits & (1u << i)) == 0) continue;
      if (pass < 2 && (f & want) != want) continue;
      if (pass < 1 && (f & avoid) != 0) continue;
      return i;
    }
  }
  return std::nullopt;
}

Buffer TestDevice::make_buffer(uint64_t size, VkBufferUsageFlags usage, bool host_visible) const {
  Buffer b;
  const VkBufferCreateInfo info{.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                                .size = size,
                                .usage = usage,
                                .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
  if (vkCreateBuffer(device_, &info, nullptr, &b.buffer) != VK_SUCCESS) return {};
  VkMemoryRequirements req{};
  vkGetBufferMemoryRequirements(device_, b.buffer, &req);
  const std::optional<uint32_t> type =
      host_visible ? memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                         VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)
                   : memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
                                 VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
  const VkMemoryAllocateInfo alloc{.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                   .allocationSize = req.size,
                                   .memoryTypeIndex = type.value_or(0)};
  void* mapped = nullptr;
  bool ok = type && vkAllocateMemory(device_, &alloc, nullptr, &b.memory) == VK_SUCCESS &&
            vkBindBufferMemory(device_, b.buffer, b.memory, 0) == VK_SUCCESS;
  if (ok && host_visible) {
    ok = vkMapMemory(device_, b.memory, 0, VK_WHOLE_SIZE, 0, &mapped) == VK_SUCCESS;
  }
  if (!ok) {
    destroy(b);
    return {};
  }
  b.mapped = static_cast<std::byte*>(mapped);
  b.size = size;
  b.memory_type = *type;
  return b;
}

Image TestDevice::make_image(VkFormat format, VkExtent3D extent, uint32_t mips, uint32_t layers,
                             VkImageUsageFlags usage) const {
  VkImageFormatProperties limits{};
  if (vkGetPhysicalDeviceImageFormatProperties(physical_, format, VK_IMAGE_TYPE_2D,
                                               VK_IMAGE_TILING_OPTIMAL, usage, 0,
                                               &limits) != VK_SUCCESS ||
      limits.maxMipLevels < mips || limits.maxArrayLayers < layers) {
    return {};
  }
  Image img{.format = format, .extent = extent, .mips = mips, .layers = layers};
  const VkImageCreateInfo info{.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
                               .imageType = VK_IMAGE_TYPE_2D,
                               .format = format,
                               .extent = extent,
                               .mipLevels = mips,
                               .arrayLayers = layers,
                               .samples = VK_SAMPLE_COUNT_1_BIT,
                               .tiling = VK_IMAGE_TILING_OPTIMAL,
                               .usage = usage,
                               .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
                               .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED};
  if (vkCreateImage(device_, &info, nullptr, &img.image) != VK_SUCCESS) return {};
  VkMemoryRequirements req{};
  vkGetImageMemoryRequirements(device_, img.image, &req);
  const std::optional<uint32_t> type = memory_type(
      req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
  const VkMemoryAllocateInfo alloc{.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                   .allocationSize = req.size,
                                   .memoryTypeIndex = type.value_or(0)};
  if (!type || vkAllocateMemory(device_, &alloc, nullptr, &img.memory) != VK_SUCCESS ||
      vkBindImageMemory(device_, img.image, img.memory, 0) != VK_SUCCESS) {
    destroy(img);
    return {};
  }
  return img;
}

void TestDevice::destroy(Buffer& buffer) const {
  if (buffer.buffer != VK_NULL_HANDLE) vkDestroyBuffer(device_, buffer.buffer, nullptr);
  if (buffer.memory != VK_NULL_HANDLE) vkFreeMemory(device_, buffer.memory, nullptr);
  buffer = {};
}

void TestDevice::destroy(Image& image) const {
  if (image.image != VK_NULL_HANDLE) vkDestroyImage(device_, image.image, nullptr);
  if (image.memory != VK_NULL_HANDLE) vkFreeMemory(device_, image.memory, nullptr);
  image = {};
}

VkCommandBuffer TestDevice::allocate_commands(const Queue& queue) const {
  const VkCommandBufferAllocateInfo info{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                         .commandPool = queue.pool,
                                         .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                         .commandBufferCount = 1};
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  if (vkAllocateCommandBuffers(device_, &info, &cmd) != VK_SUCCESS) return VK_NULL_HANDLE;
  return cmd;
}

VkCommandBuffer TestDevice::begin_commands(const Queue& queue) const {
  VkCommandBuffer cmd = allocate_commands(queue);
  if (cmd == VK_NULL_HANDLE) return VK_NULL_HANDLE;
  const VkCommandBufferBeginInfo begin{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                       .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
  if (vkBeginCommandBuffer(cmd, &begin) != VK_SUCCESS) {
    free_commands(queue, cmd);
    return VK_NULL_HANDLE;
  }
  return cmd;
}

VkResult TestDevice::submit(const Queue& queue, VkCommandBuffer cmd,
                            std::span<const VkSemaphoreSubmitInfo> waits,
                            std::span<const VkSemaphoreSubmitInfo> signals, VkFence fence) const {
  if (cmd != VK_NULL_HANDLE) {
    if (VkResult r = vkEndCommandBuffer(cmd); r != VK_SUCCESS) return r;
  }
  const VkCommandBufferSubmitInfo cmd_info{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
                                           .commandBuffer = cmd};
  const VkSubmitInfo2 submit{.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO_2,
                             .waitSemaphoreInfoCount = static_cast<uint32_t>(waits.size()),
                             .pWaitSemaphoreInfos = waits.data(),
                             .commandBufferInfoCount = cmd != VK_NULL_HANDLE ? 1u : 0u,
                             .pCommandBufferInfos = &cmd_info,
                             .signalSemaphoreInfoCount = static_cast<uint32_t>(signals.size()),
                             .pSignalSemaphoreInfos = signals.data()};
  return submit2_(queue.queue, 1, &submit, fence);
}

void TestDevice::free_commands(const Queue& queue, VkCommandBuffer cmd) const {
  vkFreeCommandBuffers(device_, queue.pool, 1, &cmd);
}

bool TestDevice::run_once(const Queue& queue, const std::function<void(VkCommandBuffer)>& body,
                          uint64_t timeout_s) const {
  VkCommandBuffer cmd = begin_commands(queue);
  if (cmd == VK_NULL_HANDLE) return false;
  full_barrier(cmd);
  body(cmd);
  full_barrier(cmd);
  memory_barrier(cmd, kAnyWrite, kHostRead);
  VkFence fence = VK_NULL_HANDLE;
  const VkFenceCreateInfo fence_info{.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  if (vkCreateFence(device_, &fence_info, nullptr, &fence) != VK_SUCCESS) {
    free_commands(queue, cmd);
    return false;
  }
  const bool submitted = submit(queue, cmd, {}, {}, fence) == VK_SUCCESS;
  const bool done = submitted && vkWaitForFences(device_, 1, &fence, VK_TRUE,
                                                 timeout_s * 1000000000) == VK_SUCCESS;
  if (done || !submitted) {
    // (A command buffer still pending stays with the pool, which frees it; its fence leaks.)
    free_commands(queue, cmd);
    vkDestroyFence(device_, fence, nullptr);
  }
  return done;
}

}  // namespace staging::vulkan::support
