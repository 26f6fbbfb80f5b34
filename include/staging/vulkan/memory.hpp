// Staging memory: persistently mapped, HOST_VISIBLE VkBuffers the CPU writes uploads into and
// copy commands read from. Where that memory comes from is a hook (MemoryHook): by default the
// ring (or streamer) allocates one VkDeviceMemory per buffer itself; an application with its own
// allocator (VMA, an engine heap) implements the hook instead.
//
// Memory-type choice (choose_staging_memory_type, used by the built-in hook), among the types the
// buffer allows that are HOST_VISIBLE:
//   1. HOST_COHERENT is preferred: no flush needed, and a forgotten flush cannot lose bytes;
//   2. then not DEVICE_LOCAL (unless RingConfig or StreamerConfig::prefer_device_local): staging
//      lives in system memory, which the copy engine reads at the bus's rate, and leaves the
//      (often small) mappable VRAM to resources that need it;
//   3. then not HOST_CACHED: the CPU only writes staging memory, and write-combined memory takes
//      streaming writes without polluting the cache;
//   4. then the lowest index (the driver lists its preferred types first).
// Non-coherent memory works too: the ring flushes what a frame wrote before the copies are
// submitted, over ranges rounded out to nonCoherentAtomSize (flush_range).
#pragma once

#include <vulkan/vulkan_core.h>

#include <cstddef>
#include <cstdint>
#include <optional>

#include "staging/core/errors.hpp"

namespace staging::vulkan {

/// One staging buffer: a VkBuffer usable as TRANSFER_SRC whose memory stays mapped for its whole
/// life. Plain data, made and released by a MemoryHook.
struct StagingMemory {
  /// The buffer; copies read it from offset 0 to size.
  VkBuffer buffer = VK_NULL_HANDLE;
  /// The CPU address of the buffer's byte 0; writable for `size` bytes until released.
  std::byte* mapped = nullptr;
  /// The buffer's size in bytes.
  uint64_t size = 0;
  /// False when the memory is not HOST_COHERENT: the ring then calls MemoryHook::flush() for the
  /// bytes it wrote before they are submitted (so does a ring with RingConfig::flush_always,
  /// whatever this says).
  bool coherent = true;
  /// The memory type index, for diagnostics.
  uint32_t memory_type = 0;
  /// The hook's own handles (the built-in hook: the VkDeviceMemory and its allocation size,
  /// which flush_range() reads; a hook of another allocator keeps its handle in `user`). The
  /// ring and the streamer never read them.
  VkDeviceMemory memory = VK_NULL_HANDLE;
  /// The hook's: the built-in hook's allocation size (>= size, rounded to nonCoherentAtomSize).
  uint64_t memory_size = 0;
  /// The hook's: anything it needs to release the buffer (a VmaAllocation, ...).
  void* user = nullptr;
};

/// Supplies staging buffers. Implement it to take staging memory from your own allocator.
///
/// Threading: a Ring calls it from the thread that uses the Ring (see Ring); a Streamer from the
/// threads that create and destroy it (allocate(), release()) and from the thread that submits a
/// batch (flush(): its pump, or one committing a piece written in place). A hook given to several
/// rings and streamers (one budget for all of them) is called from all of their threads at once
/// and must be safe for that. Must not throw.
class MemoryHook {
 public:
  virtual ~MemoryHook() = default;
  /// Makes a buffer of exactly `size` bytes (> 0) with usage TRANSFER_SRC, bound to HOST_VISIBLE
  /// memory and mapped. Errors: OutOfMemory (device or host, or a budget), MapFailed, DeviceLost,
  /// Other.
  virtual Expected<StagingMemory, AllocError> allocate(uint64_t size) = 0;
  /// Makes the CPU's writes to bytes [offset, offset + size) of `memory` visible to the device
  /// (vkFlushMappedMemoryRanges, rounded out as flush_range() does). Called only for memory with
  /// coherent == false (or any memory of a ring with RingConfig::flush_always), after the writes
  /// and before the submission that reads them.
  /// Errors: OutOfMemory (host or device), DeviceLost, Other — the bytes may not be visible to
  /// the device: the caller submits nothing that reads them (a frame's finish() answers
  /// FinishError::FlushFailed, a Streamer's upload fails).
  virtual Expected<void, AllocError> flush(const StagingMemory& memory, uint64_t offset,
                                           uint64_t size) = 0;
  /// Destroys the buffer and its memory. Called only once no submitted copy can read it (or the
  /// device is lost).
  virtual void release(const StagingMemory& memory) noexcept = 0;
};

/// The memory type index for staging buffers: the best HOST_VISIBLE type among `allowed_types`
/// (a VkMemoryRequirements::memoryTypeBits mask) by the order in the file comment, or none when
/// no allowed type is HOST_VISIBLE. PROTECTED and LAZILY_ALLOCATED types are never chosen.
/// Pure; safe from any thread.
[[nodiscard]] std::optional<uint32_t> choose_staging_memory_type(
    const VkPhysicalDeviceMemoryProperties& properties, uint32_t allowed_types,
    bool prefer_device_local = false) noexcept;

/// The VkMappedMemoryRange that flushes bytes [offset, offset + size) of `memory`, for a
/// MemoryHook's flush(): `memory.memory`, with the start rounded down and the end up to multiples
/// of `atom` (nonCoherentAtomSize; 0 is treated as 1), the end clamped to the allocation's end,
/// `memory.memory_size` (which the spec allows as a size that is not a multiple of the atom).
/// Preconditions: offset + size <= memory.memory_size (no overflow). A size of 0 gives
/// {offset, 0}: nothing to flush. Pure; safe from any thread. With an allocation of 1000 bytes
/// and an atom of 64: (100, 10) flushes {64, 64}; (990, 10) flushes {960, 40}.
[[nodiscard]] VkMappedMemoryRange flush_range(const StagingMemory& memory, uint64_t offset,
                                              uint64_t size, uint64_t atom) noexcept;

/// The AllocError a failed allocation, bind or map VkResult stands for: OUT_OF_HOST_MEMORY,
/// OUT_OF_DEVICE_MEMORY and TOO_MANY_OBJECTS: OutOfMemory; MEMORY_MAP_FAILED: MapFailed;
/// DEVICE_LOST: DeviceLost; anything else: Other.
[[nodiscard]] AllocError to_alloc_error(VkResult result) noexcept;

}  // namespace staging::vulkan
