// The core over your own memory: a ByteRing places uploads in staging regions this program
// allocates (here plain host memory; in a backend, mapped GPU-visible memory), and a queue of
// its own (here a worker thread playing the GPU's copy engine) tells it what has completed.
// Uploads of random sizes and random bytes are copied into a "device" buffer through a ring much
// smaller than the total; every byte of the destination is checked at the end. Exit status: 0 on
// success, 1 a failure, 2 a usage error (it takes no arguments but --help).
#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <staging/core/byte_ring.hpp>
#include <staging/core/timeline.hpp>
#include <thread>
#include <vector>

#include "cli.hpp"
#include "exception_exit.hpp"

namespace {

// Your memory: one host allocation per region the ring asks for. Called on the ring's thread.
class HostRegions final : public staging::RegionAllocator {
 public:
  staging::Expected<void, staging::AllocError> create_region(uint32_t region,
                                                             uint64_t bytes) override {
    std::lock_guard lock(mutex_);
    regions_[region].assign(bytes, std::byte{0});
    return {};
  }
  void destroy_region(uint32_t region) noexcept override {
    std::lock_guard lock(mutex_);
    regions_.erase(region);
  }
  std::byte* data(uint32_t region) {
    std::lock_guard lock(mutex_);
    return regions_.at(region).data();
  }

 private:
  std::mutex mutex_;
  std::map<uint32_t, std::vector<std::byte>> regions_;
};

// Your queue: copies submitted with the timeline value they signal, carried out in order by a
// worker thread (the "GPU"). completed() and wait() are what the ring's owner reads.
class CopyQueue final : public staging::CompletionSource {
 public:
  struct Copy {
    const std::byte* src;
    std::byte* dst;
    uint64_t size;
    staging::TimelineValue signal;
  };
  CopyQueue() : worker_([this] { run(); }) {}
  ~CopyQueue() override {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  void submit(Copy copy) {
    {
      std::lock_guard lock(mutex_);
      pending_.push_back(copy);
    }
    cv_.notify_all();
  }
  staging::TimelineValue completed() override {
    std::lock_guard lock(mutex_);
    return completed_;
  }
  staging::TimelineValue wait(staging::TimelineValue value, staging::Duration timeout) override {
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, timeout, [&] { return completed_ >= value; });
    return completed_;
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !pending_.empty(); });
      if (pending_.empty()) return;
      const Copy copy = pending_.front();
      pending_.pop_front();
      lock.unlock();
      std::memcpy(copy.dst, copy.src, copy.size);  // the GPU reads the staging bytes here
      lock.lock();
      completed_ = copy.signal;
      cv_.notify_all();
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Copy> pending_;
  staging::TimelineValue completed_ = 0;
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace

int main(int argc, char** argv) try {
  CLI::App app{
      "staging-example-core: a ByteRing over host memory and a worker-thread queue, every "
      "byte checked (no GPU).",
      "staging-example-core"};
  if (const std::optional<int> exit = staging::tools::parse(app, argc, argv)) return *exit;

  HostRegions memory;
  CopyQueue queue;
  // [snippet:ring]
  // 1 MiB of staging, never more: a full ring waits (bounded) for the queue's timeline.
  staging::ByteRingConfig config;
  config.capacity = 1 << 20;
  config.policy = staging::ExhaustionPolicy::Wait;
  config.wait_timeout = std::chrono::seconds(5);
  // HostRegions, our RegionAllocator: creates and destroys regions.
  auto ring = staging::ByteRing::create(config, memory).value();
  // [snippet-end]

  std::mt19937_64 rng(20261130);
  std::vector<std::byte> device(64 << 20);  // the destination, 64x the ring
  std::vector<std::byte> expected(device.size());
  for (auto& b : expected)
    b = static_cast<std::byte>(rng());

  uint64_t dst_offset = 0;
  staging::TimelineValue next = 1;
  while (dst_offset < device.size()) {
    const uint64_t size = std::min<uint64_t>(1 + rng() % (256 << 10), device.size() - dst_offset);
    // [snippet:upload]
    // Reserve staging for a copy that signals `next`; on a miss this reads the queue's completed
    // value, retires what finished and, under Wait, waits for the oldest token that frees enough.
    staging::ReserveRequest request;
    request.size = size;
    request.alignment = 256;
    request.token = next;
    auto reservation = staging::reserve_waiting(ring, queue, request);
    if (!reservation) {
      std::fprintf(stderr, "reserve: %s\n", staging::describe(reservation.error()).c_str());
      return 1;
    }
    // Where the region's bytes are: HostRegions::data (ours; a RegionAllocator need not say).
    std::byte* staging_bytes = memory.data(reservation->region) + reservation->offset;
    std::memcpy(staging_bytes, expected.data() + dst_offset, size);         // write the upload
    queue.submit({staging_bytes, device.data() + dst_offset, size, next});  // signals `next`
    // [snippet-end]
    dst_offset += size;
    ++next;
  }
  // Done: wait for the last copy and hand the completed value to the ring.
  ring.retire(queue.wait(next - 1, std::chrono::seconds(10)));

  const bool equal = device == expected;
  std::printf("%llu uploads, %llu MiB through a 1 MiB ring; live reservations %llu\n%s",
              static_cast<unsigned long long>(next - 1),
              static_cast<unsigned long long>(device.size() >> 20),
              static_cast<unsigned long long>(ring.live()),
              staging::format_stats(ring.stats()).c_str());
  std::printf("byte check: %s\n", equal ? "passed" : "FAILED");
  return equal && ring.live() == 0 ? 0 : 1;
} catch (...) {
  return staging::tools::exception_exit("staging-example-core");
}
