// Internal: where a Ring's staging buffers come from — its MemoryHook — and what the ring reports
// about them (memory type, coherence, the last allocation error, flushes). Shared by the
// strategies and the fallback route. Not installed.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "staging/detail/vulkan/default_memory.hpp"
#include "staging/vulkan/memory.hpp"
#include "staging/vulkan/ring.hpp"

namespace staging::vulkan::detail {

class MemorySource {
 public:
  /// The hook of `config` (a DefaultMemory on `device` when it has none).
  MemorySource(const Device& device, const RingConfig& config);
  MemorySource(const MemorySource&) = delete;
  MemorySource& operator=(const MemorySource&) = delete;

  /// A staging buffer of `size` bytes; records its memory type and coherence, or the error.
  Expected<StagingMemory, AllocError> allocate(uint64_t size);
  /// Gives a buffer back to the hook (nothing reads it any more); after leak_from_now(), keeps
  /// it allocated instead.
  void release(const StagingMemory& memory) noexcept;
  /// From now on release() gives nothing back: the GPU may still read it (a ring destroyed with
  /// frames in flight that did not complete in time).
  void leak_from_now() noexcept { leaking_ = true; }
  /// Whether writes into `memory` need flush(): it is not coherent, or flush_always is set.
  [[nodiscard]] bool needs_flush(const StagingMemory& memory) const noexcept {
    return !memory.coherent || flush_always_;
  }
  /// Makes the CPU's writes to [offset, offset + size) visible to the device when needs_flush();
  /// counted in flushes(). Errors: the hook's (MemoryHook::flush).
  Expected<void, AllocError> flush(const StagingMemory& memory, uint64_t offset, uint64_t size);

  /// The memory type of the last buffer made (none before the first).
  [[nodiscard]] std::optional<uint32_t> memory_type() const noexcept { return memory_type_; }
  /// Whether the last buffer made is HOST_COHERENT (true before the first).
  [[nodiscard]] bool coherent() const noexcept { return coherent_; }
  /// The error behind the last failed allocation (kept until the next failure).
  [[nodiscard]] std::optional<AllocError> last_error() const noexcept { return last_error_; }
  /// Flushes made and the bytes they asked for (before rounding to atoms).
  [[nodiscard]] uint64_t flushes() const noexcept { return flushes_; }
  [[nodiscard]] uint64_t flushed_bytes() const noexcept { return flushed_bytes_; }

 private:
  std::unique_ptr<DefaultMemory> default_;
  MemoryHook* hook_;
  bool flush_always_;
  std::optional<uint32_t> memory_type_;
  bool coherent_ = true;
  std::optional<AllocError> last_error_;
  uint64_t flushes_ = 0;
  uint64_t flushed_bytes_ = 0;
  bool leaking_ = false;
};

}  // namespace staging::vulkan::detail
