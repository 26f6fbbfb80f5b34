// Internal: the byte strategy (RingConfig::strategy a ByteRingConfig) — the core's byte ring
// (staging::ByteRing) over staging buffers from the ring's MemorySource. Every upload is one
// reservation; its token is the frame's number on the ring's frame sequence, and the ring hands the
// sequence's completed value to release(), so a frame's bytes retire in FIFO order once every frame
// before it is released. Wait reserves through reserve_waiting() on a read-only view of the frame
// sequence (FrameTimeline), which never calls the byte ring. Not installed.
#pragma once

#include <optional>
#include <vector>

#include "staging/core/byte_ring.hpp"
#include "staging_memory.hpp"
#include "strategy.hpp"

namespace staging::vulkan::detail {

class ByteStrategy final : public StrategyEngine, private RegionAllocator {
 public:
  /// The byte ring of `config` over `memory`; `frames` is the view of the frame sequence that
  /// Wait waits on. Errors: the byte ring's (region 0 included).
  static Expected<std::unique_ptr<ByteStrategy>, CreateError> create(MemorySource& memory,
                                                                     const RingConfig& config,
                                                                     CompletionSource& frames);
  ~ByteStrategy() override;
  ByteStrategy(const ByteStrategy&) = delete;
  ByteStrategy& operator=(const ByteStrategy&) = delete;

  Expected<void, UploadError> begin(uint64_t frame, uint64_t needed) override;
  PlaceResult place(uint64_t frame, uint64_t size, uint64_t alignment) override;
  Expected<void, AllocError> flush(uint64_t frame) override;
  void end(uint64_t frame) override;
  void release(uint64_t frame, Release how, TimelineValue completed) noexcept override;

  void add_stats(Stats& stats) const override;
  [[nodiscard]] uint64_t largest_placement() const noexcept override { return ring_->cap(); }
  [[nodiscard]] std::optional<SlotInfo> slot(std::size_t /*index*/) const override {
    return std::nullopt;
  }
  [[nodiscard]] std::size_t slot_count() const noexcept override { return 0; }
  [[nodiscard]] const ByteRing* byte_ring() const noexcept override { return &*ring_; }
  [[nodiscard]] const std::optional<ReserveError>& last_refusal() const noexcept override {
    return last_refusal_;
  }

 private:
  ByteStrategy(MemorySource& memory, CompletionSource& frames) noexcept;
  // RegionAllocator: each region is one staging buffer.
  Expected<void, AllocError> create_region(uint32_t region, uint64_t bytes) override;
  void destroy_region(uint32_t region) noexcept override;

  // A frame's reservations (for cancel) and written ranges (for flush) until it is released.
  struct FrameBytes {
    uint64_t frame = 0;
    std::vector<uint64_t> reservations;
    struct Range {
      uint32_t region;
      uint64_t offset, size;
    };
    std::vector<Range> written;
  };
  FrameBytes* frame_bytes(uint64_t frame) noexcept;

  MemorySource* memory_;
  CompletionSource* frames_;
  std::vector<std::optional<StagingMemory>> regions_;  // by region id
  std::optional<ByteRing> ring_;
  std::vector<FrameBytes> live_;   // frames begun and not released, in begin order
  std::vector<FrameBytes> spare_;  // released, kept for their vectors' capacity
  std::optional<ReserveError> last_refusal_;
};

}  // namespace staging::vulkan::detail
