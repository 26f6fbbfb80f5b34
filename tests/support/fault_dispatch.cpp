#include "fault_dispatch.hpp"

#include <cassert>
#include <mutex>

namespace staging::vulkan::support {
namespace {

struct State {
  Dispatch real;
  std::array<uint64_t, kFaultCalls> calls{};
  std::optional<FaultCall> fault_call;
  uint64_t fault_at = 0;  // the call's count at which it fails
  VkResult fault_result = VK_SUCCESS;
  bool sticky_loss = false;
  bool fired = false;
  bool lost = false;
  std::set<VkBuffer> buffers;
  std::set<VkDeviceMemory> memory;
  std::set<VkSemaphore> semaphores;
  std::set<VkDeviceMemory> mapped;
  std::set<VkCommandPool> pools;
};
State* g = nullptr;
std::mutex g_mutex;  // guards *g (the calls themselves run outside it)

// Counts the call; returns the result to fail it with, or VK_SUCCESS to forward it.
VkResult inject(FaultCall call, bool creates) {
  std::lock_guard lock(g_mutex);
  const uint64_t n = ++g->calls[static_cast<std::size_t>(call)];
  if (g->fault_call == call && n == g->fault_at) {
    g->fired = true;
    if (g->sticky_loss) {
      g->lost = true;
      return VK_ERROR_DEVICE_LOST;
    }
    return g->fault_result;
  }
  const bool reads = call == FaultCall::GetSemaphoreCounterValue ||
                     call == FaultCall::WaitSemaphores || call == FaultCall::QueueSubmit2;
  if (g->lost && (reads || creates)) return VK_ERROR_DEVICE_LOST;
  return VK_SUCCESS;
}

// A call that makes a handle: fails as inject() says, else forwards it and, when it succeeds,
// records the handle it made (*made) in `live`.
template <class Handle, class Forward>
VkResult make_tracked(FaultCall call, std::set<Handle>& live, const Handle* made, Forward forward) {
  if (VkResult r = inject(call, true); r != VK_SUCCESS) return r;
  const VkResult r = forward();
  if (r == VK_SUCCESS) {
    std::lock_guard lock(g_mutex);
    live.insert(*made);
  }
  return r;
}
// A handle no longer live (before the call that ends it is forwarded).
template <class Handle>
void untrack(std::set<Handle>& live, Handle handle) {
  std::lock_guard lock(g_mutex);
  live.erase(handle);
}

VKAPI_ATTR VkResult VKAPI_CALL create_buffer(VkDevice d, const VkBufferCreateInfo* info,
                                             const VkAllocationCallbacks* a, VkBuffer* out) {
  return make_tracked(FaultCall::CreateBuffer, g->buffers, out,
                      [&] { return g->real.vkCreateBuffer(d, info, a, out); });
}
VKAPI_ATTR void VKAPI_CALL destroy_buffer(VkDevice d, VkBuffer b, const VkAllocationCallbacks* a) {
  untrack(g->buffers, b);
  g->real.vkDestroyBuffer(d, b, a);
}
VKAPI_ATTR VkResult VKAPI_CALL allocate_memory(VkDevice d, const VkMemoryAllocateInfo* info,
                                               const VkAllocationCallbacks* a,
                                               VkDeviceMemory* out) {
  return make_tracked(FaultCall::AllocateMemory, g->memory, out,
                      [&] { return g->real.vkAllocateMemory(d, info, a, out); });
}
VKAPI_ATTR void VKAPI_CALL free_memory(VkDevice d, VkDeviceMemory m,
                                       const VkAllocationCallbacks* a) {
  if (m != VK_NULL_HANDLE) {
    std::lock_guard lock(g_mutex);
    g->memory.erase(m);
    g->mapped.erase(m);  // freeing unmaps
  }
  g->real.vkFreeMemory(d, m, a);
}
VKAPI_ATTR VkResult VKAPI_CALL bind_buffer_memory(VkDevice d, VkBuffer b, VkDeviceMemory m,
                                                  VkDeviceSize offset) {
  if (VkResult r = inject(FaultCall::BindBufferMemory, true); r != VK_SUCCESS) return r;
  return g->real.vkBindBufferMemory(d, b, m, offset);
}
VKAPI_ATTR VkResult VKAPI_CALL map_memory(VkDevice d, VkDeviceMemory m, VkDeviceSize offset,
                                          VkDeviceSize size, VkMemoryMapFlags flags, void** out) {
  return make_tracked(FaultCall::MapMemory, g->mapped, &m,
                      [&] { return g->real.vkMapMemory(d, m, offset, size, flags, out); });
}
VKAPI_ATTR void VKAPI_CALL unmap_memory(VkDevice d, VkDeviceMemory m) {
  untrack(g->mapped, m);
  g->real.vkUnmapMemory(d, m);
}
VKAPI_ATTR VkResult VKAPI_CALL flush_ranges(VkDevice d, uint32_t count,
                                            const VkMappedMemoryRange* ranges) {
  if (VkResult r = inject(FaultCall::FlushMappedMemoryRanges, false); r != VK_SUCCESS) return r;
  return g->real.vkFlushMappedMemoryRanges(d, count, ranges);
}
VKAPI_ATTR VkResult VKAPI_CALL create_semaphore(VkDevice d, const VkSemaphoreCreateInfo* info,
                                                const VkAllocationCallbacks* a, VkSemaphore* out) {
  return make_tracked(FaultCall::CreateSemaphore, g->semaphores, out,
                      [&] { return g->real.vkCreateSemaphore(d, info, a, out); });
}
VKAPI_ATTR void VKAPI_CALL destroy_semaphore(VkDevice d, VkSemaphore s,
                                             const VkAllocationCallbacks* a) {
  untrack(g->semaphores, s);
  g->real.vkDestroySemaphore(d, s, a);
}
VKAPI_ATTR VkResult VKAPI_CALL counter_value(VkDevice d, VkSemaphore s, uint64_t* value) {
  if (VkResult r = inject(FaultCall::GetSemaphoreCounterValue, false); r != VK_SUCCESS) return r;
  return g->real.vkGetSemaphoreCounterValue(d, s, value);
}
VKAPI_ATTR VkResult VKAPI_CALL wait_semaphores(VkDevice d, const VkSemaphoreWaitInfo* info,
                                               uint64_t timeout) {
  if (VkResult r = inject(FaultCall::WaitSemaphores, false); r != VK_SUCCESS) return r;
  return g->real.vkWaitSemaphores(d, info, timeout);
}

VKAPI_ATTR VkResult VKAPI_CALL create_command_pool(VkDevice d, const VkCommandPoolCreateInfo* info,
                                                   const VkAllocationCallbacks* a,
                                                   VkCommandPool* out) {
  return make_tracked(FaultCall::CreateCommandPool, g->pools, out,
                      [&] { return g->real.vkCreateCommandPool(d, info, a, out); });
}
VKAPI_ATTR void VKAPI_CALL destroy_command_pool(VkDevice d, VkCommandPool p,
                                                const VkAllocationCallbacks* a) {
  untrack(g->pools, p);
  g->real.vkDestroyCommandPool(d, p, a);
}
VKAPI_ATTR VkResult VKAPI_CALL allocate_command_buffers(VkDevice d,
                                                        const VkCommandBufferAllocateInfo* info,
                                                        VkCommandBuffer* out) {
  if (VkResult r = inject(FaultCall::AllocateCommandBuffers, true); r != VK_SUCCESS) return r;
  return g->real.vkAllocateCommandBuffers(d, info, out);
}
VKAPI_ATTR VkResult VKAPI_CALL begin_command_buffer(VkCommandBuffer cmd,
                                                    const VkCommandBufferBeginInfo* info) {
  if (VkResult r = inject(FaultCall::BeginCommandBuffer, false); r != VK_SUCCESS) return r;
  return g->real.vkBeginCommandBuffer(cmd, info);
}
VKAPI_ATTR VkResult VKAPI_CALL end_command_buffer(VkCommandBuffer cmd) {
  if (VkResult r = inject(FaultCall::EndCommandBuffer, false); r != VK_SUCCESS) return r;
  return g->real.vkEndCommandBuffer(cmd);
}
VKAPI_ATTR VkResult VKAPI_CALL queue_submit2(VkQueue queue, uint32_t count,
                                             const VkSubmitInfo2* submits, VkFence fence) {
  if (VkResult r = inject(FaultCall::QueueSubmit2, false); r != VK_SUCCESS) return r;
  return g->real.vkQueueSubmit2(queue, count, submits, fence);
}

}  // namespace

FaultDispatch::FaultDispatch(const Dispatch& real) {
  assert(g == nullptr && "one FaultDispatch at a time");
  g = new State{};
  g->real = real;
  wrapped_ = real;
  wrapped_.vkCreateBuffer = create_buffer;
  wrapped_.vkDestroyBuffer = destroy_buffer;
  wrapped_.vkAllocateMemory = allocate_memory;
  wrapped_.vkFreeMemory = free_memory;
  wrapped_.vkBindBufferMemory = bind_buffer_memory;
  wrapped_.vkMapMemory = map_memory;
  wrapped_.vkUnmapMemory = unmap_memory;
  wrapped_.vkFlushMappedMemoryRanges = flush_ranges;
  wrapped_.vkCreateSemaphore = create_semaphore;
  wrapped_.vkDestroySemaphore = destroy_semaphore;
  wrapped_.vkGetSemaphoreCounterValue = counter_value;
  wrapped_.vkWaitSemaphores = wait_semaphores;
  wrapped_.vkCreateCommandPool = create_command_pool;
  wrapped_.vkDestroyCommandPool = destroy_command_pool;
  wrapped_.vkAllocateCommandBuffers = allocate_command_buffers;
  wrapped_.vkBeginCommandBuffer = begin_command_buffer;
  wrapped_.vkEndCommandBuffer = end_command_buffer;
  wrapped_.vkQueueSubmit2 = queue_submit2;
}

FaultDispatch::~FaultDispatch() {
  delete g;
  g = nullptr;
}

void FaultDispatch::fail_nth(FaultCall call, uint64_t n, VkResult result) {
  std::lock_guard lock(g_mutex);
  g->fault_call = call;
  g->fault_at = g->calls[static_cast<std::size_t>(call)] + n;
  g->fault_result = result;
  g->sticky_loss = false;
  g->fired = false;
  g->lost = false;
}

void FaultDispatch::lose_device_at(FaultCall call, uint64_t n) {
  fail_nth(call, n, VK_ERROR_DEVICE_LOST);
  std::lock_guard lock(g_mutex);
  g->sticky_loss = true;
}

void FaultDispatch::clear() {
  std::lock_guard lock(g_mutex);
  g->fault_call.reset();
  g->lost = false;
}

bool FaultDispatch::fired() const noexcept {
  std::lock_guard lock(g_mutex);
  return g->fired;
}
bool FaultDispatch::lost() const noexcept {
  std::lock_guard lock(g_mutex);
  return g->lost;
}

uint64_t FaultDispatch::calls(FaultCall call) const noexcept {
  std::lock_guard lock(g_mutex);
  return g->calls[static_cast<std::size_t>(call)];
}

void FaultDispatch::arm(const Fault& fault, uint64_t n) {
  reset_counts();
  if (fault.result == VK_ERROR_DEVICE_LOST) {
    lose_device_at(fault.call, n);
  } else {
    fail_nth(fault.call, n, fault.result);
  }
}

std::string describe(const Fault& fault, uint64_t n) {
  return std::string(to_string(fault.call)) + " call " + std::to_string(n) + " fails (" +
         (fault.result == VK_ERROR_DEVICE_LOST ? "device lost" : "out of memory") + ")";
}

void FaultDispatch::reset_counts() noexcept {
  std::lock_guard lock(g_mutex);
  g->calls = {};
}

LiveObjects FaultDispatch::live() const noexcept {
  std::lock_guard lock(g_mutex);
  return {static_cast<int64_t>(g->buffers.size()), static_cast<int64_t>(g->memory.size()),
          static_cast<int64_t>(g->semaphores.size()), static_cast<int64_t>(g->mapped.size()),
          static_cast<int64_t>(g->pools.size())};
}

void FaultDispatch::destroy_live(VkDevice device) {
  std::lock_guard lock(g_mutex);
  for (VkBuffer b : g->buffers)
    g->real.vkDestroyBuffer(device, b, nullptr);
  for (VkDeviceMemory m : g->memory)
    g->real.vkFreeMemory(device, m, nullptr);
  for (VkSemaphore s : g->semaphores)
    g->real.vkDestroySemaphore(device, s, nullptr);
  for (VkCommandPool p : g->pools)
    g->real.vkDestroyCommandPool(device, p, nullptr);
  g->pools.clear();
  g->buffers.clear();
  g->memory.clear();
  g->semaphores.clear();
  g->mapped.clear();
}

}  // namespace staging::vulkan::support
