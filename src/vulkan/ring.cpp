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

Expected<void, AllocError> RegionMemory::create_region(uint32_t region, uint64_t bytes) {
  Expected<StagingMemory, AllocError> made = ring_->allocate(bytes);
  if (!made) return unexpected(made.error());
  if (regions_.size() <= region) regions_.resize(region + 1);
  regions_[region] = *made;
  return {};
}

void RegionMemory::destroy_region(uint32_t region) noexcept {
  STAGING_ASSERT(region < regions_.size() && regions_[region], "destroying an unknown region");
  ring_->memory->release(*regions_[region]);
  regions_[region].reset();
}

const StagingMemory& RegionMemory::memory(uint32_t region) const {
  STAGING_ASSERT(region < regions_.size() && regions_[region], "no such region");
  return *regions_[region];
}

TimelineValue FrameTimeline::completed() {
  return ring_->reached_through();
}

TimelineValue FrameTimeline::wait(TimelineValue value, Duration timeout) {
  const uint64_t now = ring_->reached_through();
  if (now >= value || timeout <= Duration{0}) return now;
  // Wait for the frames up to `value` that are in flight. Frames up to `value` still being
  // recorded (this thread's own) cannot complete while we wait: then this returns below `value`
  // as soon as the in-flight ones are done — at once when there are none — and the waiter gives
  // up (CompletionSource::wait) instead of waiting out its timeout.
  std::vector<RetirementPoint> points;
  for (const Pending& p : ring_->pending) {
    if (p.frame <= value) points.push_back(p.point);
  }
  if (!points.empty()) (void)ring_->wait_points(points, timeout);
  return ring_->reached_through();
}

namespace {

// Reads timeline semaphores, each distinct one once (usually there is one: the ring's own).
class SemaphoreValues {
 public:
  SemaphoreValues(const Dispatch& vk, VkDevice device) noexcept : vk_(&vk), device_(device) {}
  VkResult read(VkSemaphore s, uint64_t& value) {
    for (std::size_t i = 0; i < count_; ++i) {
      if (seen_[i].first == s) {
        value = seen_[i].second;
        return VK_SUCCESS;
      }
    }
    const VkResult r = vk_->vkGetSemaphoreCounterValue(device_, s, &value);
    if (r == VK_SUCCESS && count_ < std::size(seen_)) seen_[count_++] = {s, value};
    return r;
  }

 private:
  const Dispatch* vk_;
  VkDevice device_;
  std::pair<VkSemaphore, uint64_t> seen_[4];
  std::size_t count_ = 0;
};

}  // namespace

uint64_t RingImpl::reached_through() const {
  SemaphoreValues values(device.dispatch, device.device);
  for (const uint64_t frame : unreleased) {  // ascending
    const auto p = std::find_if(pending.begin(), pending.end(),
                                [&](const Pending& q) { return q.frame == frame; });
    if (p == pending.end()) return frame - 1;  // still being recorded
    uint64_t value = 0;
    const VkResult r = values.read(p->point.semaphore, value);
    if (r == VK_ERROR_DEVICE_LOST) continue;  // a lost device reads nothing more
    if (r != VK_SUCCESS || value < p->point.value) return frame - 1;
  }
  return next_frame - 1;
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
  if (config.strategy == Strategy::Slots) {
    slots.emplace(std::move(StagingRing<SlotBuffer>::create(allocator, config.slots).value()));
  }
}

RingImpl::~RingImpl() {
  STAGING_ASSERT(open_frames == 0, "a StagingFrame outlived its Ring");
  for (Pending& p : pending)
    release_oneoffs(p.oneoffs, p.oneoff_bytes);
  pending.clear();
  byte_ring.reset();  // releases every region through the hook
  slots.reset();      // releases every slot buffer through the hook
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
  SemaphoreValues values(device.dispatch, device.device);
  uint64_t retired = 0;
  for (Pending& p : pending) {
    uint64_t value = 0;
    const VkResult r = values.read(p.point.semaphore, value);
    if (r == VK_ERROR_DEVICE_LOST) {
      device_lost();
      return retired;
    }
    if (r != VK_SUCCESS || value < p.point.value) continue;
    p.token.signal();  // the slot is Ready (no-op for a fallback frame)
    release_oneoffs(p.oneoffs, p.oneoff_bytes);
    release_frame(p.frame, p.reservations, false);  // the byte ring retires them in FIFO order
    if (config.observer) config.observer->on_release(p.frame, Release::Retired);
    p.frame = 0;  // marks it for removal
    ++retired;
  }
  if (retired > 0) {
    std::erase_if(pending, [](const Pending& p) { return p.frame == 0; });
    stats.points_retired += retired;
  }
  retire_bytes();
  return retired;
}

void RingImpl::release_frame(uint64_t frame, std::vector<uint64_t>& reservations,
                             bool cancel) noexcept {
  unreleased.erase(frame);
  if (cancel) {
    for (uint64_t id : reservations)
      byte_ring->cancel(id);
  }
  reservations.clear();
}

void RingImpl::retire_bytes() noexcept {
  if (byte_ring) byte_ring->retire(released_through());
}

void RingImpl::device_lost() {
  ++stats.device_lost;
  for (Pending& p : pending) {
    p.token.fail();  // the slot is Failed: replaced on its next pick
    release_oneoffs(p.oneoffs, p.oneoff_bytes);
    release_frame(p.frame, p.reservations, true);  // a lost device reads nothing more
    if (config.observer) config.observer->on_release(p.frame, Release::Failed);
    ++stats.points_failed;
  }
  pending.clear();
  retire_bytes();
}

VkResult RingImpl::wait_points(std::span<const RetirementPoint> points, Duration timeout) const {
  // One value per semaphore: the highest asked for (a timeline reaching it reached the others).
  std::vector<VkSemaphore> semaphores;
  std::vector<uint64_t> values;
  for (const RetirementPoint& p : points) {
    const auto at = std::find(semaphores.begin(), semaphores.end(), p.semaphore);
    if (at == semaphores.end()) {
      semaphores.push_back(p.semaphore);
      values.push_back(p.value);
    } else {
      uint64_t& v = values[static_cast<std::size_t>(at - semaphores.begin())];
      v = std::max(v, p.value);
    }
  }
  VkResult r = VK_SUCCESS;
  if (!semaphores.empty()) {
    const VkSemaphoreWaitInfo info{
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
        .semaphoreCount = static_cast<uint32_t>(semaphores.size()),
        .pSemaphores = semaphores.data(),
        .pValues = values.data(),
    };
    const auto ns = static_cast<uint64_t>(std::max<int64_t>(0, timeout.count()));
    r = device.dispatch.vkWaitSemaphores(device.device, &info, ns);
  }
  return r;
}

Expected<void, WaitError> RingImpl::wait_all(std::span<const RetirementPoint> points,
                                             Duration timeout) {
  const VkResult r = wait_points(points, timeout);
  if (r == VK_ERROR_DEVICE_LOST) {
    device_lost();
    return unexpected(WaitError::DeviceLost);
  }
  poll();
  if (r != VK_SUCCESS) return unexpected(WaitError::Timeout);
  return {};
}

Expected<void, WaitError> RingImpl::wait_idle(Duration timeout) {
  std::vector<RetirementPoint> points;
  for (const Pending& p : pending)
    points.push_back(p.point);
  return wait_all(points, timeout);
}

bool RingImpl::abandon(const RetirementPoint& point) {
  bool found = false;
  for (Pending& p : pending) {
    if (p.point != point) continue;
    p.token.abandon();  // the slot is Abandoned: replaced on its next pick
    release_oneoffs(p.oneoffs, p.oneoff_bytes);
    release_frame(p.frame, p.reservations, true);
    if (config.observer) config.observer->on_release(p.frame, Release::Abandoned);
    ++stats.points_abandoned;
    p.frame = 0;
    found = true;
  }
  std::erase_if(pending, [](const Pending& p) { return p.frame == 0; });
  retire_bytes();
  return found;
}

Expected<StagingFrame, BeginError> RingImpl::begin(VkCommandBuffer cmd, uint64_t needed) {
  if (cmd == VK_NULL_HANDLE) return unexpected(BeginError{BeginError::Kind::NullCommandBuffer});
  poll();
  if (config.strategy == Strategy::Bytes) return StagingFrame(this, take_state(cmd, Route::Ring));
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
  unreleased.insert(state->id);
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
  if (config.policy == ExhaustionPolicy::Split || config.policy == ExhaustionPolicy::Grow ||
      (config.strategy == Strategy::Bytes && config.bytes.policy == ExhaustionPolicy::Split)) {
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
  if (config.strategy == Strategy::Bytes) {
    Expected<ByteRing, ByteRing::CreateError> ring =
        ByteRing::create(config.bytes, ByteRing::Deps{.allocator = &impl->regions,
                                                      .observer = config.byte_observer,
                                                      .checker = config.checker});
    if (!ring) {
      return unexpected(
          CreateError{.kind = CreateError::Kind::InvalidByteRing, .byte_ring = ring.error()});
    }
    impl->byte_ring.emplace(std::move(*ring));
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
const std::optional<ReserveError>& Ring::last_reserve_error() const noexcept {
  return impl_->last_reserve_error;
}
Strategy Ring::strategy() const noexcept {
  return impl_->config.strategy;
}
const ByteRing* Ring::byte_ring() const noexcept {
  return impl_->byte_ring ? &*impl_->byte_ring : nullptr;
}
std::size_t Ring::slot_count() const noexcept {
  return impl_->slots ? impl_->slots->slot_count() : 0;
}
SlotState Ring::slot_state(std::size_t index) const {
  STAGING_ASSERT(impl_->slots.has_value(), "slot_state() of a byte-strategy ring");
  return impl_->slots->state(index);
}
uint64_t Ring::slot_capacity(std::size_t index) const {
  STAGING_ASSERT(impl_->slots.has_value(), "slot_capacity() of a byte-strategy ring");
  return impl_->slots->capacity(index);
}
const RingConfig& Ring::config() const noexcept {
  return impl_->config;
}
Stats Ring::stats() const noexcept {
  Stats s = impl_->stats;
  s.strategy = impl_->config.strategy;
  if (impl_->slots) s.slots = impl_->slots->stats();
  if (impl_->byte_ring) s.bytes = impl_->byte_ring->stats();
  return s;
}

}  // namespace staging::vulkan
