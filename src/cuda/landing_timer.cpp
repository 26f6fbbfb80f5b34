#include "landing_timer.hpp"

#include <algorithm>
#include <cmath>

namespace staging::cuda::detail {

LandingTimer::LandingTimer(DeviceApi& api) noexcept : api_(api) {
  cudaEvent_t a = nullptr;
  if (api_.event_create_timed(&a) != cudaSuccess) return;
  cudaEvent_t b = nullptr;
  if (api_.event_create_timed(&b) != cudaSuccess) {
    api_.event_destroy(a);
    return;
  }
  start_ = a;
  end_ = b;
}

LandingTimer::~LandingTimer() {
  if (start_ == nullptr) return;
  api_.event_destroy(start_);
  api_.event_destroy(end_);
}

namespace {
constexpr unsigned kMostFailures = 8;  // timing calls failed in a row before the timer gives up
}  // namespace

void LandingTimer::failed() noexcept {
  if (++failures_ >= kMostFailures) given_up_.store(true, std::memory_order_relaxed);
}

bool LandingTimer::start(cudaStream_t stream) noexcept {
  if (!available()) return false;
  std::lock_guard lock(mu_);
  if (state_ != State::Free) return false;
  if (api_.event_record(start_, stream) != cudaSuccess) {
    failed();
    return false;
  }
  state_ = State::Started;
  return true;
}

void LandingTimer::finish(cudaStream_t stream, const UploadPlan& plan, uint64_t bytes,
                          Duration call) noexcept {
  std::lock_guard lock(mu_);
  if (state_ != State::Started) return;
  if (api_.event_record(end_, stream) != cudaSuccess) {
    failed();
    state_ = State::Free;
    return;
  }
  sample_ = LandedUpload{plan, bytes, call};
  state_ = State::Finished;
}

void LandingTimer::abandon() noexcept {
  std::lock_guard lock(mu_);
  if (state_ == State::Started) state_ = State::Free;
}

std::optional<LandedUpload> LandingTimer::collect() noexcept {
  std::lock_guard lock(mu_);
  if (state_ != State::Finished) return std::nullopt;
  const cudaError_t q = api_.event_query(end_);
  if (q == cudaErrorNotReady) return std::nullopt;
  state_ = State::Free;
  float ms = 0;
  if (q != cudaSuccess || api_.event_elapsed(&ms, start_, end_) != cudaSuccess ||
      !std::isfinite(ms) || ms < 0) {
    failed();
    return std::nullopt;
  }
  failures_ = 0;
  LandedUpload out = sample_;
  const auto span = Duration(static_cast<Duration::rep>(std::llround(double{ms} * 1e6)));
  out.landed = std::max(out.landed, span);
  return out;
}

}  // namespace staging::cuda::detail
