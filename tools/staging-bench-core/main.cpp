// staging-bench-core: the CPU cost per upload of the core's hot paths, without a GPU.
//
//   ByteRing reserve + retire   one reservation placed and one retired per iteration, with a
//                               steady number in flight (the ring wraps continually); checker
//                               off (the release configuration) and on (tests, debug builds);
//                               also through reserve_waiting(), the call backends make;
//   SlotLease::place            one placement into a frame's slot per iteration;
//   SharedFrame producers       N threads (1, 2, 4, 8) each placing and writing 4096 uploads of
//                               256 B / 4 KiB / 64 KiB into one shared frame, which the owner then
//                               seals and collects (sorted placements): per_upload is the
//                               wall time per upload, all threads together — the multi-producer
//                               scaling without a GPU (8 threads at 4 KiB vs 1 thread).
//
// Target: <= 50 ns per reservation for reserve + retire with the checker off.
// Every benchmark reports `per_reservation` (or `per_placement`): seconds per operation with an SI
// prefix ("37.4n" = 37.4 ns), the CPU time divided by the reservations made — for the
// ReserveRetire benchmarks the same as the Time column (one reservation per iteration), for the
// batch benchmark the iteration's time divided by its 64 reservations.
// Run: build/bin/staging-bench-core [--benchmark_filter=...] [--benchmark_repetitions=5] (--help)
// (Debian's libbenchmark warns that it was built as DEBUG: that concerns the library's own timing
// loop, not the code measured, which is built Release.)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "staging/core/byte_ring.hpp"
#include "staging/core/invariant_checker.hpp"
#include "staging/core/shared_frame.hpp"
#include "staging/core/staging_ring.hpp"
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
  auto made = ByteRing::create(config, {&allocator, nullptr, nullptr, nullptr});
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
  ByteRing ring = std::move(*ByteRing::create(config, {&allocator, nullptr, nullptr, nullptr}));
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

// SharedFrame: state.range(0) producer threads (persistent, started once) and uploads of
// state.range(1) bytes. One iteration is one frame: the owner opens it, every producer joins,
// places and memcpys 4096 uploads from its own source, and leaves; the owner finishes it (Wait)
// and so collects every placement sorted by offset. Wall time (UseRealTime); placing_rate counts
// uploads per second of the producers' phase alone. Third argument: 0 places every upload from the
// shared cursor, 1 from private runs (WriterOptions::run_bytes, run_entries).
void BM_SharedFrameProducers(benchmark::State& state) {
  struct Payload {
    uint64_t destination;
  };
  constexpr uint64_t kPerThread = 4096;
  const auto threads = static_cast<unsigned>(state.range(0));
  const auto size = static_cast<uint64_t>(state.range(1));
  const uint64_t slot = (size + 15) / 16 * 16;
  // 0: every placement takes its bytes from the shared cursor (the single-thread layout); 1: each
  // writer takes private runs of 64 placements' bytes and log entries (one atomic per run).
  staging::WriterOptions options;
  if (state.range(2) != 0) {
    options.run_bytes = slot * 64;
    options.run_entries = 64;
  }
  // Room for every writer's last run to be left partly unused.
  std::vector<std::byte> memory(static_cast<std::size_t>(slot * (kPerThread + 64) * threads));
  staging::SharedFrame<Payload> frame;
  std::barrier start(threads + 1), done(threads + 1);
  bool stop = false;
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::vector<std::byte> source(static_cast<std::size_t>(size), std::byte{0x5A});
      for (;;) {
        start.arrive_and_wait();
        if (stop) return;
        auto writer = frame.join(options).value();
        for (uint64_t i = 0; i < kPerThread; ++i) {
          auto placed = writer.place(size, 16, {t * kPerThread + i});
          if (!placed) std::abort();
          std::memcpy(placed->bytes.data(), source.data(), static_cast<std::size_t>(size));
        }
        writer.leave();
        done.arrive_and_wait();
      }
    });
  }
  std::chrono::nanoseconds placing{0};
  for (auto _ : state) {
    frame.open(memory);
    const auto begin = std::chrono::steady_clock::now();
    start.arrive_and_wait();
    done.arrive_and_wait();
    placing += std::chrono::steady_clock::now() - begin;
    auto placed = frame.finish(staging::DrainMode::Wait, std::chrono::seconds(10));
    if (!placed || placed->size() != kPerThread * threads) state.SkipWithError("lost placements");
    benchmark::DoNotOptimize(placed);
  }
  stop = true;
  start.arrive_and_wait();
  for (auto& t : pool)
    t.join();
  state.counters["per_upload"] = per_operation(state, static_cast<int64_t>(kPerThread * threads));
  // The producers' phase alone (join, place and write every upload, leave), without the owner's
  // open and finish: the upload rate the target compares across thread counts.
  const double uploads = static_cast<double>(state.iterations()) * kPerThread * threads;
  state.counters["placing_rate"] =
      benchmark::Counter(uploads / std::max(1e-9, std::chrono::duration<double>(placing).count()));
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(kPerThread * threads));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(kPerThread * threads * size));
}
BENCHMARK(BM_SharedFrameProducers)
    ->ArgsProduct({{1, 2, 4, 8}, {256, 4096, 65536}, {0, 1}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
