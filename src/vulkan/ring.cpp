// Ring: creation, retirement (poll / wait / abandon / device loss) and begin(). Frame recording
// is in frame.cpp.
#include "staging/vulkan/ring.hpp"

#include <algorithm>
#include <chrono>

#include "ring_impl.hpp"
#include "staging/core/align.hpp"

namespace staging::vulkan {
namespace detail {

Expected<SlotBuffer, AllocError> SlotAllocator::create(uint64_t capacity) {
  Expected<StagingMemory, AllocError> made = ring_->allocate(capacity);
  if (!made) return unexpected(made.error());
  return SlotBuffer(ring_->memory, *made);
}

RingImpl::RingImpl(const Device& d, const RingConfig& c) : device(d), config(c) {
  VkPhysicalDeviceProperties props{};
  device.dispatch.vkGetPhysicalDeviceProperties(device.physical_device, &props);
  const uint64_t optimal = std::max<uint64_t>(1, props.limits.optimalBufferCopyOffsetAlignment);
  limits.buffer_copy_alignment = optimal;
  limits.texture_copy_alignment = optimal;
  limits.texture_row_pitch_alignment =
      config.pad_image_rows ? std::max<uint64_t>(1, props.limits.optimalBufferCopyRowPitchAlignment)
                            : 1;
  limits.non_coherent_atom_size = std::max<uint64_t>(1, props.limits.nonCoherentAtomSize);
  if (config.memory == nullptr) {
    default_memory =
        std::make_unique<DefaultMemory>(device.physical_device, device.device, device.dispatch);
    memory = default_memory.get();
  } else {
    memory = config.memory;
  }
  slots.emplace(std::move(
      StagingRing<SlotBuffer>::create(allocator, config.slots, [this] { poll(); }).value()));
}

RingImpl::~RingImpl() {
  STAGING_ASSERT(open_frames == 0, "a StagingFrame outlived its Ring");
  for (Pending& p : pending)
    release_oneoffs(p.oneoffs, p.oneoff_bytes);
  pending.clear();
  slots.reset();  // releases every slot buffer through the hook
  if (semaphore != VK_NULL_HANDLE)
    device.dispatch.vkDestroySemaphore(device.device, semaphore, nullptr);
}

Expected<StagingMemory, AllocError> RingImpl::allocate(uint64_t size) {
  Expected<StagingMemory, AllocError> made = memory->allocate(size);
  if (!made) {
    last_alloc_error = made.error();
    return made;
  }
  memory_type = made->memory_type;
  coherent = made->coherent;
  return made;
}

void RingImpl::release_oneoffs(std::vector<StagingMemory>& oneoffs, uint64_t bytes) noexcept {
  for (const StagingMemory& m : oneoffs)
    memory->release(m);
  oneoffs.clear();
  stats.oneoff_live_bytes -= bytes;
}

uint64_t RingImpl::poll() {
  if (pending.empty()) return 0;
  // Each distinct semaphore is read once (usually there is one: the ring's own).
  std::pair<VkSemaphore, uint64_t> seen[4];
  std::size_t seen_count = 0;
  const auto value_of = [&](VkSemaphore s, uint64_t& value) -> VkResult {
    for (std::size_t i = 0; i < seen_count; ++i) {
      if (seen[i].first == s) {
        value = seen[i].second;
        return VK_SUCCESS;
      }
    }
    VkResult r = device.dispatch.vkGetSemaphoreCounterValue(device.device, s, &value);
    if (r == VK_SUCCESS && seen_count < std::size(seen)) seen[seen_count++] = {s, value};
    return r;
  };
  uint64_t retired = 0;
  for (Pending& p : pending) {
    uint64_t value = 0;
    const VkResult r = value_of(p.point.semaphore, value);
    if (r == VK_ERROR_DEVICE_LOST) {
      device_lost();
      return retired;
    }
    if (r != VK_SUCCESS || value < p.point.value) continue;
    p.token.signal();  // the slot is Ready (no-op for a fallback frame)
    release_oneoffs(p.oneoffs, p.oneoff_bytes);
    if (config.observer) config.observer->on_release(p.frame, Release::Retired);
    p.frame = 0;  // marks it for removal
    ++retired;
  }
  if (retired > 0) {
    std::erase_if(pending, [](const Pending& p) { return p.frame == 0; });
    stats.points_retired += retired;
  }
  return retired;
}

void RingImpl::device_lost() {
  ++stats.device_lost;
  for (Pending& p : pending) {
    p.token.fail();  // the slot is Failed: replaced on its next pick
    release_oneoffs(p.oneoffs, p.oneoff_bytes);
    if (config.observer) config.observer->on_release(p.frame, Release::Failed);
    ++stats.points_failed;
  }
  pending.clear();
}

Expected<void, WaitError> RingImpl::wait(const RetirementPoint& point, Duration timeout) {
  const VkSemaphoreWaitInfo info{
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
      .semaphoreCount = 1,
      .pSemaphores = &point.semaphore,
      .pValues = &point.value,
  };
  const auto ns = static_cast<uint64_t>(std::max<int64_t>(0, timeout.count()));
  const VkResult r = device.dispatch.vkWaitSemaphores(device.device, &info, ns);
  if (r == VK_ERROR_DEVICE_LOST) {
    device_lost();
    return unexpected(WaitError::DeviceLost);
  }
  poll();
  if (r != VK_SUCCESS) return unexpected(WaitError::Timeout);
  return {};
}

Expected<void, WaitError> RingImpl::wait_idle(Duration timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pending.empty()) {
    // Wait for the newest point of the first pending frame's semaphore, then the rest.
    RetirementPoint newest = pending.front().point;
    for (const Pending& p : pending) {
      if (p.point.semaphore == newest.semaphore)
        newest.value = std::max(newest.value, p.point.value);
    }
    const auto left =
        std::chrono::duration_cast<Duration>(deadline - std::chrono::steady_clock::now());
    if (Expected<void, WaitError> r = wait(newest, std::max(left, Duration{0})); !r) return r;
  }
  return {};
}

bool RingImpl::abandon(const RetirementPoint& point) {
  bool found = false;
  for (Pending& p : pending) {
    if (p.point != point) continue;
    p.token.abandon();  // the slot is Abandoned: replaced on its next pick
    release_oneoffs(p.oneoffs, p.oneoff_bytes);
    if (config.observer) config.observer->on_release(p.frame, Release::Abandoned);
    ++stats.points_abandoned;
    p.frame = 0;
    found = true;
  }
  std::erase_if(pending, [](const Pending& p) { return p.frame == 0; });
  return found;
}

Expected<StagingFrame, BeginError> RingImpl::begin(VkCommandBuffer cmd, uint64_t needed) {
  if (cmd == VK_NULL_HANDLE) return unexpected(BeginError{BeginError::Kind::NullCommandBuffer});
  poll();
  const auto start = std::chrono::steady_clock::now();
  bool waited = false;
  const auto stop_waiting = [&] {
    if (waited) stats.wait_time += std::chrono::steady_clock::now() - start;
  };
  for (;;) {
    Expected<SlotLease, Refusal> lease = slots->begin(needed);
    if (lease) {
      stop_waiting();
      std::unique_ptr<FrameState> state = take_state(cmd, Route::Ring);
      state->slot = &slots->buffer(*lease);
      state->lease = std::move(*lease);
      return StagingFrame(this, std::move(state));
    }
    const Refusal refusal = lease.error();
    if (config.policy == ExhaustionPolicy::Fallback) return begin_fallback(cmd, refusal);
    if (config.policy == ExhaustionPolicy::Wait && refusal == Refusal::AllInFlight) {
      // Wait for the oldest frame holding a slot (pending is in finish order). When every slot
      // is Recording instead (frames still open), waiting cannot help: answer Refused.
      const auto oldest = std::find_if(pending.begin(), pending.end(),
                                       [](const Pending& p) { return p.token.pending(); });
      if (oldest != pending.end()) {
        const RetirementPoint point = oldest->point;
        const auto left = config.wait_timeout - std::chrono::duration_cast<Duration>(
                                                    std::chrono::steady_clock::now() - start);
        if (left > Duration{0}) {
          if (!waited) ++stats.waits;
          waited = true;
          const Expected<void, WaitError> r = wait(point, left);
          if (r || r.error() == WaitError::DeviceLost) continue;  // a slot may be free now
        }
        stop_waiting();
        ++stats.begin_timeouts;
        return unexpected(BeginError{BeginError::Kind::Timeout, refusal, point});
      }
    }
    stop_waiting();
    ++stats.begin_refused;
    return unexpected(BeginError{BeginError::Kind::Refused, refusal, std::nullopt});
  }
}

std::unique_ptr<FrameState> RingImpl::take_state(VkCommandBuffer cmd, Route route) {
  std::unique_ptr<FrameState> state;
  if (pool.empty()) {
    state = std::make_unique<FrameState>();
  } else {
    state = std::move(pool.back());
    pool.pop_back();
  }
  state->id = next_frame++;
  state->cmd = cmd;
  state->route = route;
  ++stats.frames_begun;
  ++open_frames;
  return state;
}

StagingFrame RingImpl::begin_fallback(VkCommandBuffer cmd, std::optional<Refusal> refusal) {
  if (cmd == VK_NULL_HANDLE) return StagingFrame();
  std::unique_ptr<FrameState> state = take_state(cmd, Route::Fallback);
  state->refusal = refusal;
  ++stats.frames_fallback;
  return StagingFrame(this, std::move(state));
}

}  // namespace detail

// ---- Ring: forwards to RingImpl -------------------------------------------------------------

Expected<Ring, CreateError> Ring::create(const Device& device, const RingConfig& config) {
  if (std::string_view missing = device.dispatch.missing(); !missing.empty()) {
    return unexpected(CreateError{.kind = CreateError::Kind::MissingFunction, .function = missing});
  }
  if (auto valid = validate(config.slots); !valid) {
    return unexpected(
        CreateError{.kind = CreateError::Kind::InvalidSlotConfig, .slot_config = valid.error()});
  }
  if (config.policy == ExhaustionPolicy::Split || config.policy == ExhaustionPolicy::Grow) {
    return unexpected(CreateError{.kind = CreateError::Kind::PolicyNotSupported});
  }
  VkPhysicalDeviceProperties props{};
  device.dispatch.vkGetPhysicalDeviceProperties(device.physical_device, &props);
  if (props.apiVersion < VK_API_VERSION_1_2) {
    return unexpected(CreateError{.kind = CreateError::Kind::ApiVersionTooOld});
  }
  auto impl = std::make_unique<detail::RingImpl>(device, config);
  const VkSemaphoreTypeCreateInfo type_info{
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
      .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
      .initialValue = 0,
  };
  const VkSemaphoreCreateInfo info{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
                                   .pNext = &type_info};
  if (VkResult r =
          device.dispatch.vkCreateSemaphore(device.device, &info, nullptr, &impl->semaphore);
      r != VK_SUCCESS) {
    impl->semaphore = VK_NULL_HANDLE;
    return unexpected(CreateError{.kind = CreateError::Kind::SemaphoreFailed, .result = r});
  }
  return Ring(std::move(impl));
}

Ring::Ring(std::unique_ptr<detail::RingImpl> impl) noexcept : impl_(std::move(impl)) {}
Ring::Ring(Ring&&) noexcept = default;
Ring& Ring::operator=(Ring&&) noexcept = default;
Ring::~Ring() = default;

Expected<StagingFrame, BeginError> Ring::begin(VkCommandBuffer cmd, uint64_t needed) {
  return impl_->begin(cmd, needed);
}
StagingFrame Ring::begin_fallback(VkCommandBuffer cmd) {
  impl_->poll();
  return impl_->begin_fallback(cmd, std::nullopt);
}
uint64_t Ring::poll() {
  return impl_->poll();
}
Expected<void, WaitError> Ring::wait(const RetirementPoint& point, Duration timeout) {
  return impl_->wait(point, timeout);
}
Expected<void, WaitError> Ring::wait_idle(Duration timeout) {
  return impl_->wait_idle(timeout);
}
bool Ring::abandon(const RetirementPoint& point) {
  return impl_->abandon(point);
}

uint64_t Ring::buffer_footprint(uint64_t size) const noexcept {
  return checked_add(size, impl_->limits.buffer_copy_alignment - 1).value_or(UINT64_MAX);
}
Expected<uint64_t, UploadError> Ring::image_footprint(const ImageRegion& region) const {
  Expected<detail::ImageLayout, UploadError> layout = detail::image_layout(region, impl_->limits);
  if (!layout) return unexpected(layout.error());
  return checked_add(layout->staging_size, layout->alignment - 1).value_or(UINT64_MAX);
}
Expected<uint64_t, UploadError> Ring::image_data_size(const ImageRegion& region) const {
  Expected<detail::ImageLayout, UploadError> layout = detail::image_layout(region, impl_->limits);
  if (!layout) return unexpected(layout.error());
  return layout->data_size;
}

VkSemaphore Ring::semaphore() const noexcept {
  return impl_->semaphore;
}
uint64_t Ring::last_value() const noexcept {
  return impl_->last_value;
}
const CopyLimits& Ring::limits() const noexcept {
  return impl_->limits;
}
uint64_t Ring::in_flight() const noexcept {
  return impl_->pending.size();
}
std::optional<uint32_t> Ring::memory_type() const noexcept {
  return impl_->memory_type;
}
bool Ring::memory_coherent() const noexcept {
  return impl_->coherent;
}
std::optional<AllocError> Ring::last_alloc_error() const noexcept {
  return impl_->last_alloc_error;
}
std::size_t Ring::slot_count() const noexcept {
  return impl_->slots->slot_count();
}
SlotState Ring::slot_state(std::size_t index) const {
  return impl_->slots->state(index);
}
uint64_t Ring::slot_capacity(std::size_t index) const {
  return impl_->slots->capacity(index);
}
const RingConfig& Ring::config() const noexcept {
  return impl_->config;
}
Stats Ring::stats() const noexcept {
  Stats s = impl_->stats;
  s.slots = impl_->slots->stats();
  return s;
}

}  // namespace staging::vulkan
