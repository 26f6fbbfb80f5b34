#include "gpu.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace staging::vulkan::test {

namespace {

std::atomic<std::size_t> g_messages{0};
std::unique_ptr<Gpu> g_gpu;
bool g_tried = false;
bool g_fatal = false;
std::string g_reason;
PFN_vkQueueSubmit2 g_submit2 = nullptr;
std::string g_layer_status;
ExpectValidationMessages* g_expect =
    nullptr;  // collects messages instead of failing  // the validation layer's status message at
              // vkCreateInstance

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT /*types*/,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data,
                                          void* /*user*/) {
  const std::string_view id = data->pMessageIdName ? data->pMessageIdName : "";
  // The loader's own informational messages (which ICDs/layers it found) are not validation.
  if (id == "Loader Message" && severity <= VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT)
    return VK_FALSE;
  // The layer's status report at vkCreateInstance is not a finding either: it is the layer
  // confirming what it checks. Kept (and printed) as evidence that synchronization validation runs.
  if (id == "UNASSIGNED-khronos-validation-createinstance-status-message" &&
      severity <= VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT) {
    g_layer_status = data->pMessage ? data->pMessage : "";
    return VK_FALSE;
  }
  if (g_expect != nullptr) {
    g_expect->ids.emplace_back(id);
    return VK_FALSE;
  }
  ++g_messages;
  std::fprintf(stderr, "[vulkan] validation message [%.*s]: %s\n", static_cast<int>(id.size()),
               id.data(), data->pMessage ? data->pMessage : "");
  ADD_FAILURE() << "validation message [" << id << "]: " << (data->pMessage ? data->pMessage : "");
  return VK_FALSE;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

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
  return out;
}

// Tears the process's Gpu down inside the test program, so that validation messages at device
// destruction (leaked objects) still fail the run.
class GpuEnvironment final : public ::testing::Environment {
 public:
  void TearDown() override { g_gpu.reset(); }
};
[[maybe_unused]] ::testing::Environment* const g_environment =
    ::testing::AddGlobalTestEnvironment(new GpuEnvironment);

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

}  // namespace

Gpu* Gpu::get(std::string& reason) {
  if (!g_tried) {
    g_tried = true;
    std::unique_ptr<Gpu> gpu(new Gpu);
    if (gpu->init(g_reason)) {
      g_gpu = std::move(gpu);
      std::printf("[vulkan] %s\n", g_gpu->describe().c_str());
      std::fflush(stdout);
    } else if (!g_fatal) {
      std::printf("[vulkan] no usable device: %s\n", g_reason.c_str());
      std::fflush(stdout);
    }
  }
  reason = g_reason;
  return g_gpu.get();
}

bool Gpu::init(std::string& reason) {
  const std::string mode = env("STAGING_VULKAN_VALIDATION").empty()
                               ? std::string("auto")
                               : env("STAGING_VULKAN_VALIDATION");
  uint32_t layer_count = 0;
  vkEnumerateInstanceLayerProperties(&layer_count, nullptr);
  std::vector<VkLayerProperties> layers(layer_count);
  vkEnumerateInstanceLayerProperties(&layer_count, layers.data());
  const bool layer_found = std::any_of(
      layers.begin(), layers.end(),
      [](const VkLayerProperties& l) { return std::strcmp(l.layerName, kValidationLayer) == 0; });
  if (!layer_found && mode == "require") {
    g_fatal = true;
    reason = "STAGING_VULKAN_VALIDATION=require but VK_LAYER_KHRONOS_validation is not installed";
    return false;
  }
  validation = layer_found && mode != "off";

  std::vector<const char*> extensions;
  const auto loader_exts = instance_extensions(nullptr);
  const auto layer_exts =
      validation ? instance_extensions(kValidationLayer) : std::vector<VkExtensionProperties>{};
  const bool debug_utils = has_extension(loader_exts, VK_EXT_DEBUG_UTILS_EXTENSION_NAME) ||
                           has_extension(layer_exts, VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  if (debug_utils) extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  sync_validation =
      validation && has_extension(layer_exts, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
  if (sync_validation) extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
  if (validation && !debug_utils) {
    g_fatal = true;
    reason = "validation layer present but VK_EXT_debug_utils is not: messages would go unseen";
    return false;
  }

  const VkValidationFeatureEnableEXT enables[] = {
      VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  const VkValidationFeaturesEXT features{
      .sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
      .enabledValidationFeatureCount = 1,
      .pEnabledValidationFeatures = enables,
  };
  const VkDebugUtilsMessengerCreateInfoEXT messenger_info{
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
      .pNext = sync_validation ? &features : nullptr,
      .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_VERBOSE_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
      .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
      .pfnUserCallback = on_message,
  };
  const VkApplicationInfo app{
      .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
      .pApplicationName = "staging-test-vulkan",
      .apiVersion = VK_API_VERSION_1_3,
  };
  const VkInstanceCreateInfo instance_info{
      .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
      .pNext = debug_utils ? &messenger_info : nullptr,
      .pApplicationInfo = &app,
      .enabledLayerCount = validation ? 1u : 0u,
      .ppEnabledLayerNames = &kValidationLayer,
      .enabledExtensionCount = static_cast<uint32_t>(extensions.size()),
      .ppEnabledExtensionNames = extensions.data(),
  };
  if (VkResult r = vkCreateInstance(&instance_info, nullptr, &instance); r != VK_SUCCESS) {
    instance = VK_NULL_HANDLE;
    reason = "vkCreateInstance failed (" + std::to_string(r) + "): no Vulkan driver";
    return false;
  }
  if (debug_utils) {
    const auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
    VkDebugUtilsMessengerCreateInfoEXT info = messenger_info;
    info.pNext = nullptr;  // the validation features belong to vkCreateInstance only
    if (create) create(instance, &info, nullptr, &messenger_);
  }

  // Pick a device: Vulkan 1.2+, timeline semaphores, synchronization2.
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  vkEnumeratePhysicalDevices(instance, &count, devices.data());
  const std::string want = env("STAGING_VULKAN_DEVICE");
  int best_rank = 1 << 30;
  bool best_core_sync2 = false;
  for (VkPhysicalDevice d : devices) {
    VkPhysicalDeviceProperties p{};
    vkGetPhysicalDeviceProperties(d, &p);
    if (p.apiVersion < VK_API_VERSION_1_2) continue;
    if (!want.empty() && std::string(p.deviceName).find(want) == std::string::npos) continue;
    uint32_t n = 0;
    vkEnumerateDeviceExtensionProperties(d, nullptr, &n, nullptr);
    std::vector<VkExtensionProperties> exts(n);
    vkEnumerateDeviceExtensionProperties(d, nullptr, &n, exts.data());
    const bool core_sync2 = p.apiVersion >= VK_API_VERSION_1_3;
    VkPhysicalDeviceSynchronization2Features sync2{
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SYNCHRONIZATION_2_FEATURES};
    VkPhysicalDeviceVulkan12Features v12{
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, .pNext = &sync2};
    VkPhysicalDeviceFeatures2 f2{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                 .pNext = &v12};
    if (!core_sync2 && !has_extension(exts, VK_KHR_SYNCHRONIZATION_2_EXTENSION_NAME)) continue;
    vkGetPhysicalDeviceFeatures2(d, &f2);
    if (!v12.timelineSemaphore || !sync2.synchronization2) continue;
    const int rank = type_rank(p.deviceType);
    if (rank < best_rank) {
      best_rank = rank;
      physical_device = d;
      properties = p;
      best_core_sync2 = core_sync2;
      bc_formats = f2.features.textureCompressionBC == VK_TRUE;
    }
  }
  if (sync_validation && !g_layer_status.empty() &&
      g_layer_status.find("VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION") ==
          std::string::npos) {
    g_fatal = true;
    reason = "the validation layer did not confirm synchronization validation: " + g_layer_status;
    return false;
  }
  if (physical_device == VK_NULL_HANDLE) {
    reason = "no Vulkan 1.2+ device with timeline semaphores and synchronization2";
    return false;
  }
  if (!validation && mode == "auto" && properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU) {
    g_fatal = true;
    reason = std::string("software device ") + properties.deviceName +
             " without VK_LAYER_KHRONOS_validation: install vulkan-validationlayers (or set "
             "STAGING_VULKAN_VALIDATION=off to run unvalidated)";
    return false;
  }

  uint32_t family_count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical_device, &family_count, nullptr);
  std::vector<VkQueueFamilyProperties> families(family_count);
  vkGetPhysicalDeviceQueueFamilyProperties(physical_device, &family_count, families.data());
  queue_family = family_count;
  for (VkQueueFlags need : {VkQueueFlags{VK_QUEUE_GRAPHICS_BIT}, VkQueueFlags{VK_QUEUE_COMPUTE_BIT},
                            VkQueueFlags{VK_QUEUE_TRANSFER_BIT}}) {
    for (uint32_t i = 0; i < family_count && queue_family == family_count; ++i) {
      if ((families[i].queueFlags & need) != 0 && families[i].queueCount > 0) queue_family = i;
    }
  }
  const float priority = 1.0f;
  const VkDeviceQueueCreateInfo queue_info{
      .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
      .queueFamilyIndex = queue_family,
      .queueCount = 1,
      .pQueuePriorities = &priority,
  };
  VkPhysicalDeviceSynchronization2Features sync2{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SYNCHRONIZATION_2_FEATURES,
      .synchronization2 = VK_TRUE};
  VkPhysicalDeviceVulkan13Features v13{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES, .synchronization2 = VK_TRUE};
  VkPhysicalDeviceVulkan12Features v12{
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
      .pNext = best_core_sync2 ? static_cast<void*>(&v13) : static_cast<void*>(&sync2),
      .timelineSemaphore = VK_TRUE};
  VkPhysicalDeviceFeatures2 f2{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                               .pNext = &v12};
  f2.features.textureCompressionBC = bc_formats ? VK_TRUE : VK_FALSE;
  const char* sync2_ext = VK_KHR_SYNCHRONIZATION_2_EXTENSION_NAME;
  const VkDeviceCreateInfo device_info{
      .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
      .pNext = &f2,
      .queueCreateInfoCount = 1,
      .pQueueCreateInfos = &queue_info,
      .enabledExtensionCount = best_core_sync2 ? 0u : 1u,
      .ppEnabledExtensionNames = &sync2_ext,
  };
  if (VkResult r = vkCreateDevice(physical_device, &device_info, nullptr, &device);
      r != VK_SUCCESS) {
    device = VK_NULL_HANDLE;
    reason = "vkCreateDevice failed (" + std::to_string(r) + ")";
    return false;
  }
  vkGetDeviceQueue(device, queue_family, 0, &queue);
  g_submit2 = reinterpret_cast<PFN_vkQueueSubmit2>(vkGetDeviceProcAddr(device, "vkQueueSubmit2"));
  if (!g_submit2)
    g_submit2 =
        reinterpret_cast<PFN_vkQueueSubmit2>(vkGetDeviceProcAddr(device, "vkQueueSubmit2KHR"));
  const VkCommandPoolCreateInfo pool_info{
      .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
      .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
      .queueFamilyIndex = queue_family,
  };
  vkCreateCommandPool(device, &pool_info, nullptr, &pool);
  dispatch = Dispatch::from_loader(instance, device);
  if (!dispatch.missing().empty() || !g_submit2) {
    g_fatal = true;
    reason = "device lacks " +
             std::string(dispatch.missing().empty() ? "vkQueueSubmit2" : dispatch.missing());
    return false;
  }
  return true;
}

Gpu::~Gpu() {
  if (device != VK_NULL_HANDLE) {
    vkDeviceWaitIdle(device);
    if (pool != VK_NULL_HANDLE) vkDestroyCommandPool(device, pool, nullptr);
    vkDestroyDevice(device, nullptr);
  }
  if (messenger_ != VK_NULL_HANDLE) {
    const auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(instance, messenger_, nullptr);
  }
  if (instance != VK_NULL_HANDLE) vkDestroyInstance(instance, nullptr);
}

std::string Gpu::describe() const {
  char line[512];
  std::snprintf(line, sizeof line,
                "device: %s (%s, Vulkan %u.%u.%u) | validation: %s | synchronization "
                "validation: %s",
                properties.deviceName, type_name(properties.deviceType),
                VK_API_VERSION_MAJOR(properties.apiVersion),
                VK_API_VERSION_MINOR(properties.apiVersion),
                VK_API_VERSION_PATCH(properties.apiVersion), validation ? "on" : "off",
                !sync_validation ? "off"
                : g_layer_status.find("SYNCHRONIZATION_VALIDATION") != std::string::npos
                    ? "on (the layer's status message confirms it)"
                    : "on");
  return line;
}

uint32_t Gpu::memory_type(uint32_t bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid) {
  VkPhysicalDeviceMemoryProperties props{};
  vkGetPhysicalDeviceMemoryProperties(physical_device, &props);
  for (int pass = 0; pass < 3; ++pass) {
    for (uint32_t i = 0; i < props.memoryTypeCount; ++i) {
      const VkMemoryPropertyFlags f = props.memoryTypes[i].propertyFlags;
      if ((bits & (1u << i)) == 0) continue;
      if (pass < 2 && (f & want) != want) continue;
      if (pass < 1 && (f & avoid) != 0) continue;
      return i;
    }
  }
  ADD_FAILURE() << "no memory type";
  return 0;
}

TestBuffer Gpu::make_buffer(uint64_t size, VkBufferUsageFlags usage, bool host_visible) {
  TestBuffer b;
  b.size = size;
  const VkBufferCreateInfo info{.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                                .size = size,
                                .usage = usage,
                                .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
  EXPECT_EQ(vkCreateBuffer(device, &info, nullptr, &b.buffer), VK_SUCCESS);
  VkMemoryRequirements req{};
  vkGetBufferMemoryRequirements(device, b.buffer, &req);
  const uint32_t type =
      host_visible
          ? memory_type(req.memoryTypeBits,
                        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                        0)
          : memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
                        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
  const VkMemoryAllocateInfo alloc{.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                   .allocationSize = req.size,
                                   .memoryTypeIndex = type};
  EXPECT_EQ(vkAllocateMemory(device, &alloc, nullptr, &b.memory), VK_SUCCESS);
  EXPECT_EQ(vkBindBufferMemory(device, b.buffer, b.memory, 0), VK_SUCCESS);
  if (host_visible) {
    void* p = nullptr;
    EXPECT_EQ(vkMapMemory(device, b.memory, 0, VK_WHOLE_SIZE, 0, &p), VK_SUCCESS);
    b.mapped = static_cast<std::byte*>(p);
  }
  return b;
}

void Gpu::destroy(TestBuffer& b) {
  if (b.buffer) vkDestroyBuffer(device, b.buffer, nullptr);
  if (b.memory) vkFreeMemory(device, b.memory, nullptr);
  b = {};
}

TestImage Gpu::make_image(VkFormat format, VkExtent3D extent, uint32_t mips, uint32_t layers) {
  TestImage img;
  VkFormatProperties fp{};
  vkGetPhysicalDeviceFormatProperties(physical_device, format, &fp);
  const VkFormatFeatureFlags need =
      VK_FORMAT_FEATURE_TRANSFER_DST_BIT | VK_FORMAT_FEATURE_TRANSFER_SRC_BIT;
  if ((fp.optimalTilingFeatures & need) != need) return img;
  const VkImageUsageFlags usage = VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT;
  VkImageFormatProperties ifp{};
  if (vkGetPhysicalDeviceImageFormatProperties(physical_device, format, VK_IMAGE_TYPE_2D,
                                               VK_IMAGE_TILING_OPTIMAL, usage, 0,
                                               &ifp) != VK_SUCCESS ||
      ifp.maxMipLevels < mips || ifp.maxArrayLayers < layers) {
    return img;
  }
  const VkImageCreateInfo info{
      .sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
      .imageType = VK_IMAGE_TYPE_2D,
      .format = format,
      .extent = extent,
      .mipLevels = mips,
      .arrayLayers = layers,
      .samples = VK_SAMPLE_COUNT_1_BIT,
      .tiling = VK_IMAGE_TILING_OPTIMAL,
      .usage = usage,
      .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
      .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED,
  };
  EXPECT_EQ(vkCreateImage(device, &info, nullptr, &img.image), VK_SUCCESS);
  VkMemoryRequirements req{};
  vkGetImageMemoryRequirements(device, img.image, &req);
  const VkMemoryAllocateInfo alloc{
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
      .allocationSize = req.size,
      .memoryTypeIndex = memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0)};
  EXPECT_EQ(vkAllocateMemory(device, &alloc, nullptr, &img.memory), VK_SUCCESS);
  EXPECT_EQ(vkBindImageMemory(device, img.image, img.memory, 0), VK_SUCCESS);
  img.format = format;
  img.extent = extent;
  img.mips = mips;
  img.layers = layers;
  return img;
}

void Gpu::destroy(TestImage& img) {
  if (img.image) vkDestroyImage(device, img.image, nullptr);
  if (img.memory) vkFreeMemory(device, img.memory, nullptr);
  img = {};
}

VkSemaphore Gpu::make_timeline(uint64_t initial) {
  const VkSemaphoreTypeCreateInfo type{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                       .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
                                       .initialValue = initial};
  const VkSemaphoreCreateInfo info{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
                                   .pNext = &type};
  VkSemaphore s = VK_NULL_HANDLE;
  EXPECT_EQ(vkCreateSemaphore(device, &info, nullptr, &s), VK_SUCCESS);
  return s;
}

void Gpu::destroy(VkSemaphore s) {
  vkDestroySemaphore(device, s, nullptr);
}

VkCommandBuffer Gpu::begin_commands() {
  const VkCommandBufferAllocateInfo info{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                         .commandPool = pool,
                                         .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                         .commandBufferCount = 1};
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  EXPECT_EQ(vkAllocateCommandBuffers(device, &info, &cmd), VK_SUCCESS);
  const VkCommandBufferBeginInfo begin{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                       .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
  EXPECT_EQ(vkBeginCommandBuffer(cmd, &begin), VK_SUCCESS);
  return cmd;
}

void Gpu::submit(VkCommandBuffer cmd, std::span<const VkSemaphoreSubmitInfo> waits,
                 std::span<const VkSemaphoreSubmitInfo> signals) {
  const VkCommandBufferSubmitInfo cmd_info{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
                                           .commandBuffer = cmd};
  if (cmd != VK_NULL_HANDLE) {
    EXPECT_EQ(vkEndCommandBuffer(cmd), VK_SUCCESS);
  }
  const VkSubmitInfo2 submit{
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO_2,
      .waitSemaphoreInfoCount = static_cast<uint32_t>(waits.size()),
      .pWaitSemaphoreInfos = waits.data(),
      .commandBufferInfoCount = cmd != VK_NULL_HANDLE ? 1u : 0u,
      .pCommandBufferInfos = &cmd_info,
      .signalSemaphoreInfoCount = static_cast<uint32_t>(signals.size()),
      .pSignalSemaphoreInfos = signals.data(),
  };
  EXPECT_EQ(g_submit2(queue, 1, &submit, VK_NULL_HANDLE), VK_SUCCESS);
}

void Gpu::submit_and_wait(VkCommandBuffer cmd) {
  submit(cmd, {}, {});
  EXPECT_EQ(vkQueueWaitIdle(queue), VK_SUCCESS);
  free_commands(cmd);
}

void Gpu::free_commands(VkCommandBuffer cmd) {
  vkFreeCommandBuffers(device, pool, 1, &cmd);
}

void Gpu::wait(VkSemaphore semaphore, uint64_t value) {
  const VkSemaphoreWaitInfo info{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                                 .semaphoreCount = 1,
                                 .pSemaphores = &semaphore,
                                 .pValues = &value};
  ASSERT_EQ(vkWaitSemaphores(device, &info, uint64_t{60} * 1000 * 1000 * 1000), VK_SUCCESS)
      << "semaphore value " << value << " not reached within 60 s";
}

void Gpu::record_readback(VkCommandBuffer cmd, VkBuffer src, uint64_t offset, uint64_t size,
                          VkBuffer dst, uint64_t dst_offset) {
  // The readback buffer may have been written by an earlier submission (write-after-write).
  const VkBufferMemoryBarrier2 before{.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER_2,
                                      .srcStageMask = VK_PIPELINE_STAGE_2_COPY_BIT,
                                      .srcAccessMask = VK_ACCESS_2_TRANSFER_WRITE_BIT,
                                      .dstStageMask = VK_PIPELINE_STAGE_2_COPY_BIT,
                                      .dstAccessMask = VK_ACCESS_2_TRANSFER_WRITE_BIT,
                                      .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                                      .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                                      .buffer = dst,
                                      .offset = dst_offset,
                                      .size = size};
  const VkDependencyInfo before_dep{.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
                                    .bufferMemoryBarrierCount = 1,
                                    .pBufferMemoryBarriers = &before};
  dispatch.vkCmdPipelineBarrier2(cmd, &before_dep);
  const VkBufferCopy region{offset, dst_offset, size};
  vkCmdCopyBuffer(cmd, src, dst, 1, &region);
  const VkBufferMemoryBarrier2 barrier{.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER_2,
                                       .srcStageMask = VK_PIPELINE_STAGE_2_COPY_BIT,
                                       .srcAccessMask = VK_ACCESS_2_TRANSFER_WRITE_BIT,
                                       .dstStageMask = VK_PIPELINE_STAGE_2_HOST_BIT,
                                       .dstAccessMask = VK_ACCESS_2_HOST_READ_BIT,
                                       .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                                       .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                                       .buffer = dst,
                                       .offset = dst_offset,
                                       .size = size};
  const VkDependencyInfo dep{.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
                             .bufferMemoryBarrierCount = 1,
                             .pBufferMemoryBarriers = &barrier};
  dispatch.vkCmdPipelineBarrier2(cmd, &dep);
}

void Gpu::record_image_readback(VkCommandBuffer cmd, const TestImage& image,
                                VkImageAspectFlags aspect, VkBuffer dst,
                                std::span<const uint64_t> offsets) {
  const VkMemoryBarrier2 before{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER_2,
                                .srcStageMask = VK_PIPELINE_STAGE_2_COPY_BIT,
                                .srcAccessMask = VK_ACCESS_2_TRANSFER_WRITE_BIT,
                                .dstStageMask = VK_PIPELINE_STAGE_2_COPY_BIT,
                                .dstAccessMask = VK_ACCESS_2_TRANSFER_WRITE_BIT};
  const VkDependencyInfo before_dep{.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
                                    .memoryBarrierCount = 1,
                                    .pMemoryBarriers = &before};
  dispatch.vkCmdPipelineBarrier2(cmd, &before_dep);
  std::vector<VkBufferImageCopy> regions;
  for (uint32_t m = 0; m < image.mips; ++m) {
    regions.push_back(VkBufferImageCopy{
        .bufferOffset = offsets[m],
        .imageSubresource = {aspect, m, 0, image.layers},
        .imageExtent = {std::max(1u, image.extent.width >> m),
                        std::max(1u, image.extent.height >> m), 1},
    });
  }
  vkCmdCopyImageToBuffer(cmd, image.image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, dst,
                         static_cast<uint32_t>(regions.size()), regions.data());
  const VkMemoryBarrier2 after{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER_2,
                               .srcStageMask = VK_PIPELINE_STAGE_2_COPY_BIT,
                               .srcAccessMask = VK_ACCESS_2_TRANSFER_WRITE_BIT,
                               .dstStageMask = VK_PIPELINE_STAGE_2_HOST_BIT,
                               .dstAccessMask = VK_ACCESS_2_HOST_READ_BIT};
  const VkDependencyInfo after_dep{.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
                                   .memoryBarrierCount = 1,
                                   .pMemoryBarriers = &after};
  dispatch.vkCmdPipelineBarrier2(cmd, &after_dep);
}

void GpuTest::SetUp() {
  std::string reason;
  gpu = Gpu::get(reason);
  if (gpu == nullptr) {
    if (g_fatal) {
      FAIL() << reason;
    } else {
      GTEST_SKIP() << reason;
    }
  }
}

void GpuTest::TearDown() {
  if (gpu != nullptr) vkDeviceWaitIdle(gpu->device);
}

const char* setup_name(Setup setup) {
  switch (setup) {
    case Setup::Slots:
      return "Slots";
    case Setup::BytesWait:
      return "BytesWait";
    case Setup::BytesGrow:
      return "BytesGrow";
    case Setup::BytesFallback:
      return "BytesFallback";
  }
  return "?";
}

RingConfig with_setup(RingConfig base, Setup setup, uint64_t byte_capacity) {
  if (setup == Setup::Slots) {
    base.strategy = Strategy::Slots;
    return base;
  }
  base.strategy = Strategy::Bytes;
  base.byte_ring.capacity = byte_capacity;
  base.byte_ring.wait_timeout = std::chrono::seconds(2);
  switch (setup) {
    case Setup::BytesWait:
      base.byte_ring.policy = ByteRingPolicy::Wait;
      break;
    case Setup::BytesGrow:
      base.byte_ring.policy = ByteRingPolicy::Grow;
      base.byte_ring.cap = 3 * byte_capacity;
      base.byte_ring.trim_after = std::chrono::milliseconds(50);
      break;
    case Setup::BytesFallback:
      base.byte_ring.policy = ByteRingPolicy::Fallback;
      base.byte_ring.cap = 3 * byte_capacity;
      break;
    case Setup::Slots:
      break;
  }
  return base;
}

uint64_t test_seed(uint64_t fallback) {
  const char* s = std::getenv("STAGING_TEST_SEED");
  const uint64_t v = s ? std::strtoull(s, nullptr, 0) : fallback;
  std::printf("[vulkan] random seed %llu (set STAGING_TEST_SEED to change)\n",
              static_cast<unsigned long long>(v));
  return v;
}

std::vector<std::byte> random_bytes(std::mt19937_64& rng, std::size_t n) {
  std::vector<std::byte> out(n);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t v = rng();
    std::memcpy(out.data() + i, &v, 8);
  }
  if (i < n) {
    const uint64_t v = rng();
    std::memcpy(out.data() + i, &v, n - i);
  }
  return out;
}

int64_t first_difference(std::span<const std::byte> a, std::span<const std::byte> b) {
  if (a.size() != b.size()) return 0;
  if (std::memcmp(a.data(), b.data(), a.size()) == 0) return -1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return static_cast<int64_t>(i);
  }
  return -1;
}

ExpectValidationMessages::ExpectValidationMessages() {
  g_expect = this;
}
ExpectValidationMessages::~ExpectValidationMessages() {
  g_expect = nullptr;
}

std::size_t validation_message_count() {
  return g_messages.load();
}

// ---- StagingChecker ---------------------------------------------------------------------------

bool StagingChecker::reached(const RetirementPoint& point) {
  uint64_t value = 0;
  if (vkGetSemaphoreCounterValue(gpu_->device, point.semaphore, &value) != VK_SUCCESS) return false;
  return value >= point.value;
}

void StagingChecker::on_write(uint64_t frame, VkBuffer buffer, uint64_t capacity, uint64_t offset,
                              uint64_t size) {
  ++writes;
  if (size == 0 || offset > capacity || size > capacity - offset) {
    ++violations;
    ADD_FAILURE() << "I4: frame " << frame << " writes [" << offset << ", +" << size
                  << ") past its buffer of " << capacity << " bytes";
  }
  const uint64_t end = offset + size;
  Frame* mine = nullptr;
  for (Frame& f : frames_) {
    if (f.id == frame) {
      mine = &f;
      continue;
    }
    for (const Range& r : f.ranges) {
      if (r.buffer != buffer || r.end <= offset || end <= r.begin) continue;
      if (!f.finished) {
        ++violations;
        ADD_FAILURE() << "I1: frame " << frame << " writes [" << offset << ", " << end
                      << ") over open frame " << f.id << "'s [" << r.begin << ", " << r.end << ")";
      } else if (!reached(f.point)) {
        ++violations;
        ADD_FAILURE() << "I1: frame " << frame << " writes [" << offset << ", " << end
                      << ") over frame " << f.id << "'s [" << r.begin << ", " << r.end
                      << ") still read by the GPU (point " << f.point.value << " not reached)";
      }
    }
  }
  if (mine == nullptr) {
    frames_.push_back(Frame{frame, {}, false, {}});
    mine = &frames_.back();
  }
  mine->ranges.push_back({buffer, offset, end});

  // The core's checker: one region per staging buffer (a handle reused for a new buffer of
  // another size is a new region; its old ranges were released before the buffer was freed).
  uint32_t region = 0;
  while (region < regions_.size() && regions_[region].buffer != buffer)
    ++region;
  if (region < regions_.size() && regions_[region].capacity != capacity) {
    core_.forget_region(region);
    regions_[region].capacity = capacity;
    core_.on_region_created(region, capacity);
  } else if (region == regions_.size()) {
    regions_.push_back({buffer, capacity});
    core_.on_region_created(region, capacity);
  }
  Reservation r;
  r.id = next_reservation_++;
  r.region = region;
  r.offset = offset;
  r.size = size;
  r.token = frame;
  r.owner = frame;
  core_.on_reserve(r);
  reservations_.emplace_back(frame, r.id);
  check_core();
}

void StagingChecker::check_core() {
  const auto& found = core_.violations();
  for (; core_seen_ < found.size(); ++core_seen_) {
    ++violations;
    ADD_FAILURE() << "core InvariantChecker: " << found[core_seen_].message;
  }
}

void StagingChecker::on_finish(uint64_t frame, const RetirementPoint& point) {
  for (Frame& f : frames_) {
    if (f.id == frame) {
      f.finished = true;
      f.point = point;
      return;
    }
  }
  frames_.push_back(Frame{frame, {}, true, point});
}

void StagingChecker::on_release(uint64_t frame, Release why) {
  ++releases;
  std::erase_if(reservations_, [&](const std::pair<uint64_t, uint64_t>& r) {
    if (r.first != frame) return false;
    core_.on_cancel(r.second);  // no longer read by the GPU (or never submitted)
    return true;
  });
  check_core();
  for (auto it = frames_.begin(); it != frames_.end(); ++it) {
    if (it->id != frame) continue;
    if (why == Release::Retired && !(it->finished && reached(it->point))) {
      ++violations;
      ADD_FAILURE() << "I3: frame " << frame << " retired before its point " << it->point.value
                    << " was reached";
    }
    frames_.erase(it);
    return;
  }
}

}  // namespace staging::vulkan::test
