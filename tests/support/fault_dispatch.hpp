// FaultDispatch: a staging::vulkan::Dispatch that forwards to a real one, counts every call of
// the kinds that can fail, fails the N-th call of a chosen kind with a chosen VkResult (or loses
// the device from then on), and counts the objects made and destroyed through it per handle type
// — for fault-injection sweeps: run a scripted sequence once to count the calls, then once for
// every N, and check after each run that every object made was destroyed.
//
// Internal to the tests. The table's functions carry no user data, so the state is process-wide:
// one FaultDispatch at a time. Its calls may come from any thread (a Streamer's pump thread).
#pragma once

#include <vulkan/vulkan_core.h>

#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "staging/detail/core/enum_names.hpp"
#include "staging/vulkan/dispatch.hpp"

namespace staging::vulkan::support {

/// The calls a fault can be injected into (the table's functions that return a VkResult).
enum class FaultCall : uint8_t {
  CreateBuffer,
  AllocateMemory,
  BindBufferMemory,
  MapMemory,
  FlushMappedMemoryRanges,
  CreateSemaphore,
  GetSemaphoreCounterValue,
  WaitSemaphores,
  // The Streamer's own (Dispatch's stream functions).
  CreateCommandPool,
  AllocateCommandBuffers,
  BeginCommandBuffer,
  EndCommandBuffer,
  QueueSubmit2,
};
inline constexpr std::size_t kFaultCalls = 13;

/// Names of FaultCall's values ("CreateBuffer", ...), in order.
constexpr auto enum_names(std::type_identity<FaultCall>) noexcept {
  return std::to_array<std::string_view>(
      {"CreateBuffer", "AllocateMemory", "BindBufferMemory", "MapMemory", "FlushMappedMemoryRanges",
       "CreateSemaphore", "GetSemaphoreCounterValue", "WaitSemaphores", "CreateCommandPool",
       "AllocateCommandBuffers", "BeginCommandBuffer", "EndCommandBuffer", "QueueSubmit2"});
}
static_assert(enum_names_complete<FaultCall>(), "FaultCall: a value has no name");

/// Objects alive now that were made through the table (created − destroyed), per handle type.
struct LiveObjects {
  int64_t buffers = 0;
  int64_t memory = 0;
  int64_t semaphores = 0;
  int64_t mapped = 0;  ///< memory objects mapped and not unmapped (or freed)
  int64_t command_pools = 0;
  friend bool operator==(const LiveObjects&, const LiveObjects&) = default;
};

/// A fault to inject: a call of `call` fails with `result`; VK_ERROR_DEVICE_LOST loses the device
/// from then on (FaultDispatch::lose_device_at), anything else fails that one call (fail_nth).
struct Fault {
  FaultCall call;
  VkResult result;
};

/// "CreateBuffer call 3 fails (out of memory)", for a sweep's trace.
[[nodiscard]] std::string describe(const Fault& fault, uint64_t n);

class FaultDispatch {
 public:
  /// Wraps `real` (every member non-null). One FaultDispatch per process at a time.
  explicit FaultDispatch(const Dispatch& real);
  ~FaultDispatch();
  FaultDispatch(const FaultDispatch&) = delete;
  FaultDispatch& operator=(const FaultDispatch&) = delete;

  /// The table to hand to Ring::create: every call goes through this object.
  [[nodiscard]] const Dispatch& dispatch() const noexcept { return wrapped_; }

  /// The `n`-th call of `call` from now on (1: the next) returns `result` instead of reaching the
  /// driver. Replaces an earlier fault; clears a lost device.
  void fail_nth(FaultCall call, uint64_t n, VkResult result);
  /// From the `n`-th call of `call` from now on, the device reads as lost: that call and every
  /// later semaphore read or wait returns VK_ERROR_DEVICE_LOST, and every later create, allocate
  /// or map returns VK_ERROR_DEVICE_LOST too (nothing is made), until clear().
  void lose_device_at(FaultCall call, uint64_t n);
  /// Counts calls from zero again, then arms `fault` at the `n`-th call of its kind from now on:
  /// lose_device_at() for VK_ERROR_DEVICE_LOST, else fail_nth().
  void arm(const Fault& fault, uint64_t n);
  /// No fault any more (the device is back).
  void clear();
  /// Whether the fault asked for has happened.
  [[nodiscard]] bool fired() const noexcept;
  /// Whether the device reads as lost now.
  [[nodiscard]] bool lost() const noexcept;

  /// Calls of `call` since construction (or reset_counts()).
  [[nodiscard]] uint64_t calls(FaultCall call) const noexcept;
  void reset_counts() noexcept;

  /// Objects alive now that were made through the table.
  [[nodiscard]] LiveObjects live() const noexcept;
  /// Destroys every object still alive that was made through the table (for a test that leaked
  /// on purpose, once the GPU is idle), with the real functions.
  void destroy_live(VkDevice device);

 private:
  Dispatch wrapped_;
};

}  // namespace staging::vulkan::support
