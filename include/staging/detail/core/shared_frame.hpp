// SharedFrame<Payload>: one frame's staging memory, written by several threads at once. The
// engine behind vulkan::StagingFrame::share() / SharedUploads; a backend's building block, not
// part of the API.
//
// Worker threads join the open frame (a counted writer, WriterGate), place uploads into it and
// write their bytes; the owner thread seals it and, once every writer has left, reads the
// placements in offset order to record one copy each (and one barrier). Each writer takes a
// *block* of the frame's memory from an atomic cursor (a compare-and-swap) and places into it
// with a private bump, so shared state is touched once per block, not once per upload; no lock on
// any writer path.
//
// The frame's memory is often reused frame after frame (a slot of a ring), so a writer thread
// should write the bytes it wrote the last time this memory was used: they may still be in its
// core's cache, where bytes another core wrote would have to move over. So the memory is laid out
// in *lanes*, one per stripe of writer threads (detail::this_thread_stripe(), as the record log),
// sized by what that stripe's writers used in the previous frame, then the *shared range*:
//
//   memory  [ lane 0: A0 A1 A2 . | lane 3: B0 B1 B2 B3 | C0 . B4 . . |        free        ]
//           ^ base               ^ lane 3              ^ shared      ^ cursor             ^ end
//   A (stripe 0) and B (stripe 3) wrote last frame: each has its lane, at the same offsets as
//   long as the demand stays the same. C (no lane) and B, whose lane is full, take blocks from
//   the shared range's cursor; a writer finding both its lane and the shared range full takes from
//   another lane's unused end. Lanes are laid out only when they all fit and leave the shared
//   range room for the largest upload asked for in the previous frame: an upload that no range
//   could hold (refused) is given room from the next frame on (SharedFrameConfig::lanes).
//
// A writer whose block is full looks for bytes in the block's range first, then in its lane, the
// shared range and the other lanes. Inside a range (a lane or the shared range), a full block
// grows in place while the range's cursor is still at its end (a writer alone in its lane fills
// it contiguously, as one cursor would); otherwise the writer takes a fresh block, and gives the
// old block's end back to its range when nobody took bytes after it, or leaves it *stranded*
// (counted, never copied). Leaving gives the last block's end back in the same way; the unused
// end of a lane is stranded too.
//
// Placements are recorded per writer in block records (kBlockEntries each, claimed from the
// writer's stripe of the log in batches of up to kClaimBatch: one atomic operation per batch, and
// one per record on the frame's shared count when SharedFrameConfig::max_placements is set); a
// record never spans two blocks, so records never interleave, and the sealed frame
// yields every placement in offset order (A0 A1 A2 B0 .. B3 C0 B4 above) by ordering the records
// only (Placements: a view, no copy).
//
// A writer that arrives after the seal is refused (JoinError::Sealed). finish() either waits,
// bounded, for the writers still inside or reports them at once (DrainMode); it never yields a
// placement whose writer has not left, so no copy reads half-written bytes.
//
//   frame.open(memory, base_offset);                        // owner
//   auto w = frame.join().value();                          // any thread
//   auto p = w.place(size, alignment, payload).value();     // p.bytes: write them
//   w.leave();                                              // (or let w go out of scope)
//   auto placed = frame.finish(DrainMode::Wait, 1ms);       // owner: placements, offset order
//
// Payload is what the backend needs to record a placement's copy (a destination buffer and
// offset, an image region): a plain, trivially copyable record, stored as given.
//
// Joined placements. A payload may declare
//   static bool joins(const Payload& first, uint64_t first_size, const Payload& next) noexcept;
// true when an upload with `next` continues, in its destination, the `first_size` bytes recorded
// with `first` (e.g. the same buffer, next.offset == first.offset + first_size). A writer whose
// upload then lands right after its previous one in staging memory too (no alignment padding, the
// same block and record) adds its bytes to that placement instead of recording another: a writer
// streaming uploads back to back into one destination leaves one placement per block, so the
// owner's finish() visits runs, not uploads. Without joins(), every upload is a placement of its
// own.
//
// Threading: open(), finish(), seal(), collect() and the queries marked "owner" on the owner's
// thread; join() and a Writer's calls on any thread (a Writer is used by one thread at a time).
// Ownership: the frame only refers to its memory (the caller's staging slot or reservation), which
// must stay mapped until the frame is reopened or destroyed. Not movable (writers refer to it).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "staging/core/errors.hpp"
#include "staging/core/timeline.hpp"
#include "staging/detail/core/align.hpp"
#include "staging/detail/core/assert.hpp"
#include "staging/detail/core/atomic_counters.hpp"
#include "staging/detail/core/enum_names.hpp"
#include "staging/detail/core/frame_records.hpp"
#include "staging/detail/core/placement_log.hpp"
#include "staging/detail/core/writer_gate.hpp"

namespace staging {

namespace detail {
/// A small number fixed per thread, different for the first threads that ask (0, 1, 2, ... in the
/// order they first ask): which stripe of a SharedFrame's record log the thread uses.
inline uint32_t this_thread_stripe() noexcept {
  static std::atomic<uint32_t> next{0};
  thread_local const uint32_t mine = next.fetch_add(1, std::memory_order_relaxed);
  return mine;
}
}  // namespace detail

/// One upload placed in a SharedFrame (with a joining payload, a run of one writer's uploads
/// joined: see the file comment): `size` bytes at `offset` of the frame's memory (offsets are those
/// of the memory the frame was opened on, base_offset included), and its (first upload's) payload.
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
  /// Not enough bytes left in any range of the frame (its lanes, its shared range).
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
  /// Bytes asked for (DoesNotFit: with the alignment padding where the range of `free` would
  /// have placed them).
  uint64_t needed = 0;
  /// DoesNotFit: the free bytes of the frame's range that had the most at the refusal (the shared
  /// range's, a lane's, or what is left of the writer's block grown in place): an upload of up to
  /// this size (less padding) may still fit; bytes of other ranges are not added, since an upload
  /// never spans two. 0 otherwise.
  uint64_t free = 0;
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
  /// Block records the placement log's first segment holds (each record holds up to
  /// SharedFrame::kBlockEntries placements; the log doubles as it grows and is kept from frame to
  /// frame).
  std::size_t first_log_segment = 16;
  /// Most placements one frame hands out, counted in whole records (rounded up to a multiple of
  /// SharedFrame::kBlockEntries); 0: no limit but memory (and no shared count of records kept).
  uint64_t max_placements = 0;
  /// Lays the frame out in per-thread lanes (see the file comment): at open(), each stripe of
  /// writer threads whose writers used bytes in the previous frame (writers with a non-zero
  /// WriterOptions::block_bytes; the bytes of their blocks from the first placement to the end of
  /// the last, wherever they were taken) gets a lane of that many bytes (rounded up to 64), in
  /// stripe order from the frame's base, each starting at a multiple of 64 and of the largest
  /// alignment its writers asked for (the gaps count as alignment padding); its writers place
  /// there first and the shared range starts after the lanes. With the same demand frame after
  /// frame, each thread writes the same offsets as before (still in its core's cache when the
  /// memory is the same). Lanes are laid out only when they all fit and leave the shared range at
  /// least the largest upload (size + alignment - 1) asked for in the previous frame, placed or
  /// refused: an upload larger than every range (refused, DoesNotFit) finds room from the next
  /// frame on, and a frame filled to its end every time has no lanes. The lanes count in
  /// used_bytes() whole, their unused ends in stranded_bytes(). A thread's lane is the thread that
  /// joined's (a Writer handed to another thread goes on in the lane of the one that joined).
  /// false: no lanes; every writer takes blocks from the shared cursor, which starts at the base
  /// (blocks in the order writers reach the cursor).
  bool lanes = true;
};

/// How a writer takes the frame's bytes (tuning; the defaults suit most uses).
struct WriterOptions {
  /// Bytes a writer takes at a time — from the range its current block is in while that has
  /// room, else from its thread's lane (SharedFrameConfig::lanes), the frame's shared cursor, then
  /// another lane's unused end: its block, which it then places into privately (shared state is
  /// touched once per block, not once per upload). A block grows in place while no other writer
  /// took bytes after it, so a writer alone in its lane (or in the frame) lays it out exactly as
  /// placing each upload from one cursor would. In the shared range or another thread's lane,
  /// near its end, blocks shrink (to the free bytes / (2 × writers inside)) so that no writer
  /// holds back the last bytes others could use; in its own lane, to half its free bytes.
  /// An upload larger than a block takes a block of its own size. The bytes a thread's writers
  /// use size its lane in the next frame. 0: every block is exactly one upload, taken from the
  /// shared cursor (one atomic operation per upload; the uploads lie in the order they reached
  /// the cursor), and from a lane's unused end only once the shared range is full; such a writer
  /// has no lane and does not size one.
  uint64_t block_bytes = uint64_t{64} << 10;
};

/// See the file comment. Payload: trivially copyable and default-constructible.
template <class Payload>
class SharedFrame {
  static_assert(std::is_trivially_copyable_v<Payload> && std::is_default_constructible_v<Payload>,
                "a SharedFrame payload is a plain record");

 public:
  /// A placement (FramePlacement<Payload>).
  using Placement = FramePlacement<Payload>;
  /// True when Payload declares joins() (see the file comment): a writer's uploads that continue
  /// each other in staging memory and in their destination are recorded as one placement.
  static constexpr bool kJoins = requires(const Payload& p, uint64_t n) {
    { Payload::joins(p, n, p) }
    noexcept->std::convertible_to<bool>;
  };
  /// Placements one block record holds: a writer claims a record per block (or per this many
  /// uploads inside one block).
  static constexpr uint32_t kBlockEntries = 64;
  /// Stripes of the record log (see Stripe).
  static constexpr uint32_t kStripes = 16;
  /// Most block records a writer claims at once (see Writer::next_record()).
  static constexpr uint64_t kClaimBatch = 8;

  /// Where a writer's placement is: write `bytes` (all of them) before leaving.
  struct Placed {
    uint64_t offset = 0;         ///< as FramePlacement::offset
    std::span<std::byte> bytes;  ///< the staging bytes, `size` of them
    /// The log entry holding the upload (for Writer::discard): with a joining payload, the
    /// placement it was joined to.
    uint64_t entry = 0;
  };

  class Writer;
  class Placements;

  /// A closed frame (join() refused until open()).
  explicit SharedFrame(SharedFrameConfig config = {}) noexcept
      : max_records_((config.max_placements + kBlockEntries - 1) / kBlockEntries),
        lanes_enabled_(config.lanes),
        stripes_(make_stripes(config.first_log_segment)) {}
  SharedFrame(const SharedFrame&) = delete;
  SharedFrame& operator=(const SharedFrame&) = delete;
  /// Precondition (asserted): no writer inside (every Writer has left).
  ~SharedFrame() { STAGING_ASSERT(gate_.writers() == 0, "SharedFrame destroyed with writers"); }

  /// Opens the frame on `memory` — bytes [base_offset, base_offset + memory.size()) of the
  /// caller's staging memory, mapped at memory.data() — and admits writers. Forgets the previous
  /// frame's placements; lays out the lanes from the bytes each stripe of writers used in it
  /// (SharedFrameConfig::lanes), the shared range after them. Precondition (asserted): closed or
  /// drained (no writer inside). Owner.
  void open(std::span<std::byte> memory, uint64_t base_offset = 0) noexcept {
    STAGING_ASSERT(gate_.drained(), "SharedFrame::open() with writers inside or while open");
    STAGING_ASSERT(base_offset <= UINT64_MAX - memory.size(), "SharedFrame memory overflows");
    memory_ = memory;
    base_ = base_offset;
    end_ = base_offset + memory.size();
    cursor_.store(plan_lanes(), std::memory_order_relaxed);
    stranded_.store(0, std::memory_order_relaxed);
    for (Stripe& stripe : *stripes_) {
      stripe.log.reset();  // (its references are indexed like its records)
    }
    records_.store(0, std::memory_order_relaxed);
    order_.clear();
    collected_count_ = 0;
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
  /// `timeout`), and returns every placement in offset order — or DrainError naming the writers
  /// still inside (the frame stays sealed; call finish() again). The view stays valid until the
  /// next open() or the frame's destruction. Owner.
  Expected<Placements, DrainError> finish(DrainMode mode, Duration timeout = Duration{0}) {
    if (!sealed_by_owner_) (void)seal();
    if (!gate_.drained() && (mode == DrainMode::Report || !gate_.wait_drained(timeout))) {
      const uint32_t inside = gate_.writers();
      if (inside > 0) return unexpected(DrainError{inside});
    }
    return collect();
  }

  /// The placements in offset order (discarded ones left out). Precondition (asserted): drained
  /// (after finish(), or seal() returning 0, or a Writer::leave() returning true). Costs one pass
  /// over a packed reference to each block record and a merge of the writers' runs of them (one
  /// record per 64 placements; not a sort of the placements: each record's placements are in
  /// offset order already, and records never interleave); computed once per frame. The
  /// placements themselves are read only by whoever iterates the view. Owner (or the writer told it
  /// drained the frame, while the owner does not touch it).
  Placements collect() {
    STAGING_ASSERT(gate_.drained(), "SharedFrame::collect() before the writers left");
    if (!collected_valid_) {
      order_.clear();
      runs_.clear();
      // Each stripe's record references, written by the writers next to each other: one run per
      // stripe, already in offset order when one thread filled the stripe.
      for (const Stripe& stripe : *stripes_) {
        const std::size_t start = order_.size();
        bool sorted = true;
        // A reference per record claimed. Left out: a segment that could not be allocated, or a
        // record claimed (in a batch) that was never closed with a placement in it (null).
        stripe.refs.for_each(stripe.log.size(), [&](const RecordRef& ref) {
          if (ref.record == nullptr) return;
          sorted = sorted && (order_.size() == start || !by_first(ref, order_.back()));
          order_.push_back(ref);
        });
        if (order_.size() == start) continue;
        if (!sorted) {
          std::sort(order_.begin() + static_cast<std::ptrdiff_t>(start), order_.end(), by_first);
        }
        runs_.push_back(start);
      }
      detail::merge_sorted_runs(order_, runs_, scratch_, by_first);
      uint64_t placed = 0;  // modulo 2^64: a lane's sum may wrap, the frame's does not
      for (const Lane& lane : lanes_)
        placed += lane.placed.load(std::memory_order_acquire);
      collected_count_ = static_cast<std::size_t>(placed);
      collected_valid_ = true;
    }
    return Placements(order_.data(), order_.data() + order_.size(), collected_count_);
  }

  /// Bytes from the frame's base to the shared cursor: the range a copy may read (gaps
  /// included). The lanes lie below the shared range's start, so they count whole from open(),
  /// used or not (their unused ends are in stranded_bytes()). Exact once drained; a snapshot
  /// before. Any thread.
  [[nodiscard]] uint64_t used_bytes() const noexcept {
    return std::min(cursor_.load(std::memory_order_acquire), end_) - base_;
  }
  /// Bytes of used_bytes() that no placement holds: the end of a writer's block when another
  /// writer had taken the bytes after it (the unused end of a block is given back to its range
  /// when it is last, and counted here otherwise), and the unused end of each lane. Alignment
  /// padding is not counted. Exact once drained; before, a snapshot that counts the lanes' free
  /// bytes as unused. Any thread.
  [[nodiscard]] uint64_t stranded_bytes() const noexcept {
    uint64_t lanes = 0;
    for (const Lane& lane : lanes_) {
      const uint64_t end = lane.end.load(std::memory_order_relaxed);
      lanes += end - std::min(lane.cursor.load(std::memory_order_acquire), end);
    }
    return stranded_.load(std::memory_order_acquire) + lanes;
  }
  /// Bytes of used_bytes() that the lanes' layout skipped: before each lane, to its start (a
  /// multiple of 64 and of the alignment its writers asked for). Neither placed nor stranded;
  /// with stranded_bytes() and the padding before each placement (less than its alignment), it
  /// accounts for every byte of used_bytes() that no placement holds. Set by open(); owner.
  [[nodiscard]] uint64_t lane_padding_bytes() const noexcept { return lane_padding_; }
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

 private:
  using Record = detail::FrameRecord<Placement, kBlockEntries>;
  using RecordRef = detail::FrameRecordRef<Record>;

 public:
  /// The placements of a collected frame in offset order: a forward range over the frame's block
  /// records (no copy of the placements is made). Valid until the next open() or the frame's
  /// destruction.
  class Placements {
   public:
    /// A forward iterator over the placements.
    class iterator {
     public:
      using iterator_category = std::forward_iterator_tag;  ///< A forward iterator.
      using value_type = Placement;                         ///< What it visits.
      using difference_type = std::ptrdiff_t;               ///< Distance between two.
      using pointer = const Placement*;                     ///< Read-only pointer.
      using reference = const Placement&;                   ///< Read-only reference.

      /// A singular iterator (compare only with another singular one).
      iterator() noexcept = default;
      /// The placement here (this iterator must not be end()).
      reference operator*() const noexcept { return at_->record->entries[index_]; }
      /// Points at the placement here.
      pointer operator->() const noexcept { return &**this; }
      /// Moves to the next placement in offset order.
      iterator& operator++() noexcept {
        ++index_;
        skip();
        return *this;
      }
      /// Moves to the next placement; returns where it was.
      iterator operator++(int) noexcept {
        iterator old = *this;
        ++*this;
        return old;
      }
      /// True when both are at the same placement (or both at the end).
      friend bool operator==(const iterator& a, const iterator& b) noexcept {
        return a.at_ == b.at_ && a.index_ == b.index_;
      }

     private:
      friend class Placements;
      iterator(const RecordRef* at, const RecordRef* end) noexcept : at_(at), end_(end) { skip(); }
      // Moves to the next live entry (or the end: at_ == end_, index_ == 0).
      void skip() noexcept {
        while (at_ != end_) {
          const Record& r = *at_->record;
          while (index_ < r.count && r.entries[index_].size == 0)
            ++index_;
          if (index_ < r.count) return;
          ++at_;
          index_ = 0;
        }
      }
      const RecordRef* at_ = nullptr;
      const RecordRef* end_ = nullptr;
      uint32_t index_ = 0;
    };

    /// An empty view.
    Placements() noexcept = default;
    /// The placement with the lowest offset.
    [[nodiscard]] iterator begin() const noexcept { return iterator(begin_, end_); }
    /// Past the last placement.
    [[nodiscard]] iterator end() const noexcept { return iterator(end_, end_); }
    /// How many placements (O(1)).
    [[nodiscard]] std::size_t size() const noexcept { return count_; }
    /// True when the frame holds no placement.
    [[nodiscard]] bool empty() const noexcept { return count_ == 0; }

   private:
    friend class SharedFrame;
    Placements(const RecordRef* begin, const RecordRef* end, std::size_t count) noexcept
        : begin_(begin), end_(end), count_(count) {}
    const RecordRef* begin_ = nullptr;
    const RecordRef* end_ = nullptr;
    std::size_t count_ = 0;
  };

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
        stripe_ = other.stripe_;
        range_ = other.range_;
        in_block_ = other.in_block_;
        run_pos_ = other.run_pos_;
        run_end_ = other.run_end_;
        record_ = other.record_;
        entry_ = other.entry_;
        entry_end_ = other.entry_end_;
        mem_ = other.mem_;
        mem_base_ = other.mem_base_;
        record_index_ = other.record_index_;
        claimed_ = other.claimed_;
        claimed_end_ = other.claimed_end_;
        batch_ = other.batch_;
        ref_ = other.ref_;
        placed_ = other.placed_;
        stranded_ = other.stranded_;
        took_ = other.took_;
        alignment_ = other.alignment_;
        largest_ = other.largest_;
        other.forget();  // a writer of no frame: its place() answers Inactive
      }
      return *this;
    }
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;
    /// Leaves (see leave()).
    ~Writer() { (void)leave(); }

    /// Places `size` bytes at an offset that is a multiple of `alignment` (0 is treated as 1;
    /// any value) with `payload`, and returns where to write them. The bytes are this writer's
    /// until the frame is reopened; write all of them before leave(). Inside the writer's block
    /// this touches no shared state. Errors: ZeroSize, Overflow, DoesNotFit (nothing placed:
    /// route the upload elsewhere; a smaller one may still fit), Inactive, TooManyPlacements,
    /// OutOfMemory. Lock-free.
    Expected<Placed, SharedPlaceError> place(uint64_t size, uint64_t alignment,
                                             const Payload& payload) noexcept {
      // The fast path: a record entry free, a power-of-two alignment and room in the block. Each
      // caller error fails one of these tests (an inactive writer has no entries; size 0 and
      // alignment 0 away from offset 0 never fit) and takes the checked path below.
      if (entry_ != entry_end_) [[likely]] {
        const uint64_t mask = alignment - 1;
        if ((alignment & mask) == 0) [[likely]] {
          const uint64_t pad = (0 - run_pos_) & mask;
          const uint64_t room = run_end_ - run_pos_;
          if (pad <= room && size - 1 < room - pad) [[likely]] {
            return commit(run_pos_ + pad, size, payload);
          }
        }
      }
      return place_checked(size, alignment, payload);
    }

    /// Withdraws an upload this writer placed (its bytes will not be copied; they stay a gap).
    /// For a producer that could not write what it placed. Before leave() only. With a joining
    /// payload (kJoins), only the last upload of a placement can be withdrawn: an upload that a
    /// later one was joined to stays (false; its bytes will be copied, so write them). Returns
    /// true when withdrawn; false also for an upload already withdrawn or a writer that left.
    bool discard(const Placed& placed) noexcept {
      if (frame_ == nullptr) return false;
      const uint64_t record = placed.entry / kBlockEntries;
      Record* r = (*frame_->stripes_)[record % kStripes].log.at(record / kStripes);
      if (r == nullptr) return false;
      Placement& e = r->entries[placed.entry % kBlockEntries];
      const uint64_t size = placed.bytes.size();
      // The upload must be the placement's end: all of it, or (joined) its last upload.
      if (e.size == 0 || placed.offset < e.offset || e.size - (placed.offset - e.offset) != size) {
        return false;
      }
      e.size -= size;
      if (e.size == 0) --placed_;  // modulo 2^64: the frame's count is the sum over its writers
      return true;
    }

    /// Leaves the frame: this writer's bytes are complete. Gives back what its block left unused
    /// to the block's range (its lane, the shared range) when nobody took bytes after it
    /// (otherwise counts it in stranded_bytes()), and adds the bytes it used to its stripe's
    /// demand (the size of its lane in the next frame; not for block_bytes 0): its blocks from
    /// their first placement to the end of their last, alignment padding between placements
    /// included. Returns true when
    /// this drained the sealed frame (the owner's finish() will now succeed; the caller may tell
    /// it). Does nothing and returns false for a writer that has left or has no frame.
    bool leave() noexcept {
      if (frame_ == nullptr) return false;
      close_record();
      release_block();
      SharedFrame* f = std::exchange(frame_, nullptr);
      if (stranded_ != 0) f->stranded_.fetch_add(stranded_, std::memory_order_relaxed);
      f->lanes_[stripe_].placed.fetch_add(placed_, std::memory_order_relaxed);
      if (options_.block_bytes != 0 && took_ != 0) {
        f->lanes_[stripe_].took.fetch_add(took_, std::memory_order_relaxed);
        raise_relaxed(f->lanes_[stripe_].alignment, alignment_);  // read after the drain
      }
      if (largest_ != 0) raise_relaxed(f->largest_, largest_);
      forget();
      return f->gate_.leave();
    }

    /// True while this writer is inside a frame.
    [[nodiscard]] bool joined() const noexcept { return frame_ != nullptr; }

   private:
    friend class SharedFrame;
    Writer(SharedFrame* frame, WriterOptions options) noexcept
        : frame_(frame),
          options_(options),
          stripe_(detail::this_thread_stripe() % kStripes),
          mem_(frame->memory_.data()),
          mem_base_(frame->base_) {}

    // Drops the membership's state (its block, record, batch and tallies), as after leave() or a
    // move: no entry is free, so place() takes the checked path and answers Inactive.
    void forget() noexcept {
      in_block_ = false;
      record_ = nullptr;
      entry_ = entry_end_ = nullptr;
      ref_ = nullptr;
      placed_ = 0;
      stranded_ = 0;
      took_ = 0;
      alignment_ = 1;
      largest_ = 0;
      claimed_ = claimed_end_ = 0;
      batch_ = 1;
    }

    // Bytes to add to `at` for a multiple of `alignment` (>= 1).
    static uint64_t padding(uint64_t at, uint64_t alignment) noexcept {
      if ((alignment & (alignment - 1)) == 0) return (0 - at) & (alignment - 1);
      const uint64_t r = at % alignment;
      return r == 0 ? 0 : alignment - r;
    }

    // place() with every check: the caller's errors, any alignment, then the slow path.
    Expected<Placed, SharedPlaceError> place_checked(uint64_t size, uint64_t alignment,
                                                     const Payload& payload) noexcept {
      if (frame_ == nullptr) {
        return unexpected(SharedPlaceError{SharedPlaceErrorKind::Inactive, size, 0});
      }
      if (size == 0) return unexpected(SharedPlaceError{SharedPlaceErrorKind::ZeroSize, 0, 0});
      if (alignment == 0) alignment = 1;
      if (size > UINT64_MAX - (alignment - 1)) {
        return unexpected(SharedPlaceError{SharedPlaceErrorKind::Overflow, size, 0});
      }
      if (entry_ != entry_end_) {
        const uint64_t pad = padding(run_pos_, alignment);
        if (run_end_ - run_pos_ >= pad && run_end_ - run_pos_ - pad >= size) {
          return commit(run_pos_ + pad, size, payload);
        }
      }
      return refill(size, alignment, payload);
    }

    Expected<Placed, SharedPlaceError> commit(uint64_t offset, uint64_t size,
                                              const Payload& payload) noexcept {
      // Only the entry and the writer's own position: the record's count, its reference and the
      // writer's tally are written when the record is closed (close_record()).
      run_pos_ = offset + size;
      Placement* e = entry_;
      bool joined = false;
      if constexpr (kJoins) {
        // Joined to the record's last placement when it ends where this upload starts (in the
        // same record, so in the same block or one grown from it) and the payload continues it.
        if (e != record_->entries.data()) {
          Placement& last = e[-1];
          if (last.offset + last.size == offset &&
              Payload::joins(last.payload, last.size, payload)) {
            last.size += size;
            --e;
            joined = true;
          }
        }
      }
      if (!joined) {
        ++entry_;
        *e = Placement{offset, size, payload};
      }
      const auto i = static_cast<uint32_t>(e - record_->entries.data());
      return Placed{
          offset, std::span<std::byte>(mem_ + (offset - mem_base_), static_cast<std::size_t>(size)),
          record_index_ * kBlockEntries + i};
    }

    // Closes the current record and takes a fresh one; on failure the writer keeps the closed
    // record (the caller drops it when it needs room). Records are claimed from the writer's
    // stripe in batches that double from 1 to kClaimBatch (one atomic operation per batch, so that
    // a writer placing many uploads runs no locked instruction, which would wait for its pending
    // stores, for hundreds of them), their references written null until the record is closed
    // with a placement in it; a batch's records the writer does not fill stay null and collect()
    // skips them.
    Expected<void, SharedPlaceError> next_record() noexcept {
      close_record();
      SharedFrame& f = *frame_;
      if (f.max_records_ != 0 &&
          f.records_.fetch_add(1, std::memory_order_relaxed) >= f.max_records_) {
        return unexpected(SharedPlaceError{SharedPlaceErrorKind::TooManyPlacements, 0, 0});
      }
      Stripe& stripe = (*f.stripes_)[stripe_];
      if (claimed_ == claimed_end_) {
        const auto first = stripe.log.claim(batch_);
        if (!first) {
          return unexpected(SharedPlaceError{SharedPlaceErrorKind::TooManyPlacements, 0, 0});
        }
        claimed_ = *first;
        claimed_end_ = *first + batch_;
        batch_ = std::min(batch_ * 2, kClaimBatch);
        for (uint64_t i = claimed_; i < claimed_end_; ++i) {
          // The log keeps the previous frame's references. (A segment that cannot be allocated
          // has none: collect() skips the index.)
          if (RecordRef* ref = stripe.refs.at(i)) *ref = RecordRef{};
        }
      }
      const uint64_t index = claimed_++;
      Record* r = stripe.log.at(index);
      RecordRef* ref = stripe.refs.at(index);
      if (r == nullptr || ref == nullptr) {
        return unexpected(SharedPlaceError{SharedPlaceErrorKind::OutOfMemory, 0, 0});
      }
      r->count = 0;  // the log keeps the previous frame's records
      record_ = r;
      entry_ = r->entries.data();
      entry_end_ = entry_ + kBlockEntries;
      ref_ = ref;
      record_index_ = index * kStripes + stripe_;
      return {};
    }

    // Publishes what the current record holds: its count of entries, its reference (with its
    // first placement: the record is now in the frame) and the writer's tally. Done when the
    // writer moves to another record and when it leaves; calling it again adds nothing.
    void close_record() noexcept {
      if (record_ == nullptr) return;
      const auto n = static_cast<uint32_t>(entry_ - record_->entries.data());
      if (n <= record_->count) return;
      placed_ += n - record_->count;
      if (record_->count == 0) *ref_ = RecordRef{record_->entries[0].offset, record_};
      record_->count = n;
    }

    // The bytes of the block to take for `size` from a range with `free` bytes (a block, smaller
    // near the range's end, never less than `size`). In its own lane the writer is treated as
    // alone (nobody else normally takes bytes there); in the shared range or another stripe's
    // lane, as one of the writers inside (so that a writer taking a lane's unused end leaves some
    // of it to the lane's own writers).
    uint64_t block_for(uint64_t size, uint64_t free, uint32_t range) const noexcept {
      const uint64_t writers =
          range == stripe_ ? uint64_t{1} : std::max<uint64_t>(1, frame_->gate_.writers());
      const uint64_t block = std::min(options_.block_bytes, free / (2 * writers));
      return std::max(size, block);
    }

    // The slow path: a record with room, then bytes: the rest of the block, the block grown in
    // place (nobody took bytes after it), or a fresh block from the cursor.
    Expected<Placed, SharedPlaceError> refill(uint64_t size, uint64_t alignment,
                                              const Payload& payload) noexcept {
      if (record_ == nullptr || entry_ == entry_end_) {
        if (auto r = next_record(); !r) return unexpected(r.error());
        const uint64_t pad = padding(run_pos_, alignment);
        if (in_block_ && run_end_ - run_pos_ >= pad && run_end_ - run_pos_ - pad >= size) {
          return commit(run_pos_ + pad, size, payload);
        }
      }
      const auto taken = take_bytes(size, alignment);
      if (!taken) return unexpected(taken.error());
      if (!taken->grown && entry_ != record_->entries.data()) {
        // A record never spans two blocks (records must not interleave in offset order).
        if (auto r = next_record(); !r) {
          record_ = nullptr;
          entry_ = entry_end_ = nullptr;
          return unexpected(r.error());
        }
      }
      return commit(taken->offset, size, payload);
    }

    // Takes bytes for `size` at `alignment`: from the current block's range (grown in place when
    // nobody took bytes after it), then the writer's lane, the shared range and the other lanes.
    // DoesNotFit when none has room (`free`: the most any range had).
    Expected<detail::TakenBytes, SharedPlaceError> take_bytes(uint64_t size,
                                                              uint64_t alignment) noexcept {
      alignment_ = std::max(alignment_, alignment);
      largest_ = std::max(largest_, size + (alignment - 1));  // checked in place()
      SharedPlaceError refused{SharedPlaceErrorKind::DoesNotFit, 0, 0};
      // (A writer of one-upload blocks always starts from the shared range.)
      const uint32_t current = in_block_ && options_.block_bytes != 0 ? range_ : kNoRange;
      if (current != kNoRange) {
        if (auto taken = take_from(current, size, alignment, refused)) return *taken;
      }
      const uint32_t own = options_.block_bytes != 0 ? stripe_ : kNoRange;
      if (own != kNoRange && own != current) {
        if (auto taken = take_from(own, size, alignment, refused)) return *taken;
      }
      if (current != kShared) {
        if (auto taken = take_from(kShared, size, alignment, refused)) return *taken;
      }
      // Stealing: another lane's unused end (starting after this writer's stripe, so that
      // writers of different stripes spread over the lanes).
      for (uint32_t i = 1; i <= kStripes; ++i) {
        const uint32_t lane = (stripe_ + i) % kStripes;
        if (lane == own || lane == current) continue;
        if (auto taken = take_from(lane, size, alignment, refused)) return *taken;
      }
      return unexpected(refused);
    }

    // Takes a block for `size` at `alignment` from `range` (a lane, or kShared): grows the current
    // block in place when it is in this range and the range's cursor is still at its end, else
    // takes a fresh block at the cursor and releases the old one (release_block()). Nothing when
    // the range has no room; `refused` then keeps the range's free bytes if they are the most yet.
    std::optional<detail::TakenBytes> take_from(uint32_t range, uint64_t size, uint64_t alignment,
                                                SharedPlaceError& refused) noexcept {
      std::atomic<uint64_t>& cursor = frame_->range_cursor(range);
      const uint64_t end = frame_->range_end(range);
      uint64_t cur = cursor.load(std::memory_order_relaxed);
      for (;;) {
        const bool grow = in_block_ && range_ == range && cur == run_end_;
        const uint64_t from = grow ? run_pos_ : cur;
        const std::optional<uint64_t> at = align_up(from, alignment);
        if (!at || *at > end || end - *at < size) {
          const uint64_t free = from >= end ? 0 : end - from;
          if (refused.needed == 0 || free > refused.free) {
            refused.free = free;
            refused.needed = (at ? *at - from : alignment - 1) + size;
          }
          return std::nullopt;
        }
        const uint64_t room = end - *at;
        const uint64_t stop = *at + std::min(block_for(size, room, range), room);
        if (cursor.compare_exchange_weak(cur, stop, std::memory_order_relaxed,
                                         std::memory_order_relaxed)) {
          if (!grow) release_block();
          took_ += stop - (grow ? cur : *at);
          in_block_ = true;
          range_ = range;
          run_pos_ = *at;
          run_end_ = stop;
          return detail::TakenBytes{*at, grow};
        }
      }
    }

    // Gives the unused end of the current block back to its range when the range's cursor is
    // still at the block's end (nobody took bytes after it); otherwise counts it stranded. Either
    // way it is not part of what the writer used (took_).
    void release_block() noexcept {
      if (!in_block_ || run_pos_ >= run_end_) return;
      uint64_t expected = run_end_;
      if (!frame_->range_cursor(range_).compare_exchange_strong(expected, run_pos_,
                                                                std::memory_order_relaxed)) {
        stranded_ += run_end_ - run_pos_;
      }
      took_ -= run_end_ - run_pos_;
    }

    SharedFrame* frame_ = nullptr;
    WriterOptions options_{};
    uint32_t stripe_ = 0;    // this thread's stripe: of the record log, and its lane
    uint32_t range_ = 0;     // the range of the block: a lane (its stripe), or kShared
    bool in_block_ = false;  // [run_pos_, run_end_) is this writer's block
    uint64_t run_pos_ = 0;
    uint64_t run_end_ = 0;
    Record* record_ = nullptr;  // where this writer's next placement is recorded
    // record_'s next free entry and its end (both null without a record): the fast path's test.
    Placement* entry_ = nullptr;
    Placement* entry_end_ = nullptr;
    std::byte* mem_ = nullptr;  // the frame's memory (mapped at the offset mem_base_)
    uint64_t mem_base_ = 0;
    RecordRef* ref_ = nullptr;  // record_'s reference, written when the record is closed
    uint64_t record_index_ = 0;
    // Records of this writer's stripe it claimed and has not used yet: [claimed_, claimed_end_);
    // the next batch claims batch_ of them.
    uint64_t claimed_ = 0;
    uint64_t claimed_end_ = 0;
    uint64_t batch_ = 1;
    uint64_t placed_ = 0;     // placements of its closed records less those discarded
    uint64_t stranded_ = 0;   // bytes of this writer's earlier blocks it left unused
    uint64_t took_ = 0;       // bytes of its blocks from their first placement on, less unused ends
    uint64_t alignment_ = 1;  // the largest alignment of the uploads that took a block
    uint64_t largest_ = 0;    // the largest size + alignment - 1 that took a block or was refused
  };

 private:
  // The record log, in stripes: a thread claims its records from its own stripe (by the order
  // threads first wrote into any frame), so the records a thread fills frame after frame are the
  // ones it filled before, still in its core's cache, instead of lines another core wrote last.
  using Stripe = detail::FrameRecordStripe<Record>;
  using Stripes = std::array<Stripe, kStripes>;
  template <std::size_t... I>
  static std::unique_ptr<Stripes> make_stripes(std::size_t first, std::index_sequence<I...>) {
    return std::unique_ptr<Stripes>(new Stripes{Stripe((void(I), first))...});
  }
  static std::unique_ptr<Stripes> make_stripes(std::size_t first) {
    return make_stripes(first, std::make_index_sequence<kStripes>());
  }

  static bool by_first(const RecordRef& a, const RecordRef& b) noexcept {
    return a.first < b.first;
  }

  // A stripe's lane of the frame's memory: [cursor at open(), end), on a cache line of its own
  // (its writers' compare-and-swaps touch no other lane's). `took`: the bytes the stripe's
  // writers used this frame (summed as they leave), which size the lane in the next one.
  struct alignas(64) Lane {
    std::atomic<uint64_t> cursor{0};
    std::atomic<uint64_t> end{0};
    std::atomic<uint64_t> took{0};
    std::atomic<uint64_t> alignment{1};  // the largest alignment its writers asked for
    std::atomic<uint64_t> placed{0};     // placements its writers kept (summed as they leave)
  };
  // Ranges a writer takes blocks from: lane s (s < kStripes), or the shared range.
  static constexpr uint32_t kShared = kStripes;
  static constexpr uint32_t kNoRange = kStripes + 1;
  std::atomic<uint64_t>& range_cursor(uint32_t range) noexcept {
    return range == kShared ? cursor_ : lanes_[range].cursor;
  }
  uint64_t range_end(uint32_t range) const noexcept {
    return range == kShared ? end_ : lanes_[range].end.load(std::memory_order_relaxed);
  }

  // Lays out this frame's lanes from the bytes each stripe used in the previous frame (rounded up
  // to 64), in stripe order from the base, each starting at a multiple of 64 and of the largest
  // alignment its writers asked for (the gaps are alignment padding); none when lanes are off, or
  // when they would not leave the shared range room for the largest upload asked for in the
  // previous frame (placed or refused). Starts counting this frame's demand and placements.
  // Returns where the shared range starts. Owner, in open().
  uint64_t plan_lanes() noexcept {
    // Loads and stores, not exchanges: no writer is inside, and a locked instruction would wait
    // for each line the writers left dirty in their caches, one after the other.
    const uint64_t reserve = largest_.load(std::memory_order_relaxed);
    largest_.store(0, std::memory_order_relaxed);
    std::array<uint64_t, kStripes> start{}, stop{};
    bool fits = lanes_enabled_;
    uint64_t at = base_;
    for (uint32_t s = 0; s < kStripes; ++s) {
      const uint64_t took = lanes_[s].took.load(std::memory_order_relaxed);
      const uint64_t alignment = lanes_[s].alignment.load(std::memory_order_relaxed);
      lanes_[s].took.store(0, std::memory_order_relaxed);
      lanes_[s].alignment.store(1, std::memory_order_relaxed);
      lanes_[s].placed.store(0, std::memory_order_relaxed);
      if (!fits || took == 0) {
        start[s] = stop[s] = at;
        continue;
      }
      const std::optional<uint64_t> line = align_up(at, 64);
      const std::optional<uint64_t> from = line ? align_up(*line, alignment) : std::nullopt;
      const std::optional<uint64_t> size = align_up(took, 64);
      if (!from || !size || *from > end_ || *size > end_ - *from) {
        fits = false;
        continue;
      }
      start[s] = *from;
      stop[s] = at = *from + *size;
    }
    if (!fits || end_ - at < reserve) {
      start.fill(base_);
      stop.fill(base_);
      at = base_;
    }
    uint64_t previous = base_;
    lane_padding_ = 0;
    for (uint32_t s = 0; s < kStripes; ++s) {
      lanes_[s].cursor.store(start[s], std::memory_order_relaxed);
      lanes_[s].end.store(stop[s], std::memory_order_relaxed);
      if (stop[s] != start[s]) {
        lane_padding_ += start[s] - previous;
        previous = stop[s];
      }
    }
    return at;
  }
  WriterGate gate_;
  const uint64_t max_records_;                    // 0: no cap
  const bool lanes_enabled_;                      // SharedFrameConfig::lanes
  alignas(64) std::atomic<uint64_t> records_{0};  // records claimed (kept only with a cap)
  std::unique_ptr<Stripes> stripes_;
  alignas(64) std::atomic<uint64_t> cursor_{0};
  std::array<Lane, kStripes> lanes_;
  alignas(64) std::atomic<uint64_t> stranded_{0};
  // The largest upload asked for this frame (size + alignment - 1; placed or refused), raised by
  // the writers as they leave: the room the next frame's shared range keeps.
  std::atomic<uint64_t> largest_{0};
  std::span<std::byte> memory_;
  uint64_t base_ = 0;
  uint64_t end_ = 0;
  uint64_t lane_padding_ = 0;  // lane_padding_bytes(); set by open()
  // Owner's state.
  std::vector<RecordRef> order_;    // the records in offset order, once collected
  std::vector<RecordRef> scratch_;  // the merge's other buffer
  std::vector<std::size_t> runs_;   // where each sorted run of order_ starts
  std::size_t collected_count_ = 0;
  bool collected_valid_ = false;
  bool sealed_by_owner_ = false;
};

}  // namespace staging
