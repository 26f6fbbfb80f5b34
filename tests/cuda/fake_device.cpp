#include "fake_device.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace staging::cuda::testing {

FakeDevice::FakeDevice(std::chrono::microseconds max_op_delay, uint64_t seed)
    : max_delay_(max_op_delay), rng_(seed * 0x9E3779B97F4A7C15ull + 1) {
  create_stream();  // streams_[0]: the null stream
}

FakeDevice::~FakeDevice() {
  {
    std::lock_guard lock(mu_);
    for (auto& [id, gate] : gates_)
      gate.open = true;
  }
  progress_cv_.notify_all();
  for (auto& s : streams_) {
    {
      std::lock_guard lock(s->mu);
      s->stop = true;
    }
    s->cv.notify_all();
    s->thread.join();
  }
  for (auto& [ptr, bytes] : pinned_)
    std::free(const_cast<std::byte*>(ptr));
  for (Event* e : events_)
    delete e;
}

cudaStream_t FakeDevice::create_stream() {
  auto s = std::make_unique<Stream>();
  Stream* raw = s.get();
  raw->thread = std::thread([this, raw] { run(*raw); });
  std::lock_guard lock(mu_);
  streams_.push_back(std::move(s));
  // The first stream is the null stream (handle 0); the others are their own address.
  return streams_.size() == 1 ? nullptr : reinterpret_cast<cudaStream_t>(raw);
}

FakeDevice::Stream* FakeDevice::stream_of(cudaStream_t s) {
  std::lock_guard lock(mu_);
  if (s == nullptr) return streams_[0].get();
  for (auto& st : streams_) {
    if (reinterpret_cast<cudaStream_t>(st.get()) == s) return st.get();
  }
  return nullptr;
}

FakeDevice::Event* FakeDevice::event_of(cudaEvent_t e) {
  std::lock_guard lock(mu_);
  auto* ev = reinterpret_cast<Event*>(e);
  return events_.count(ev) != 0 ? ev : nullptr;
}

void FakeDevice::enqueue(Stream& s, std::function<void()> op) {
  {
    std::lock_guard lock(s.mu);
    s.ops.push_back(std::move(op));
  }
  s.cv.notify_all();
}

void FakeDevice::run(Stream& s) {
  std::unique_lock lock(s.mu);
  for (;;) {
    s.cv.wait(lock, [&] { return s.stop || !s.ops.empty(); });
    if (s.ops.empty()) return;
    std::function<void()> op = std::move(s.ops.front());
    s.ops.pop_front();
    if (halted_.load()) {  // a lost device runs nothing more
      s.cv.notify_all();   // (synchronize() waits for the queue to empty)
      continue;
    }
    s.busy = true;
    lock.unlock();
    if (max_delay_.count() > 0) {
      uint64_t r;
      {
        std::lock_guard rl(rng_mu_);
        rng_ ^= rng_ << 13;
        rng_ ^= rng_ >> 7;
        rng_ ^= rng_ << 17;
        r = rng_;
      }
      std::this_thread::sleep_for(
          std::chrono::microseconds(r % static_cast<uint64_t>(max_delay_.count() + 1)));
    }
    op();
    lock.lock();
    s.busy = false;
    s.cv.notify_all();
  }
}

void FakeDevice::synchronize(cudaStream_t stream) {
  Stream* s = stream_of(stream);
  if (s == nullptr) return;
  std::unique_lock lock(s->mu);
  s->cv.wait(lock, [&] { return s->ops.empty() && !s->busy; });
}

void FakeDevice::synchronize_all() {
  std::vector<Stream*> all;
  {
    std::lock_guard lock(mu_);
    for (auto& s : streams_)
      all.push_back(s.get());
  }
  for (Stream* s : all) {
    std::unique_lock lock(s->mu);
    s->cv.wait(lock, [&] { return s->ops.empty() && !s->busy; });
  }
}

std::byte* FakeDevice::device_alloc(std::size_t bytes) {
  auto block = std::make_unique<std::byte[]>(bytes == 0 ? 1 : bytes);
  std::memset(block.get(), 0, bytes);
  std::byte* p = block.get();
  std::lock_guard lock(mu_);
  device_[p] = bytes;
  device_blocks_.push_back(std::move(block));
  return p;
}

int FakeDevice::close_gate(cudaStream_t stream, std::chrono::milliseconds watchdog) {
  Stream* s = stream_of(stream);
  int id;
  {
    std::lock_guard lock(mu_);
    id = next_gate_++;
    gates_[id] = Gate{};
  }
  enqueue(*s, [this, id, watchdog] {
    std::unique_lock lock(mu_);
    if (!progress_cv_.wait_for(lock, watchdog, [&] { return gates_[id].open || halted_.load(); })) {
      violations_.push_back("gate " + std::to_string(id) + " released by its watchdog");
    }
  });
  return id;
}

void FakeDevice::open_gate(int id) {
  {
    std::lock_guard lock(mu_);
    gates_[id].open = true;
  }
  progress_cv_.notify_all();
}

void FakeDevice::halt() {
  halted_.store(true);
  {
    std::lock_guard lock(mu_);  // a gate waiting under mu_ sees halted_ when notified
  }
  progress_cv_.notify_all();
  std::vector<Stream*> all;
  {
    std::lock_guard lock(mu_);
    for (auto& st : streams_)
      all.push_back(st.get());
  }
  for (Stream* st : all) {
    std::unique_lock lock(st->mu);
    st->cv.wait(lock, [&] { return !st->busy; });
  }
}

void FakeDevice::fail_copies(cudaError_t error, int count) {
  std::lock_guard lock(mu_);
  copy_error_ = error;
  failing_copies_ = count;
}

void FakeDevice::fail_queries(cudaError_t error) {
  std::lock_guard lock(mu_);
  query_error_ = error;
}

void FakeDevice::set_capturing(cudaStream_t stream, bool capturing) {
  Stream* s = stream_of(stream);
  std::lock_guard lock(s->mu);
  s->capturing = capturing;
}

std::vector<std::string> FakeDevice::violations() const {
  std::lock_guard lock(mu_);
  return violations_;
}

void FakeDevice::violation(std::string what) {
  std::lock_guard lock(mu_);
  violations_.push_back(std::move(what));
}

// Callers hold mu_.
bool FakeDevice::in_pinned(const void* p, std::size_t bytes) {
  const auto* b = static_cast<const std::byte*>(p);
  auto it = pinned_.upper_bound(b);
  if (it == pinned_.begin()) return false;
  --it;
  return b >= it->first && b + bytes <= it->first + it->second;
}

bool FakeDevice::in_device(const void* p, std::size_t bytes) {
  const auto* b = static_cast<const std::byte*>(p);
  auto it = device_.upper_bound(b);
  if (it == device_.begin()) return false;
  --it;
  return b >= it->first && b + bytes <= it->first + it->second;
}

cudaError_t FakeDevice::host_alloc(void** ptr, std::size_t bytes, unsigned) noexcept {
  void* p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  if (p == nullptr) return cudaErrorMemoryAllocation;
  std::memset(p, 0xA5, bytes);
  {
    std::lock_guard lock(mu_);
    pinned_[static_cast<const std::byte*>(p)] = bytes;
  }
  ++host_allocs_;
  host_bytes_ += bytes;
  *ptr = p;
  return cudaSuccess;
}

cudaError_t FakeDevice::host_free(void* ptr) noexcept {
  std::size_t bytes;
  {
    std::lock_guard lock(mu_);
    auto it = pinned_.find(static_cast<const std::byte*>(ptr));
    if (it == pinned_.end()) {
      violations_.push_back("host_free of memory not from host_alloc");
      return cudaErrorInvalidValue;
    }
    bytes = it->second;
    pinned_.erase(it);
  }
  host_bytes_ -= bytes;
  std::free(ptr);
  return cudaSuccess;
}

cudaError_t FakeDevice::event_create(cudaEvent_t* event) noexcept {
  auto* e = new Event;
  {
    std::lock_guard lock(mu_);
    events_.insert(e);
  }
  ++events_created_;
  ++events_live_;
  *event = reinterpret_cast<cudaEvent_t>(e);
  return cudaSuccess;
}

cudaError_t FakeDevice::event_create_timed(cudaEvent_t* event) noexcept {
  const cudaError_t err = event_create(event);
  if (err == cudaSuccess) reinterpret_cast<Event*>(*event)->timed = true;
  return err;
}

cudaError_t FakeDevice::event_elapsed(float* ms, cudaEvent_t start, cudaEvent_t end) noexcept {
  Event* a = event_of(start);
  Event* b = event_of(end);
  if (a == nullptr || b == nullptr || !a->timed || !b->timed) {
    violation("event_elapsed of an unknown or untimed event");
    return cudaErrorInvalidResourceHandle;
  }
  const auto reached = [](const Event* e) {
    const uint64_t recorded = e->recorded.load();
    return recorded != 0 && e->completed.load() >= recorded;
  };
  if (!reached(a) || !reached(b)) return cudaErrorNotReady;
  *ms = static_cast<float>(static_cast<double>(b->reached_ns.load() - a->reached_ns.load()) / 1e6);
  return cudaSuccess;
}

cudaError_t FakeDevice::event_destroy(cudaEvent_t event) noexcept {
  // Kept allocated (a stream may still complete it, as CUDA allows); only counted.
  if (event_of(event) == nullptr) {
    violation("event_destroy of an unknown event");
    return cudaErrorInvalidResourceHandle;
  }
  --events_live_;
  return cudaSuccess;
}

cudaError_t FakeDevice::event_record(cudaEvent_t event, cudaStream_t stream) noexcept {
  Event* e = event_of(event);
  Stream* s = stream_of(stream);
  if (e == nullptr || s == nullptr) {
    violation("event_record with an unknown event or stream");
    return cudaErrorInvalidResourceHandle;
  }
  const uint64_t gen = e->recorded.fetch_add(1) + 1;
  enqueue(*s, [this, e, gen] {
    {
      std::lock_guard lock(mu_);
      e->reached_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::steady_clock::now().time_since_epoch())
                              .count());
      uint64_t c = e->completed.load();
      while (c < gen && !e->completed.compare_exchange_weak(c, gen)) {
      }
    }
    progress_cv_.notify_all();
  });
  return cudaSuccess;
}

cudaError_t FakeDevice::event_query(cudaEvent_t event) noexcept {
  {
    std::lock_guard lock(mu_);
    if (query_error_ != cudaSuccess) return query_error_;
  }
  Event* e = event_of(event);
  if (e == nullptr) {
    violation("event_query of an unknown event");
    return cudaErrorInvalidResourceHandle;
  }
  return e->completed.load() >= e->recorded.load() ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t FakeDevice::stream_wait_event(cudaStream_t stream, cudaEvent_t event) noexcept {
  Event* e = event_of(event);
  Stream* s = stream_of(stream);
  if (e == nullptr || s == nullptr) {
    violation("stream_wait_event with an unknown event or stream");
    return cudaErrorInvalidResourceHandle;
  }
  const uint64_t gen = e->recorded.load();
  enqueue(*s, [this, e, gen] {
    std::unique_lock lock(mu_);
    progress_cv_.wait(lock, [&] { return e->completed.load() >= gen || halted_.load(); });
  });
  return cudaSuccess;
}

cudaError_t FakeDevice::stream_is_capturing(cudaStream_t stream, bool* capturing) noexcept {
  Stream* s = stream_of(stream);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  std::lock_guard lock(s->mu);
  *capturing = s->capturing;
  return cudaSuccess;
}

cudaError_t FakeDevice::copy_to_device_async(void* dst, const void* src, std::size_t bytes,
                                             cudaStream_t stream) noexcept {
  return copy(dst, src, bytes, stream, /*pageable=*/false);
}

cudaError_t FakeDevice::copy_pageable_to_device_async(void* dst, const void* src, std::size_t bytes,
                                                      cudaStream_t stream) noexcept {
  return copy(dst, src, bytes, stream, /*pageable=*/true);
}

// A copy to device memory: checked, then run by the stream (reading `src` only then).
cudaError_t FakeDevice::copy(void* dst, const void* src, std::size_t bytes, cudaStream_t stream,
                             bool pageable) noexcept {
  Stream* s = stream_of(stream);
  {
    std::lock_guard lock(mu_);
    if (failing_copies_ > 0) {
      --failing_copies_;
      return copy_error_;
    }
    if (s == nullptr) {
      violations_.push_back("copy on an unknown stream");
      return cudaErrorInvalidResourceHandle;
    }
    // A pinned copy reads a live pinned allocation; a pageable one reads none.
    const bool source_ok = pageable ? !in_pinned(src, 1) : in_pinned(src, bytes);
    if (bytes == 0 || !source_ok || !in_device(dst, bytes)) {
      violations_.push_back(std::string(pageable ? "pageable" : "pinned") + " copy of " +
                            std::to_string(bytes) +
                            " bytes from the wrong memory or outside "
                            "the device allocations");
      return cudaErrorInvalidValue;
    }
  }
  if (pageable) {
    ++pageable_copies_;
    pageable_bytes_ += bytes;
  }
  enqueue(*s, [this, dst, src, bytes] {
    std::memcpy(dst, src, bytes);
    ++copies_run_;
  });
  return cudaSuccess;
}

cudaError_t FakeDevice::stream_query(cudaStream_t stream) noexcept {
  Stream* s = stream_of(stream);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  std::lock_guard lock(s->mu);
  return s->ops.empty() && !s->busy ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t FakeDevice::host_numa_node(int* node) noexcept {
  *node = numa_node_.load();
  return cudaSuccess;
}

cudaError_t FakeDevice::address_range(const void* ptr, void** base, std::size_t* size) noexcept {
  const auto* p = static_cast<const std::byte*>(ptr);
  std::lock_guard lock(mu_);
  auto it = device_.upper_bound(p);
  if (it == device_.begin()) return cudaErrorInvalidValue;
  --it;
  if (p >= it->first + std::max<std::size_t>(it->second, 1)) return cudaErrorInvalidValue;
  *base = const_cast<std::byte*>(it->first);
  *size = it->second;
  return cudaSuccess;
}

}  // namespace staging::cuda::testing
