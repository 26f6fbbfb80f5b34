// stream-large: `stream_mib` (1 GiB) of assets from pageable memory into one device-local buffer
// through a ring of `ring_mib` (<= 64 MiB), in frames of one `chunk_mib` copy each, measured
// against one large copy from a big staging buffer (the ceiling) in the same run, per queue,
// memory type and ring strategy:
//
//   ceiling  one vkCmdCopyBuffer of the whole size from a staging buffer of that size (the memory
//            type DefaultMemory picks), already filled
//   ceiling-frames  the same buffer copied chunk by chunk, one command buffer and submission per
//            chunk as the ring rows record them, as many in flight as the ring holds chunks, no
//            fill: what submitting frame by frame alone costs the copies
//   pointer  one thread: begin a frame, StagingFrame::upload() the chunk from the pageable source
//            (its memcpy), finish, submit — the next chunk's memcpy overlaps this one's copy
//   inplace  N fill threads write straight into the ring's mapped spans: frames are begun as far
//            ahead as the ring has room (frame.reserve(chunk)), each span cut into slices the N
//            threads copy in from the pageable source; the thread that writes a frame's last
//            slice finishes and submits the filled frames at the front, in order, and begins new
//            ones (no hand-off to another thread); while the ring is full the driver thread
//            polls the GPU (yielding) — fills, submissions and copies all overlap (rep())
//   fill     (CPU only) N threads writing the same bytes into mapped staging memory of that type
//            cycling through a ring-sized buffer, no GPU: what bounds the rows above
//
// Timing per repetition: host wall time from the first fill until the last copy's semaphore value
// is reached (end to end), and GPU timestamps written before and after each frame's copies
// (TOP_OF_PIPE, BOTTOM_OF_PIPE): the GPU copy throughput is bytes / the union of those intervals
// (the time a ring copy was under way; gaps where the GPU waited for the CPU are excluded).
// Medians over the repetitions after one warm-up (gbps_worst: the slowest repetition). Ratios are
// to the ceiling's GPU throughput. Diagnostics per ring row: ring_full_waits / ring_full_ms (how
// often and how long the ring had no room), and for inplace fill_busy_gbps (the fill threads'
// memcpy rate while copying) and fill_idle (their share of time without a slice to copy).
// After each configuration the destination is cleared, one more repetition runs, and every byte
// is read back and compared with the source.
#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "staging/detail/vulkan/default_memory.hpp"
#include "vulkan_scenarios.hpp"

namespace staging::bench::vk {
namespace {

using namespace staging::vulkan;

// N threads copying slices (source -> mapped staging memory). Each thread accounts the time it
// spent copying and the bytes it copied (per thread, on its own cache line), so a row can tell a
// slow fill (memcpy throughput while busy) from a starved one (threads idle between jobs).
class FillPool {
 public:
  struct Job {
    std::byte* dst;
    const std::byte* src;
    uint64_t bytes;
    std::atomic<uint32_t>* remaining;  // decremented when the job is done (may be null)
  };
  // Called by the worker whose job brought a `remaining` to 0 (outside the pool's locks).
  using OnDone = std::function<void()>;

  explicit FillPool(unsigned threads) : counters_(std::max(1u, threads)) {
    for (unsigned i = 0; i < std::max(1u, threads); ++i)
      workers_.emplace_back([this, i] { work(counters_[i]); });
  }
  ~FillPool() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_)
      t.join();
  }
  FillPool(const FillPool&) = delete;
  FillPool& operator=(const FillPool&) = delete;

  [[nodiscard]] unsigned threads() const { return static_cast<unsigned>(workers_.size()); }

  // Set only while no job is queued or running.
  void set_on_done(OnDone f) { on_done_ = std::move(f); }

  void push(const std::vector<Job>& jobs) {
    {
      std::lock_guard lock(mutex_);
      jobs_.insert(jobs_.end(), jobs.begin(), jobs.end());
    }
    if (jobs.size() == 1) {
      cv_.notify_one();
    } else {
      cv_.notify_all();
    }
  }

  // Waits until `remaining` is 0 or `timeout` passes.
  void wait(const std::atomic<uint32_t>& remaining, std::chrono::microseconds timeout) {
    std::unique_lock lock(done_mutex_);
    done_cv_.wait_for(lock, timeout, [&] { return remaining.load() == 0; });
  }

  // Waits until no job is queued or running (the on-done calls included).
  void quiesce() {
    std::unique_lock lock(mutex_);
    idle_cv_.wait(lock, [&] { return active_ == 0 && jobs_.empty(); });
  }

  // Seconds the threads spent copying (summed over threads) and bytes copied since reset().
  struct Busy {
    double seconds = 0;
    uint64_t bytes = 0;
  };
  [[nodiscard]] Busy busy() const {
    Busy b;
    for (const Counter& c : counters_) {
      b.seconds += static_cast<double>(c.ns.load(std::memory_order_relaxed)) * 1e-9;
      b.bytes += c.bytes.load(std::memory_order_relaxed);
    }
    return b;
  }
  void reset() {
    for (Counter& c : counters_) {
      c.ns.store(0, std::memory_order_relaxed);
      c.bytes.store(0, std::memory_order_relaxed);
    }
  }

 private:
  struct alignas(64) Counter {
    std::atomic<uint64_t> ns{0};
    std::atomic<uint64_t> bytes{0};
  };

  void work(Counter& counter) {
    for (;;) {
      Job job;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = jobs_.front();
        jobs_.pop_front();
        ++active_;
      }
      const auto t0 = Clock::now();
      std::memcpy(job.dst, job.src, job.bytes);
      counter.ns.fetch_add(
          static_cast<uint64_t>(
              std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count()),
          std::memory_order_relaxed);
      counter.bytes.fetch_add(job.bytes, std::memory_order_relaxed);
      if (job.remaining != nullptr && job.remaining->fetch_sub(1, std::memory_order_acq_rel) == 1) {
        if (on_done_) on_done_();
        std::lock_guard lock(done_mutex_);
        done_cv_.notify_all();
      }
      std::lock_guard lock(mutex_);
      if (--active_ == 0 && jobs_.empty()) idle_cv_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stop_ = false;
  unsigned active_ = 0;  // jobs popped and not yet done
  std::condition_variable idle_cv_;
  std::mutex done_mutex_;
  std::condition_variable done_cv_;
  OnDone on_done_;
  std::vector<Counter> counters_;
  std::vector<std::thread> workers_;
};

enum class Mode : uint8_t { Pointer, InPlace };

// The memory a ring (and the fill rows) use.
struct MemoryChoice {
  std::string name;  // system, device, cached
  bool prefer_device_local = false;
  uint32_t type = 0;
};

// The staging memory hook of a choice: the library's DefaultMemory for system and device (what a
// user gets), TypedMemory for cached.
std::unique_ptr<MemoryHook> make_hook(Context& vk, const MemoryChoice& m) {
  if (m.name == "cached") return std::make_unique<TypedMemory>(vk, m.type);
  const staging::vulkan::Device d = vk.staging_device();
  return std::make_unique<DefaultMemory>(d.physical_device, d.device, d.dispatch,
                                         m.prefer_device_local);
}

// A frame being filled.
struct OpenFrame {
  uint64_t k = 0;
  StagingFrame frame;
  std::size_t cmd = 0;
  std::atomic<uint32_t> remaining{0};
};

struct InFlight {
  RetirementPoint point;
  std::size_t cmd = 0;
};

struct RepResult {
  double seconds = 0;
  std::optional<GpuTimes> gpu;
  bool failed = false;
  unsigned most_open = 0;     // most frames open (being filled) at once
  uint64_t ring_blocked = 0;  // times the ring had no room for the next frame
  double blocked_s = 0;       // time the driver thread polled the GPU for room
  double fill_busy_s = 0;     // fill threads' copying time, summed over threads
};

// What the targets need from a row.
struct Result {
  std::string queue, memory, strategy, mode;
  unsigned threads = 0;
  double ratio = 0;      // end to end / ceiling
  double gpu_ratio = 0;  // GPU copy throughput / ceiling (0: no timestamps)
  double gbps = 0;
};

class StreamBench {
 public:
  StreamBench(Context& vk, const CommonOptions& common, const VulkanOptions& options,
              Report& report)
      : vk_(vk), common_(common), o_(options), report_(report) {}

  ~StreamBench() {
    vkDeviceWaitIdle(vk_.device());
    if (semaphore_ != VK_NULL_HANDLE) vkDestroySemaphore(vk_.device(), semaphore_, nullptr);
    vk_.destroy(dst_);
    vk_.destroy(readback_);
    std::free(source_);
  }
  StreamBench(const StreamBench&) = delete;
  StreamBench& operator=(const StreamBench&) = delete;

  int run() {
    total_ = o_.stream_mib * MiB;
    chunk_ = o_.chunk_mib * MiB;
    ring_ = o_.ring_mib * MiB;
    if (total_ == 0 || chunk_ == 0 || ring_ < 2 * chunk_) {
      std::fprintf(stderr,
                   "staging-bench: stream-large needs --stream-mib > 0 and --stream-ring-mib >= "
                   "2 x --stream-chunk-mib > 0\n");
      return 1;
    }
    chunks_ = (total_ + chunk_ - 1) / chunk_;
    ring_chunks_ = ring_ / chunk_;
    if (int rc = allocate(); rc != 0) return rc;
    describe();
    std::vector<MemoryChoice> memories;
    if (int rc = memory_choices(memories); rc != 0) return rc;
    for (const std::string& qname : o_.queues) {
      Queue* queue = qname == "graphics"   ? &vk_.graphics()
                     : qname == "transfer" ? vk_.transfer()
                                           : nullptr;
      if (queue == nullptr) {
        if (qname == "transfer") {
          report_.note("stream-large: no transfer-only queue family on this device; skipped");
          continue;
        }
        std::fprintf(stderr, "staging-bench: unknown --queues entry '%s'\n", qname.c_str());
        return 1;
      }
      if (int rc = queue_rows(*queue, memories); rc != 0) return rc;
    }
    targets();
    return failures_;
  }

 private:
  int allocate() {
    source_ = static_cast<std::byte*>(std::aligned_alloc(4096, total_));
    if (source_ == nullptr) {
      std::fprintf(stderr, "staging-bench: cannot allocate %" PRIu64 " pageable bytes\n", total_);
      return 1;
    }
    // Pre-touched random data: every page exists before anything is timed.
    fill_random_parallel(source_, total_, 11, std::max(4u, std::thread::hardware_concurrency()));
    dst_ =
        vk_.make_buffer(total_, VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                        Memory::DeviceLocal);
    if (o_.check) {
      readback_ = vk_.make_buffer(total_, VK_BUFFER_USAGE_TRANSFER_DST_BIT, Memory::Readback);
    }
    if (dst_.buffer == VK_NULL_HANDLE || (o_.check && readback_.mapped == nullptr)) {
      std::fprintf(stderr, "staging-bench: cannot make the %" PRIu64 "-byte destination/readback\n",
                   total_);
      return 1;
    }
    const VkSemaphoreTypeCreateInfo type{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                         .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
    const VkSemaphoreCreateInfo info{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
                                     .pNext = &type};
    vkCreateSemaphore(vk_.device(), &info, nullptr, &semaphore_);
    if (vk_.host_query_reset()) queries_ = vk_.make_query_pool(static_cast<uint32_t>(2 * chunks_));
    return 0;
  }

  void describe() {
    report_.context("stream_mib", o_.stream_mib);
    report_.context("stream_ring_mib", o_.ring_mib);
    report_.context("stream_chunk_mib", o_.chunk_mib);
    report_.context("stream_source", "pageable (aligned_alloc), pre-touched, reused by every rep");
    report_.context("stream_timing",
                    "end to end: host wall time from the first fill until the last copy's "
                    "semaphore value is reached; gpu: bytes / union of per-frame [TOP_OF_PIPE, "
                    "BOTTOM_OF_PIPE] timestamp intervals; medians after one warm-up");
    report_.context("timestamp_period_ns", vk_.timestamp_period());
    report_.context(
        "timestamp_valid_bits",
        nlohmann::json{{"graphics", vk_.graphics().timestamp_bits},
                       {"transfer", vk_.transfer() ? vk_.transfer()->timestamp_bits : 0u}});
    if (queries_ == VK_NULL_HANDLE) {
      report_.note("stream-large: no hostQueryReset: GPU timestamps not measured");
    }
  }

  int memory_choices(std::vector<MemoryChoice>& out) {
    const std::optional<uint32_t> system = vk_.staging_type(false);
    if (!system) {
      std::fprintf(stderr, "staging-bench: no HOST_VISIBLE memory for staging\n");
      return 1;
    }
    system_type_ = *system;
    for (const std::string& m : o_.memory) {
      if (m == "system") {
        out.push_back({"system", false, *system});
      } else if (m == "device") {
        const std::optional<uint32_t> device = vk_.staging_type(true);
        const VkMemoryPropertyFlags f =
            device ? vk_.memory_properties().memoryTypes[*device].propertyFlags : 0;
        if (!device || !(f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) || *device == *system) {
          report_.note(
              "stream-large: no DEVICE_LOCAL|HOST_VISIBLE type apart from the system "
              "one; 'device' memory skipped");
          continue;
        }
        out.push_back({"device", true, *device});
      } else if (m == "cached") {
        const std::optional<uint32_t> cached = vk_.cached_type();
        if (!cached) {
          report_.note(
              "stream-large: no HOST_CACHED system memory type apart from the system "
              "one; 'cached' memory skipped");
          continue;
        }
        out.push_back({"cached", false, *cached});
      } else {
        std::fprintf(stderr, "staging-bench: unknown --memory entry '%s'\n", m.c_str());
        return 1;
      }
    }
    for (const MemoryChoice& m : out)
      report_.context("stream_memory_" + m.name, vk_.type_flags(m.type));
    return 0;
  }

  int queue_rows(Queue& queue, const std::vector<MemoryChoice>& memories) {
    cmds_.clear();
    for (uint64_t i = 0; i < ring_chunks_ + 4; ++i)
      cmds_.push_back(vk_.allocate_commands(queue));
    const uint32_t ts_bits = queries_ != VK_NULL_HANDLE ? queue.timestamp_bits : 0;
    int rc = ceiling(queue, ts_bits);
    for (const MemoryChoice& m : memories) {
      if (rc != 0) break;
      if (o_.fill_rows) rc = fill_rows(m);
      for (const std::string& strategy : o_.strategies) {
        if (rc != 0) break;
        rc = ring_rows(queue, ts_bits, m, strategy);
      }
    }
    vkQueueWaitIdle(queue.queue);
    for (VkCommandBuffer c : cmds_)
      vk_.free_commands(queue, c);
    cmds_.clear();
    return rc;
  }

  // The ceiling: one copy of the whole size from a staging buffer of the system type.
  int ceiling(Queue& queue, uint32_t ts_bits) {
    Buffer staging = vk_.make_buffer(total_, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, Memory::Staging);
    if (staging.mapped == nullptr) {
      std::fprintf(stderr, "staging-bench: cannot make a %" PRIu64 "-byte staging buffer\n",
                   total_);
      return 1;
    }
    fill_pool_copy(staging.mapped, total_, std::max(4u, std::thread::hardware_concurrency()));
    std::vector<double> gpu_s;
    bool failed = false;
    // One copy of the whole size; returns the host wall time from recording to completion.
    const auto copy_once = [&] {
      if (queries_ != VK_NULL_HANDLE) vkResetQueryPool(vk_.device(), queries_, 0, 2);
      VkCommandBuffer cmd = cmds_[0];
      const auto t0 = Clock::now();
      Context::begin(cmd);
      Context::full_barrier(cmd);
      if (ts_bits) vkCmdWriteTimestamp2(cmd, VK_PIPELINE_STAGE_2_TOP_OF_PIPE_BIT, queries_, 0);
      const VkBufferCopy region{0, 0, total_};
      vkCmdCopyBuffer(cmd, staging.buffer, dst_.buffer, 1, &region);
      if (ts_bits) vkCmdWriteTimestamp2(cmd, VK_PIPELINE_STAGE_2_BOTTOM_OF_PIPE_BIT, queries_, 1);
      const RetirementPoint point{semaphore_, ++value_};
      const VkSemaphoreSubmitInfo signal = point.submit_info();
      vk_.submit(queue, cmd, &signal);
      if (!wait_value(queue, value_)) failed = true;
      return seconds_since(t0);
    };
    Row row = measure(common_, "ceiling", total_, [&] {
      const double s = copy_once();
      if (const auto t = read_timestamps(vk_, queries_, 1, ts_bits)) gpu_s.push_back(t->busy_s);
      return s;
    });
    const bool ok = !failed && verify(queue, [&] {
      copy_once();
      return !failed;
    });
    if (failed) {
      vk_.destroy(staging);
      std::fprintf(stderr, "staging-bench: the ceiling copy did not finish\n");
      return 1;
    }
    if (!gpu_s.empty()) gpu_s.erase(gpu_s.begin());  // the warm-up
    const double gpu_med = median(gpu_s);
    const double gpu_gbps = gpu_med > 0 ? static_cast<double>(total_) / gpu_med / 1e9 : 0;
    ceiling_gbps_ = gpu_gbps > 0 ? gpu_gbps : row.gbps;
    ceiling_queue_ = queue.name;
    row.fields["queue"] = queue.name;
    row.fields["memory"] = vk_.type_flags(system_type_);
    row.fields["what"] = "one vkCmdCopyBuffer from a staging buffer of the whole size";
    row.fields["gpu_gbps"] = gpu_gbps;
    row.fields["check"] = ok ? "ok" : "MISMATCH";
    ceilings_[queue.name] = ceiling_gbps_;
    report_.add(std::move(row));
    if (!ok) ++failures_;
    const int rc = ok ? frames_ceiling(queue, ts_bits, staging) : 0;
    vk_.destroy(staging);
    return rc;
  }

  // Waits (60 s at most) until the bench's semaphore reaches `value`. False, after waiting for
  // the queue to go idle, when it does not.
  bool wait_value(const Queue& queue, uint64_t value) {
    const VkSemaphoreWaitInfo wait{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                                   .semaphoreCount = 1,
                                   .pSemaphores = &semaphore_,
                                   .pValues = &value};
    if (vkWaitSemaphores(vk_.device(), &wait, uint64_t{60} * 1000000000) == VK_SUCCESS) return true;
    vkQueueWaitIdle(queue.queue);
    return false;
  }

  // The ceiling cut into frames: the same filled staging buffer copied chunk by chunk, one command
  // buffer and one submission per chunk with the ring rows' timestamps and semaphore signal, at
  // most as many in flight as the ring holds chunks. No CPU fill: what submitting frame by frame
  // costs the copies at this chunk size, the bound of every ring row (the ratios use the single
  // copy's rate, set by ceiling() before this runs).
  int frames_ceiling(Queue& queue, uint32_t ts_bits, const Buffer& staging) {
    bool failed = false;
    const auto wait_for = [&](uint64_t value) { failed = failed || !wait_value(queue, value); };
    const auto copy_in_frames = [&] {
      if (ts_bits) vkResetQueryPool(vk_.device(), queries_, 0, static_cast<uint32_t>(2 * chunks_));
      std::deque<std::pair<uint64_t, std::size_t>> flight;  // semaphore value, command buffer
      std::vector<std::size_t> idle;
      for (std::size_t i = 0; i < cmds_.size(); ++i)
        idle.push_back(i);
      const auto t0 = Clock::now();
      for (uint64_t k = 0; k < chunks_ && !failed; ++k) {
        while (!failed && (flight.size() >= ring_chunks_ || idle.empty())) {
          wait_for(flight.front().first);
          idle.push_back(flight.front().second);
          flight.pop_front();
        }
        VkCommandBuffer cmd = cmds_[idle.back()];
        Context::begin(cmd);
        if (k == 0) Context::full_barrier(cmd);
        const auto q = static_cast<uint32_t>(2 * k);
        if (ts_bits) vkCmdWriteTimestamp2(cmd, VK_PIPELINE_STAGE_2_TOP_OF_PIPE_BIT, queries_, q);
        const uint64_t off = k * chunk_;
        const VkBufferCopy region{off, off, std::min(chunk_, total_ - off)};
        vkCmdCopyBuffer(cmd, staging.buffer, dst_.buffer, 1, &region);
        if (ts_bits) {
          vkCmdWriteTimestamp2(cmd, VK_PIPELINE_STAGE_2_BOTTOM_OF_PIPE_BIT, queries_, q + 1);
        }
        const RetirementPoint point{semaphore_, ++value_};
        const VkSemaphoreSubmitInfo signal = point.submit_info();
        vk_.submit(queue, cmd, &signal);
        flight.emplace_back(value_, idle.back());
        idle.pop_back();
      }
      if (!failed) wait_for(value_);
      return seconds_since(t0);
    };
    std::vector<double> gpu_s, span_s;
    Row row = measure(common_, "ceiling-frames", total_, [&] {
      const double s = copy_in_frames();
      if (const auto t = read_timestamps(vk_, queries_, static_cast<uint32_t>(chunks_), ts_bits)) {
        gpu_s.push_back(t->busy_s);
        span_s.push_back(t->span_s);
      }
      return s;
    });
    const bool ok = !failed && verify(queue, [&] {
      copy_in_frames();
      return !failed;
    });
    if (failed) {
      std::fprintf(stderr, "staging-bench: the ceiling's frames did not finish\n");
      return 1;
    }
    for (std::vector<double>* v : {&gpu_s, &span_s}) {
      if (v->size() > 1) v->erase(v->begin());  // the warm-up
    }
    const double gpu_med = median(gpu_s), span_med = median(span_s);
    const auto rate = [&](double s) { return s > 0 ? static_cast<double>(total_) / s / 1e9 : 0.0; };
    row.fields["queue"] = queue.name;
    row.fields["memory"] = vk_.type_flags(system_type_);
    row.fields["what"] =
        "one vkCmdCopyBuffer per chunk from the ceiling's buffer, a submission each, no fill";
    row.fields["chunk_mib"] = static_cast<double>(chunk_) / MiB;
    row.fields["frames_ahead"] = ring_chunks_;
    row.fields["ratio"] = row.gbps / ceiling_gbps_;
    row.fields["gpu_gbps"] = rate(gpu_med);
    row.fields["gpu_ratio"] = rate(gpu_med) / ceiling_gbps_;
    row.fields["gpu_span_gbps"] = rate(span_med);
    row.fields["check"] = ok ? "ok" : "MISMATCH";
    frames_ceiling_[queue.name] = row.gbps / ceiling_gbps_;
    report_.add(std::move(row));
    if (!ok) ++failures_;
    return 0;
  }

  // Copies the source into `dst` (a ring-sized window cycled through, or the whole size) with
  // `threads` threads; returns the seconds it took.
  double fill_pool_copy(std::byte* dst, uint64_t window, unsigned threads) {
    FillPool pool(threads);
    return fill_with(pool, dst, window);
  }

  double fill_with(FillPool& pool, std::byte* dst, uint64_t window) {
    const uint64_t slice = slice_bytes(pool.threads());
    std::vector<FillPool::Job> jobs;
    std::atomic<uint32_t> remaining{0};
    for (uint64_t off = 0; off < total_; off += slice) {
      const uint64_t n = std::min(slice, total_ - off);
      jobs.push_back({dst + off % window, source_ + off, n, &remaining});
    }
    remaining = static_cast<uint32_t>(jobs.size());
    const auto t0 = Clock::now();
    pool.push(jobs);
    while (remaining.load() != 0)
      pool.wait(remaining, std::chrono::milliseconds(10));
    return seconds_since(t0);
  }

  // Slices of a chunk for N fill threads: chunk / N, at least 256 KiB, 4 KiB-aligned.
  uint64_t slice_bytes(unsigned threads) const {
    const uint64_t per = chunk_ / std::max(1u, threads);
    return std::min(chunk_, std::max<uint64_t>(256 * KiB, per & ~uint64_t{4095}));
  }

  // CPU only: N threads filling mapped staging memory of this type (ring-sized, cycled).
  int fill_rows(const MemoryChoice& m) {
    const std::unique_ptr<MemoryHook> memory = make_hook(vk_, m);
    auto buffer = memory->allocate(ring_);
    if (!buffer) {
      std::fprintf(stderr, "staging-bench: cannot allocate %" PRIu64 " bytes of %s memory\n", ring_,
                   m.name.c_str());
      return 1;
    }
    // Slices land at offsets modulo the window: keep the window a multiple of the slices.
    for (unsigned threads : common_.threads) {
      FillPool pool(std::max(1u, threads));
      const uint64_t window = ring_ / slice_bytes(pool.threads()) * slice_bytes(pool.threads());
      Row row =
          measure(common_, "fill", total_, [&] { return fill_with(pool, buffer->mapped, window); });
      row.fields["memory"] = m.name;
      row.fields["threads"] = pool.threads();
      row.fields["what"] = "CPU only: memcpy pageable -> mapped staging, no GPU";
      row.fields["ratio"] = ceiling_gbps_ > 0 ? row.gbps / ceiling_gbps_ : 0.0;
      fill_gbps_[{m.name, pool.threads()}] = row.gbps;
      report_.add(std::move(row));
    }
    memory->release(*buffer);
    return 0;
  }

  // The ring's configuration for a --strategies entry; nothing (after a message) for an unknown
  // entry, or slots with a chunk that is no power of two.
  std::optional<staging::vulkan::RingConfig> ring_config(const std::string& strategy_name) const {
    staging::vulkan::RingConfig config;
    if (strategy_name == "bytes") {
      config.strategy =
          staging::ByteRingConfig{.capacity = ring_, .policy = staging::ExhaustionPolicy::Defer};
    } else if (strategy_name == "slots") {
      if ((chunk_ & (chunk_ - 1)) != 0) {
        std::fprintf(stderr, "staging-bench: --strategies slots needs a power-of-two chunk\n");
        return std::nullopt;
      }
      config.strategy = staging::StagingRingConfig{
          .slots = ring_chunks_, .min_slot_bytes = chunk_, .max_slot_bytes = chunk_};
    } else {
      std::fprintf(stderr, "staging-bench: unknown --strategies entry '%s'\n",
                   strategy_name.c_str());
      return std::nullopt;
    }
    config.policy = staging::ExhaustionPolicy::Defer;
    return config;
  }

  // One ring row's way of filling: the pointer row (one thread), or in place with N threads.
  struct Plan {
    Mode mode;
    unsigned threads;
  };

  // What one ring row's repetitions measured, the warm-up's first.
  struct RepSamples {
    std::vector<double> gpu_s, span_s, rep_s, busy_gbps, idle, blocked, blocked_ms;
    unsigned most_open = 0;
    bool failed = false;

    void add(const RepResult& r, const FillPool* pool, unsigned threads, uint64_t total) {
      if (r.failed) failed = true;
      if (r.gpu) {
        gpu_s.push_back(r.gpu->busy_s);
        span_s.push_back(r.gpu->span_s);
      }
      rep_s.push_back(r.seconds);
      if (pool && r.fill_busy_s > 0 && r.seconds > 0) {
        busy_gbps.push_back(static_cast<double>(total) / (r.fill_busy_s / threads) / 1e9);
        idle.push_back(1 - r.fill_busy_s / (threads * r.seconds));
      }
      blocked.push_back(static_cast<double>(r.ring_blocked));
      blocked_ms.push_back(r.blocked_s * 1e3);
      most_open = std::max(most_open, r.most_open);
    }

    // Drops the warm-up's entries.
    void drop_warm_up() {
      if (!gpu_s.empty()) {
        gpu_s.erase(gpu_s.begin());
        span_s.erase(span_s.begin());
      }
      for (std::vector<double>* v : {&rep_s, &busy_gbps, &idle, &blocked, &blocked_ms}) {
        if (v->size() > 1) v->erase(v->begin());
      }
    }
  };

  int ring_rows(Queue& queue, uint32_t ts_bits, const MemoryChoice& m,
                const std::string& strategy_name) {
    std::optional<staging::vulkan::RingConfig> config = ring_config(strategy_name);
    if (!config) return 1;
    const std::unique_ptr<MemoryHook> memory = make_hook(vk_, m);
    config->memory = memory.get();
    auto made = Ring::create(vk_.staging_device(), *config);
    if (!made) {
      std::fprintf(stderr, "staging-bench: Ring::create: %s\n",
                   std::string(to_string(made.error())).c_str());
      return 1;
    }
    Ring ring = std::move(*made);
    std::vector<Plan> plans{{Mode::Pointer, 1}};
    for (unsigned t : common_.threads)
      plans.push_back({Mode::InPlace, std::max(1u, t)});
    int rc = 0;
    for (const Plan& p : plans) {
      if (!ring_row(ring, queue, ts_bits, m, strategy_name, p)) {
        rc = 1;
        break;
      }
    }
    ring_note(ring, queue, m, strategy_name);
    return rc;
  }

  // The ring row of one plan; false when a repetition failed.
  bool ring_row(Ring& ring, Queue& queue, uint32_t ts_bits, const MemoryChoice& m,
                const std::string& strategy_name, const Plan& p) {
    std::unique_ptr<FillPool> pool;
    if (p.mode == Mode::InPlace) pool = std::make_unique<FillPool>(p.threads);
    // Frames open at once: as many as the ring holds (the pointer row fills one at a time).
    const auto ahead = static_cast<unsigned>(p.mode == Mode::Pointer ? 1 : ring_chunks_);
    RepSamples samples;
    Row row = measure(common_, p.mode == Mode::Pointer ? "pointer" : "inplace", total_, [&] {
      const RepResult r = rep(ring, queue, ts_bits, p.mode, pool.get(), ahead);
      samples.add(r, pool.get(), p.threads, total_);
      return r.seconds;
    });
    if (samples.failed) {
      std::fprintf(stderr, "staging-bench: stream-large %s failed\n", row.section.c_str());
      return false;
    }
    const bool ok =
        verify(queue, [&] { return !rep(ring, queue, ts_bits, p.mode, pool.get(), ahead).failed; });
    samples.drop_warm_up();
    const double gpu_med = median(samples.gpu_s);
    const double gpu_gbps = gpu_med > 0 ? static_cast<double>(total_) / gpu_med / 1e9 : 0;
    const double span_med = median(samples.span_s);
    row.fields["queue"] = queue.name;
    row.fields["memory"] = m.name;
    row.fields["strategy"] = strategy_name;
    row.fields["threads"] = p.threads;
    row.fields["chunk_mib"] = static_cast<double>(chunk_) / MiB;
    if (p.mode == Mode::InPlace) {
      row.fields["slice_kib"] = slice_bytes(p.threads) / KiB;
      row.fields["frames_ahead"] = samples.most_open;  // most frames open at once, any rep
      // Fill diagnostics (medians): the fill threads' memcpy rate while copying, and the share
      // of their time without a slice to copy.
      row.fields["fill_busy_gbps"] = median(samples.busy_gbps);
      row.fields["fill_idle"] = median(samples.idle);
    }
    // The spread: the slowest repetition, and how often / how long the ring was full.
    const std::vector<double>& rep_s = samples.rep_s;
    const double worst = rep_s.empty() ? 0 : *std::max_element(rep_s.begin(), rep_s.end());
    row.fields["gbps_worst"] = worst > 0 ? static_cast<double>(total_) / worst / 1e9 : 0.0;
    row.fields["ring_full_waits"] = median(samples.blocked);
    row.fields["ring_full_ms"] = median(samples.blocked_ms);
    row.fields["ratio"] = row.gbps / ceiling_gbps_;
    row.fields["gpu_gbps"] = gpu_gbps;
    row.fields["gpu_ratio"] = gpu_gbps / ceiling_gbps_;
    row.fields["gpu_span_gbps"] = span_med > 0 ? static_cast<double>(total_) / span_med / 1e9 : 0.0;
    row.fields["check"] = ok ? "ok" : "MISMATCH";
    if (!ok) ++failures_;
    results_.push_back({queue.name, m.name, strategy_name, row.section, p.threads,
                        row.gbps / ceiling_gbps_, gpu_gbps / ceiling_gbps_, row.gbps});
    report_.add(std::move(row));
    return true;
  }

  // The ring's note: frames, staging held, fallbacks, ring-full answers.
  void ring_note(Ring& ring, const Queue& queue, const MemoryChoice& m,
                 const std::string& strategy_name) {
    const Stats s = ring.stats();
    const auto* bytes = std::get_if<staging::ByteRingStats>(&s.strategy);
    const uint64_t held = bytes != nullptr
                              ? bytes->peak_held_bytes
                              : std::get<staging::StagingStats>(s.strategy).bytes_allocated;
    max_ring_held_ = std::max(max_ring_held_, held);
    fallbacks_ += s.oneoff_uploads + s.update_buffer_uploads;
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "stream-large ring (%s, %s, %s): %" PRIu64
                  " frames, staging held %.1f MiB, "
                  "fallbacks %" PRIu64 ", ring-full answers %" PRIu64,
                  queue.name.c_str(), m.name.c_str(), strategy_name.c_str(), s.frames_finished,
                  static_cast<double>(held) / MiB, s.oneoff_uploads + s.update_buffer_uploads,
                  s.ring_full_refusals + s.begin_refused);
    report_.note(buf);
  }

  // One repetition: the whole size through the ring. See the file comment.
  //
  // The pipeline has no single thread every step depends on. Everything touching the ring, the
  // open frames, the command buffers and the queue runs in service(), under `mu_`, and whichever
  // thread calls it does all that is due: retire what the GPU finished, finish and submit the
  // filled frames at the front (in order), and begin new frames while the ring has room (as many
  // as it holds: the ring is the only limit on frames ahead). The fill thread that writes a
  // frame's last slice calls it, so a filled frame is submitted at once, without waking another
  // thread. The driver thread calls it too, and while the ring is full it polls the GPU (yielding
  // its CPU to the fill threads) until the oldest frame's copy is done. Concurrent calls coalesce:
  // a thread that finds `mu_` taken leaves a request the holder serves before it lets go.
  class Rep {
   public:
    Rep(StreamBench& bench, Ring& ring, Queue& queue, uint32_t ts_bits, Mode mode, FillPool* pool,
        unsigned max_open)
        : b_(bench),
          ring_(ring),
          queue_(queue),
          ts_bits_(ts_bits),
          mode_(mode),
          pool_(pool),
          max_open_(max_open),
          slice_(pool ? bench.slice_bytes(pool->threads()) : bench.chunk_) {
      for (std::size_t i = b_.cmds_.size(); i-- > 0;)
        free_cmds_.push_back(i);
    }

    RepResult run() {
      if (ts_bits_) {
        vkResetQueryPool(b_.vk_.device(), b_.queries_, 0, static_cast<uint32_t>(2 * b_.chunks_));
      }
      if (pool_) {
        pool_->reset();
        pool_->set_on_done([this] { service(); });
      }
      const auto t0 = Clock::now();
      drive();
      if (!result_.failed && !flight_.empty() &&
          !ring_.wait(flight_.back().point, std::chrono::seconds(60))) {
        fail("the last frame did not finish in 60 s");
      }
      result_.seconds = seconds_since(t0);
      if (pool_) {
        // Let the fill threads finish what they were given; after this no thread is in service().
        pool_->quiesce();
        pool_->set_on_done(nullptr);
        result_.fill_busy_s = pool_->busy().seconds;
      }
      if (result_.failed) {
        // Drop what is open (nothing recorded) and let the GPU finish what was submitted.
        open_.clear();
        vkQueueWaitIdle(queue_.queue);
        ring_.poll();
        return result_;
      }
      result_.gpu =
          read_timestamps(b_.vk_, b_.queries_, static_cast<uint32_t>(b_.chunks_), ts_bits_);
      return result_;
    }

   private:
    // The driver thread: serves, and in between polls the GPU while the ring is full or sleeps
    // until the end (or a while).
    void drive() {
      while (!finished_.load(std::memory_order_acquire)) {
        service();
        bool poll_gpu = false;
        uint64_t before = 0;
        {
          std::lock_guard lock(mu_);
          if (result_.failed || submitted_ == b_.chunks_) break;
          poll_gpu = blocked_ || (open_.empty() && !flight_.empty());
          before = reached_;
        }
        if (poll_gpu) {
          // The ring is full: the oldest copy frees room. Poll (it ends within one frame's copy,
          // ~0.2 ms) and give the CPU to the fill threads in between.
          const auto tb = Clock::now();
          uint64_t value = 0;
          for (int spins = 0; spins < 100000; ++spins) {
            vkGetSemaphoreCounterValue(b_.vk_.device(), ring_.semaphore(), &value);
            if (value != before) break;
            std::this_thread::yield();
          }
          result_.blocked_s += seconds_since(tb);
        } else {
          // The fill threads submit what they fill; wake for the end, or to look again.
          std::mutex m;
          std::unique_lock lock(m);
          finished_cv_.wait_for(lock, std::chrono::microseconds(200),
                                [&] { return finished_.load(std::memory_order_acquire); });
        }
      }
    }

    void service() {
      requested_.store(true, std::memory_order_release);
      while (requested_.load(std::memory_order_acquire)) {
        if (!mu_.try_lock()) return;  // the holder serves the request before it lets go
        requested_.store(false, std::memory_order_relaxed);
        while (step()) {
        }
        const bool done = result_.failed || submitted_ == b_.chunks_;
        mu_.unlock();
        if (done && !finished_.exchange(true)) finished_cv_.notify_all();
      }
    }

    void fail(const std::string& why) {
      std::fprintf(stderr, "staging-bench: stream-large: %s\n", why.c_str());
      result_.failed = true;
    }

    // One pass over what is due; true when something changed. `mu_` held.
    bool step() {
      vkGetSemaphoreCounterValue(b_.vk_.device(), ring_.semaphore(), &reached_);
      while (!flight_.empty() && flight_.front().point.value <= reached_) {
        free_cmds_.push_back(flight_.front().cmd);
        flight_.pop_front();
      }
      bool progress = submit_filled();
      if (blocked_ && reached_ != blocked_at_value_) blocked_ = false;
      progress = begin_frames() || progress;
      if (blocked_ && blocked_at_value_ != reached_) {
        blocked_at_value_ = reached_;
        ++result_.ring_blocked;
      }
      return progress;
    }

    // Finishes and submits the filled frames at the front, in order.
    bool submit_filled() {
      bool progress = false;
      while (!result_.failed && !open_.empty() &&
             open_.front()->remaining.load(std::memory_order_acquire) == 0) {
        OpenFrame& f = *open_.front();
        VkCommandBuffer cmd = b_.cmds_[f.cmd];
        Context::begin(cmd);
        if (submitted_ == 0) Context::full_barrier(cmd);  // after the previous rep, the clears
        const auto q = static_cast<uint32_t>(2 * f.k);
        if (ts_bits_) {
          vkCmdWriteTimestamp2(cmd, VK_PIPELINE_STAGE_2_TOP_OF_PIPE_BIT, b_.queries_, q);
        }
        auto point = f.frame.finish(kVisibility);
        if (!point) {
          fail("finish: " + std::string(to_string(point.error())));
          break;
        }
        if (ts_bits_) {
          vkCmdWriteTimestamp2(cmd, VK_PIPELINE_STAGE_2_BOTTOM_OF_PIPE_BIT, b_.queries_, q + 1);
        }
        const VkSemaphoreSubmitInfo signal = point->submit_info();
        b_.vk_.submit(queue_, cmd, &signal);
        flight_.push_back({*point, f.cmd});
        open_.pop_front();
        ++submitted_;
        progress = true;
      }
      return progress;
    }

    // Begins new frames while the ring has room, up to max_open_ open at once.
    bool begin_frames() {
      bool progress = false;
      while (!blocked_ && !result_.failed && next_ < b_.chunks_ && open_.size() < max_open_ &&
             !free_cmds_.empty()) {
        const uint64_t off = next_ * b_.chunk_;
        const uint64_t n = std::min(b_.chunk_, b_.total_ - off);
        auto frame = ring_.begin(b_.cmds_[free_cmds_.back()], n);
        if (!frame) {
          if (frame.error() == UploadError::RingFull) {
            blocked_ = true;  // every slot filling or in flight
            break;
          }
          fail("begin: " + std::string(to_string(frame.error())));
          break;
        }
        auto of = std::make_unique<OpenFrame>();
        of->k = next_;
        of->cmd = free_cmds_.back();
        if (!(mode_ == Mode::Pointer ? upload(*frame, off, n) : reserve(*frame, *of, off, n))) {
          break;
        }
        of->frame = std::move(*frame);
        free_cmds_.pop_back();
        open_.push_back(std::move(of));
        if (mode_ == Mode::InPlace) pool_->push(jobs_);
        result_.most_open = std::max(result_.most_open, static_cast<unsigned>(open_.size()));
        ++next_;
        progress = true;
      }
      return progress;
    }

    // The pointer mode: the frame copies the chunk from the source itself. False when the ring
    // is full (the frame is dropped: retried later) or on failure.
    bool upload(StagingFrame& frame, uint64_t off, uint64_t n) {
      auto up = frame.upload(b_.dst_.buffer, off, b_.source_ + off, n);
      if (up) return true;
      if (up.error() == UploadError::RingFull) {
        blocked_ = true;
      } else {
        fail("upload: " + std::string(to_string(up.error())));
      }
      return false;
    }

    // The in-place mode: reserves the chunk's span and cuts it into jobs_ for the fill threads.
    // False when the ring is full or on failure.
    bool reserve(StagingFrame& frame, OpenFrame& of, uint64_t off, uint64_t n) {
      auto span = frame.reserve(b_.dst_.buffer, off, n);
      if (!span) {
        if (span.error() == UploadError::RingFull) {
          blocked_ = true;
        } else {
          fail("reserve: " + std::string(to_string(span.error())));
        }
        return false;
      }
      jobs_.clear();
      for (uint64_t s = 0; s < n; s += slice_) {
        jobs_.push_back(
            {span->data() + s, b_.source_ + off + s, std::min(slice_, n - s), &of.remaining});
      }
      of.remaining.store(static_cast<uint32_t>(jobs_.size()), std::memory_order_relaxed);
      return true;
    }

    static constexpr Visibility kVisibility{.stages = VK_PIPELINE_STAGE_2_NONE,
                                            .access = VK_ACCESS_2_NONE};

    StreamBench& b_;
    Ring& ring_;
    Queue& queue_;
    const uint32_t ts_bits_;
    const Mode mode_;
    FillPool* const pool_;
    const unsigned max_open_;
    const uint64_t slice_;
    RepResult result_;
    std::mutex mu_;
    std::atomic<bool> requested_{false};
    std::atomic<bool> finished_{false};  // every chunk submitted, or failed
    std::condition_variable finished_cv_;
    std::vector<std::size_t> free_cmds_;
    std::deque<std::unique_ptr<OpenFrame>> open_;
    std::deque<InFlight> flight_;
    std::vector<FillPool::Job> jobs_;
    uint64_t next_ = 0, submitted_ = 0;
    uint64_t reached_ = 0;
    bool blocked_ = false;           // the last begin found no room
    uint64_t blocked_at_value_ = 0;  // the GPU's value then: retry once it has moved
  };

  RepResult rep(Ring& ring, Queue& queue, uint32_t ts_bits, Mode mode, FillPool* pool,
                unsigned max_open) {
    return Rep(*this, ring, queue, ts_bits, mode, pool, max_open).run();
  }

  // Clears the destination, runs `once` (which writes it), reads it back and compares every byte
  // with the source. True when equal (or when checks are off).
  bool verify(Queue& queue, const std::function<bool()>& once) {
    if (!o_.check) return true;
    if (!vk_.run_once(queue, [&](VkCommandBuffer cmd) {
          vkCmdFillBuffer(cmd, dst_.buffer, 0, VK_WHOLE_SIZE, 0);
        })) {
      return false;
    }
    if (!once()) return false;
    if (!vk_.run_once(queue, [&](VkCommandBuffer cmd) {
          const VkBufferCopy region{0, 0, total_};
          vkCmdCopyBuffer(cmd, dst_.buffer, readback_.buffer, 1, &region);
        })) {
      return false;
    }
    const auto at = first_difference(readback_.mapped, source_, total_,
                                     std::max(4u, std::thread::hardware_concurrency()));
    if (at) {
      std::fprintf(stderr, "staging-bench: stream-large read back differs at byte %" PRIu64 "\n",
                   *at);
    }
    return !at;
  }

  void targets() {
    char buf[512];
    if (results_.empty()) return;
    // The primary configuration: the first queue, memory and strategy measured.
    const Result& first = results_.front();
    const auto primary = [&](const Result& r) {
      return r.queue == first.queue && r.memory == first.memory && r.strategy == first.strategy;
    };
    const Result* worst_gpu = nullptr;
    const Result* best_gpu = nullptr;
    for (const Result& r : results_) {
      if (!primary(r) || r.gpu_ratio <= 0) continue;
      if (worst_gpu == nullptr || r.gpu_ratio < worst_gpu->gpu_ratio) worst_gpu = &r;
      if (best_gpu == nullptr || r.gpu_ratio > best_gpu->gpu_ratio) best_gpu = &r;
    }
    const double ceiling = ceilings_[first.queue];
    const std::string where = first.queue + " queue, " + first.memory + " memory, " +
                              first.strategy + " ring of " + std::to_string(o_.ring_mib) + " MiB";
    if (worst_gpu != nullptr) {
      std::snprintf(buf, sizeof buf,
                    "every ring row's copies >= %.2f x the single-copy ceiling (%.1f GB/s): "
                    "lowest %.1f GB/s (%s, %u threads), highest %.2f x; %s",
                    worst_gpu->gpu_ratio, ceiling, worst_gpu->gpu_ratio * ceiling,
                    worst_gpu->mode.c_str(), worst_gpu->threads, best_gpu->gpu_ratio,
                    where.c_str());
      report_.target("stream-large ring copies >= 0.9 x single-copy ceiling (GPU timestamps)",
                     worst_gpu->gpu_ratio >= 0.9, buf);
    } else {
      report_.target("stream-large ring copies >= 0.9 x single-copy ceiling (GPU timestamps)",
                     false, "no GPU timestamps on this queue / device");
    }
    const Result* fewest = nullptr;
    const Result* best = nullptr;
    for (const Result& r : results_) {
      if (!primary(r) || r.mode != "inplace") continue;
      if (best == nullptr || r.ratio > best->ratio) best = &r;
      if (r.ratio >= 0.8 && (fewest == nullptr || r.threads < fewest->threads)) fewest = &r;
    }
    if (best != nullptr) {
      if (fewest != nullptr) {
        std::snprintf(buf, sizeof buf,
                      "%.2f x ceiling (%.1f of %.1f GB/s) with %u fill threads; best %.2f x "
                      "(%u threads); %s",
                      fewest->ratio, fewest->gbps, ceiling, fewest->threads, best->ratio,
                      best->threads, where.c_str());
      } else {
        const auto fill = fill_gbps_.find({first.memory, best->threads});
        char bound[96] = "the CPU-only fill rate was not measured (--no-fill-rows)";
        if (fill != fill_gbps_.end()) {
          std::snprintf(bound, sizeof bound, "those threads fill %.1f GB/s without the GPU",
                        fill->second);
        }
        std::snprintf(buf, sizeof buf,
                      "best %.2f x ceiling (%.1f of %.1f GB/s) with %u fill threads, short of "
                      "0.8 by %.2f; %s; %s",
                      best->ratio, best->gbps, ceiling, best->threads, 0.8 - best->ratio, bound,
                      where.c_str());
      }
      report_.target("stream-large end to end with in-place writes >= 0.8 x ceiling",
                     fewest != nullptr, buf);
      if (const auto frames = frames_ceiling_.find(first.queue); frames != frames_ceiling_.end()) {
        std::snprintf(buf, sizeof buf,
                      "stream-large in place: best %.3f x ceiling (%u threads), %.3f of the "
                      "ceiling in frames (%.3f x: a submission per chunk, no fill); %s",
                      best->ratio, best->threads, best->ratio / frames->second, frames->second,
                      where.c_str());
        report_.note(buf);
      }
    }
    std::snprintf(buf, sizeof buf,
                  "most staging memory any ring held: %.1f MiB (ring %" PRIu64
                  " MiB); fallback uploads %" PRIu64,
                  static_cast<double>(max_ring_held_) / MiB, o_.ring_mib, fallbacks_);
    report_.target("stream-large ring <= 64 MiB, no fallback",
                   max_ring_held_ <= 64 * MiB && fallbacks_ == 0, buf);
  }

  Context& vk_;
  const CommonOptions& common_;
  const VulkanOptions& o_;
  Report& report_;
  uint64_t total_ = 0, chunk_ = 0, ring_ = 0, chunks_ = 0, ring_chunks_ = 0;
  std::byte* source_ = nullptr;
  Buffer dst_, readback_;
  VkSemaphore semaphore_ = VK_NULL_HANDLE;
  uint64_t value_ = 0;
  VkQueryPool queries_ = VK_NULL_HANDLE;
  std::vector<VkCommandBuffer> cmds_;
  uint32_t system_type_ = 0;
  double ceiling_gbps_ = 0;
  std::string ceiling_queue_;
  std::map<std::string, double> ceilings_;
  std::map<std::string, double> frames_ceiling_;  // ceiling-frames' end-to-end ratio per queue
  std::map<std::pair<std::string, unsigned>, double> fill_gbps_;
  std::vector<Result> results_;
  uint64_t max_ring_held_ = 0;
  uint64_t fallbacks_ = 0;
  int failures_ = 0;
};

}  // namespace

int run_stream_large(Context& vk, const CommonOptions& common, const VulkanOptions& options,
                     Report& report) {
  StreamBench bench(vk, common, options, report);
  return bench.run();
}

}  // namespace staging::bench::vk
