// Internal: the state behind Ring and StagingFrame. Not installed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "staging/core/staging_ring.hpp"
#include "staging/vulkan/format.hpp"
#include "staging/vulkan/frame.hpp"
#include "staging/vulkan/ring.hpp"

namespace staging::vulkan::detail {

struct RingImpl;

/// One slot's staging buffer: the core ring's Buffer type. Releases its memory through the hook
/// when destroyed (the core destroys a slot buffer only when nothing reads it).
class SlotBuffer {
 public:
  SlotBuffer(MemoryHook* hook, const StagingMemory& memory) noexcept
      : hook_(hook), memory_(memory) {}
  SlotBuffer(SlotBuffer&& other) noexcept
      : hook_(std::exchange(other.hook_, nullptr)), memory_(other.memory_) {}
  SlotBuffer& operator=(SlotBuffer&& other) noexcept {
    if (this != &other) {
      release();
      hook_ = std::exchange(other.hook_, nullptr);
      memory_ = other.memory_;
    }
    return *this;
  }
  SlotBuffer(const SlotBuffer&) = delete;
  SlotBuffer& operator=(const SlotBuffer&) = delete;
  ~SlotBuffer() { release(); }

  [[nodiscard]] uint64_t capacity() const noexcept { return memory_.size; }
  [[nodiscard]] const StagingMemory& memory() const noexcept { return memory_; }

 private:
  void release() noexcept {
    if (hook_ != nullptr) hook_->release(memory_);
    hook_ = nullptr;
  }
  MemoryHook* hook_;
  StagingMemory memory_;
};

/// The core ring's StagingAllocator: slot buffers from the ring's MemoryHook.
class SlotAllocator final : public StagingAllocator<SlotBuffer> {
 public:
  explicit SlotAllocator(RingImpl& ring) noexcept : ring_(&ring) {}
  Expected<SlotBuffer, AllocError> create(uint64_t capacity) override;

 private:
  RingImpl* ring_;
};

/// The byte ring's RegionAllocator: each region is one staging buffer from the ring's MemoryHook
/// (region ids index `regions`).
class RegionMemory final : public RegionAllocator {
 public:
  explicit RegionMemory(RingImpl& ring) noexcept : ring_(&ring) {}
  Expected<void, AllocError> create_region(uint32_t region, uint64_t bytes) override;
  void destroy_region(uint32_t region) noexcept override;
  /// The memory of a live region.
  [[nodiscard]] const StagingMemory& memory(uint32_t region) const;

 private:
  RingImpl* ring_;
  std::vector<std::optional<StagingMemory>> regions_;
};

/// The byte ring's CompletionSource for reserve_waiting(): a read-only view of the ring's frame
/// sequence, completed up to the highest number below which every frame is released or has its
/// point reached. Reads and waits on the frames' semaphores; changes nothing (the ring's poll()
/// releases the frames afterwards) and never calls the byte ring.
class FrameTimeline final : public CompletionSource {
 public:
  explicit FrameTimeline(RingImpl& ring) noexcept : ring_(&ring) {}
  TimelineValue completed() override;
  TimelineValue wait(TimelineValue value, Duration timeout) override;

 private:
  RingImpl* ring_;
};

/// The staging layout of one image region.
struct ImageLayout {
  TexelBlock block;
  VkImageAspectFlags aspect = 0;          // the aspect copied
  VkImageAspectFlags barrier_aspect = 0;  // every aspect of the format (barriers)
  uint64_t row_bytes = 0;                 // texel data per row of blocks
  uint32_t rows = 0;                      // rows of blocks per depth slice
  uint64_t slices = 0;                    // depth slices (of blocks) per layer
  uint64_t row_pitch = 0, slice_pitch = 0, layer_pitch = 0;
  uint64_t staging_size = 0;  // bytes in staging memory (with row padding)
  uint64_t data_size = 0;     // bytes of tightly packed data
  uint32_t buffer_row_length = 0;
  uint64_t alignment = 1;  // staging offset alignment
};

/// Validates `region` and computes its layout under `limits` (row pitch alignment, offsets).
Expected<ImageLayout, UploadError> image_layout(const ImageRegion& region,
                                                const CopyLimits& limits) noexcept;

/// Host memory for vkCmdUpdateBuffer data: fixed chunks, so spans handed out stay valid until
/// clear(); chunks are kept for the next frame.
class UpdateArena {
 public:
  std::byte* allocate(uint64_t size);
  void clear() noexcept;

 private:
  struct Chunk {
    std::unique_ptr<std::byte[]> bytes;
    uint64_t size = 0;
  };
  std::vector<Chunk> chunks_;
  std::size_t current_ = 0;
  uint64_t used_ = 0;
};

struct BufferCopyCmd {
  VkBuffer src;
  VkBuffer dst;
  VkBufferCopy region;
};
struct ImageCopyCmd {
  VkBuffer src;
  VkImage dst;
  VkImageLayout layout;
  VkBufferImageCopy region;
};
struct UpdateCmd {
  VkBuffer dst;
  uint64_t offset;
  uint64_t size;
  const std::byte* data;
};

/// One destination buffer of a frame: the disjoint ranges written, sorted by offset.
struct BufferDest {
  VkBuffer buffer = VK_NULL_HANDLE;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // [begin, end)
};

/// One box of texels written into an image (texels, layers), for overlap checks.
struct ImageBox {
  VkImageAspectFlags aspect;
  uint32_t layer_begin, layer_end;
  int64_t x0, y0, z0, x1, y1, z1;
};

/// One destination mip level of a frame: layouts and boxes written.
struct ImageDest {
  VkImage image = VK_NULL_HANDLE;
  uint32_t mip = 0;
  VkImageAspectFlags barrier_aspect = 0;
  VkImageLayout old_layout = VK_IMAGE_LAYOUT_UNDEFINED;
  VkImageLayout new_layout = VK_IMAGE_LAYOUT_UNDEFINED;
  std::vector<ImageBox> boxes;
};

/// Where one upload's bytes go.
struct Placement {
  enum class Kind : uint8_t { Ring, OneOff, Update };
  Kind kind = Kind::Ring;
  VkBuffer buffer = VK_NULL_HANDLE;  // the staging buffer (Slot, OneOff)
  uint64_t offset = 0;
  std::byte* ptr = nullptr;
};

/// One open frame. Pooled by the ring: clear() keeps the vectors' capacity.
struct FrameState {
  uint64_t id = 0;  // also its number on the frame sequence (byte-ring token)
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  Route route = Route::Ring;
  std::optional<Refusal> refusal;
  SlotLease lease;  // Strategy::Slots
  const SlotBuffer* slot = nullptr;
  std::vector<uint64_t> reservations;  // Strategy::Bytes: the byte ring's ids
  struct Flush {
    uint32_t region;
    uint64_t offset, size;
  };
  std::vector<Flush> flushes;  // Strategy::Bytes: ranges to flush at finish (non-coherent)
  uint64_t staged_bytes = 0;
  uint64_t update_bytes = 0;
  std::vector<BufferCopyCmd> buffer_copies;
  std::vector<ImageCopyCmd> image_copies;
  std::vector<UpdateCmd> updates;
  UpdateArena arena;
  std::vector<StagingMemory> oneoffs;
  uint64_t oneoff_bytes = 0;
  std::vector<BufferDest> buffer_dests;
  std::vector<ImageDest> image_dests;

  void clear() noexcept;
};

/// A finished frame whose point has not been reached.
struct Pending {
  uint64_t frame = 0;
  RetirementPoint point;
  FenceToken token;                    // the slot's fence (empty for a fallback frame)
  std::vector<uint64_t> reservations;  // the byte ring's (Strategy::Bytes)
  std::vector<StagingMemory> oneoffs;
  uint64_t oneoff_bytes = 0;
};

struct RingImpl {
  RingImpl(const Device& device, const RingConfig& config);
  ~RingImpl();
  RingImpl(const RingImpl&) = delete;
  RingImpl& operator=(const RingImpl&) = delete;

  // Ring
  Expected<StagingFrame, BeginError> begin(VkCommandBuffer cmd, uint64_t needed);
  StagingFrame begin_fallback(VkCommandBuffer cmd, std::optional<Refusal> refusal);
  uint64_t poll();
  /// Waits for several points at once (all of them): vkWaitSemaphores' result. Changes nothing.
  VkResult wait_points(std::span<const RetirementPoint> points, Duration timeout) const;
  /// Waits for several points at once (all of them), then poll()s.
  Expected<void, WaitError> wait_all(std::span<const RetirementPoint> points, Duration timeout);
  Expected<void, WaitError> wait(const RetirementPoint& point, Duration timeout) {
    return wait_all({&point, 1}, timeout);
  }
  Expected<void, WaitError> wait_idle(Duration timeout);
  bool abandon(const RetirementPoint& point);
  void device_lost();

  // Frame
  Expected<Placement, UploadError> place(FrameState& frame, uint64_t size, uint64_t alignment,
                                         bool update_ok);
  Expected<RetirementPoint, FinishError> finish(FrameState& frame, const Visibility& visibility,
                                                std::optional<RetirementPoint> external);
  void drop(std::unique_ptr<FrameState> frame) noexcept;
  std::unique_ptr<FrameState> take_state(VkCommandBuffer cmd, Route route);
  void recycle(std::unique_ptr<FrameState> frame) noexcept;
  void release_oneoffs(std::vector<StagingMemory>& oneoffs, uint64_t bytes) noexcept;
  /// A frame's staging memory is no longer the GPU's: its number leaves the frame sequence's
  /// unreleased set; `cancel` gives its reservations back to the byte ring at once (never
  /// submitted, or a lost device) instead of waiting for retire().
  void release_frame(uint64_t frame, std::vector<uint64_t>& reservations, bool cancel) noexcept;
  /// The highest frame number below which every frame is released (the byte ring's completed).
  [[nodiscard]] uint64_t released_through() const noexcept {
    return unreleased.empty() ? next_frame - 1 : *unreleased.begin() - 1;
  }
  /// released_through() as it will be once poll() has released every frame whose point is
  /// reached now (a lost device reaches every point): reads the semaphores, changes nothing.
  [[nodiscard]] uint64_t reached_through() const;
  /// Hands the frame sequence's completed value to the byte ring (Strategy::Bytes).
  void retire_bytes() noexcept;
  Expected<StagingMemory, AllocError> allocate(uint64_t size);

  Device device;
  RingConfig config;
  CopyLimits limits;
  std::unique_ptr<DefaultMemory> default_memory;  // when config.memory is null
  MemoryHook* memory = nullptr;
  SlotAllocator allocator{*this};
  std::optional<StagingRing<SlotBuffer>> slots;  // Strategy::Slots
  RegionMemory regions{*this};
  FrameTimeline timeline{*this};
  std::optional<ByteRing> byte_ring;  // Strategy::Bytes
  std::set<uint64_t> unreleased;      // frame numbers begun and not yet released
  std::optional<ReserveError> last_reserve_error;
  VkSemaphore semaphore = VK_NULL_HANDLE;
  uint64_t last_value = 0;
  std::vector<Pending> pending;  // in finish order
  std::vector<std::unique_ptr<FrameState>> pool;
  uint64_t next_frame = 1;
  uint64_t open_frames = 0;
  Stats stats;
  std::optional<uint32_t> memory_type;
  bool coherent = true;
  std::optional<AllocError> last_alloc_error;
  // Scratch for finish(), kept between frames.
  std::vector<VkBufferCopy> scratch_buffer_regions;
  std::vector<VkBufferImageCopy> scratch_image_regions;
  std::vector<VkBufferMemoryBarrier2> scratch_buffer_barriers;
  std::vector<VkImageMemoryBarrier2> scratch_image_barriers;
  std::vector<std::pair<uint32_t, uint32_t>> scratch_layers;
};

}  // namespace staging::vulkan::detail
