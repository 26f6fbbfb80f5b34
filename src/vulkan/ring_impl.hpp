// Internal: the state behind Ring and StagingFrame. Not installed.
//
//   frames     the ring's frame sequence (ids in begin order), open frames (FrameState, pooled)
//              and finished ones in flight (Pending, in finish order) with their points;
//   strategy   the core strategy holding the ring route's bytes (strategy.hpp), behind one narrow
//              interface;
//   fallback   the route for what the ring refuses (vkCmdUpdateBuffer data, one-off buffers);
//   recorder   the commands of a finished frame (recorder.hpp);
//   retirement reading the points' semaphores and releasing frames (retirement.cpp): the one
//              place completion enters — handed to the strategy as frames released and the frame
//              sequence's completed value.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <type_traits>
#include <vector>

#include "frame_state.hpp"
#include "recorder.hpp"
#include "staging/detail/core/align.hpp"
#include "staging/detail/core/clock.hpp"
#include "staging/vulkan/frame.hpp"
#include "staging/vulkan/ring.hpp"
#include "staging_memory.hpp"
#include "strategy.hpp"

namespace staging::vulkan::detail {

/// A non-dispatchable Vulkan handle as the 64 bits an Event carries (Event::object): a pointer
/// on 64-bit hosts, a uint64_t elsewhere.
template <class Handle>
uint64_t handle_bits(Handle handle) noexcept {
  if constexpr (std::is_pointer_v<Handle>) {
    return static_cast<uint64_t>(reinterpret_cast<std::uintptr_t>(handle));
  } else {
    return static_cast<uint64_t>(handle);
  }
}

struct RingImpl;

/// The frame sequence as a CompletionSource, for the byte strategy's reserve_waiting(): a
/// read-only view, completed up to the highest number through which every frame is released or
/// has its point reached. Reads and waits on the frames' semaphores; changes nothing (the ring's
/// poll() releases the frames afterwards) and never calls a ring.
class FrameTimeline final : public CompletionSource {
 public:
  explicit FrameTimeline(const RingImpl& ring) noexcept : ring_(&ring) {}
  TimelineValue completed() override;
  TimelineValue wait(TimelineValue value, Duration timeout) override;

 private:
  const RingImpl* ring_;
};

/// The most bytes a placement of `size` bytes aligned to `alignment` can take in staging memory:
/// size + alignment - 1 (alignment 0 counts as 1), saturating. The footprints begin() is sized by.
[[nodiscard]] constexpr uint64_t footprint(uint64_t size, uint64_t alignment) noexcept {
  return checked_add(size, alignment > 0 ? alignment - 1 : 0).value_or(UINT64_MAX);
}

/// A finished frame whose point has not been reached.
struct Pending {
  uint64_t frame = 0;
  RetirementPoint point;
  Route route = Route::Ring;
  std::vector<StagingMemory> oneoffs;
  uint64_t oneoff_bytes = 0;
};

struct RingImpl {
  RingImpl(const Device& device, const RingConfig& config);
  ~RingImpl();
  RingImpl(const RingImpl&) = delete;
  RingImpl& operator=(const RingImpl&) = delete;

  // Frames (ring.cpp)
  Expected<StagingFrame, UploadError> begin(VkCommandBuffer cmd, uint64_t needed);
  std::optional<RetirementPoint> oldest_in_flight() const noexcept;
  /// What a frame of Ring::begin(cmd) is sized for: the most any of the last kDemandFrames
  /// finished frames tried to place (0 before the first), at most the strategy's largest
  /// placement.
  [[nodiscard]] uint64_t recent_demand() const noexcept;
  /// Remembers what a finished frame tried to place.
  void note_demand(uint64_t bytes) noexcept;
  StagingFrame begin_fallback(VkCommandBuffer cmd, std::optional<UploadError> refusal);
  std::unique_ptr<FrameState> take_state(VkCommandBuffer cmd, Route route);
  void recycle(std::unique_ptr<FrameState> frame) noexcept;

  // Placing and recording (frame.cpp)
  Expected<Placement, UploadError> place(FrameState& frame, uint64_t size, uint64_t alignment,
                                         bool update_ok);
  Expected<Placement, UploadError> place_fallback(FrameState& frame, uint64_t size, bool update_ok);
  Expected<RetirementPoint, FinishError> finish(FrameState& frame, const Visibility& visibility,
                                                std::optional<RetirementPoint> external);
  void drop(std::unique_ptr<FrameState> frame) noexcept;

  // Retirement (retirement.cpp)
  uint64_t poll();
  /// Waits for several points at once (all of them): vkWaitSemaphores' result. Changes nothing.
  VkResult wait_points(std::span<const RetirementPoint> points, Duration timeout) const;
  /// Waits for several points at once (all of them), then poll()s.
  Expected<void, WaitError> wait_all(std::span<const RetirementPoint> points, Duration timeout);
  Expected<void, WaitError> wait(const RetirementPoint& point, Duration timeout) {
    return wait_all({&point, 1}, timeout);
  }
  Expected<void, WaitError> wait_idle(Duration timeout);
  bool abandon(const RetirementPoint& point);
  /// The device is lost: fails every frame in `pending` (skipping those poll() released and
  /// marked with frame 0) and empties it.
  void device_lost();
  /// Frame `frame` no longer holds its staging memory (`how`): it leaves the frame sequence's
  /// unreleased set, the strategy gives its bytes back, the observer hears of it.
  void release(uint64_t frame, Release how) noexcept;
  /// Reports `event` to config.observer (when there is one), stamped with the steady clock.
  void report(Event event) const {
    if (config.observer == nullptr) return;
    event.time = SteadyClock::instance().now();
    config.observer->on_event(event);
  }
  /// Frees one-off buffers and takes `bytes` (their size) off Stats::oneoff_live_bytes; zeroes
  /// `bytes`, so that a second call for the same frame takes nothing off.
  void release_oneoffs(std::vector<StagingMemory>& oneoffs, uint64_t& bytes) noexcept;
  /// The highest frame number through which every frame is released: the frame sequence's
  /// completed value.
  [[nodiscard]] uint64_t released_through() const noexcept {
    return unreleased.empty() ? next_frame - 1 : *unreleased.begin() - 1;
  }
  /// released_through() as it will be once poll() has released every frame whose point is
  /// reached now (a lost device reaches every point): reads the semaphores, changes nothing.
  [[nodiscard]] uint64_t reached_through() const;

  Device device;
  RingConfig config;
  CopyLimits limits;
  MemorySource memory;
  FrameTimeline timeline{*this};
  std::unique_ptr<StrategyEngine> strategy;
  CopyRecorder recorder{device.dispatch};
  std::set<uint64_t> unreleased;  // frame numbers begun and not yet released
  VkSemaphore semaphore = VK_NULL_HANDLE;
  uint64_t last_value = 0;
  std::vector<Pending> pending;  // in finish order
  std::vector<std::unique_ptr<FrameState>> pool;
  uint64_t next_frame = 1;
  uint64_t open_frames = 0;
  Stats stats;
  /// What the last finished frames tried to place (FrameState::demand), newest at
  /// demand_next - 1.
  static constexpr std::size_t kDemandFrames = 8;
  std::array<uint64_t, kDemandFrames> demand{};
  std::size_t demand_next = 0;
};

}  // namespace staging::vulkan::detail
