// Internal: the slot strategy (RingConfig::strategy a StagingRingConfig) — the slot ring
// (staging::StagingRing) over staging buffers from the ring's MemorySource. A frame takes one slot
// at begin() and bumps a cursor through it. Retirement is by value, as for the byte strategy: a
// slot is finished with its frame's number on the ring's frame sequence and becomes Ready once
// the sequence is released through that number (StagingRing::retire(completed)); a frame that
// completes before an earlier one keeps its slot until the earlier one is released too. Not
// installed.
#pragma once

#include <utility>
#include <vector>

#include "staging/detail/core/staging_ring.hpp"
#include "staging_memory.hpp"
#include "strategy.hpp"

namespace staging::vulkan::detail {

/// One slot's staging buffer: the core ring's Buffer type. Releases its memory when destroyed
/// (the core destroys a slot buffer only when nothing reads it).
class SlotBuffer {
 public:
  SlotBuffer(MemorySource* source, const StagingMemory& memory) noexcept
      : source_(source), memory_(memory) {}
  SlotBuffer(SlotBuffer&& other) noexcept
      : source_(std::exchange(other.source_, nullptr)), memory_(other.memory_) {}
  SlotBuffer& operator=(SlotBuffer&& other) noexcept {
    if (this != &other) {
      release();
      source_ = std::exchange(other.source_, nullptr);
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
    if (source_ != nullptr) source_->release(memory_);
    source_ = nullptr;
  }
  MemorySource* source_;
  StagingMemory memory_;
};

class SlotStrategy final : public StrategyEngine, private StagingAllocator<SlotBuffer> {
 public:
  /// Validated by the caller (Ring::create).
  SlotStrategy(MemorySource& memory, const staging::StagingRingConfig& config);

  Expected<void, UploadError> begin(uint64_t frame, uint64_t needed) override;
  PlaceResult place(uint64_t frame, uint64_t size, uint64_t alignment) override;
  Expected<void, AllocError> flush(uint64_t frame) override;
  void end(uint64_t frame) override;
  void release(uint64_t frame, Release how, TimelineValue completed) noexcept override;

  void add_stats(Stats& stats) const override;
  [[nodiscard]] uint64_t largest_placement() const noexcept override;
  [[nodiscard]] std::optional<SlotInfo> slot(std::size_t index) const override;
  [[nodiscard]] std::size_t slot_count() const noexcept override;
  [[nodiscard]] const ByteRing* byte_ring() const noexcept override { return nullptr; }
  [[nodiscard]] const std::optional<ReserveError>& last_refusal() const noexcept override {
    return no_refusal_;
  }

 private:
  // StagingAllocator: slot buffers from the memory source.
  Expected<SlotBuffer, AllocError> create(uint64_t capacity) override;

  struct Open {
    uint64_t frame;
    SlotLease lease;
    const SlotBuffer* buffer;
  };
  Open* open_frame(uint64_t frame) noexcept;

  MemorySource* memory_;
  StagingRing<SlotBuffer> ring_;
  std::vector<Open> open_;  // frames holding a lease (Recording)
  std::optional<ReserveError> no_refusal_;
};

}  // namespace staging::vulkan::detail
