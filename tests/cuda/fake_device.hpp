// FakeDevice: a DeviceApi without a GPU, for running the whole Uploader (ring, events, fill
// threads, pipeline) on any machine.
//
// "Device memory" is host memory handed out by device_alloc(); each stream is a CPU thread that
// runs the stream's operations in order (copies, event records, waits, gates), each after an
// optional random delay, so that the copies read the pinned ring late — exactly when a ring that
// reused bytes too early would hand them wrong data. Tests then compare every device byte.
//
// Checks made on every call: a copy's source lies inside a live pinned allocation (pageable copies:
// outside every pinned one) and its destination inside a device allocation (else
// cudaErrorInvalidValue and a recorded violation); events and streams are ones this device made.
// A pageable copy reads its source when the stream runs it, not when it is called (as a driver
// that does not stage the bytes may): a caller that reused the source too early sees wrong bytes.
//
// Several devices: one FakeDevice per device; host_numa_node() answers what set_host_numa_node()
// said (-1 at first). address_range() answers from the device_alloc() blocks, as
// cuMemGetAddressRange does from the driver's allocations.
//
// Threading: every DeviceApi method and helper is safe from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "staging/detail/cuda/device_api.hpp"

namespace staging::cuda::testing {

class FakeDevice final : public DeviceApi {
 public:
  /// Streams run each operation after a random delay in [0, max_op_delay] (0: none).
  explicit FakeDevice(std::chrono::microseconds max_op_delay = std::chrono::microseconds(0),
                      uint64_t seed = 1);
  ~FakeDevice() override;
  FakeDevice(const FakeDevice&) = delete;
  FakeDevice& operator=(const FakeDevice&) = delete;

  // --- test helpers ---------------------------------------------------------------------------

  /// A new stream (its own thread). The null stream (0) exists from the start.
  cudaStream_t create_stream();
  /// Blocks until every operation queued on `stream` so far has run.
  void synchronize(cudaStream_t stream);
  /// Blocks until every stream is idle.
  void synchronize_all();
  /// `bytes` of zero-initialised "device memory"; lives as long as the FakeDevice.
  std::byte* device_alloc(std::size_t bytes);

  /// A gate on `stream`: operations queued after it wait until open_gate(id) (or `watchdog`
  /// passes, which counts as a violation). Returns the gate's id.
  int close_gate(cudaStream_t stream,
                 std::chrono::milliseconds watchdog = std::chrono::milliseconds(20000));
  void open_gate(int id);

  /// A lost device: from now on the streams run nothing more (queued operations are dropped,
  /// gates open, events never complete); returns once no operation is running.
  void halt();
  /// The next `count` copies return `error` without copying.
  void fail_copies(cudaError_t error, int count = 1);
  /// From now on every event query returns `error` (a lost device).
  void fail_queries(cudaError_t error);
  /// Marks `stream` as capturing a graph (stream_is_capturing reports it).
  void set_capturing(cudaStream_t stream, bool capturing);
  /// What host_numa_node() answers from now on.
  void set_host_numa_node(int node) { numa_node_.store(node); }

  /// Pinned allocations made and bytes held now.
  [[nodiscard]] int host_allocs() const { return host_allocs_.load(); }
  [[nodiscard]] uint64_t host_bytes_held() const { return host_bytes_.load(); }
  [[nodiscard]] int events_created() const { return events_created_.load(); }
  [[nodiscard]] int events_live() const { return events_live_.load(); }
  [[nodiscard]] uint64_t copies_run() const { return copies_run_.load(); }
  /// Copies from pageable memory issued (copy_pageable_to_device_async) and their bytes.
  [[nodiscard]] uint64_t pageable_copies() const { return pageable_copies_.load(); }
  [[nodiscard]] uint64_t pageable_bytes() const { return pageable_bytes_.load(); }
  /// Contract violations seen (bad copy ranges, unknown handles, gate watchdogs), one per line.
  [[nodiscard]] std::vector<std::string> violations() const;

  // --- DeviceApi --------------------------------------------------------------------------------

  cudaError_t host_alloc(void** ptr, std::size_t bytes, unsigned flags) noexcept override;
  cudaError_t host_free(void* ptr) noexcept override;
  cudaError_t event_create(cudaEvent_t* event) noexcept override;
  /// An event that also keeps the time its stream reached it (a steady clock).
  cudaError_t event_create_timed(cudaEvent_t* event) noexcept override;
  /// The distance between two timed events' times: cudaErrorNotReady while either is pending,
  /// cudaErrorInvalidResourceHandle for an event not made by event_create_timed().
  cudaError_t event_elapsed(float* ms, cudaEvent_t start, cudaEvent_t end) noexcept override;
  cudaError_t event_destroy(cudaEvent_t event) noexcept override;
  cudaError_t event_record(cudaEvent_t event, cudaStream_t stream) noexcept override;
  cudaError_t event_query(cudaEvent_t event) noexcept override;
  cudaError_t stream_wait_event(cudaStream_t stream, cudaEvent_t event) noexcept override;
  cudaError_t stream_is_capturing(cudaStream_t stream, bool* capturing) noexcept override;
  cudaError_t copy_to_device_async(void* dst, const void* src, std::size_t bytes,
                                   cudaStream_t stream) noexcept override;
  cudaError_t copy_pageable_to_device_async(void* dst, const void* src, std::size_t bytes,
                                            cudaStream_t stream) noexcept override;
  cudaError_t stream_query(cudaStream_t stream) noexcept override;
  cudaError_t host_numa_node(int* node) noexcept override;
  /// The device_alloc() block holding `ptr` (cudaErrorInvalidValue outside every one).
  cudaError_t address_range(const void* ptr, void** base, std::size_t* size) noexcept override;

 private:
  struct Event {
    std::atomic<uint64_t> recorded{0};   // generation of the latest record
    std::atomic<uint64_t> completed{0};  // generation reached by its stream
    bool timed = false;                  // made by event_create_timed
    std::atomic<int64_t> reached_ns{0};  // when its stream reached the latest record (timed)
  };
  struct Stream {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::function<void()>> ops;
    bool busy = false;
    bool stop = false;
    bool capturing = false;
    std::thread thread;
  };
  struct Gate {
    bool open = false;
  };

  Stream* stream_of(cudaStream_t s);
  Event* event_of(cudaEvent_t e);
  void enqueue(Stream& s, std::function<void()> op);
  void run(Stream& s);
  void violation(std::string what);
  cudaError_t copy(void* dst, const void* src, std::size_t bytes, cudaStream_t stream,
                   bool pageable) noexcept;
  bool in_pinned(const void* p, std::size_t bytes);
  bool in_device(const void* p, std::size_t bytes);

  std::chrono::microseconds max_delay_;
  std::mutex rng_mu_;
  uint64_t rng_;

  mutable std::mutex mu_;                // guards everything below that is not atomic
  std::condition_variable progress_cv_;  // an event completed or a gate opened
  std::vector<std::unique_ptr<Stream>> streams_;
  std::set<Event*> events_;
  std::map<const std::byte*, std::size_t> pinned_;
  std::vector<std::unique_ptr<std::byte[]>> device_blocks_;
  std::map<const std::byte*, std::size_t> device_;
  std::map<int, Gate> gates_;
  int next_gate_ = 1;
  int failing_copies_ = 0;
  cudaError_t copy_error_ = cudaSuccess;
  cudaError_t query_error_ = cudaSuccess;
  std::vector<std::string> violations_;

  std::atomic<int> host_allocs_{0};
  std::atomic<uint64_t> host_bytes_{0};
  std::atomic<int> events_created_{0};
  std::atomic<int> events_live_{0};
  std::atomic<uint64_t> copies_run_{0};
  std::atomic<uint64_t> pageable_copies_{0};
  std::atomic<uint64_t> pageable_bytes_{0};
  std::atomic<int> numa_node_{-1};
  std::atomic<bool> halted_{false};
};

}  // namespace staging::cuda::testing
