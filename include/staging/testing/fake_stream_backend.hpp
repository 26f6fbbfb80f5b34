// FakeStreamBackend: a StreamBackend over host memory and a FakeQueue, for host tests of code
// that streams uploads (and of the StreamScheduler itself).
//
// Staging regions are FakeRegionAllocator memory. submit() records a batch's copies; they are
// carried out — staging bytes copied into the destinations — only when the fake queue completes
// the batch's value (at a completed() or wait() call), as a GPU reads staging memory some time
// before it signals. So a scheduler that reused staging bytes before their value was reached
// delivers wrong bytes, and a test that compares every destination byte catches it.
//
// Destinations: a piece's context (StreamRequest::context) must point to a FakeStreamTarget: a
// host buffer (buffer uploads) or a FakeImage (image uploads). released() counts per target.
//
// Control: stall()/release() the queue (nothing completes meanwhile), fail_next_submit(),
// sleep_while_stalled (a waiter sleeps in real time, bounded, instead of returning at once —
// for tests with real threads, where a scheduler's timeouts are in real time).
//
// Threading: every call is safe from any thread (one mutex). Header-only.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "staging/detail/core/stream_backend.hpp"
#include "staging/testing/fake_image.hpp"
#include "staging/testing/fake_queue.hpp"
#include "staging/testing/fake_region_allocator.hpp"

namespace staging::testing {

/// Where a fake upload goes: `buffer` for buffer uploads (sized by the test), or `image`.
struct FakeStreamTarget {
  std::vector<std::byte> buffer;   ///< a buffer destination
  std::optional<FakeImage> image;  ///< an image destination
  uint32_t released = 0;           ///< StreamBackend::released() calls for this target
  uint64_t pieces = 0;             ///< pieces copied into it so far
};

/// One submitted batch, as the fake saw it.
struct FakeSubmission {
  uint64_t token = 0;              ///< the batch's number
  TimelineValue value = 0;         ///< the value it signals
  uint64_t bytes = 0;              ///< its reservation's bytes
  std::vector<BatchPiece> pieces;  ///< its pieces (contexts as given)
};

/// See the file comment. Owns its clock, queue and staging memory.
class FakeStreamBackend final : public StreamBackend, public RegionAllocator {
 public:
  /// A backend whose submissions complete after `model`'s delays.
  explicit FakeStreamBackend(DelayModel model = DelayModel::fixed(Duration{0}))
      : queue_(clock_, model) {}

  // RegionAllocator: staging memory (host bytes, guarded).
  /// Creates a staging region (FakeRegionAllocator).
  Expected<void, AllocError> create_region(uint32_t region, uint64_t bytes) override {
    std::lock_guard lock(mutex_);
    return regions_.create_region(region, bytes);
  }
  /// Destroys a staging region.
  void destroy_region(uint32_t region) noexcept override {
    std::lock_guard lock(mutex_);
    regions_.destroy_region(region);
  }

  /// The region's host memory.
  std::byte* mapped(uint32_t region) override {
    std::lock_guard lock(mutex_);
    return regions_.data(region);
  }

  /// Records the batch; its copies happen when its value completes. Fails (without recording)
  /// when fail_next_submit() armed it.
  Expected<TimelineValue, UploadError> submit(const StreamBatch& batch) override {
    std::lock_guard lock(mutex_);
    if (lost_) return unexpected(UploadError::DeviceLost);
    if (fail_next_) {
      const UploadError e = *fail_next_;
      fail_next_.reset();
      return unexpected(e);
    }
    FakeSubmission s;
    s.token = batch.token;
    s.value = queue_.submit();
    s.bytes = batch.bytes;
    s.pieces.assign(batch.pieces.begin(), batch.pieces.end());
    STAGING_ASSERT(batch.offset + batch.bytes <= regions_.size(batch.region),
                   "FakeStreamBackend: a batch past its region");
    for (const BatchPiece& p : s.pieces) {
      STAGING_ASSERT(p.staging_offset >= batch.offset &&
                         p.staging_offset + p.piece.bytes <= batch.offset + batch.bytes,
                     "FakeStreamBackend: a piece outside its batch");
    }
    pending_.push_back({batch.region, s});
    submissions_.push_back(std::move(s));
    return pending_.back().submission.value;
  }

  /// Completes what is due and carries out its copies.
  TimelineValue completed() override {
    std::lock_guard lock(mutex_);
    return complete_locked(queue_.completed());
  }

  /// Waits in the fake queue's virtual time (and, with sleep_while_stalled, a bounded real
  /// sleep when nothing progressed), carrying out the copies that completed.
  TimelineValue wait(TimelineValue value, Duration timeout) override {
    TimelineValue reached = 0;
    {
      std::lock_guard lock(mutex_);
      reached = complete_locked(queue_.wait(value, timeout));
    }
    if (reached < value && sleep_while_stalled && timeout > Duration{0}) {
      std::this_thread::sleep_for(std::min<Duration>(timeout, std::chrono::milliseconds(1)));
      std::lock_guard lock(mutex_);
      reached = complete_locked(queue_.completed());
    }
    return reached;
  }

  /// Counts the release on the upload's target.
  void released(void* context) noexcept override {
    std::lock_guard lock(mutex_);
    ++static_cast<FakeStreamTarget*>(context)->released;
  }

  /// Stops the queue (nothing completes until release()).
  void stall() {
    std::lock_guard lock(mutex_);
    queue_.stall();
  }
  /// Resumes a stalled queue.
  void release() {
    std::lock_guard lock(mutex_);
    queue_.release();
  }
  /// The device is lost from now on: nothing more completes, submit() answers DeviceLost and
  /// lost() true.
  void lose_device() {
    std::lock_guard lock(mutex_);
    queue_.stall();
    lost_ = true;
  }
  /// Whether lose_device() was called.
  [[nodiscard]] bool lost() const noexcept override {
    std::lock_guard lock(mutex_);
    return lost_;
  }
  /// The next submit() fails with `error`.
  void fail_next_submit(UploadError error) {
    std::lock_guard lock(mutex_);
    fail_next_ = error;
  }
  /// Every batch submitted so far (a copy).
  [[nodiscard]] std::vector<FakeSubmission> submissions() const {
    std::lock_guard lock(mutex_);
    return submissions_;
  }
  /// Batches submitted whose copies have not happened yet.
  [[nodiscard]] std::size_t pending() const {
    std::lock_guard lock(mutex_);
    return pending_.size();
  }
  /// The last value submitted (0 before any).
  [[nodiscard]] TimelineValue submitted() const {
    std::lock_guard lock(mutex_);
    return queue_.submitted();
  }
  /// The virtual clock the queue runs on (for a caller that moves time itself, as a simulation
  /// does). Advance it from one thread while nothing else calls the backend.
  [[nodiscard]] FakeClock& clock() noexcept { return clock_; }
  /// When the oldest batch whose copies have not happened completes; none when there is none
  /// or the queue is stalled (call completed() first: a batch already due is not reported).
  [[nodiscard]] std::optional<Duration> next_completion() const {
    std::lock_guard lock(mutex_);
    if (pending_.empty()) return std::nullopt;
    return queue_.completion_time(pending_.front().submission.value);
  }
  /// True when no staging region was written past its end.
  [[nodiscard]] bool guards_intact() const {
    std::lock_guard lock(mutex_);
    return regions_.all_guards_intact();
  }

  /// With real threads: a wait that sees no progress sleeps (up to 1 ms) before returning.
  bool sleep_while_stalled = false;

 private:
  struct Pending {
    uint32_t region = 0;
    FakeSubmission submission;
  };
  TimelineValue complete_locked(TimelineValue completed) {
    while (!pending_.empty() && pending_.front().submission.value <= completed) {
      const Pending& p = pending_.front();
      const std::byte* base = regions_.data(p.region);
      for (const BatchPiece& piece : p.submission.pieces) {
        auto* target = static_cast<FakeStreamTarget*>(piece.context);
        STAGING_ASSERT(target != nullptr, "FakeStreamBackend: a piece without a target");
        const std::byte* src = base + piece.staging_offset;
        if (target->image) {
          target->image->copy(src, piece.piece.image);
        } else {
          STAGING_ASSERT(piece.piece.dst_offset + piece.piece.bytes <= target->buffer.size(),
                         "FakeStreamBackend: a copy past the destination buffer");
          std::memcpy(target->buffer.data() + piece.piece.dst_offset, src,
                      static_cast<std::size_t>(piece.piece.bytes));
        }
        ++target->pieces;
      }
      pending_.pop_front();
    }
    return completed;
  }

  mutable std::mutex mutex_;
  FakeClock clock_;
  FakeQueue queue_;
  FakeRegionAllocator regions_;
  std::deque<Pending> pending_;
  std::vector<FakeSubmission> submissions_;
  std::optional<UploadError> fail_next_;
  bool lost_ = false;
};

}  // namespace staging::testing
