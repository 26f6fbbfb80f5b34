#include "vulkan_context.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>

#include "vulkan_commands.hpp"

namespace staging::bench::vk {
namespace {

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

}  // namespace

std::unique_ptr<Context> Context::create(const Options& options, std::string& why) {
  std::unique_ptr<Context> c(new Context());
  if (!c->init(options, why)) return nullptr;
  return c;
}

bool Context::init(const Options& options, std::string& why) {
  namespace support = staging::vulkan::support;
  support::Failure failure;
  device_owner_ = support::TestDevice::create(
      {.application = "staging-bench",
       .validation = options.validate ? support::Validation::Require : support::Validation::Off,
       .device_name = options.device_filter},
      failure);
  if (!device_owner_) {
    why = failure.reason;
    return false;
  }
  const support::TestDevice& d = *device_owner_;
  validation_ = d.validation();
  physical_ = d.physical_device();
  device_ = d.device();
  properties_ = d.properties();
  memory_properties_ = d.memory_properties();
  driver_ = d.driver();
  host_query_reset_ = d.host_query_reset();
  bc_ = d.bc_formats();
  const auto use_queue = [&](Queue& q, const support::Queue& from, const char* name) {
    static_cast<support::Queue&>(q) = from;
    q.name = name;
    families_.push_back(from.family);
  };
  use_queue(graphics_, d.universal(), "graphics");
  if (d.transfer() != nullptr) use_queue(transfer_, *d.transfer(), "transfer");

  dispatch_ = d.dispatch();
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
  }
  // device_owner_ then destroys the pools, the device and the instance.
}

std::string Context::describe() const {
  return device_owner_->describe();
}

int Context::validation_messages() const {
  return device_owner_->findings();
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
                                                     prefer_device_local);
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
  device_owner_->destroy(b);
}

Image Context::make_image(VkFormat format, uint32_t width, uint32_t height, uint32_t mips) {
  return device_owner_->make_texture(format, width, height, mips);
}

void Context::destroy(Image& img) {
  device_owner_->destroy(img);
}

bool Context::image_format_ok(VkFormat format) const {
  VkFormatProperties p;
  vkGetPhysicalDeviceFormatProperties(physical_, format, &p);
  const VkFormatFeatureFlags need =
      VK_FORMAT_FEATURE_TRANSFER_DST_BIT | VK_FORMAT_FEATURE_TRANSFER_SRC_BIT;
  return (p.optimalTilingFeatures & need) == need;
}

VkCommandBuffer Context::allocate_commands(const Queue& queue) {
  return device_owner_->allocate_commands(queue);
}

void Context::free_commands(const Queue& queue, VkCommandBuffer cmd) {
  if (cmd != VK_NULL_HANDLE) device_owner_->free_commands(queue, cmd);
}

void Context::begin(VkCommandBuffer cmd) {
  const VkCommandBufferBeginInfo begin{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                       .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
  vkBeginCommandBuffer(cmd, &begin);
}

void Context::submit(const Queue& queue, VkCommandBuffer cmd, const VkSemaphoreSubmitInfo* signal,
                     const VkSemaphoreSubmitInfo* wait) {
  const bool signals = signal != nullptr && signal->semaphore != VK_NULL_HANDLE;
  device_owner_->submit(queue, cmd, {wait, wait != nullptr ? 1u : 0u}, {signal, signals ? 1u : 0u});
}

void Context::full_barrier(VkCommandBuffer cmd) {
  staging::vulkan::support::full_barrier(cmd);
}

bool Context::run_once(const Queue& queue, const std::function<void(VkCommandBuffer)>& body) {
  return device_owner_->run_once(queue, body);
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

Expected<void, AllocError> TypedMemory::flush(const staging::vulkan::StagingMemory& m,
                                              uint64_t offset, uint64_t size) {
  const VkMappedMemoryRange range =
      staging::vulkan::flush_range(m, offset, size, vk_.properties().limits.nonCoherentAtomSize);
  if (range.size == 0) return {};
  const VkResult r = vkFlushMappedMemoryRanges(vk_.device(), 1, &range);
  if (r != VK_SUCCESS) return unexpected(staging::vulkan::to_alloc_error(r));
  return {};
}

void TypedMemory::release(const staging::vulkan::StagingMemory& m) noexcept {
  if (m.buffer != VK_NULL_HANDLE) vkDestroyBuffer(vk_.device(), m.buffer, nullptr);
  if (m.memory != VK_NULL_HANDLE) vkFreeMemory(vk_.device(), m.memory, nullptr);
}

}  // namespace staging::bench::vk
