// Uploader: bounded pinned staging for host-to-device uploads on CUDA.
//
// `cudaMemcpy` from ordinary (pageable) host memory runs several times slower than from pinned
// memory, and pinning the source for each upload is slower still. The Uploader pins one ring of
// `ring_bytes` once, and streams any upload through it in pieces: a pool of CPU threads (and the
// calling thread) copies the source into ring pieces in parallel, and each piece is copied to the
// device with cudaMemcpyAsync on the caller's stream as soon as it is full, while the threads fill
// the next ones. Piece size, fill method and — with few fill threads — a part copied straight from
// the source are chosen per upload from rates measured as uploads run (docs/cuda.md). The ring's
// bytes are reused once the copy that read them has completed, as seen through pooled CUDA events
// on the core's monotonic completion timeline.
//
//   upload(dst, src, 1 GiB, stream), ring of 8 pieces:
//
//   source   [p0][p1][p2][p3][p4][p5][p6][p7][p8][p9] ...      fill threads copy piece slices
//   ring     [p8][p9][p2][p3][p4][p5][p6][p7]                   p8 reuses p0's bytes once p0's
//   stream   ..p0 p1 p2 p3 p4 p5 | p6 p7 ...                    event (its point) has completed
//
// Built on staging::ByteRing (core/byte_ring.hpp): FIFO reservations in one pinned region, each
// retired by its own timeline point; exhaustion policies Defer, Wait (bounded) and Split. Grow and
// Fallback are not offered: they would pin memory in the upload path.
//
// Two ways in:
//  - upload(device_dst, host_src, bytes, stream): copy from any host memory, any size.
//  - reserve(bytes) -> StagingSpan, fill it in place, commit(span, device_dst, stream).
// Both return a TimelineValue, a point on the Uploader's own timeline: reached(point) asks whether
// it has completed, wait(point, timeout) blocks on it (bounded), stream_wait(stream, point) makes
// other GPU work wait for it, completed() says how far the GPU has come.
//
// Lost device / sticky errors: a sticky CUDA error (is_sticky) seen in any call — or any failure
// to record or query a copy's event, after which its bytes can never be proven free, or a direct
// part (UploaderConfig::direct) not complete within drain_timeout, which may still read the
// caller's memory (error() then answers cudaErrorTimeout) — puts the Uploader into a failed state:
// every later call returns UploadError::Failed with that error (wait() and reached():
// WaitError::Failed), and the ring's bytes are never reused (a copy might still read them). Destroy
// the Uploader and the CUDA context to recover.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "staging/core/byte_ring.hpp"
#include "staging/core/errors.hpp"
#include "staging/core/fill_pool.hpp"
#include "staging/core/observer.hpp"
#include "staging/core/timeline.hpp"
#include "staging/detail/core/counters.hpp"
#include "staging/detail/core/enum_names.hpp"
#include "staging/detail/cuda/device_api.hpp"

namespace staging::cuda {

class Uploader;
struct UploaderConfig;

namespace detail {
/// The library's own tests reach an Uploader's internals through this (not part of the API).
struct UploaderTestAccess;
/// Uploader::create with every CUDA call made through `api` (a test's fake device, a counting
/// wrapper, the runtime's for a device of the caller's choosing), which must outlive the
/// Uploader; config.device is not used.
Expected<Uploader, CreateError> create_uploader(const UploaderConfig& config, DeviceApi& api);
}  // namespace detail

/// The names of this namespace's enums: `to_string(e)` finds the core's one to_string (built on
/// each enum's enum_names) by argument-dependent lookup here too.
using staging::to_string;

/// A total cap on pinned bytes shared by several Uploaders (one per device: UploaderConfig::
/// pinned_budget; a MultiUploader makes one for its devices), charged before pinning and credited
/// after unpinning.
///
/// Ownership: shared (std::shared_ptr) by the allocators charging it; it outlives them.
/// Threading: every member is safe from any thread.
class PinnedBudget {
 public:
  /// A budget of `cap` bytes (0: nothing can be charged).
  explicit PinnedBudget(uint64_t cap) noexcept : cap_(cap) {}
  PinnedBudget(const PinnedBudget&) = delete;
  PinnedBudget& operator=(const PinnedBudget&) = delete;

  /// Charges `bytes` when held() + bytes <= cap(); false (nothing charged) otherwise.
  bool try_charge(uint64_t bytes) noexcept;
  /// Credits `bytes` charged before.
  void credit(uint64_t bytes) noexcept { held_.fetch_sub(bytes, std::memory_order_relaxed); }
  /// The cap.
  [[nodiscard]] uint64_t cap() const noexcept { return cap_; }
  /// Bytes charged now.
  [[nodiscard]] uint64_t held() const noexcept { return held_.load(std::memory_order_relaxed); }
  /// The most bytes ever charged at once (<= cap()).
  [[nodiscard]] uint64_t peak() const noexcept { return peak_.load(std::memory_order_relaxed); }

 private:
  uint64_t cap_;
  std::atomic<uint64_t> held_{0};
  std::atomic<uint64_t> peak_{0};
};

/// How an Uploader is sized. Validated by Uploader::create.
struct UploaderConfig {
  /// Pinned bytes of the ring: allocated once by create(), never grown. This is the cap: the
  /// Uploader never holds more pinned memory than this (plus nothing). > 0.
  uint64_t ring_bytes = uint64_t{64} << 20;
  /// Largest piece copied with one cudaMemcpyAsync, and (Split) the most ring one reservation of
  /// upload() takes (whole pieces); under Wait and Defer one reservation takes the whole source.
  /// Clamped to [alignment, ring_bytes]. Keep ring_bytes / chunk_bytes >= 4 so that copies stay
  /// queued while the threads fill the next pieces.
  uint64_t chunk_bytes = uint64_t{8} << 20;
  /// Smallest piece, unless an upload's ring part is smaller (clamped to [1, chunk_bytes]).
  /// Between the two, pieces are sized per upload from the fill rate measured so far and the
  /// copy overhead (docs/cuda.md, "Pieces"): about 256 KiB for 1 MiB, 8 MiB for 1 GiB.
  uint64_t min_piece_bytes = uint64_t{256} << 10;
  /// Threads of the Uploader's own fill pool, started by create(); ignored when fill_pool is
  /// given. 0: one per CPU this process may use, minus two (the uploading thread fills too, and
  /// the CUDA driver has threads of its own), at least 1 and at most 12. On a 16-core host that
  /// is 12: the fill rate must exceed the copy rate (docs/cuda.md, "Fill threads"). An upload of
  /// at least one chunk is filled by no more of them at once than keep the fill 1.3 x ahead of
  /// link_gbps at their measured speed: more would take memory bandwidth from the copy engine.
  unsigned fill_threads = 0;
  /// A fill pool shared with other Uploaders (one per device): their common CPU budget. Each
  /// Uploader queues in a lane of its own (up to 16 Uploaders alive at once on one pool; a
  /// destroyed one gives its lane back), so none waits behind another's queued pieces, and sizes
  /// its pieces for its share of the threads: the pool's threads divided by the uploads in progress
  /// on it. Null: create() starts the Uploader's own pool of fill_threads threads.
  std::shared_ptr<FillPool> fill_pool;
  /// Where the own pool's threads run (ignored with fill_pool): Node keeps them on the host NUMA
  /// node closest to the device (no restriction on a host with one node), Core pins one per core
  /// of that node, None leaves them to the operating system.
  ThreadPinning fill_pinning = ThreadPinning::Node;
  /// Bytes one fill thread copies at a time; 0: each piece spread over the pool's threads and
  /// the caller (>= 32 KiB a slice).
  uint64_t fill_slice_bytes = 0;
  /// Pieces of at most this many bytes are copied into the ring by the calling thread itself
  /// (waking a fill thread would cost more than the copy).
  uint64_t inline_fill_bytes = uint64_t{64} << 10;
  /// Offset alignment of every reservation in the ring (>= 1, <= ring_bytes). Also the default
  /// alignment of reserve().
  uint64_t alignment = 256;
  /// Policy of upload() and reserve() when the ring has no room: the core's ExhaustionPolicy
  /// (byte_ring.hpp), Defer, Wait or Split. Grow and Fallback are refused (InvalidConfig): they
  /// would pin memory in the upload path.
  ExhaustionPolicy policy = ExhaustionPolicy::Split;
  /// Longest a single reservation waits for ring room (Wait, Split) before Timeout (>= 0), its
  /// waits for the ring lock and for a free event included.
  Duration wait_timeout = std::chrono::seconds(1);
  /// CUDA events in the timeline's pool (>= 1): the most reservations pending at once.
  uint32_t events = 1024;
  /// How the fill threads copy. Auto: per upload size class (powers of two), the method whose
  /// uploads have taken less time per byte so far, from the call until the last copy landed (a
  /// pair of CUDA timing events on some of the uploads, UploaderStats::timed_uploads; on a device
  /// that cannot time events, the call's own duration). Each class measures both on its first
  /// uploads and re-measures the losing one now and then (docs/cuda.md, "Fill method"). Before a
  /// class is measured: Streaming below twice the ring's size, Memcpy from there (an upload that
  /// cycles through the ring finds it in the CPU's cache, where plain stores win).
  FillMethod fill = FillMethod::Auto;
  /// Lets upload() (under Split, on a stream with no work queued) copy the first part of a source
  /// straight from it with cudaMemcpyAsync while the fill threads fill the ring for the rest, when
  /// that is faster than the ring alone — with one or two fill threads, where the driver's own
  /// pageable copy outruns the ring. upload() then returns once that copy has completed.
  /// UploaderStats::direct_uploads counts them. False: every byte goes through the ring.
  bool direct = true;
  /// The copy rate from pinned memory the piece and direct-part model assumes, GB/s (> 0).
  double link_gbps = 50;
  /// The fixed cost of one copy on the copy engine the piece model assumes (>= 0). The default is
  /// what back-to-back cudaMemcpyAsync calls from pinned memory cost beyond their bytes on a PCIe
  /// Gen5 H200 (2.5-2.7 us; docs/cuda.md, "Pieces").
  Duration copy_overhead = std::chrono::nanoseconds(2700);
  /// Pin the ring with cudaHostAllocWriteCombined (the CPU must then never read it).
  bool write_combined = false;
  /// Checks every upload() and commit() destination against the device allocation that holds
  /// its first byte (DeviceApi::address_range, one driver call per upload): a range that runs past
  /// the allocation's end, or an address the driver knows no allocation at, is refused with
  /// OutOfBounds before anything is reserved or copied. Where the driver cannot answer
  /// (no cuMemGetAddressRange entry point) nothing is checked. False: destinations are trusted
  /// (memory the driver does not describe as an allocation, say).
  bool check_destinations = true;
  /// Runs the byte ring's invariant checker on every operation (slow; for tests).
  bool check_invariants = false;
  /// Receives the ring's timeline events (must outlive the Uploader); null: none. Called under
  /// the Uploader's ring lock, on whichever thread is reserving: it must be quick and must not
  /// call the Uploader.
  Observer* observer = nullptr;
  /// The device the Uploader works with; -1 (any negative value): the calling thread's current
  /// device at create().
  int device = -1;
  /// Longest the destructor waits for the copies it issued to complete (see ~Uploader; >= 0);
  /// also the longest upload() waits for its direct part (see `direct`): a direct part still
  /// running then fails the Uploader (error() cudaErrorTimeout; see the file comment).
  Duration drain_timeout = std::chrono::seconds(10);
  /// A total cap on pinned memory shared with other Uploaders (one ring per device): create()
  /// fails with AllocationFailed when the ring does not fit in what is left of it. Null:
  /// ring_bytes is the only cap.
  std::shared_ptr<PinnedBudget> pinned_budget;
};

/// Per-call overrides.
struct UploadOptions {
  /// Overrides UploaderConfig::policy (Defer, Wait or Split; Grow or Fallback: InvalidArgument).
  /// upload(): Split streams a source of any size in pieces; Wait and Defer stage the whole
  /// source in one reservation (at most ring_bytes) or nothing.
  std::optional<ExhaustionPolicy> policy;
  /// Overrides UploaderConfig::wait_timeout, per reservation (negative: no waiting): one bound for
  /// all of a reservation's waits (for the ring lock, a free event and ring room together).
  std::optional<Duration> timeout;
  /// The caller's tag, carried into the ring's stats and timeline.
  uint64_t owner = 0;
  /// reserve() only: offset alignment of the span (0: UploaderConfig::alignment).
  uint64_t alignment = 0;
};

/// A failed Uploader call, with what the caller needs to go on.
struct UploadFailure {
  /// What went wrong, in the vocabulary every backend shares (staging/core/errors.hpp). An
  /// Uploader answers InvalidArgument, WouldBlock, Timeout, TooLarge, Cuda, Failed and
  /// OutOfBounds (see each value).
  UploadError kind = UploadError::InvalidArgument;
  /// The CUDA error for Cuda and Failed; cudaSuccess otherwise.
  cudaError_t cuda = cudaSuccess;
  /// The ring's answer when `kind` came from reserving ring room: `kind` WouldBlock, Timeout or
  /// TooLarge (the ring's own kind); InvalidArgument for an alignment that overflows (the ring's
  /// kind: Overflow); Cuda when a region could not be made (AllocationFailed); or Failed when the
  /// Uploader failed during that wait. Empty otherwise. Three answers are the Uploader's, not the
  /// ring's, and carry only `kind` and `needed` (the other fields zero): a Timeout waiting for
  /// the ring's lock, a WouldBlock of Defer behind a caller that waits for room, and a Timeout or
  /// WouldBlock when every pooled event is pending (then `oldest_pending` is set too).
  std::optional<ReserveError> reserve;
  /// upload(): the first `bytes_issued` bytes were staged and their copies enqueued before the
  /// failure (they complete at `issued_point`); resume from there. Any policy: a Timeout after
  /// progress comes only under Split, but a Cuda error can come after some pieces of a Wait or
  /// Defer reservation were issued. 0 for the other calls, and when nothing was enqueued.
  uint64_t bytes_issued = 0;
  /// The point after which those copies have completed (0 when none were issued).
  TimelineValue issued_point = 0;
};

/// What an Uploader has done. Plain data; a diagnostic, never a decision input.
struct UploaderStats {
  uint64_t uploads = 0;            ///< successful upload() calls
  uint64_t bytes_uploaded = 0;     ///< bytes they copied
  uint64_t commits = 0;            ///< successful commit() calls
  uint64_t bytes_committed = 0;    ///< bytes they copied
  uint64_t cancels = 0;            ///< spans cancelled (explicitly or by destruction)
  uint64_t copies = 0;             ///< cudaMemcpyAsync calls issued
  uint64_t inline_fills = 0;       ///< pieces filled by the calling thread alone (small ones)
  uint64_t pool_fills = 0;         ///< pieces filled by the fill pool (the caller helping)
  uint64_t errors = 0;             ///< calls that returned an error
  uint64_t direct_uploads = 0;     ///< uploads with a direct part (see UploaderConfig::direct)
  uint64_t direct_bytes = 0;       ///< bytes those copied straight from the source
  uint64_t memcpy_uploads = 0;     ///< uploads whose ring part was filled with Memcpy
  uint64_t streaming_uploads = 0;  ///< ... with Streaming
  uint64_t probe_uploads = 0;      ///< of those, uploads that measured the method not winning
  /// Uploads timed until their last copy landed whose time reached the choice of fill method, the
  /// samples of FillMethod::Auto (counted when read, by a later upload; 0 with a fixed method, or
  /// on a device that cannot time events)
  uint64_t timed_uploads = 0;
  double fill_gbps_per_thread_memcpy = 0;     ///< measured fill speed of one thread, Memcpy
  double fill_gbps_per_thread_streaming = 0;  ///< ... Streaming (initial guesses until measured)
  double direct_gbps = 0;                     ///< measured rate of direct parts (0: none yet)
  uint64_t pinned_bytes = 0;                  ///< pinned bytes held now (== ring_bytes while alive)
  uint64_t pinned_peak = 0;      ///< most pinned bytes ever held at once (never > pinned_cap)
  uint64_t pinned_cap = 0;       ///< the configured cap (ring_bytes)
  uint64_t budget_held = 0;      ///< the shared PinnedBudget's bytes held now (0: none)
  uint64_t budget_cap = 0;       ///< its cap (0: none)
  FillPoolStats pool;            ///< the fill pool's (a shared pool: all its Uploaders')
  ByteRingStats ring;            ///< the byte ring's own stats (waits, splits, would-blocks, ...)
  TimelineValue completed = 0;   ///< completed() when the stats were taken
  TimelineValue last_point = 0;  ///< the newest point handed out
  uint32_t events = 0;           ///< CUDA events in the pool
  uint32_t peak_pending_points = 0;  ///< most points pending at once
};

/// UploaderStats' counters, in declaration order (the measured rates are not counters).
constexpr auto counters_of(std::type_identity<UploaderStats>) noexcept {
  using S = UploaderStats;
  constexpr CounterUnit bytes = CounterUnit::Bytes;
  return std::tuple{
      counter("uploads", "uploads", &S::uploads),
      counter("bytes_uploaded", "bytes uploaded", &S::bytes_uploaded, bytes),
      counter("commits", "commits", &S::commits),
      counter("bytes_committed", "bytes committed", &S::bytes_committed, bytes),
      counter("cancels", "cancelled spans", &S::cancels),
      counter("copies", "copies issued", &S::copies),
      counter("inline_fills", "pieces filled by the caller alone", &S::inline_fills),
      counter("pool_fills", "pieces filled by the pool", &S::pool_fills),
      counter("errors", "errors", &S::errors),
      counter("direct_uploads", "uploads with a direct part", &S::direct_uploads),
      counter("direct_bytes", "bytes copied directly", &S::direct_bytes, bytes),
      counter("memcpy_uploads", "uploads filled with memcpy", &S::memcpy_uploads),
      counter("streaming_uploads", "uploads filled with streaming stores", &S::streaming_uploads),
      counter("probe_uploads", "uploads measuring the losing method", &S::probe_uploads),
      counter("timed_uploads", "uploads timed until they landed", &S::timed_uploads),
      not_a_counter(&S::fill_gbps_per_thread_memcpy),
      not_a_counter(&S::fill_gbps_per_thread_streaming),
      not_a_counter(&S::direct_gbps),
      counter("pinned_bytes", "pinned bytes", &S::pinned_bytes, bytes),
      counter("pinned_peak", "peak pinned bytes", &S::pinned_peak, bytes),
      counter("pinned_cap", "pinned cap", &S::pinned_cap, bytes),
      counter("budget_held", "shared budget held", &S::budget_held, bytes),
      counter("budget_cap", "shared budget cap", &S::budget_cap, bytes),
      counter_group("pool", "fill pool", &S::pool),
      counter_group("ring", "byte ring", &S::ring),
      counter("completed", "completed point", &S::completed),
      counter("last_point", "newest point", &S::last_point),
      counter("events", "events", &S::events),
      counter("peak_pending_points", "most points pending", &S::peak_pending_points)};
}
static_assert(counters_complete<UploaderStats>(), "UploaderStats: counters_of is stale");

class Uploader;

/// Writable bytes in the pinned ring, reserved by Uploader::reserve(), to be filled in place and
/// then committed as a copy to the device (Uploader::commit) or given back (Uploader::cancel).
///
/// Move-only. Destroying a span that was neither committed nor cancelled cancels it.
/// Threading: one thread at a time uses a given span; it may be filled by several threads (the
/// owner synchronises them before commit) and committed from another thread than the one that
/// reserved it. Lifetime: must not outlive its Uploader.
/// An open span holds back the reuse of every ring byte reserved after it (FIFO): commit or cancel
/// it promptly, and do not wait for ring room (upload(), reserve() with Wait/Split) while holding
/// one on the same Uploader unless the ring can serve both — such a wait ends in Timeout.
class StagingSpan {
 public:
  /// An empty span (valid() is false).
  StagingSpan() = default;
  /// Takes `other`'s span; `other` is left empty (valid() is false).
  StagingSpan(StagingSpan&& other) noexcept;
  /// Cancels a still-open span held by *this first.
  StagingSpan& operator=(StagingSpan&& other) noexcept;
  StagingSpan(const StagingSpan&) = delete;
  StagingSpan& operator=(const StagingSpan&) = delete;
  /// Cancels a still-open span (as Uploader::cancel).
  ~StagingSpan();

  /// True while the span is open (reserved, not yet committed or cancelled).
  [[nodiscard]] bool valid() const noexcept { return owner_ != nullptr; }
  /// The writable bytes (pinned host memory; write-only when write_combined); null when
  /// !valid().
  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  /// Bytes writable at data() (>= 1 while valid; Split may give fewer than asked); 0 when
  /// !valid().
  [[nodiscard]] uint64_t size() const noexcept { return size_; }
  /// data() and size() as a span (empty when !valid()).
  [[nodiscard]] std::span<std::byte> bytes() const noexcept {
    return {data_, static_cast<std::size_t>(size_)};
  }
  /// The timeline point the span's copy will complete at (its retirement token). Kept after
  /// commit or cancel; 0 for a default-constructed or moved-from span.
  [[nodiscard]] TimelineValue point() const noexcept { return point_; }

 private:
  friend class Uploader;
  void* owner_ = nullptr;  // Uploader::Impl*
  std::byte* data_ = nullptr;
  uint64_t size_ = 0;
  TimelineValue point_ = 0;
};

/// See the file comment.
///
/// Ownership: owns its pinned ring, events and fill threads; references the DeviceApi given to
/// create() (which must outlive it) or owns the runtime one it made. Movable handle (open spans
/// keep working across a move); a moved-from Uploader may only be destroyed or assigned to.
/// Threading: every member function is safe from any thread, concurrently (several threads may
/// upload on several streams at once). Calls that wait for ring room or a free event hold an
/// internal lock while they wait; other callers needing ring room wait behind it (bounded by
/// their own timeout), Defer callers get WouldBlock at once. The fill threads never call CUDA;
/// CUDA calls are made from the calling thread, which need not have the Uploader's device current.
/// Streams: any stream of the Uploader's device (0, the legacy default stream, included); not one
/// that is capturing a CUDA graph (refused: the ring would be reused before the graph runs).
class Uploader {
 public:
  /// Pins the ring, creates the events and starts the fill threads, on config.device through the
  /// CUDA runtime. Never throws. Errors (CreateError): InvalidConfig (ring_bytes, events or
  /// alignment 0, alignment above ring_bytes, a negative wait or drain timeout or copy overhead,
  /// link_gbps not > 0), UnsupportedPolicy (a policy Grow or Fallback), NoDevice (there is no
  /// device, config.device is out of range, or the current device could not be read),
  /// ObjectCreationFailed (the pooled events), AllocationFailed (pinning the ring failed: out of
  /// host memory, no room left in the pinned_budget, or a CUDA error), ThreadStartFailed (the
  /// fill threads).
  static Expected<Uploader, CreateError> create(const UploaderConfig& config);

  /// Moves the uploader (its state is boxed); the moved-from one may only be destroyed or
  /// assigned to.
  Uploader(Uploader&&) noexcept;
  /// Replaces this uploader with `other` (this one's state is destroyed); `other` is left as
  /// after the move constructor.
  Uploader& operator=(Uploader&&) noexcept;
  Uploader(const Uploader&) = delete;
  Uploader& operator=(const Uploader&) = delete;
  /// Waits (up to drain_timeout) until every copy issued has completed, then unpins the ring,
  /// destroys the events and joins the threads. If the copies do not complete in time (a stalled
  /// stream) or the Uploader has failed, the pinned ring is deliberately leaked rather than
  /// unpinned under a copy that may still read it (a pinned_budget stays charged for the leaked
  /// ring: it is not given back); the events are destroyed all the same (CUDA allows destroying an
  /// event whose recorded work has not completed: its resources are released once it does).
  /// Precondition: no StagingSpan of this Uploader is open (aborts otherwise) and no call is in
  /// progress.
  ~Uploader();

  /// Copies `bytes` from host memory `host_src` (pageable or not, any alignment) to device memory
  /// `device_dst` (any alignment) on `stream`, through the pinned ring. Returns once every byte has
  /// been copied into the ring (or read by a direct copy that has completed, see
  /// UploaderConfig::direct) and every copy enqueued: the caller may then reuse `host_src` at
  /// once; the device bytes are there when the returned point completes (and for any later work
  /// on `stream`, by stream order). Copies are enqueued in source order. The calling thread fills
  /// ring pieces alongside the fill pool while it waits for them; the pool's idle threads keep
  /// looking for this upload's pieces until it returns, and sleeping ones are
  /// woken only when they would arrive before the calling thread is done alone.
  ///
  /// Policy (options.policy or the config's): Split streams any size in reservations of whole
  /// pieces (at most chunk_bytes), waiting up to the timeout for each, and may take a direct part
  /// on an idle stream; Wait stages the whole source in one reservation (waiting
  /// up to the timeout; TooLarge above ring_bytes); Defer is Wait without waiting (WouldBlock).
  /// bytes == 0: nothing happens, returns 0 (a point that has always completed) — unless the
  /// Uploader has failed (Failed). Errors: see UploadError; `bytes_issued` says how much was
  /// enqueued before an error. When this returns (success or not) no thread reads `host_src`
  /// any more.
  Expected<TimelineValue, UploadFailure> upload(void* device_dst, const void* host_src,
                                                uint64_t bytes, cudaStream_t stream,
                                                const UploadOptions& options = {});

  /// Reserves `bytes` (> 0) of pinned ring to be filled in place. Defer and Wait give exactly
  /// `bytes` (TooLarge above ring_bytes); Split, only when given in `options`, may give fewer (as
  /// much as fits, never less than min(bytes, chunk_bytes, max(256 KiB, alignment))) and the
  /// caller reserves the rest with further calls. Without
  /// options.policy the config's policy applies, except that Split means Wait here.
  /// options.alignment sets the offset alignment. Errors: InvalidArgument (bytes 0, a policy
  /// Grow or Fallback, an alignment that overflows), WouldBlock, Timeout, TooLarge, Failed.
  Expected<StagingSpan, UploadFailure> reserve(uint64_t bytes, const UploadOptions& options = {});
  /// Copies the first `bytes` of `span` (all of it when omitted; 0 < bytes <= span.size()) to
  /// `device_dst` on `stream` and closes the span. Returns the point the copy completes at. On
  /// any error the span is cancelled (closed) too — except a span that is empty or from another
  /// Uploader, which is refused with InvalidArgument and left as it is. Errors: Failed (the
  /// Uploader has failed), InvalidArgument (bytes 0 or above the span, a null or wrapping
  /// `device_dst`, a capturing stream), OutOfBounds (UploaderConfig::check_destinations: the
  /// range is not inside one device allocation), Cuda (the copy or its event could not be
  /// issued; a failed event record also fails the Uploader).
  Expected<TimelineValue, UploadFailure> commit(StagingSpan&& span, void* device_dst,
                                                cudaStream_t stream,
                                                std::optional<uint64_t> bytes = std::nullopt);
  /// Gives an open span back unused; its bytes are reused in FIFO order. No-op on an empty span
  /// or one from another Uploader (which stays open).
  void cancel(StagingSpan&& span) noexcept;

  /// The highest point such that every point up to it has completed. Never decreases. Points
  /// complete in the order they were handed out, on every stream together: a span reserved and
  /// not committed yet, or an upload still running on another thread or queued behind a stalled
  /// stream, holds back every later point, even one whose own copy has finished.
  [[nodiscard]] TimelineValue completed();
  /// Whether `point` (from upload() or commit(), or 0) has completed: completed() >= point, asked
  /// without blocking — the counterpart of vulkan::reached(). Errors (the shared WaitError):
  /// Failed when the Uploader has failed (error() says why), as wait() answers.
  [[nodiscard]] Expected<bool, WaitError> reached(TimelineValue point);
  /// Waits up to `timeout` until completed() >= point (polling, sleeping up to 100 µs between
  /// polls; a timeout of 0 or less polls once). A point never handed out is not reached until
  /// as many points have been: reached() answers false and wait() runs to its timeout. Errors
  /// (the shared WaitError): Timeout; Failed, at once, when the Uploader has failed (error()
  /// says why).
  Expected<void, WaitError> wait(TimelineValue point, Duration timeout);
  /// Makes `stream` wait for the copies of the upload/commit that returned `point` (their own
  /// stream work; cudaStreamWaitEvent), without blocking the host. Point 0 or a completed point:
  /// nothing to wait for. Errors: Cuda (cudaErrorInvalidValue for a point never returned,
  /// cudaErrorNotReady for an open span's point) or Failed.
  Expected<void, UploadFailure> stream_wait(cudaStream_t stream, TimelineValue point);

  /// True once the Uploader has failed (see the file comment); error() says why.
  [[nodiscard]] bool failed() const noexcept;
  /// The error that failed the Uploader; cudaSuccess while it has not.
  [[nodiscard]] cudaError_t error() const noexcept;
  /// The configuration in use (chunk_bytes etc. after clamping).
  [[nodiscard]] const UploaderConfig& config() const noexcept;
  /// A snapshot of the stats. Takes the ring lock (may wait behind a reservation that waits).
  [[nodiscard]] UploaderStats stats() const;

 private:
  friend Expected<Uploader, CreateError> detail::create_uploader(const UploaderConfig& config,
                                                                 DeviceApi& api);
  static Expected<Uploader, CreateError> create_with(const UploaderConfig& config, DeviceApi* api);
  friend class StagingSpan;
  friend struct detail::UploaderTestAccess;
  struct Impl;
  explicit Uploader(std::unique_ptr<Impl> impl) noexcept;
  // Cancels an open span (StagingSpan's destructor and move assignment).
  static void cancel_open(StagingSpan& span) noexcept;
  std::unique_ptr<Impl> impl_;
};

}  // namespace staging::cuda
