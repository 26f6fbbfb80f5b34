#include "staging/cuda/multi_uploader.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "staging/detail/core/assert.hpp"
#include "staging/detail/core/host_topology.hpp"

namespace staging::cuda {

namespace {

// One device of a MultiUploader.
struct DeviceEntry {
  int device = 0;
  int node = -1;
  DeviceApi* api = nullptr;              // apis[i], or owned_api
  std::unique_ptr<DeviceApi> owned_api;  // the runtime's, when create() made it
  std::optional<Uploader> uploader;
};

// The devices and their APIs: `apis` as given (device i is apis[i]), else the runtime's for
// config.devices (every device when empty).
Expected<std::vector<DeviceEntry>, CreateError> open_devices(const MultiUploaderConfig& config,
                                                             std::span<DeviceApi* const> apis) {
  std::vector<DeviceEntry> entries;
  if (!apis.empty()) {
    for (std::size_t i = 0; i < apis.size(); ++i) {
      if (apis[i] == nullptr) return unexpected(CreateError::MissingDependency);
      DeviceEntry& e = entries.emplace_back();
      e.device = static_cast<int>(i);
      e.api = apis[i];
    }
    return entries;
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    return unexpected(CreateError::NoDevice);
  }
  std::vector<int> devices = config.devices;
  if (devices.empty()) {
    for (int d = 0; d < count; ++d)
      devices.push_back(d);
  }
  if (std::set<int>(devices.begin(), devices.end()).size() != devices.size()) {
    return unexpected(CreateError::InvalidConfig);
  }
  for (int d : devices) {
    if (d < 0 || d >= count) return unexpected(CreateError::NoDevice);
    DeviceEntry& e = entries.emplace_back();
    e.device = d;
    e.owned_api = make_runtime_api(d);
    e.api = e.owned_api.get();
  }
  return entries;
}

// The devices' NUMA nodes (recorded in each entry), grouped: one group per node where the host
// has several and the devices spread over them, else one group (node -1) for all.
std::map<int, std::vector<std::size_t>> group_by_node(std::vector<DeviceEntry>& entries,
                                                      const HostTopology& topology) {
  const std::size_t n = entries.size();
  std::map<int, std::vector<std::size_t>> by_node;
  for (std::size_t i = 0; i < n; ++i) {
    int node = -1;
    if (entries[i].api->host_numa_node(&node) != cudaSuccess || topology.node(node) == nullptr) {
      node = -1;
    }
    entries[i].node = node;
    by_node[topology.multi_node() ? node : -1].push_back(i);
  }
  if (by_node.size() > 1 && by_node.count(-1) != 0) {
    // Some devices' nodes are unknown: one pool on the whole host serves every device.
    std::vector<std::size_t> all(n);
    for (std::size_t i = 0; i < n; ++i)
      all[i] = i;
    by_node = {{-1, all}};
  }
  return by_node;
}

// One fill pool per group, its threads the group's share of the total; pool_of[i] is device i's.
Expected<void, CreateError> make_pools(const MultiUploaderConfig& config,
                                       const HostTopology& topology,
                                       const std::map<int, std::vector<std::size_t>>& by_node,
                                       std::size_t n, std::vector<std::shared_ptr<FillPool>>& pools,
                                       std::vector<std::shared_ptr<FillPool>>& pool_of) {
  const unsigned cpus = static_cast<unsigned>(topology.cpus(-1).size());
  unsigned total = config.fill_threads;
  if (total == 0) {
    total = std::min<unsigned>(cpus > n ? cpus - static_cast<unsigned>(n) : 1,
                               12 * static_cast<unsigned>(n));
  }
  pool_of.assign(n, nullptr);
  for (const auto& [node, members] : by_node) {
    FillPoolConfig pc;
    pc.threads = std::max<unsigned>(1, static_cast<unsigned>(uint64_t{total} * members.size() / n));
    pc.pinning = config.pinning;
    pc.numa_node = node;
    auto pool = staging::detail::create_fill_pool(pc, topology);
    if (!pool) return unexpected(pool.error());
    pools.push_back(*pool);
    for (std::size_t i : members)
      pool_of[i] = *pool;
  }
  return {};
}

}  // namespace

struct MultiUploader::Impl {
  std::shared_ptr<PinnedBudget> budget;
  std::vector<std::shared_ptr<FillPool>> pools;
  std::vector<DeviceEntry> entries;  // destroyed before the pools (declared after them)

  ~Impl() {
    for (DeviceEntry& e : entries)
      e.uploader.reset();  // each drains its copies before its api goes
  }
};

Expected<MultiUploader, CreateError> MultiUploader::create(const MultiUploaderConfig& config) {
  return create_with(config, {}, nullptr);
}

Expected<MultiUploader, CreateError> detail::create_multi_uploader(
    const MultiUploaderConfig& config, std::span<DeviceApi* const> apis,
    const HostTopology* topology) {
  if (apis.empty()) return unexpected(CreateError::MissingDependency);
  return MultiUploader::create_with(config, apis, topology);
}

Expected<MultiUploader, CreateError> MultiUploader::create_with(const MultiUploaderConfig& config,
                                                                std::span<DeviceApi* const> apis,
                                                                const HostTopology* given) {
  auto impl = std::make_unique<Impl>();
  auto entries = open_devices(config, apis);
  if (!entries) return unexpected(entries.error());
  impl->entries = std::move(*entries);
  const std::size_t n = impl->entries.size();
  if (n == 0) return unexpected(CreateError::NoDevice);

  // The rings' share of the cap.
  const UploaderConfig& base = config.uploader;
  const uint64_t align = std::max<uint64_t>(1, base.alignment);
  const uint64_t ring =
      config.pinned_bytes == 0 ? base.ring_bytes : config.pinned_bytes / n / align * align;
  if (ring == 0) return unexpected(CreateError::InvalidConfig);
  impl->budget =
      std::make_shared<PinnedBudget>(config.pinned_bytes == 0 ? ring * n : config.pinned_bytes);

  const HostTopology topology = given != nullptr ? *given : HostTopology::read();
  const auto by_node = group_by_node(impl->entries, topology);
  std::vector<std::shared_ptr<FillPool>> pool_of;
  if (auto made = make_pools(config, topology, by_node, n, impl->pools, pool_of); !made) {
    return unexpected(made.error());
  }

  for (std::size_t i = 0; i < n; ++i) {
    DeviceEntry& e = impl->entries[i];
    UploaderConfig c = base;
    c.ring_bytes = ring;
    c.device = e.device;
    c.fill_pool = pool_of[i];
    c.pinned_budget = impl->budget;
    auto u = detail::create_uploader(c, *e.api);
    if (!u) return unexpected(u.error());
    e.uploader.emplace(std::move(*u));
  }
  return MultiUploader(std::move(impl));
}

MultiUploader::MultiUploader(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
MultiUploader::MultiUploader(MultiUploader&&) noexcept = default;
MultiUploader& MultiUploader::operator=(MultiUploader&&) noexcept = default;
MultiUploader::~MultiUploader() = default;

std::size_t MultiUploader::size() const noexcept {
  return impl_->entries.size();
}

int MultiUploader::device(std::size_t index) const {
  STAGING_ASSERT(index < size(), "MultiUploader::device: index out of range");
  return impl_->entries[index].device;
}

int MultiUploader::numa_node(std::size_t index) const {
  STAGING_ASSERT(index < size(), "MultiUploader::numa_node: index out of range");
  return impl_->entries[index].node;
}

Uploader& MultiUploader::uploader(std::size_t index) {
  STAGING_ASSERT(index < size(), "MultiUploader::uploader: index out of range");
  return *impl_->entries[index].uploader;
}

Expected<TimelineValue, UploadFailure> MultiUploader::upload(std::size_t index, void* device_dst,
                                                             const void* host_src, uint64_t bytes,
                                                             cudaStream_t stream,
                                                             const UploadOptions& options) {
  return uploader(index).upload(device_dst, host_src, bytes, stream, options);
}

const std::vector<std::shared_ptr<FillPool>>& MultiUploader::pools() const noexcept {
  return impl_->pools;
}

const PinnedBudget& MultiUploader::budget() const noexcept {
  return *impl_->budget;
}

}  // namespace staging::cuda
