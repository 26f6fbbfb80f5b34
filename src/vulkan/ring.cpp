// Ring: creation, begin(), and the public calls (forwarded to RingImpl). Placing and recording
// are in frame.cpp and recorder.cpp, retirement in retirement.cpp, the strategies in
// slot_strategy.cpp and byte_strategy.cpp.
#include "staging/vulkan/ring.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>

#include "byte_strategy.hpp"
#include "ring_impl.hpp"
#include "slot_strategy.hpp"
#include "staging/detail/core/align.hpp"
#include "staging/detail/vulkan/format.hpp"
#include "staging/detail/vulkan/ring_inspect.hpp"

namespace staging::vulkan {
namespace detail {

RingImpl::RingImpl(const Device& d, const RingConfig& c) : device(d), config(c), memory(d, c) {
  VkPhysicalDeviceProperties props{};
  device.dispatch.vkGetPhysicalDeviceProperties(device.physical_device, &props);
  const uint64_t optimal = std::max<uint64_t>(1, props.limits.optimalBufferCopyOffsetAlignment);
  limits.buffer_copy_alignment = optimal;
  // Image copies at multiples of 4 as well: a frame may be recorded for a queue without graphics
  // or compute, where Vulkan needs them (VUID-vkCmdCopyBufferToImage-commandBuffer-07737).
  limits.texture_copy_alignment = image_copy_alignment(props.limits);
  limits.texture_row_pitch_alignment =
      config.pad_image_rows ? std::max<uint64_t>(1, props.limits.optimalBufferCopyRowPitchAlignment)
                            : 1;
  limits.non_coherent_atom_size = std::max<uint64_t>(1, props.limits.nonCoherentAtomSize);
}

namespace {
std::atomic<uint64_t> g_rings_leaked{0};
}  // namespace

RingImpl::~RingImpl() {
  STAGING_ASSERT(open_frames == 0, "a StagingFrame outlived its Ring");
  // Never free what the GPU may still read: wait for the frames in flight (a lost device fails
  // them all and reads nothing more); when they do not complete in time, leak instead.
  bool leak = false;
  if (!pending.empty()) {
    const Expected<void, WaitError> done = wait_idle(config.destroy_timeout);
    leak = !done && done.error() == WaitError::Timeout && !pending.empty();
  }
  if (leak) {
    memory.leak_from_now();
    g_rings_leaked.fetch_add(1, std::memory_order_relaxed);
  }
  for (Pending& p : pending)
    release_oneoffs(p.oneoffs, p.oneoff_bytes);
  pending.clear();
  strategy.reset();  // releases every slot buffer or region through the memory source
  if (semaphore != VK_NULL_HANDLE && !leak)
    device.dispatch.vkDestroySemaphore(device.device, semaphore, nullptr);
}

Expected<StagingFrame, UploadError> RingImpl::begin(VkCommandBuffer cmd, uint64_t needed) {
  if (cmd == VK_NULL_HANDLE) return unexpected(UploadError::InvalidArgument);
  poll();  // frames the GPU has just finished give their memory back first
  const Deadline deadline(SteadyClock::instance(), config.wait_timeout);
  bool waited = false;
  const auto stop_waiting = [&] {
    if (waited) stats.wait_time += deadline.elapsed();
  };
  for (;;) {
    // The frame's number is the sequence's next (take_state() hands it out).
    const Expected<void, UploadError> taken = strategy->begin(next_frame, needed);
    if (taken) {
      stop_waiting();
      return StagingFrame(this, take_state(cmd, Route::Ring));
    }
    const UploadError refusal = taken.error();
    if (config.policy == ExhaustionPolicy::Fallback) return begin_fallback(cmd, refusal);
    if (config.policy == ExhaustionPolicy::Wait && refusal == UploadError::RingFull) {
      // Wait for the oldest frame in flight on the ring route (pending is in finish order). When
      // every slot is held by open frames instead, waiting cannot help: answer RingFull.
      if (const std::optional<RetirementPoint> oldest = oldest_in_flight()) {
        const RetirementPoint point = *oldest;
        if (const Duration left = deadline.remaining(); left > Duration{0}) {
          if (!waited) ++stats.waits;
          waited = true;
          const Expected<void, WaitError> r = wait(point, left);
          if (r || r.error() == WaitError::DeviceLost) continue;  // a slot may be free now
        }
        stop_waiting();
        ++stats.begin_timeouts;
        return unexpected(UploadError::Timeout);
      }
    }
    stop_waiting();
    ++stats.begin_refused;
    return unexpected(refusal);
  }
}

std::optional<RetirementPoint> RingImpl::oldest_in_flight() const noexcept {
  // pending is in finish order; frames on the fallback route hold no ring memory.
  const auto oldest = std::find_if(pending.begin(), pending.end(),
                                   [](const Pending& p) { return p.route == Route::Ring; });
  if (oldest == pending.end()) return std::nullopt;
  return oldest->point;
}

uint64_t RingImpl::recent_demand() const noexcept {
  // Never above the largest placement (the largest slot): what a frame asked for beyond it went
  // by the fallback route and always will, and asking for it would make begin() refuse TooLarge.
  return std::min(*std::max_element(demand.begin(), demand.end()), strategy->largest_placement());
}

void RingImpl::note_demand(uint64_t bytes) noexcept {
  demand[demand_next] = bytes;
  demand_next = (demand_next + 1) % kDemandFrames;
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

StagingFrame RingImpl::begin_fallback(VkCommandBuffer cmd, std::optional<UploadError> refusal) {
  if (cmd == VK_NULL_HANDLE) return StagingFrame();
  std::unique_ptr<FrameState> state = take_state(cmd, Route::Fallback);
  state->refusal = refusal;
  ++stats.frames_fallback;
  return StagingFrame(this, std::move(state));
}

void RingImpl::recycle(std::unique_ptr<FrameState> f) noexcept {
  f->clear();
  --open_frames;
  pool.push_back(std::move(f));
}

}  // namespace detail

// ---- Ring: forwards to RingImpl -------------------------------------------------------------

namespace {

// The policies a ring carries out (RingConfig::policy, ByteRingConfig::policy): a frame submits
// once, so it cannot Split; slots grow by themselves; a byte ring waits per upload, not per frame.
bool policies_honoured(const RingConfig& config) {
  using P = ExhaustionPolicy;
  const P p = config.policy;
  const auto* bytes = std::get_if<ByteRingConfig>(&config.strategy);
  if (bytes == nullptr) return p == P::Defer || p == P::Wait || p == P::Fallback;
  const P b = bytes->policy;
  return (p == P::Defer || p == P::Fallback) &&
         (b == P::Defer || b == P::Wait || b == P::Grow || b == P::Fallback);
}

}  // namespace

Expected<Ring, CreateError> Ring::create(const Device& device, const RingConfig& config) {
  if (!device.dispatch.missing().empty()) {
    return unexpected(CreateError::MissingFunction);
  }
  if (device.device == VK_NULL_HANDLE || device.physical_device == VK_NULL_HANDLE) {
    return unexpected(CreateError::InvalidConfig);
  }
  if (const auto* slots = std::get_if<StagingRingConfig>(&config.strategy)) {
    if (auto valid = validate(*slots); !valid) return unexpected(valid.error());
  }
  if (!policies_honoured(config)) {
    return unexpected(CreateError::UnsupportedPolicy);
  }
  VkPhysicalDeviceProperties props{};
  device.dispatch.vkGetPhysicalDeviceProperties(device.physical_device, &props);
  if (props.apiVersion < VK_API_VERSION_1_2) {
    return unexpected(CreateError::ApiVersionTooOld);
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
    return unexpected(CreateError::ObjectCreationFailed);
  }
  if (const auto* slots = std::get_if<StagingRingConfig>(&config.strategy)) {
    impl->strategy = std::make_unique<detail::SlotStrategy>(impl->memory, *slots);
  } else {
    auto bytes = detail::ByteStrategy::create(impl->memory, config, impl->timeline);
    if (!bytes) return unexpected(bytes.error());
    impl->strategy = std::move(*bytes);
  }
  return Ring(std::move(impl));
}

uint64_t rings_leaked() noexcept {
  return detail::g_rings_leaked.load(std::memory_order_relaxed);
}

Ring::Ring(std::unique_ptr<detail::RingImpl> impl) noexcept : impl_(std::move(impl)) {}
Ring::Ring(Ring&&) noexcept = default;
Ring& Ring::operator=(Ring&&) noexcept = default;
Ring::~Ring() = default;

Expected<StagingFrame, UploadError> Ring::begin(VkCommandBuffer cmd, uint64_t needed) {
  return impl_->begin(cmd, needed);
}
Expected<StagingFrame, UploadError> Ring::begin(VkCommandBuffer cmd) {
  return impl_->begin(cmd, impl_->recent_demand());
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
  return detail::footprint(size, impl_->limits.buffer_copy_alignment);
}
Expected<uint64_t, UploadError> Ring::image_footprint(const ImageRegion& region) const {
  Expected<detail::ImageLayout, UploadError> layout = detail::image_layout(region, impl_->limits);
  if (!layout) return unexpected(layout.error());
  return detail::footprint(layout->texels.padded_bytes, layout->texels.offset_alignment);
}
Expected<uint64_t, UploadError> Ring::image_data_size(const ImageRegion& region) const {
  Expected<detail::ImageLayout, UploadError> layout = detail::image_layout(region, impl_->limits);
  if (!layout) return unexpected(layout.error());
  return layout->texels.packed_bytes;
}

VkSemaphore Ring::semaphore() const noexcept {
  return impl_->semaphore;
}
uint64_t Ring::last_value() const noexcept {
  return impl_->last_value;
}
uint64_t Ring::in_flight() const noexcept {
  return impl_->pending.size();
}
std::optional<RetirementPoint> Ring::oldest_in_flight() const noexcept {
  return impl_->oldest_in_flight();
}
std::optional<uint32_t> Ring::memory_type() const noexcept {
  return impl_->memory.memory_type();
}
bool Ring::memory_coherent() const noexcept {
  return impl_->memory.coherent();
}
std::optional<AllocError> Ring::last_alloc_error() const noexcept {
  return impl_->memory.last_error();
}
const std::optional<ReserveError>& Ring::last_reserve_error() const noexcept {
  return impl_->strategy->last_refusal();
}
const RingConfig& Ring::config() const noexcept {
  return impl_->config;
}
Stats Ring::stats() const noexcept {
  Stats s = impl_->stats;
  s.flushes = impl_->memory.flushes();
  s.flushed_bytes = impl_->memory.flushed_bytes();
  impl_->strategy->add_stats(s);
  return s;
}

namespace detail {

const RingImpl& impl_of(const Ring& ring) noexcept {
  return *ring.impl_;
}
std::size_t slot_count(const Ring& ring) noexcept {
  return impl_of(ring).strategy->slot_count();
}
std::optional<SlotInfo> slot(const Ring& ring, std::size_t index) {
  return impl_of(ring).strategy->slot(index);
}
const ByteRing* byte_ring(const Ring& ring) noexcept {
  return impl_of(ring).strategy->byte_ring();
}

}  // namespace detail

}  // namespace staging::vulkan
