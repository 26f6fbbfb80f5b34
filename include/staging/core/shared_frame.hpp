// SharedFrame<Payload>: one frame's staging memory, written by several threads at once.
//
// Worker threads join the open frame (a counted writer, WriterGate), place uploads into it and
// write their bytes; the owner thread seals it and, once every writer has left, collects the
// placements — sorted by staging offset — to record one copy each (and one barrier). Placement is
// a bump of an atomic cursor inside the frame's memory (a compare-and-swap; or, for a writer that
// asks for runs, a private bump inside a run it took from the cursor): no lock on any writer path.
//
//   memory  [ A0 A1 | B0 | A2 ...... | C0 C1 C2 |          free          ]
//             ^ base                              ^ cursor               ^ end
//   Writers A, B, C place concurrently; placements never overlap; the sealed frame yields
//   A0 A1 B0 A2 C0 C1 C2 in offset order — the order one thread placing them would have produced,
//   so the copies (and the adjacent copies merged from them) are the same.
//
// A writer that arrives after the seal is refused (JoinError::Sealed). finish() either waits,
// bounded, for the writers still inside or reports them at once (DrainMode); it never yields a
// placement whose writer has not left, so no copy reads half-written bytes.
//
//   frame.open(memory, base_offset);                        // owner
//   auto w = frame.join().value();                          // any thread
//   auto p = w.place(size, alignment, payload).value();     // p.bytes: write them
//   w.leave();                                              // (or let w go out of scope)
//   auto placed = frame.finish(DrainMode::Wait, 1ms);       // owner: sorted placements
//
// Payload is what the backend needs to record a placement's copy (a destination buffer and
// offset, an image region): a plain, trivially copyable record, stored as given.
//
// Threading: open(), finish(), seal(), collect() and the queries marked "owner" on the owner's
// thread; join() and a Writer's calls on any thread (a Writer is used by one thread at a time).
// Ownership: the frame only refers to its memory (the caller's staging slot or reservation), which
// must stay mapped until the frame is reopened or destroyed. Not movable (writers refer to it).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "staging/core/expected.hpp"
#include "staging/core/timeline.hpp"
#include "staging/detail/core/align.hpp"
#include "staging/detail/core/assert.hpp"
#include "staging/detail/core/enum_names.hpp"
#include "staging/detail/core/placement_log.hpp"
#include "staging/detail/core/writer_gate.hpp"

namespace staging {

/// One upload placed in a SharedFrame: `size` bytes at `offset` of the frame's memory (offsets
/// are those of the memory the frame was opened on, base_offset included), and its payload.
template <class Payload>
struct FramePlacement {
  uint64_t offset = 0;  ///< where the bytes are (a multiple of the placement's alignment)
  uint64_t size = 0;    ///< how many (> 0 in a collected frame)
  Payload payload{};    ///< what the backend records the copy from, as given to place()
};

/// Why join() made no writer.
enum class JoinError : uint8_t {
  /// The frame is sealed (finish() or seal() was called) or was never opened.
  Sealed,
};

/// Names of JoinError's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<JoinError>) noexcept {
  return std::to_array<std::string_view>({"Sealed"});
}
static_assert(enum_names_complete<JoinError>(), "JoinError: a value has no name");

/// Why a SharedFrame writer's place() placed nothing (the names follow PlaceError's).
enum class SharedPlaceErrorKind : uint8_t {
  /// size == 0.
  ZeroSize,
  /// An offset computation overflows 64 bits.
  Overflow,
  /// Not enough bytes left between the cursor and the frame's end.
  DoesNotFit,
  /// The writer has left, was moved from, or never joined a frame.
  Inactive,
  /// The frame's placement log reached SharedFrameConfig::max_placements.
  TooManyPlacements,
  /// The placement log could not allocate a segment.
  OutOfMemory,
};

/// Names of SharedPlaceErrorKind's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<SharedPlaceErrorKind>) noexcept {
  return std::to_array<std::string_view>(
      {"ZeroSize", "Overflow", "DoesNotFit", "Inactive", "TooManyPlacements", "OutOfMemory"});
}
static_assert(enum_names_complete<SharedPlaceErrorKind>(),
              "SharedPlaceErrorKind: a value has no name");

/// A refused placement, with what the caller needs to route the upload elsewhere.
struct SharedPlaceError {
  SharedPlaceErrorKind kind = SharedPlaceErrorKind::DoesNotFit;  ///< what went wrong
  uint64_t needed = 0;  ///< bytes asked for (DoesNotFit: with the alignment padding at the cursor)
  uint64_t free = 0;    ///< bytes left between the cursor and the frame's end at the refusal
};

/// What finish() does about writers still inside when it seals.
enum class DrainMode : uint8_t {
  /// Wait for them, up to the timeout; then answer WritersActive.
  Wait,
  /// Answer WritersActive at once.
  Report,
};

/// Names of DrainMode's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<DrainMode>) noexcept {
  return std::to_array<std::string_view>({"Wait", "Report"});
}
static_assert(enum_names_complete<DrainMode>(), "DrainMode: a value has no name");

/// Why finish() yielded no placements. The frame stays sealed: call finish() again (any mode)
/// once the writers are done, or wait with wait_drained().
struct DrainError {
  /// Writers inside when finish() gave up (> 0).
  uint32_t writers = 0;
};

/// How a SharedFrame keeps its placements.
struct SharedFrameConfig {
  /// Entries of the placement log's first segment (its storage doubles as it grows, and is kept
  /// from frame to frame).
  std::size_t first_log_segment = 256;
  /// Most placement entries one frame hands out (writers claim entries in runs, see
  /// WriterOptions::run_entries); 0: no limit but memory.
  uint64_t max_placements = 0;
};

/// How a writer places (tuning for many threads; the defaults suit most uses).
struct WriterOptions {
  /// Bytes a writer takes from the shared cursor at a time and places into privately (one
  /// atomic operation per run instead of one per placement). 0: every placement takes exactly
  /// its bytes from the cursor, so the frame's layout is the one a single thread would produce.
  /// What a run leaves unused when the writer leaves is given back when no other writer placed
  /// after it, otherwise it stays a gap no copy reads.
  uint64_t run_bytes = 0;
  /// Placement-log entries a writer claims at a time (>= 1; 0 is treated as 1). Unused ones are
  /// cleared when it leaves.
  uint32_t run_entries = 16;
};

/// See the file comment. Payload: trivially copyable and default-constructible.
template <class Payload>
class SharedFrame {
  static_assert(std::is_trivially_copyable_v<Payload> && std::is_default_constructible_v<Payload>,
                "a SharedFrame payload is a plain record");

 public:
  /// A placement (FramePlacement<Payload>).
  using Placement = FramePlacement<Payload>;

  /// Where a writer's placement is: write `bytes` (all of them) before leaving.
  struct Placed {
    uint64_t offset = 0;         ///< as FramePlacement::offset
    std::span<std::byte> bytes;  ///< the staging bytes, `size` of them
    uint64_t entry = 0;          ///< the placement's log entry (for Writer::discard)
  };

  class Writer;

  /// A closed frame (join() refused until open()).
  explicit SharedFrame(SharedFrameConfig config = {}) noexcept
      : log_(config.first_log_segment, config.max_placements) {}
  SharedFrame(const SharedFrame&) = delete;
  SharedFrame& operator=(const SharedFrame&) = delete;
  /// Precondition (asserted): no writer inside (every Writer has left).
  ~SharedFrame() { STAGING_ASSERT(gate_.writers() == 0, "SharedFrame destroyed with writers"); }

  /// Opens the frame on `memory` — bytes [base_offset, base_offset + memory.size()) of the
  /// caller's staging memory, mapped at memory.data() — and admits writers. Forgets the previous
  /// frame's placements. Precondition (asserted): closed or drained (no writer inside). Owner.
  void open(std::span<std::byte> memory, uint64_t base_offset = 0) noexcept {
    STAGING_ASSERT(gate_.drained(), "SharedFrame::open() with writers inside or while open");
    STAGING_ASSERT(base_offset <= UINT64_MAX - memory.size(), "SharedFrame memory overflows");
    memory_ = memory;
    base_ = base_offset;
    end_ = base_offset + memory.size();
    cursor_.store(base_offset, std::memory_order_relaxed);
    log_.reset();
    collected_.clear();
    collected_valid_ = false;
    sealed_by_owner_ = false;
    gate_.open();  // release: the above is seen by every writer that joins
  }

  /// Joins as a writer. Errors: Sealed (sealed or never opened). Lock-free; any thread.
  Expected<Writer, JoinError> join(WriterOptions options = {}) noexcept {
    if (!gate_.enter()) return unexpected(JoinError::Sealed);
    return Writer(this, options);
  }

  /// Seals the frame: later join() calls are refused; writers inside may go on placing until
  /// they leave. Returns the writers inside now (0: drained). Owner.
  uint32_t seal() noexcept {
    sealed_by_owner_ = true;
    return gate_.seal();
  }

  /// Seals (if not yet sealed), waits for the writers inside per `mode` (Wait: up to
  /// `timeout`), and returns every placement sorted by offset — or DrainError naming the writers
  /// still inside (the frame stays sealed; call finish() again). The span stays valid until the
  /// next open() or the frame's destruction. Owner.
  Expected<std::span<const Placement>, DrainError> finish(DrainMode mode,
                                                          Duration timeout = Duration{0}) {
    if (!sealed_by_owner_) (void)seal();
    if (!gate_.drained() && (mode == DrainMode::Report || !gate_.wait_drained(timeout))) {
      const uint32_t inside = gate_.writers();
      if (inside > 0) return unexpected(DrainError{inside});
    }
    return collect();
  }

  /// The placements sorted by offset (entries of discarded placements left out). Precondition
  /// (asserted): drained (after finish(), or seal() returning 0, or a Writer::leave() returning
  /// true). Computed once per frame. Owner (or the writer told it drained the frame, while the
  /// owner does not touch the frame).
  std::span<const Placement> collect() {
    STAGING_ASSERT(gate_.drained(), "SharedFrame::collect() before the writers left");
    if (!collected_valid_) {
      const uint64_t n = log_.size();
      collected_.clear();
      collected_.reserve(static_cast<std::size_t>(n));
      for (uint64_t i = 0; i < n; ++i) {
        // An entry whose segment could not be allocated was never used.
        const Placement* p = log_.find(i);
        if (p != nullptr && p->size != 0) collected_.push_back(*p);
      }
      const auto by_offset = [](const Placement& a, const Placement& b) {
        return a.offset < b.offset;
      };
      if (!std::is_sorted(collected_.begin(), collected_.end(), by_offset)) {
        std::sort(collected_.begin(), collected_.end(), by_offset);
      }
      collected_valid_ = true;
    }
    return collected_;
  }

  /// Bytes from the frame's base to the cursor: the range a copy may read (gaps included).
  /// Exact once drained; a snapshot before. Any thread.
  [[nodiscard]] uint64_t used_bytes() const noexcept {
    return std::min(cursor_.load(std::memory_order_acquire), end_) - base_;
  }
  /// Bytes of the frame's memory (what open() was given).
  [[nodiscard]] uint64_t capacity() const noexcept { return end_ - base_; }
  /// The offset the frame's memory starts at (open()'s base_offset).
  [[nodiscard]] uint64_t base_offset() const noexcept { return base_; }
  /// Writers inside now (a snapshot).
  [[nodiscard]] uint32_t writers() const noexcept { return gate_.writers(); }
  /// True from seal() (or finish()) until open(); true for a frame never opened.
  [[nodiscard]] bool sealed() const noexcept { return gate_.sealed(); }
  /// Sealed and no writer inside: the placements are final.
  [[nodiscard]] bool drained() const noexcept { return gate_.drained(); }
  /// Waits up to `timeout` for a sealed frame to drain; returns drained(). Any thread.
  [[nodiscard]] bool wait_drained(Duration timeout) { return gate_.wait_drained(timeout); }

  /// One thread's membership of the frame: places uploads until it leaves. Move-only; the
  /// destructor leaves. Must not outlive its frame. Used by one thread at a time.
  class Writer {
   public:
    /// A writer of no frame (every place() answers Inactive; leave() does nothing).
    Writer() noexcept = default;
    /// Takes `other`'s membership; `other` is left a writer of no frame.
    Writer(Writer&& other) noexcept { *this = std::move(other); }
    /// Leaves this writer's frame (see leave()), then takes `other`'s membership.
    Writer& operator=(Writer&& other) noexcept {
      if (this != &other) {
        (void)leave();
        frame_ = std::exchange(other.frame_, nullptr);
        options_ = other.options_;
        run_pos_ = other.run_pos_;
        run_end_ = other.run_end_;
        entry_ = other.entry_;
        entry_end_ = other.entry_end_;
      }
      return *this;
    }
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;
    /// Leaves (see leave()).
    ~Writer() { (void)leave(); }

    /// Places `size` bytes at an offset that is a multiple of `alignment` (0 is treated as 1;
    /// any value) with `payload`, and returns where to write them. The bytes are this writer's
    /// until the frame is reopened; write all of them before leave(). Errors: ZeroSize,
    /// Overflow, DoesNotFit (nothing placed: route the upload elsewhere; a smaller one may still
    /// fit), Inactive,
    /// TooManyPlacements, OutOfMemory. Lock-free.
    Expected<Placed, SharedPlaceError> place(uint64_t size, uint64_t alignment,
                                             const Payload& payload) noexcept {
      if (frame_ == nullptr) {
        return unexpected(SharedPlaceError{SharedPlaceErrorKind::Inactive, size, 0});
      }
      if (size == 0) return unexpected(SharedPlaceError{SharedPlaceErrorKind::ZeroSize, 0, 0});
      if (alignment == 0) alignment = 1;
      if (size > UINT64_MAX - (alignment - 1)) {
        return unexpected(SharedPlaceError{SharedPlaceErrorKind::Overflow, size, 0});
      }
      Placement* entry = nullptr;
      uint64_t index = 0;
      if (auto e = next_entry(&index); !e) return unexpected(e.error());
      entry = frame_->log_.at(index);
      auto at = place_bytes(size, alignment);
      if (!at) {
        // The entry stays unused (cleared when this writer leaves).
        --entry_;
        return unexpected(at.error());
      }
      *entry = Placement{*at, size, payload};
      return Placed{*at,
                    frame_->memory_.subspan(static_cast<std::size_t>(*at - frame_->base_),
                                            static_cast<std::size_t>(size)),
                    index};
    }

    /// Withdraws a placement of this writer (its bytes will not be copied; they stay a gap).
    /// For a producer that could not write what it placed. Before leave() only.
    void discard(const Placed& placed) noexcept {
      if (frame_ == nullptr) return;
      if (Placement* e = frame_->log_.at(placed.entry)) e->size = 0;
    }

    /// Leaves the frame: this writer's bytes are complete. Gives back what its run left
    /// unused (when nobody placed after it) and clears its unused log entries. Returns true when
    /// this drained the sealed frame (the owner's finish() will now succeed; the caller may tell
    /// it). Does nothing and returns false for a writer that has left or has no frame.
    bool leave() noexcept {
      if (frame_ == nullptr) return false;
      SharedFrame* f = std::exchange(frame_, nullptr);
      for (; entry_ < entry_end_; ++entry_) {
        if (Placement* e = f->log_.at(entry_)) *e = Placement{};
      }
      if (run_pos_ < run_end_) {
        uint64_t expected = run_end_;
        (void)f->cursor_.compare_exchange_strong(expected, run_pos_, std::memory_order_relaxed);
      }
      return f->gate_.leave();
    }

    /// True while this writer is inside a frame.
    [[nodiscard]] bool joined() const noexcept { return frame_ != nullptr; }

   private:
    friend class SharedFrame;
    Writer(SharedFrame* frame, WriterOptions options) noexcept : frame_(frame), options_(options) {
      if (options_.run_entries == 0) options_.run_entries = 1;
    }

    Expected<void, SharedPlaceError> next_entry(uint64_t* index) noexcept {
      if (entry_ == entry_end_) {
        const auto first = frame_->log_.claim(options_.run_entries);
        if (!first)
          return unexpected(SharedPlaceError{SharedPlaceErrorKind::TooManyPlacements, 0, 0});
        entry_ = *first;
        entry_end_ = *first + options_.run_entries;
      }
      if (frame_->log_.at(entry_) == nullptr) {
        return unexpected(SharedPlaceError{SharedPlaceErrorKind::OutOfMemory, 0, 0});
      }
      *index = entry_++;
      return {};
    }

    // Takes `size` bytes aligned to `alignment` from this writer's run or the shared cursor.
    Expected<uint64_t, SharedPlaceError> place_bytes(uint64_t size, uint64_t alignment) noexcept {
      SharedFrame& f = *frame_;
      if (run_pos_ < run_end_) {
        const std::optional<uint64_t> off = align_up(run_pos_, alignment);
        if (off && *off <= run_end_ && run_end_ - *off >= size) {
          run_pos_ = *off + size;
          return *off;
        }
      }
      const uint64_t want = std::max(size, options_.run_bytes);
      uint64_t cur = f.cursor_.load(std::memory_order_relaxed);
      uint64_t off = 0, stop = 0;
      do {
        const std::optional<uint64_t> aligned = align_up(cur, alignment);
        if (!aligned || *aligned > f.end_ || f.end_ - *aligned < size) {
          const uint64_t free = cur >= f.end_ ? 0 : f.end_ - cur;
          const uint64_t pad = aligned ? *aligned - cur : alignment - 1;
          return unexpected(SharedPlaceError{SharedPlaceErrorKind::DoesNotFit, pad + size, free});
        }
        off = *aligned;
        stop = off + std::min(want, f.end_ - off);
      } while (!f.cursor_.compare_exchange_weak(cur, stop, std::memory_order_relaxed,
                                                std::memory_order_relaxed));
      // The new run (empty without run_bytes); what the old one had left stays a gap.
      run_pos_ = off + size;
      run_end_ = stop;
      return off;
    }

    SharedFrame* frame_ = nullptr;
    WriterOptions options_{};
    uint64_t run_pos_ = 0;  // this writer's private run [run_pos_, run_end_) of the frame
    uint64_t run_end_ = 0;
    uint64_t entry_ = 0;  // this writer's claimed, unused log entries [entry_, entry_end_)
    uint64_t entry_end_ = 0;
  };

 private:
  WriterGate gate_;
  PlacementLog<Placement> log_;
  alignas(64) std::atomic<uint64_t> cursor_{0};
  std::span<std::byte> memory_;
  uint64_t base_ = 0;
  uint64_t end_ = 0;
  // Owner's state.
  std::vector<Placement> collected_;
  bool collected_valid_ = false;
  bool sealed_by_owner_ = false;
};

}  // namespace staging
