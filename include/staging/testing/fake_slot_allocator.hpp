// A fake StagingAllocator for host tests and tools: "buffers" are plain host memory, creation can
// be made to fail on demand, and every creation and destruction is counted so tests can prove
// which buffers the ring made, grew, replaced and released.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "staging/detail/core/staging_allocator.hpp"

namespace staging::testing {

/// What a FakeSlotAllocator has done. Shared with every FakeBuffer it made.
struct FakeAllocatorLog {
  uint64_t created = 0;          ///< buffers created
  uint64_t destroyed = 0;        ///< buffers destroyed (moved-from ones not counted)
  uint64_t failed = 0;           ///< refused creations (armed failures and budget refusals)
  uint64_t live_bytes = 0;       ///< capacities of the buffers alive now
  uint64_t peak_live_bytes = 0;  ///< the most live_bytes has been
  /// Capacity of every successful creation, in order.
  std::vector<uint64_t> capacities;
};

/// One fake slot buffer: `capacity()` bytes of host memory, a unique id, and the allocator's log
/// (to count its destruction). Move-only; the moved-from buffer owns nothing.
class FakeBuffer {
 public:
  /// A buffer of `capacity` bytes (zero-filled) with id `id`, counting its destruction in `log`.
  /// Made by FakeSlotAllocator::create() (which counts the creation).
  FakeBuffer(uint64_t id, uint64_t capacity, std::shared_ptr<FakeAllocatorLog> log)
      : id_(id), bytes_(static_cast<std::size_t>(capacity)), log_(std::move(log)) {}
  /// Takes `other`'s bytes; `other` owns nothing afterwards.
  FakeBuffer(FakeBuffer&& other) noexcept = default;
  /// Releases this buffer (counted in the log), then takes `other`'s bytes.
  FakeBuffer& operator=(FakeBuffer&& other) noexcept {
    if (this != &other) {
      release();
      id_ = other.id_;
      bytes_ = std::move(other.bytes_);
      log_ = std::move(other.log_);
    }
    return *this;
  }
  FakeBuffer(const FakeBuffer&) = delete;
  FakeBuffer& operator=(const FakeBuffer&) = delete;
  /// Counts the destruction in the log (nothing for a moved-from buffer).
  ~FakeBuffer() { release(); }

  /// The allocator-wide unique id of this buffer (1, 2, ...).
  [[nodiscard]] uint64_t id() const noexcept { return id_; }
  /// The buffer's size in bytes (0 once moved from).
  [[nodiscard]] uint64_t capacity() const noexcept { return bytes_.size(); }
  /// The buffer's memory, as a backend's mapping would expose it.
  [[nodiscard]] std::byte* data() noexcept { return bytes_.data(); }

 private:
  void release() noexcept {
    if (log_) {
      ++log_->destroyed;
      log_->live_bytes -= bytes_.size();
      log_.reset();
    }
  }
  uint64_t id_;
  std::vector<std::byte> bytes_;
  std::shared_ptr<FakeAllocatorLog> log_;
};

/// A StagingAllocator<FakeBuffer> whose failures the test controls.
/// Threading: like every allocator, called from the ring's thread only.
class FakeSlotAllocator final : public StagingAllocator<FakeBuffer> {
 public:
  /// Creates a buffer of `capacity` bytes, unless a failure is armed (fail_next: its error) or
  /// the live bytes plus `capacity` would exceed the budget (OutOfMemory).
  Expected<FakeBuffer, AllocError> create(uint64_t capacity) override {
    if (fail_next_ > 0) {
      --fail_next_;
      ++log_->failed;
      return unexpected(error_);
    }
    if (budget_ && log_->live_bytes + capacity > *budget_) {
      ++log_->failed;
      return unexpected(AllocError::OutOfMemory);
    }
    ++log_->created;
    log_->capacities.push_back(capacity);
    log_->live_bytes += capacity;
    if (log_->live_bytes > log_->peak_live_bytes) log_->peak_live_bytes = log_->live_bytes;
    return FakeBuffer(log_->created, capacity, log_);
  }

  /// The next `count` creations fail with `error` (replacing what was armed before; 0 disarms).
  void fail_next(uint64_t count, AllocError error = AllocError::OutOfMemory) {
    fail_next_ = count;
    error_ = error;
  }
  /// Creations that would take live bytes above `bytes` fail with OutOfMemory (none: no limit).
  void set_budget(std::optional<uint64_t> bytes) { budget_ = bytes; }
  /// What the allocator and its buffers have done so far.
  [[nodiscard]] const FakeAllocatorLog& log() const noexcept { return *log_; }

 private:
  std::shared_ptr<FakeAllocatorLog> log_ = std::make_shared<FakeAllocatorLog>();
  uint64_t fail_next_ = 0;
  AllocError error_ = AllocError::OutOfMemory;
  std::optional<uint64_t> budget_;
};

}  // namespace staging::testing
