// SlotBuffer and SlotBufferAllocator: the WebGPU buffers a staging::webgpu::StagingRing's slots are
// made of — each slot is one MAP_WRITE | COPY_SRC buffer.
//
// A slot buffer is created mapped (mappedAtCreation), so a fresh slot is Ready at once. From then
// on it cycles: mapped (Ready, Recording) → unmapped by StagingFrame::finish (InFlight, read by the
// frame's copies) → re-mapped by the map request StagingFrame::submitted makes, whose callback is
// the slot's fence (Ready again).
//
// Threading: WebGPU objects of the Emscripten C API live on the thread that created the device
// (the browser's main thread); every call here is made there.
#pragma once

#include <webgpu/webgpu.h>

#include <cstdint>

#include "staging/core/errors.hpp"
#include "staging/detail/core/staging_allocator.hpp"

namespace staging::webgpu {

/// The usages every slot buffer is created with: written through a mapping, read by copy commands.
inline constexpr WGPUBufferUsageFlags STAGING_USAGE =
    WGPUBufferUsage_MapWrite | WGPUBufferUsage_CopySrc;

/// One slot's buffer. Owns one reference to a MAP_WRITE | COPY_SRC WGPUBuffer of capacity() bytes.
///
/// Ownership: move-only; the moved-from buffer owns nothing. The destructor destroys the buffer
/// (wgpuBufferDestroy) and releases the reference. WebGPU defers the destruction of a buffer until
/// the submissions already naming it have completed, so destroying a slot never breaks a copy in
/// flight (the ring only destroys Ready, Abandoned or Failed slots anyway).
class SlotBuffer {
 public:
  /// Takes ownership of `buffer` (one reference), a buffer of `capacity` bytes.
  SlotBuffer(WGPUBuffer buffer, uint64_t capacity) noexcept
      : buffer_(buffer), capacity_(capacity) {}
  /// Takes `other`'s buffer; `other` owns nothing afterwards.
  SlotBuffer(SlotBuffer&& other) noexcept;
  /// Destroys the buffer held here (as the destructor does), then takes `other`'s.
  SlotBuffer& operator=(SlotBuffer&& other) noexcept;
  SlotBuffer(const SlotBuffer&) = delete;
  SlotBuffer& operator=(const SlotBuffer&) = delete;
  /// wgpuBufferDestroy and wgpuBufferRelease (nothing for a moved-from buffer).
  ~SlotBuffer();

  /// The WebGPU buffer (null when moved from). Valid while this SlotBuffer lives.
  [[nodiscard]] WGPUBuffer handle() const noexcept { return buffer_; }
  /// Size of the buffer in bytes.
  [[nodiscard]] uint64_t capacity() const noexcept { return capacity_; }

 private:
  void reset() noexcept;

  WGPUBuffer buffer_ = nullptr;
  uint64_t capacity_ = 0;
};

/// Creates slot buffers on one device: MAP_WRITE | COPY_SRC, mapped at creation, labelled.
///
/// Ownership: holds a reference to the device (released in the destructor). Not movable: a
/// StagingRing keeps a pointer to it. Threading: the device's thread.
class SlotBufferAllocator final : public StagingAllocator<SlotBuffer> {
 public:
  /// `label` (may be null) names every buffer in browser tools; it must outlive the allocator.
  /// A null `device` is accepted: every create() then fails with Other.
  explicit SlotBufferAllocator(WGPUDevice device, const char* label = "staging slot") noexcept;
  SlotBufferAllocator(const SlotBufferAllocator&) = delete;
  SlotBufferAllocator& operator=(const SlotBufferAllocator&) = delete;
  /// Releases the device reference (buffers already made are unaffected).
  ~SlotBufferAllocator() override;

  /// Creates a mapped buffer of `capacity` bytes (a multiple of 4, as the ring's power-of-two
  /// capacities are). Errors: Other when the device is null or gives no buffer. WebGPU reports
  /// out-of-memory asynchronously (an error scope); such a buffer then fails its first mapping
  /// and its slot becomes Failed, to be replaced.
  Expected<SlotBuffer, AllocError> create(uint64_t capacity) override;

  /// Buffers created so far.
  [[nodiscard]] uint64_t created() const noexcept { return created_; }

 private:
  WGPUDevice device_;
  const char* label_;
  uint64_t created_ = 0;
};

}  // namespace staging::webgpu
