// Ring: retirement — the one place completion enters. Reads the points' semaphores (poll, wait),
// releases the frames whose points are reached (or abandoned, or failed by a lost device), and
// hands the strategy each released frame with the frame sequence's completed value.
#include <algorithm>

#include "ring_impl.hpp"

namespace staging::vulkan::detail {
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

TimelineValue FrameTimeline::completed() {
  return ring_->reached_through();
}

TimelineValue FrameTimeline::wait(TimelineValue value, Duration timeout) {
  const uint64_t now = ring_->reached_through();
  if (now >= value || timeout <= Duration{0}) return now;
  // A frame up to `value` still being recorded (this thread's own: unreleased, not in flight)
  // cannot complete while we wait: then this returns below `value` at once, without waiting for
  // the frames in flight before it, and the waiter gives up (CompletionSource::wait) instead of
  // waiting out its timeout.
  const std::vector<Pending>& pending = ring_->pending;
  for (auto f = ring_->unreleased.begin(); f != ring_->unreleased.end() && *f <= value; ++f) {
    if (std::none_of(pending.begin(), pending.end(),
                     [&](const Pending& p) { return p.frame == *f; }))
      return now;
  }
  // Wait for the frames up to `value`: every one is in flight.
  std::vector<RetirementPoint> points;
  for (const Pending& p : pending) {
    if (p.frame <= value) points.push_back(p.point);
  }
  if (!points.empty()) (void)ring_->wait_points(points, timeout);
  return ring_->reached_through();
}

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

void RingImpl::release_oneoffs(std::vector<StagingMemory>& oneoffs, uint64_t& bytes) noexcept {
  for (const StagingMemory& m : oneoffs)
    memory.release(m);
  oneoffs.clear();
  stats.oneoff_live_bytes -= bytes;
  bytes = 0;  // released once
}

void RingImpl::release(uint64_t frame, Release how) noexcept {
  unreleased.erase(frame);
  strategy->release(frame, how, released_through());
  report({.kind = EventKind::FrameRelease,
          .id = frame,
          .cancelled = how == Release::Abandoned || how == Release::Dropped,
          .failed = how == Release::Failed});
}

uint64_t RingImpl::poll() {
  if (pending.empty()) return 0;
  SemaphoreValues values(device.dispatch, device.device);
  uint64_t retired = 0;
  bool lost = false;
  for (Pending& p : pending) {
    uint64_t value = 0;
    const VkResult r = values.read(p.point.semaphore, value);
    if (r == VK_ERROR_DEVICE_LOST) {
      lost = true;
      break;
    }
    if (r != VK_SUCCESS || value < p.point.value) continue;
    release_oneoffs(p.oneoffs, p.oneoff_bytes);
    release(p.frame, Release::Retired);
    p.frame = 0;  // marks it for removal
    ++retired;
  }
  stats.points_retired += retired;
  if (lost) {
    device_lost();  // fails the frames not retired above, and empties `pending`
  } else if (retired > 0) {
    std::erase_if(pending, [](const Pending& p) { return p.frame == 0; });
  }
  return retired;
}

void RingImpl::device_lost() {
  ++stats.device_lost;
  for (Pending& p : pending) {
    if (p.frame == 0) continue;  // released already (poll() retired it before finding the loss)
    release_oneoffs(p.oneoffs, p.oneoff_bytes);
    release(p.frame, Release::Failed);  // a lost device reads nothing more
    ++stats.points_failed;
  }
  pending.clear();
}

VkResult RingImpl::wait_points(std::span<const RetirementPoint> points, Duration timeout) const {
  // One value per semaphore: the highest asked for (a timeline reaching it reached the others).
  std::vector<VkSemaphore> semaphores;
  std::vector<uint64_t> values;
  for (const RetirementPoint& p : points) {
    if (p.semaphore == VK_NULL_HANDLE) continue;  // value 0: reached (wait_all)
    const auto at = std::find(semaphores.begin(), semaphores.end(), p.semaphore);
    if (at == semaphores.end()) {
      semaphores.push_back(p.semaphore);
      values.push_back(p.value);
    } else {
      uint64_t& v = values[static_cast<std::size_t>(at - semaphores.begin())];
      v = std::max(v, p.value);
    }
  }
  if (semaphores.empty()) return VK_SUCCESS;
  const VkSemaphoreWaitInfo info{
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
      .semaphoreCount = static_cast<uint32_t>(semaphores.size()),
      .pSemaphores = semaphores.data(),
      .pValues = values.data(),
  };
  const auto ns =
      static_cast<uint64_t>(std::clamp(timeout, Duration{0}, Deadline::kLongest).count());
  return device.dispatch.vkWaitSemaphores(device.device, &info, ns);
}

Expected<void, WaitError> RingImpl::wait_all(std::span<const RetirementPoint> points,
                                             Duration timeout) {
  // A point with no semaphore is reached at value 0 and never otherwise (as vulkan::wait()).
  for (const RetirementPoint& p : points) {
    if (p.semaphore == VK_NULL_HANDLE && p.value != 0) return unexpected(WaitError::Failed);
  }
  const VkResult r = wait_points(points, timeout);
  if (r == VK_ERROR_DEVICE_LOST) {
    device_lost();
    return unexpected(WaitError::DeviceLost);
  }
  const uint64_t lost = stats.device_lost;
  poll();
  if (stats.device_lost != lost) return unexpected(WaitError::DeviceLost);  // found by the poll
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
    release_oneoffs(p.oneoffs, p.oneoff_bytes);
    release(p.frame, Release::Abandoned);
    ++stats.points_abandoned;
    p.frame = 0;
    found = true;
  }
  std::erase_if(pending, [](const Pending& p) { return p.frame == 0; });
  return found;
}

}  // namespace staging::vulkan::detail
