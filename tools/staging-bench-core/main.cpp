// staging-bench-core: the CPU cost per upload of the core's hot paths, without a GPU.
//
//   ByteRing reserve + retire   one reservation placed and one retired per iteration, with a
//                               steady number in flight (the ring wraps continually); checker
//                               off (the release configuration) and on (tests, debug builds);
//                               also through reserve_waiting(), the call backends make;
//   SlotLease::place            one placement into a frame's slot per iteration;
//   SharedFrame producers       N threads (1, 2, 4, 8, 16) each placing and writing 4096 uploads
//                               of 256 B / 4 KiB / 64 KiB into one shared frame, which the owner
//                               then seals and collects (placements in offset order): per_upload
//                               is the wall time per upload, all threads together — the
//                               multi-producer scaling without a GPU;
//   Memcpy ceiling              the same threads and sizes doing only the memcpy of each upload
//                               into the same memory: what placement adds is the difference;
//   ...Jobs                     both with the frame's uploads (threads x 4096) shared out as jobs
//                               of 256 uploads that the threads claim from a counter until none
//                               is left, as an engine's job system hands out work: a thread that
//                               runs slower (its core shared) does fewer jobs instead of holding
//                               the frame up (256 B and 4 KiB);
//   ...Joined                   SharedFrame producers at 256 B whose uploads go back to back into
//                               one destination per thread, with a payload that joins them (one
//                               placement per run, as the Vulkan frame's buffer uploads);
//   ...Hot                      both at 256 B with producers that spin between frames instead of
//                               waiting at a barrier (no wake-up per frame, as an engine's job
//                               system's workers during a frame);
//   ...PlaceOnly, ...Recorded   where a many-writer frame's time goes: placement alone (no bytes
//                               written; at a barrier and hot), the memcpy with a record per
//                               upload;
//   CoreSpeed                   N threads each running the same chain of dependent arithmetic
//                               (no memory): how much slower each core runs while the others are
//                               busy on this host, which bounds the scaling of any CPU work.
//
// Target: <= 50 ns per reservation for reserve + retire with the checker off.
// Every benchmark reports `per_reservation` (or `per_placement`): seconds per operation with an SI
// prefix ("37.4n" = 37.4 ns), the CPU time divided by the reservations made — for the
// ReserveRetire benchmarks the same as the Time column (one reservation per iteration), for the
// batch benchmark the iteration's time divided by its 64 reservations.
// Run: build/bin/staging-bench-core [--benchmark_filter=...] [--benchmark_repetitions=5] (--help)
// STAGING_BENCH_CPUS=0-15 (a list of CPUs) pins the threads of the multi-threaded rows: thread t
// to the list's t-th CPU (tools/support/crew.hpp); unset, the system places them.
// (Debian's libbenchmark warns that it was built as DEBUG: that concerns the library's own timing
// loop, not the code measured, which is built Release.)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core_work.hpp"
#include "crew.hpp"
#include "staging/core/byte_ring.hpp"
#include "staging/detail/core/invariant_checker.hpp"
#include "staging/detail/core/shared_frame.hpp"
#include "staging/detail/core/spin_lock.hpp"
#include "staging/detail/core/staging_ring.hpp"
#include "staging/testing/fake_region_allocator.hpp"
#include "staging/testing/fake_slot_allocator.hpp"

namespace {

using staging::ByteRing;

// A counter printed as seconds per operation (SI prefix): `per_iteration` operations an iteration.
benchmark::Counter per_operation(const benchmark::State& state, int64_t per_iteration) {
  return benchmark::Counter(static_cast<double>(state.iterations() * per_iteration),
                            benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

using staging::ByteRingConfig;
using staging::ReserveRequest;

// A queue whose completed value is set by the benchmark (reserve_waiting() reads it on a miss).
class ManualTimeline final : public staging::CompletionSource {
 public:
  staging::TimelineValue completed() override { return value; }
  staging::TimelineValue wait(staging::TimelineValue, staging::Duration) override { return value; }
  staging::TimelineValue value = 0;
};

// A ring of 4 MiB; reservations of state.range(0) bytes aligned to 16; state.range(1) of them in
// flight: each iteration reserves one (token i) and retires the one reserved `in_flight` earlier.
// `waiting`: through reserve_waiting() rather than ByteRing::reserve().
void reserve_retire(benchmark::State& state, bool check, bool waiting = false) {
  staging::testing::FakeRegionAllocator allocator;
  allocator.set_max_region_bytes(uint64_t{1} << 23);
  ByteRingConfig config;
  config.capacity = uint64_t{4} << 20;
  config.check_invariants = check;
  auto made = ByteRing::create(config, allocator);
  if (!made) {
    state.SkipWithError("ring not created");
    return;
  }
  ByteRing ring = std::move(*made);
  const auto size = static_cast<uint64_t>(state.range(0));
  const auto in_flight = static_cast<uint64_t>(state.range(1));
  ReserveRequest request;
  request.size = size;
  request.alignment = 16;
  uint64_t token = 0;
  ManualTimeline timeline;
  for (auto _ : state) {
    request.token = ++token;
    auto r = waiting ? staging::reserve_waiting(ring, timeline, request) : ring.reserve(request);
    benchmark::DoNotOptimize(r);
    if (token > in_flight) ring.retire(timeline.value = token - in_flight);
  }
  state.counters["wraps"] = static_cast<double>(ring.stats().wraps);
  state.counters["refused"] = static_cast<double>(ring.stats().would_blocks);
  state.counters["per_reservation"] = per_operation(state, 1);
  state.SetItemsProcessed(state.iterations());
}

void BM_ByteRingReserveRetire(benchmark::State& state) {
  reserve_retire(state, false);
}
void BM_ByteRingReserveRetireChecked(benchmark::State& state) {
  reserve_retire(state, true);
}
void BM_ByteRingReserveWaitingRetire(benchmark::State& state) {
  reserve_retire(state, false, true);
}
// 200 and 4000 bytes do not divide the ring: the head regularly skips a tail and wraps.
BENCHMARK(BM_ByteRingReserveRetire)
    ->Args({256, 64})
    ->Args({200, 64})
    ->Args({4000, 16})
    ->Args({48, 1024});
BENCHMARK(BM_ByteRingReserveRetireChecked)->Args({200, 64});
BENCHMARK(BM_ByteRingReserveWaitingRetire)->Args({256, 64})->Args({200, 64});

// Reserve a batch of `batch` reservations, then retire them all with one call (a frame's worth).
void BM_ByteRingReserveBatchRetire(benchmark::State& state) {
  staging::testing::FakeRegionAllocator allocator;
  ByteRingConfig config;
  config.capacity = uint64_t{4} << 20;
  config.check_invariants = false;
  ByteRing ring = std::move(*ByteRing::create(config, allocator));
  const auto batch = static_cast<uint64_t>(state.range(0));
  ReserveRequest request;
  request.size = 256;
  request.alignment = 16;
  uint64_t token = 0;
  for (auto _ : state) {
    ++token;
    request.token = token;
    for (uint64_t i = 0; i < batch; ++i) {
      auto r = ring.reserve(request);
      benchmark::DoNotOptimize(r);
    }
    ring.retire(token);
  }
  state.counters["per_reservation"] = per_operation(state, static_cast<int64_t>(batch));
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(batch));
}
BENCHMARK(BM_ByteRingReserveBatchRetire)->Arg(64);

// SlotLease::place: placements of state.range(0) bytes aligned to 16 into a 64 MiB slot; a new
// lease (begin) when the slot is full, which is rare (amortised into the result).
void BM_SlotLeasePlace(benchmark::State& state) {
  using Ring = staging::StagingRing<staging::testing::FakeBuffer>;
  staging::testing::FakeSlotAllocator allocator;
  Ring ring = std::move(*Ring::create(
      allocator,
      {.slots = 1, .min_slot_bytes = uint64_t{64} << 20, .max_slot_bytes = uint64_t{64} << 20}));
  const auto size = static_cast<uint64_t>(state.range(0));
  auto lease = std::move(*ring.begin(uint64_t{64} << 20));
  for (auto _ : state) {
    auto offset = lease.place(size, 16);
    if (!offset) [[unlikely]] {
      lease = staging::SlotLease();
      lease = std::move(*ring.begin(uint64_t{64} << 20));
      offset = lease.place(size, 16);
    }
    benchmark::DoNotOptimize(offset);
  }
  state.counters["per_placement"] = per_operation(state, 1);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SlotLeasePlace)->Arg(256);

constexpr uint64_t kUploadsPerThread = 4096;

// Uploads per second of `placing` (the threads' phase alone), over all threads.
benchmark::Counter upload_rate(const benchmark::State& state, unsigned threads,
                               std::chrono::nanoseconds placing) {
  const double uploads = static_cast<double>(state.iterations()) * kUploadsPerThread * threads;
  return benchmark::Counter(uploads /
                            std::max(1e-9, std::chrono::duration<double>(placing).count()));
}

void count_uploads(benchmark::State& state, unsigned threads, uint64_t size) {
  const auto uploads = static_cast<int64_t>(kUploadsPerThread * threads);
  state.counters["per_upload"] = per_operation(state, uploads);
  state.SetItemsProcessed(state.iterations() * uploads);
  state.SetBytesProcessed(state.iterations() * uploads * static_cast<int64_t>(size));
}

// The memory one benchmark's frames are written into: `ring` frames of `frame_bytes` used in
// turn, as a staging ring's frames are (a frame's memory was last written `ring` frames ago, by
// whichever thread wrote it then). With ring = 1 every frame reuses the same memory, and a thread
// that rewrites the lines it wrote the frame before finds them in its own cache.
class FrameMemory {
 public:
  FrameMemory(uint64_t frame_bytes, unsigned ring)
      : frame_bytes_(frame_bytes),
        ring_(ring),
        bytes_(static_cast<std::size_t>(frame_bytes * ring)) {}
  // The memory of frame `n`.
  std::span<std::byte> frame(uint64_t n) {
    return std::span(bytes_).subspan(static_cast<std::size_t>(n % ring_ * frame_bytes_),
                                     static_cast<std::size_t>(frame_bytes_));
  }

 private:
  uint64_t frame_bytes_;
  unsigned ring_;
  std::vector<std::byte> bytes_;
};

// SharedFrame: state.range(0) producer threads (persistent, started once) and uploads of
// state.range(1) bytes; frames in a ring of state.range(2) (FrameMemory). One iteration is one
// frame: the owner opens it, every producer joins (default WriterOptions: per-writer blocks),
// places and memcpys 4096 uploads from its own source, and leaves; the owner finishes it (Wait),
// which collects every placement in offset order. Wall time (UseRealTime); placing_rate counts
// uploads per second of the producers' phase alone, owner_ns the owner's open() and finish() per
// frame. `wait`: how the producers wait between frames. `copy` false: the producers place without
// writing the bytes (placement alone).
// An upload's destination: one placement each (no joins()).
struct Destination {
  uint64_t destination;
};
// An upload's destination (a thread's buffer and the offset in it): a thread's uploads back to
// back are joined into one placement.
struct JoinedDestination {
  uint64_t buffer;
  uint64_t at;
  static bool joins(const JoinedDestination& first, uint64_t first_size,
                    const JoinedDestination& next) noexcept {
    return next.buffer == first.buffer && next.at == first.at + first_size;
  }
};

// How a frame's uploads are shared out among its threads.
enum class Split {
  Threads,  // each thread places kUploadsPerThread uploads of its own: the frame ends when the
            // slowest thread is done
  Jobs,     // the frame's threads x kUploadsPerThread uploads are jobs of kJobUploads, which the
            // threads claim one at a time from a shared counter until none is left (as an
            // engine's job system hands out work): a thread that runs slower does fewer jobs
};
constexpr uint64_t kJobUploads = 256;

// A frame's jobs (Split::Jobs) for `threads` threads: the next one to claim, on a cache line of
// its own.
struct alignas(64) JobCounter {
  explicit JobCounter(unsigned threads) : jobs(kUploadsPerThread * threads / kJobUploads) {}
  // Before each frame (owner; the round's barrier publishes it).
  void reset() { next.store(0, std::memory_order_relaxed); }
  // Claims jobs until none is left, running `run(job)` for each.
  template <class Run>
  void drain(Run run) {
    for (uint64_t j = next.fetch_add(1, std::memory_order_relaxed); j < jobs;
         j = next.fetch_add(1, std::memory_order_relaxed)) {
      run(j);
    }
  }
  std::atomic<uint64_t> next{0};
  uint64_t jobs;
};

// `Payload`: Destination or JoinedDestination (Split::Threads only).
template <class Payload = Destination>
void shared_frame_producers(benchmark::State& state, CrewWait wait, bool copy = true,
                            Split split = Split::Threads) {
  const auto threads = static_cast<unsigned>(state.range(0));
  const auto size = static_cast<uint64_t>(state.range(1));
  const uint64_t slot = (size + 15) / 16 * 16;
  // Room for every upload and, per writer, one block it may leave unused (a writer that finishes
  // while another holds the bytes after its last block strands that block's end). With jobs, a
  // thread's share changes from frame to frame, so its lane (sized by the previous frame) may be
  // short or long by several jobs: four times the room, for the blocks stranded where writers
  // take the ends of each other's lanes.
  const uint64_t spare =
      (staging::WriterOptions{}.block_bytes + 64 * slot) * (split == Split::Jobs ? 4 : 1);
  FrameMemory memory((slot * kUploadsPerThread + spare) * threads,
                     static_cast<unsigned>(state.range(2)));
  staging::SharedFrame<Payload> frame;
  JobCounter jobs(threads);
  Crew crew(
      threads,
      [&](unsigned t) {
        thread_local std::vector<std::byte> source;
        source.assign(static_cast<std::size_t>(size), std::byte{0x5A});
        auto writer = frame.join().value();
        // Upload `i` of the thread (Split::Threads) or of the frame (Split::Jobs).
        const uint64_t first = split == Split::Threads ? t * kUploadsPerThread : 0;
        auto upload = [&](uint64_t i) {
          Payload payload{};
          if constexpr (staging::SharedFrame<Payload>::kJoins) {
            payload = {t, i * size};
          } else {
            payload = {first + i};
          }
          auto placed = writer.place(size, 16, payload);
          if (!placed) {
            std::fprintf(stderr, "writer %u: upload %llu of %llu bytes refused (%s)\n", t,
                         static_cast<unsigned long long>(i), static_cast<unsigned long long>(size),
                         std::string(staging::to_string(placed.error().kind)).c_str());
            std::abort();
          }
          if (copy) {
            std::memcpy(placed->bytes.data(), source.data(), static_cast<std::size_t>(size));
          } else {
            benchmark::DoNotOptimize(placed->bytes.data());
          }
        };
        if (split == Split::Threads) {
          for (uint64_t i = 0; i < kUploadsPerThread; ++i)
            upload(i);
        } else {
          jobs.drain([&](uint64_t job) {
            for (uint64_t i = job * kJobUploads; i < (job + 1) * kJobUploads; ++i)
              upload(i);
          });
        }
        writer.leave();
      },
      wait);
  std::chrono::nanoseconds placing{0}, owner{0};
  uint64_t frames = 0;
  for (auto _ : state) {
    const auto opening = std::chrono::steady_clock::now();
    frame.open(memory.frame(frames++));
    jobs.reset();
    const auto opened = std::chrono::steady_clock::now();
    placing += crew.round();
    const auto finishing = std::chrono::steady_clock::now();
    auto placed = frame.finish(staging::DrainMode::Wait, std::chrono::seconds(10));
    owner += (opened - opening) + (std::chrono::steady_clock::now() - finishing);
    uint64_t bytes = 0;  // joined placements hold several uploads: count their bytes
    if (placed) {
      if constexpr (staging::SharedFrame<Payload>::kJoins) {
        for (const auto& p : *placed)
          bytes += p.size;
      } else {
        bytes = placed->size() * size;
      }
    }
    if (bytes != kUploadsPerThread * threads * size) {
      state.SkipWithError("lost placements");
      break;
    }
    benchmark::DoNotOptimize(placed->begin()->offset);
  }
  count_uploads(state, threads, size);
  state.counters["placing_rate"] = upload_rate(state, threads, placing);
  // The owner's own steps per frame, open() and finish() (ns): the single-threaded part.
  state.counters["owner_ns"] = benchmark::Counter(static_cast<double>(owner.count()) /
                                                  std::max<double>(1, static_cast<double>(frames)));
}

// The ceiling for BM_SharedFrameProducers: the same threads, frames, sizes and ring doing nothing
// but the memcpy of every upload into the frame's memory (each thread into its own part, packed).
// `records`: each thread also writes a 24-byte record per upload (offset, size, payload, as a
// SharedFrame writer's log does) into its own array, and the owner reads every record after the
// round (as finish() collects them): the data flow of a frame without the library.
// `split`: Split::Jobs copies job j's uploads into the j-th part of the frame, whichever thread
// claimed it (records: Split::Threads only).
void memcpy_ceiling(benchmark::State& state, CrewWait wait, bool records = false,
                    Split split = Split::Threads) {
  const auto threads = static_cast<unsigned>(state.range(0));
  const auto size = static_cast<uint64_t>(state.range(1));
  const uint64_t slot = (size + 15) / 16 * 16;
  FrameMemory memory(slot * (kUploadsPerThread + 64) * threads,
                     static_cast<unsigned>(state.range(2)));
  std::span<std::byte> current;  // set by the owner between rounds only
  struct Record {
    uint64_t offset, size, payload;
  };
  std::vector<std::vector<Record>> logs(threads, std::vector<Record>(kUploadsPerThread));
  JobCounter jobs(threads);
  Crew crew(
      threads,
      [&](unsigned t) {
        thread_local std::vector<std::byte> source;
        source.assign(static_cast<std::size_t>(size), std::byte{0x5A});
        if (split == Split::Jobs) {
          jobs.drain([&](uint64_t job) {
            std::byte* out = current.data() + job * kJobUploads * slot;
            for (uint64_t i = 0; i < kJobUploads; ++i)
              std::memcpy(out + i * slot, source.data(), static_cast<std::size_t>(size));
          });
          benchmark::ClobberMemory();
          return;
        }
        const uint64_t first = t * slot * kUploadsPerThread;
        std::byte* out = current.data() + first;
        Record* log = logs[t].data();
        for (uint64_t i = 0; i < kUploadsPerThread; ++i) {
          std::memcpy(out + i * slot, source.data(), static_cast<std::size_t>(size));
          if (records) log[i] = Record{first + i * slot, size, t * kUploadsPerThread + i};
        }
        benchmark::ClobberMemory();
      },
      wait);
  std::chrono::nanoseconds copying{0};
  uint64_t frames = 0;
  for (auto _ : state) {
    current = memory.frame(frames++);
    jobs.reset();
    copying += crew.round();
    if (records) {
      uint64_t sum = 0;
      for (const auto& log : logs) {
        for (const Record& r : log)
          sum += r.offset + r.payload;
      }
      benchmark::DoNotOptimize(sum);
    }
  }
  count_uploads(state, threads, size);
  state.counters["placing_rate"] = upload_rate(state, threads, copying);
}

// Rows: threads x upload size x ring frames. A ring of 4 frames (1 where 4 frames would pass
// 1 GiB) is what a staging ring gives; 1 frame reused is the cache-warm case.
void frame_rows_of(benchmark::internal::Benchmark* b, std::initializer_list<int64_t> sizes) {
  for (const int64_t size : sizes) {
    for (const int64_t threads : {1, 2, 4, 8, 16}) {
      const int64_t frame_bytes = (size + (64 << 10) / 64) * 4096 * threads;
      b->Args({threads, size, frame_bytes * 4 <= (int64_t{1} << 30) ? 4 : 1});
      if (size == 256) b->Args({threads, size, 1});
    }
  }
}
void frame_rows(benchmark::internal::Benchmark* b) {
  frame_rows_of(b, {256, 4096, 65536});
}
void BM_SharedFrameProducers(benchmark::State& state) {
  shared_frame_producers(state, CrewWait::Barrier);
}
void BM_MemcpyCeiling(benchmark::State& state) {
  memcpy_ceiling(state, CrewWait::Barrier);
}
BENCHMARK(BM_SharedFrameProducers)->Apply(frame_rows)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MemcpyCeiling)->Apply(frame_rows)->UseRealTime()->Unit(benchmark::kMicrosecond);

// The same with hot producers (CrewWait::Hot): what the frames cost without the wake-ups between
// them, for 256 B uploads (the rows where a frame is shortest and a wake-up weighs most).
void hot_rows(benchmark::internal::Benchmark* b) {
  for (const int64_t ring : {1, 4}) {
    for (const int64_t threads : {1, 8, 16})
      b->Args({threads, 256, ring});
  }
}
// The frame rows with the uploads shared out as jobs (Split::Jobs): 256 B (ring 4 and 1) and
// 4 KiB, as frame_rows.
void jobs_rows(benchmark::internal::Benchmark* b) {
  frame_rows_of(b, {256, 4096});
}
void BM_SharedFrameProducersJobs(benchmark::State& state) {
  shared_frame_producers(state, CrewWait::Barrier, true, Split::Jobs);
}
void BM_MemcpyCeilingJobs(benchmark::State& state) {
  memcpy_ceiling(state, CrewWait::Barrier, false, Split::Jobs);
}
BENCHMARK(BM_SharedFrameProducersJobs)
    ->Apply(jobs_rows)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MemcpyCeilingJobs)->Apply(jobs_rows)->UseRealTime()->Unit(benchmark::kMicrosecond);

// Joined placements (256 B, as frame_rows' 256 B rows).
void joined_rows(benchmark::internal::Benchmark* b) {
  for (const int64_t ring : {4, 1}) {
    for (const int64_t threads : {1, 2, 4, 8, 16})
      b->Args({threads, 256, ring});
  }
}
void BM_SharedFrameProducersJoined(benchmark::State& state) {
  shared_frame_producers<JoinedDestination>(state, CrewWait::Barrier);
}
BENCHMARK(BM_SharedFrameProducersJoined)
    ->Apply(joined_rows)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void BM_SharedFrameProducersHot(benchmark::State& state) {
  shared_frame_producers(state, CrewWait::Hot);
}
void BM_MemcpyCeilingHot(benchmark::State& state) {
  memcpy_ceiling(state, CrewWait::Hot);
}
BENCHMARK(BM_SharedFrameProducersHot)
    ->Apply(hot_rows)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MemcpyCeilingHot)->Apply(hot_rows)->UseRealTime()->Unit(benchmark::kMicrosecond);

// Where a many-writer frame's time goes, 256 B uploads, 1 and 8 threads at a barrier: placement
// alone (no bytes written; also hot), and the memcpy ceiling with a record per upload that the
// owner reads after each frame.
void cost_rows(benchmark::internal::Benchmark* b) {
  for (const int64_t ring : {1, 4}) {
    for (const int64_t threads : {1, 8})
      b->Args({threads, 256, ring});
  }
}
void BM_SharedFramePlaceOnly(benchmark::State& state) {
  shared_frame_producers(state, CrewWait::Barrier, false);
}
void BM_SharedFramePlaceOnlyHot(benchmark::State& state) {
  shared_frame_producers(state, CrewWait::Hot, false);
}
void BM_MemcpyCeilingRecorded(benchmark::State& state) {
  memcpy_ceiling(state, CrewWait::Barrier, true);
}
BENCHMARK(BM_SharedFramePlaceOnly)->Apply(cost_rows)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SharedFramePlaceOnlyHot)
    ->Apply(cost_rows)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MemcpyCeilingRecorded)->Apply(cost_rows)->UseRealTime()->Unit(benchmark::kMicrosecond);
// Placement alone with joined placements: a writer's uploads back to back in one destination
// leave one record entry per block, not one per upload (what the entry stores cost).
void BM_SharedFramePlaceOnlyJoinedHot(benchmark::State& state) {
  shared_frame_producers<JoinedDestination>(state, CrewWait::Hot, false);
}
BENCHMARK(BM_SharedFramePlaceOnlyJoinedHot)
    ->Apply(cost_rows)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// The host's own scaling of CPU work: state.range(0) threads (persistent, at a barrier) each run
// `work` (uint64_t seed -> uint64_t, touching no memory) once per round. One thread's time is the
// core's speed alone; a longer round with more threads means each core runs slower while the
// others are busy. `slowdown`: the round's time over the quickest of three runs of `work` alone
// first (1.0: no loss).
template <class Work>
void core_slowdown(benchmark::State& state, Work work) {
  const auto threads = static_cast<unsigned>(state.range(0));
  std::vector<uint64_t> out(threads);
  std::chrono::duration<double> alone{1.0};  // the quickest of 3 runs on this thread alone
  for (int i = 0; i < 3; ++i) {
    const auto begin = std::chrono::steady_clock::now();
    out[0] = work(out[0] + 1);
    alone =
        std::min<std::chrono::duration<double>>(alone, std::chrono::steady_clock::now() - begin);
  }
  Crew crew(threads, [&](unsigned t) { out[t] = work(out[t] + t); });
  std::chrono::nanoseconds rounds{0};
  for (auto _ : state)
    rounds += crew.round();
  benchmark::DoNotOptimize(out.data());
  const double per_round =
      std::chrono::duration<double>(rounds).count() / static_cast<double>(state.iterations());
  state.counters["slowdown"] = per_round / std::max(1e-9, alone.count());
}

// Rows: 1, 2, 4, 8 and 16 threads.
void core_rows(benchmark::internal::Benchmark* b) {
  for (const int64_t threads : {1, 2, 4, 8, 16})
    b->Arg(threads);
}

// One chain of 2^18 dependent multiply-adds per thread (about 0.3 ms on one core): its latency.
// A slowdown here is a lower all-core clock (or cores time-shared): the most any per-upload CPU
// work can scale on this host.
void BM_CoreSpeed(benchmark::State& state) {
  core_slowdown(state, [](uint64_t x) {
    for (uint32_t i = 0; i < (1u << 18); ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      benchmark::DoNotOptimize(x);
    }
    return x;
  });
}
BENCHMARK(BM_CoreSpeed)->Apply(core_rows)->UseRealTime()->Unit(benchmark::kMicrosecond);

// 8 independent chains per thread instead of one: the core's throughput of multiply-adds, not
// their latency. Two hardware threads that share a core barely slow each other's single chain
// (each waits on its own latency) but halve each other's throughput, so a `slowdown` here well
// above BM_CoreSpeed's means busy threads share cores' units: work that keeps a core busy (a
// writer's placement) then scales less than the thread count. 2^18 steps (about 0.4 ms on one
// core); the same work as staging-cpu-pairs' (tools/support/core_work.hpp).
void BM_CoreThroughput(benchmark::State& state) {
  core_slowdown(state, [](uint64_t seed) { return independent_chains(seed, 1u << 18); });
}
BENCHMARK(BM_CoreThroughput)->Apply(core_rows)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
