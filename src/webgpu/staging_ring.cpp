#include "staging/webgpu/staging_ring.hpp"

#include <algorithm>
#include <utility>

#include "frame_copy.hpp"
#include "staging/detail/core/assert.hpp"

namespace staging::webgpu {

Expected<std::unique_ptr<StagingRing>, CreateError> StagingRing::create(WGPUDevice device,
                                                                        RingConfig config) {
  STAGING_ASSERT(device != nullptr, "StagingRing::create needs a device");
  if (config.policy != ExhaustionPolicy::Defer && config.policy != ExhaustionPolicy::Fallback)
    return unexpected(CreateError::UnsupportedPolicy);
  StagingRingConfig& slots = config.slot_ring;
  slots.max_slot_bytes = std::min(slots.max_slot_bytes, MAX_MAPPABLE_SLOT_BYTES);
  auto allocator = std::make_unique<SlotBufferAllocator>(device);
  // No poll: map callbacks run from the browser's event loop, never inside begin().
  Expected<CoreRing, CreateError> core = CoreRing::create(*allocator, slots);
  if (!core) return unexpected(core.error());
  return std::unique_ptr<StagingRing>(
      new StagingRing(device, std::move(*core), std::move(allocator), config.policy));
}

StagingRing::StagingRing(WGPUDevice device, CoreRing core,
                         std::unique_ptr<SlotBufferAllocator> allocator, ExhaustionPolicy policy)
    : allocator_(std::move(allocator)),
      core_(std::move(core)),
      policy_(policy),
      device_(device),
      queue_(wgpuDeviceGetQueue(device)) {
  wgpuDeviceReference(device_);
}

StagingRing::~StagingRing() {
  wgpuQueueRelease(queue_);
  wgpuDeviceRelease(device_);
}

Expected<StagingFrame, UploadError> StagingRing::begin(uint64_t needed) {
  Expected<SlotLease, UploadError> lease = core_.begin(needed);
  if (!lease) {
    if (policy_ == ExhaustionPolicy::Defer) return unexpected(lease.error());
    ++route_stats_->queue_write_frames;
    return StagingFrame(*this, lease.error());
  }
  SlotBuffer& slot = core_.buffer(*lease);
  return StagingFrame(*this, std::move(*lease), slot.handle(), slot.capacity());
}

StagingFrame StagingRing::begin_fallback() {
  ++route_stats_->queue_write_frames;
  return StagingFrame(*this, std::nullopt);
}

WGPUBuffer StagingRing::buffer(std::size_t index) const {
  const SlotBuffer* slot = core_.buffer(index);
  return slot != nullptr ? slot->handle() : nullptr;
}

}  // namespace staging::webgpu
