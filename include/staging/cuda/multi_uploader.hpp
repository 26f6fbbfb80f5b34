// MultiUploader: uploads to every GPU of the host from one CPU budget and one pinned-memory cap.
//
// One Uploader per device, each with its own pinned ring (an equal share of one total cap, held
// by a PinnedBudget they all charge), and one fill pool that all of them share, so that N devices
// uploading at once use the pool's threads instead of N × their own. Where the devices hang off
// different NUMA nodes, there is one pool per node instead, its threads kept on that node, shared
// by that node's devices (their rings are filled by CPUs near their PCIe root).
//
//   devices 0 1 (node 0)  2 3 (node 1)
//   pools   [node 0: 8 threads] -> rings 0, 1      [node 1: 8 threads] -> rings 2, 3
//   budget  4 x 64 MiB rings <= pinned_bytes
//
// Each upload goes to one device: upload(index, ...) is Uploader::upload on that device's
// Uploader (uploader(index) for the rest of its API). Several threads may upload to several
// devices at once. Each device's Uploader queues its pieces in a lane of its own in the shared
// pool, and the pool's threads serve the lanes with work in turn: one device's queued ring never
// holds back another device's next piece.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "staging/core/fill_pool.hpp"
#include "staging/cuda/uploader.hpp"

namespace staging::cuda {

/// How a MultiUploader is made. Validated by MultiUploader::create.
struct MultiUploaderConfig {
  /// The CUDA devices, each at most once; empty: every device the runtime sees.
  std::vector<int> devices;
  /// Pinned bytes of all rings together; each device's ring gets an equal share (rounded down to
  /// the alignment, > 0). 0: uploader.ring_bytes per device.
  uint64_t pinned_bytes = 0;
  /// Fill threads of all pools together; 0: one per usable CPU minus one per device (the
  /// uploading threads fill too), at most 12 per device, at least 1 per pool.
  unsigned fill_threads = 0;
  /// Where the pools' threads run (see ThreadPinning; Node keeps each pool on its devices' node).
  ThreadPinning pinning = ThreadPinning::Node;
  /// The rest of each device's Uploader configuration; ring_bytes (unless pinned_bytes is 0),
  /// device, fill_pool, fill_threads and pinned_budget are set per device. Its observer is given
  /// to every device's Uploader: it is called from several of them at once (it must be
  /// thread-safe), and its events do not say which device they come from.
  UploaderConfig uploader;
};

class MultiUploader;

namespace detail {
/// MultiUploader::create with device i's CUDA calls made through apis[i] (devices 0 ..
/// apis.size() - 1; config.devices is not used), each of which must outlive the MultiUploader,
/// and the pools grouped and pinned by `topology` (null: the host's own). A null entry in `apis`
/// is MissingDependency.
Expected<MultiUploader, CreateError> create_multi_uploader(const MultiUploaderConfig& config,
                                                           std::span<DeviceApi* const> apis,
                                                           const HostTopology* topology = nullptr);
}  // namespace detail

/// See the file comment.
///
/// Ownership: owns the Uploaders, the pools and the budget. Movable; a moved-from MultiUploader may
/// only be destroyed or assigned to. Threading: every member is safe from any thread (as Uploader's
/// are).
class MultiUploader {
 public:
  /// Creates the pools (grouped and pinned by the host's NUMA layout), the budget and one
  /// Uploader per device of config.devices, through the CUDA runtime. Errors: those of
  /// Uploader::create (InvalidConfig also for a device listed twice or a share of 0 bytes;
  /// NoDevice for no device at all or an index out of range).
  static Expected<MultiUploader, CreateError> create(const MultiUploaderConfig& config);

  /// Takes `other`'s devices, pools and budget; `other` may then only be destroyed or assigned to.
  MultiUploader(MultiUploader&& other) noexcept;
  /// Destroys what *this holds (as the destructor does), then takes `other`'s.
  MultiUploader& operator=(MultiUploader&& other) noexcept;
  MultiUploader(const MultiUploader&) = delete;
  MultiUploader& operator=(const MultiUploader&) = delete;
  /// Destroys the Uploaders (each waits for its copies, see ~Uploader), then the pools.
  ~MultiUploader();

  /// The number of devices.
  [[nodiscard]] std::size_t size() const noexcept;
  /// The CUDA device index of entry `index` (< size(); every `index` below must be, else the
  /// process aborts with a message).
  [[nodiscard]] int device(std::size_t index) const;
  /// The host NUMA node entry `index`'s device is closest to (-1: unknown or a single node).
  [[nodiscard]] int numa_node(std::size_t index) const;
  /// Entry `index`'s Uploader (< size()), for its whole API (reserve, wait, stream_wait, ...).
  [[nodiscard]] Uploader& uploader(std::size_t index);
  /// Uploader::upload on entry `index`'s Uploader (< size()); `stream` belongs to that device.
  Expected<TimelineValue, UploadFailure> upload(std::size_t index, void* device_dst,
                                                const void* host_src, uint64_t bytes,
                                                cudaStream_t stream,
                                                const UploadOptions& options = {});
  /// The fill pools (one, or one per NUMA node that has devices).
  [[nodiscard]] const std::vector<std::shared_ptr<FillPool>>& pools() const noexcept;
  /// The shared pinned-memory budget: held(), peak() and cap() over every device's ring. Each
  /// device's counters are uploader(i).stats(); each pool's, pools()[j]->stats().
  [[nodiscard]] const PinnedBudget& budget() const noexcept;

 private:
  friend Expected<MultiUploader, CreateError> detail::create_multi_uploader(
      const MultiUploaderConfig& config, std::span<DeviceApi* const> apis,
      const HostTopology* topology);
  static Expected<MultiUploader, CreateError> create_with(const MultiUploaderConfig& config,
                                                          std::span<DeviceApi* const> apis,
                                                          const HostTopology* topology);
  struct Impl;
  explicit MultiUploader(std::unique_ptr<Impl> impl) noexcept;
  std::unique_ptr<Impl> impl_;
};

}  // namespace staging::cuda
