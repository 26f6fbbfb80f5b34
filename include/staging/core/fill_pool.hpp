// FillPool: CPU threads that copy host bytes into staging memory in parallel, shared by every
// uploader (and every device) that gives it work.
//
// A submitter (an uploader, a streamer) describes a piece of staging memory to fill as a job
// (destination, source, bytes, method). The pool splits it into slices (whole 4 KiB pages, so no
// two threads write the same cache line) and its threads take slices from the oldest job first,
// since it is the next to be copied to a device. Jobs queue in lanes, one per submitter that asks
// for its own (one per device's uploader, say); threads serve the lanes that have work in turn,
// slice by slice, so one device's long queue never holds back another's next piece. A lane can be
// held to a number of threads at once (an uploader does so for a large upload, whose fill would
// otherwise outrun the copy and take memory bandwidth from it); the threads over it serve other
// lanes meanwhile. The submitter
// fills too: waiting for a job copies its unclaimed slices on the calling thread before it waits
// for the slices other threads hold.
//
//   lane 0 (device 0): [a0: s0 s1 s2 s3][a1: s0 s1 ...]     threads: a0.s0, b0.s0, a0.s1, b0.s1 ...
//   lane 1 (device 1): [b0: s0 s1 ...]
//
// What a claim costs: while one lane has work, the slices of its oldest job (with no thread limit)
// are claimed with one compare-and-swap each on a word that names the job and the slices left in
// it, so a dozen threads starting on a piece each have a slice within a microsecond or two; when
// another lane gets work, what is left of that job goes back to its lane, and the lanes are served
// in turn again. Otherwise a claim is a few
// instructions under a SpinLock (spin_lock.hpp): a waiting thread never sleeps in the kernel, so
// threads claiming at once cannot form a convoy of wake-ups, but each hand-off of the lock moves
// its cache line to every waiter, about half a microsecond a claim with a dozen waiting. Idle
// threads look for work for a moment (FillPoolConfig::spin) before they sleep, and
// for longer (held_spin) while a submitter holds the pool (an upload in progress whose next
// pieces are coming), so a pipeline never pays a wake-up per piece. Sleeping threads are
// woken by a submit (one futex call); the pool measures how long they take to run again
// (FillPoolStats::wake_ns), so that a submitter can fill a small job itself instead of waiting for
// them.
//
// One pool is the CPU budget of all its submitters: several uploaders (one per GPU) that share a
// pool share its threads, instead of each starting its own and oversubscribing the cores.
// Threads can be kept on one NUMA node (the one a GPU's PCIe root belongs to) and pinned one per
// physical core (ThreadPinning), by the host's layout as the kernel reports it (sysfs).
//
// GPU-free: the threads only copy memory (copy_to_staging, below).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "staging/core/errors.hpp"
#include "staging/core/timeline.hpp"
#include "staging/detail/core/counters.hpp"
#include "staging/detail/core/enum_names.hpp"

namespace staging {

// Copying host bytes into staging memory: the routine the fill threads run (fill_pool.hpp), public
// for producers that write staging memory themselves (from a decompressor's output, a file buffer).
//
// Staging memory is written once by the CPU and read by the GPU's DMA engine, never by this CPU
// again. Two ways to write it:
//  - Memcpy: plain stores through the caches. Fastest when the staging memory is already in the
//    CPU's last-level cache (a ring smaller than the cache that an upload cycles through): no DRAM
//    round trip, and the DMA engine reads the lines from the cache.
//  - Streaming: non-temporal stores that bypass the caches. Fastest when the staging memory is
//    not cached: no read-for-ownership of every destination line, one DRAM write per byte.
// Which one wins depends on the host and on the upload; docs/cuda.md shows where they cross.

/// How bytes are copied into staging memory.
enum class FillMethod : uint8_t {
  /// Chosen by whoever runs the copy: the Uploader per upload (see its FillMethod documentation);
  /// copy_to_staging() and a FillJob without another choice: Streaming on x86-64, Memcpy
  /// elsewhere.
  Auto,
  /// std::memcpy.
  Memcpy,
  /// Non-temporal (streaming) stores, AVX2 when the CPU has it, else SSE2; fenced before the copy
  /// returns. x86-64 only (Memcpy elsewhere).
  Streaming,
};

/// Names of FillMethod's values, in order, as the tools spell them (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<FillMethod>) noexcept {
  return std::to_array<std::string_view>({"auto", "memcpy", "streaming"});
}
static_assert(enum_names_complete<FillMethod>(), "FillMethod: a value has no name");

/// The method copy_to_staging() runs for `method` on this machine and build: Auto becomes
/// Streaming on x86-64 and Memcpy elsewhere; Streaming becomes Memcpy where it is not available
/// (non-x86-64); Memcpy stays Memcpy. Never returns Auto.
[[nodiscard]] FillMethod resolve_fill_method(FillMethod method) noexcept;

/// Copies `bytes` from `src` to `dst` (the ranges must not overlap; any alignment) by `method`.
/// Streaming stores are fenced before return (sfence): the bytes are visible to any thread (and
/// DMA engine) that synchronises with this one afterwards. Copies under 512 bytes use memcpy
/// whatever the method. `bytes` may be 0 (nothing is copied; the pointers must still be valid).
/// Threading: reentrant.
void copy_to_staging(std::byte* dst, const std::byte* src, std::size_t bytes,
                     FillMethod method = FillMethod::Auto) noexcept;

/// Where a FillPool's threads may run.
enum class ThreadPinning : uint8_t {
  /// Wherever the operating system puts them.
  None,
  /// On the CPUs of FillPoolConfig::numa_node (any CPU when it is < 0 or has no usable CPU).
  Node,
  /// Each thread on one CPU of that node (or of the host, numa_node < 0): one thread per physical
  /// core first, then SMT siblings, round-robin when there are more threads than CPUs.
  Core,
};

/// How a FillPool is made. Validated by FillPool::create.
struct FillPoolConfig {
  /// Threads the pool starts. 0 is allowed: the submitters then copy every slice themselves
  /// (one waiting for its job fills all of it on its own thread).
  unsigned threads = 4;
  /// Where the threads run; see ThreadPinning. Pinning that the kernel refuses (a container's CPU
  /// set, say) is skipped for that thread and shows in FillPoolStats::pinned_threads.
  ThreadPinning pinning = ThreadPinning::Node;
  /// The NUMA node whose CPUs the threads use (Node, Core); < 0: the whole host.
  int numa_node = -1;
  /// How long an idle thread keeps looking for work before it sleeps (>= 0). While it looks, a
  /// new job starts without a wake-up (uploads issued back to back, or one after the other's
  /// stream synchronisation); 0 sleeps at once (no CPU spent idle).
  Duration spin = std::chrono::microseconds(100);
  /// As `spin`, while some submitter holds the pool (an upload in progress that
  /// will submit more pieces, after a wait for ring room, say). Taken as at least `spin`.
  Duration held_spin = std::chrono::milliseconds(2);
};

/// Names of ThreadPinning's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<ThreadPinning>) noexcept {
  return std::to_array<std::string_view>({"None", "Node", "Core"});
}
static_assert(enum_names_complete<ThreadPinning>(), "ThreadPinning: a value has no name");
/// What a FillPool has done since it was created. Plain data; a diagnostic.
struct FillPoolStats {
  unsigned threads = 0;          ///< threads of the pool
  unsigned pinned_threads = 0;   ///< of which the pinning asked for took effect
  uint64_t jobs = 0;             ///< jobs submitted
  uint64_t slices = 0;           ///< slices copied, by pool threads and submitters
  uint64_t bytes = 0;            ///< bytes copied (slices), by pool threads and submitters
  uint64_t helped_slices = 0;    ///< of the slices, those copied by submitters (wait, help)
  uint64_t helped_bytes = 0;     ///< and their bytes
  uint64_t memcpy_bytes = 0;     ///< bytes copied with Memcpy
  uint64_t memcpy_ns = 0;        ///< time spent copying them, summed over threads
  uint64_t streaming_bytes = 0;  ///< bytes copied with Streaming
  uint64_t streaming_ns = 0;     ///< time spent copying them, summed over threads
  uint64_t sleeps = 0;           ///< times a pool thread went to sleep for lack of work
  uint64_t wakeups = 0;  ///< threads woken by submit (a submit finding threads looking wakes none)
  uint64_t cancelled_slices = 0;  ///< slices dropped by cancel()
  uint64_t unwoken_jobs = 0;      ///< jobs submitted with wake = false
  uint64_t wake_samples = 0;      ///< wake-ups timed: from submit's wake call until the thread ran
  uint64_t wake_ns = 0;           ///< their total time
  uint64_t wake_max_ns = 0;       ///< the longest of them
};

/// FillPoolStats' counters, in declaration order.
constexpr auto counters_of(std::type_identity<FillPoolStats>) noexcept {
  using S = FillPoolStats;
  constexpr CounterUnit bytes = CounterUnit::Bytes;
  return std::tuple{
      counter("threads", "threads", &S::threads),
      counter("pinned_threads", "pinned threads", &S::pinned_threads),
      counter("jobs", "jobs", &S::jobs),
      counter("slices", "slices copied", &S::slices),
      counter("bytes", "bytes copied", &S::bytes, bytes),
      counter("helped_slices", "slices copied by submitters", &S::helped_slices),
      counter("helped_bytes", "bytes copied by submitters", &S::helped_bytes, bytes),
      counter("memcpy_bytes", "bytes copied with memcpy", &S::memcpy_bytes, bytes),
      counter("memcpy_ns", "memcpy time (ns)", &S::memcpy_ns, CounterUnit::Nanoseconds),
      counter("streaming_bytes", "bytes copied with streaming stores", &S::streaming_bytes, bytes),
      counter("streaming_ns", "streaming time (ns)", &S::streaming_ns, CounterUnit::Nanoseconds),
      counter("sleeps", "sleeps", &S::sleeps),
      counter("wakeups", "wake-ups", &S::wakeups),
      counter("cancelled_slices", "slices cancelled", &S::cancelled_slices),
      counter("unwoken_jobs", "jobs submitted without waking threads", &S::unwoken_jobs),
      counter("wake_samples", "wake-ups timed", &S::wake_samples),
      counter("wake_ns", "wake-up time (ns)", &S::wake_ns, CounterUnit::Nanoseconds),
      counter("wake_max_ns", "longest wake-up (ns)", &S::wake_max_ns, CounterUnit::Nanoseconds)};
}
static_assert(counters_complete<FillPoolStats>(), "FillPoolStats: counters_of is stale");

class FillPool;
struct HostTopology;

namespace detail {
class FillEngine;
/// The job engine behind `pool` (detail/core/fill_engine.hpp): what the uploaders and the
/// streamer submit their fill jobs to. Valid as long as the pool.
FillEngine& engine_of(FillPool& pool) noexcept;
/// FillPool::create, pinning by `topology` instead of the host's own layout (a multi-GPU
/// uploader's grouping, the tests' made-up hosts).
Expected<std::shared_ptr<FillPool>, CreateError> create_fill_pool(const FillPoolConfig& config,
                                                                  const HostTopology& topology);
}  // namespace detail

/// See the file comment. Users make one, size it, and hand it to the uploaders and streamers
/// that should share its threads (cuda::UploaderConfig::fill_pool,
/// vulkan::StreamerConfig::fill_pool); the jobs they give it are theirs.
///
/// Ownership: owns its threads; made by create() and shared (std::shared_ptr) by its users. The
/// destructor lets the threads copy what is queued, then joins them. Threading: every member
/// function is safe from any thread, concurrently.
class FillPool {
 public:
  /// Starts config.threads threads, pinned as asked. Errors (CreateError): InvalidConfig (a
  /// negative spin or held_spin), ThreadStartFailed (the threads started so far were stopped).
  static Expected<std::shared_ptr<FillPool>, CreateError> create(const FillPoolConfig& config);
  /// Copies what is queued, stops and joins the threads.
  ~FillPool();
  FillPool(const FillPool&) = delete;
  FillPool& operator=(const FillPool&) = delete;

  /// Threads of the pool.
  [[nodiscard]] unsigned threads() const noexcept;
  /// The CPUs each thread was given (empty: not pinned), by thread.
  [[nodiscard]] const std::vector<std::vector<int>>& placement() const noexcept;
  /// The configuration it was created with, as resolved (held_spin raised to at least spin).
  [[nodiscard]] const FillPoolConfig& config() const noexcept;
  /// A snapshot of the counters.
  [[nodiscard]] FillPoolStats stats() const;

 private:
  friend detail::FillEngine& detail::engine_of(FillPool& pool) noexcept;
  friend Expected<std::shared_ptr<FillPool>, CreateError> detail::create_fill_pool(
      const FillPoolConfig& config, const HostTopology& topology);
  static Expected<std::shared_ptr<FillPool>, CreateError> create_with(const FillPoolConfig& config,
                                                                      const HostTopology* topology);
  explicit FillPool(std::unique_ptr<detail::FillEngine> engine) noexcept;
  std::unique_ptr<detail::FillEngine> engine_;
};

}  // namespace staging
