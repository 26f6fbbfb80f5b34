// SimContext: the state the simulator's driver and its two strategies share — the clock and the
// queue, the invariant checker and the byte checks, the counters and the timeline being recorded.
// Internal to staging-sim (simulator.cpp, byte_strategy.cpp, slot_strategy.cpp).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "byte_check.hpp"
#include "run_result.hpp"
#include "sim_config.hpp"
#include "sim_queue.hpp"
#include "staging/detail/core/invariant_checker.hpp"
#include "staging/testing/fake_queue.hpp"
#include "upload.hpp"

namespace staging::sim {

class SimContext {
 public:
  SimContext(const SimConfig& config, const Workload& workload, RunResult& result,
             testing::DelayModel model, std::vector<StallWindow> stalls);

  const SimConfig& config;
  const Workload& workload;
  RunResult& result;
  testing::FakeClock clock;
  SimQueue queue;
  InvariantChecker checker;
  ByteCheck bytes;
  /// Where a region's memory starts (set by the strategy; null when gone).
  ByteCheck::Resolve resolve;

  /// The upload being made, and the size asked in the current call (for spans).
  const Upload* upload = nullptr;
  uint64_t asked = 0;
  /// The frame of the batch being recorded (-1: streaming), and the payload bytes in it.
  int64_t batch_frame = -1;
  uint64_t batch_bytes = 0;
  /// Payload bytes of the current upload placed or routed around so far.
  uint64_t upload_bytes = 0;
  /// The token of the last bytes of the current upload (a reservation's, or a direct upload's
  /// submission); 0 when none yet.
  TimelineValue upload_token = 0;
  /// Submits the strategy's open batch, if any (set by the driver).
  std::function<void()> flush_batch;

  [[nodiscard]] Duration now() { return clock.now(); }

  /// The byte ring's contiguous free region (or the slot ring's largest slot) resolves a
  /// relative size.
  [[nodiscard]] static uint64_t resolve_size(const Upload& u, uint64_t free_contiguous,
                                             uint64_t capacity);

  // --- the checks, fed from the truth ---
  /// Tells the checker the queue's true completed value and verifies the byte stamps of
  /// everything the GPU has really finished.
  void sync_truth();
  /// A region (or slot buffer) of `bytes` now exists / is about to be released.
  void region_created(uint32_t region, uint64_t bytes);
  void region_destroyed(uint32_t region);
  /// After the run: regions still live are released without the I1 check (the queue never
  /// drained: the owner would have to wait first).
  bool tearing_down = false;

  // --- recording ---
  /// A reservation was placed: the checker sees it, its stamps are written (when `memory` is
  /// given and it lies inside its region of `region_bytes`), a span begins. `track` is the
  /// trace's region (byte: the region; slot: the slot index).
  void placed(const Reservation& r, uint32_t track, uint64_t charged, ExhaustionPolicy policy,
              std::byte* memory, uint64_t region_bytes);
  /// A reservation's bytes were reclaimed (its span ends; in flight drops by its charge).
  void reclaimed(uint64_t id);
  void mark(const Mark& m);
  /// The caller sends `bytes` of the current upload by another route: a one-off copy in a
  /// submission of its own (after the open batch, which is flushed first), outside the ring's
  /// memory. Its copy time counts; its allocation cost is not modelled.
  void direct(uint64_t bytes, BlockCause cause);
  void held_changed(int64_t delta);

  /// When a refused (WouldBlock) upload is tried again: the next poll tick or the queue's next
  /// event, whichever is first; none when nothing will ever change (the caller gives up).
  [[nodiscard]] std::optional<Duration> retry_time();

  // --- time moves by events ---
  /// When a poll of the ring can next change anything: the queue's next event (a completion, a
  /// stall's start or end) or the next trim of an idle grown region, whichever is first; none
  /// when nothing will ever change. Between now and then every poll finds what the last one did.
  [[nodiscard]] std::optional<Duration> next_change();
  /// How many whole `period`s from now end before next_change() (0 when none or `period` <= 0):
  /// the ticks a loop that polls every `period` may skip, since none of them changes anything.
  [[nodiscard]] uint64_t idle_periods(Duration period);
  /// When the byte ring next trims an idle grown region (set by its strategy; none otherwise).
  std::function<std::optional<Duration>()> next_trim;

  // --- the work bound ---
  /// Spends one step of the run's work budget (a reservation attempt, a retry, a poll tick);
  /// false once it is spent — the caller then stops, and the run ends with an error (set in
  /// `out_of_steps`). The budget is kStepsPerRun plus kStepsPerUpload per upload: a run takes
  /// time proportional to its uploads, whatever their sizes and time gaps.
  [[nodiscard]] bool step();
  bool out_of_steps = false;
  static constexpr uint64_t kStepsPerRun = 1000000;
  static constexpr uint64_t kStepsPerUpload = 1000;

  // --- submissions and frame pacing ---
  /// Submits the open batch (its batch_bytes) on the queue and records it; returns the value.
  TimelineValue submit(bool early);
  /// Frame pacing before frame `frame` starts.
  void pace(int64_t frame);

 private:
  void sample();
  void record_submission(TimelineValue value, bool early);

  struct Live {
    std::size_t span;  // index in result.spans (when recorded)
    uint64_t charged;
  };
  std::unordered_map<uint64_t, Live> live_;
  uint64_t held_ = 0;
  uint64_t in_flight_ = 0;
  struct RecentFrame {
    int64_t frame;
    TimelineValue last;
  };
  std::deque<RecentFrame> recent_;
  uint64_t steps_left_;
};

/// A strategy: how uploads become reservations in one kind of ring.
class StrategyRunner {
 public:
  virtual ~StrategyRunner() = default;
  /// Learns the queue's completions (the ring's view) and reclaims.
  virtual void poll() = 0;
  /// Makes upload `index` (ctx.upload) — placing all of it, waiting, or routing it around.
  virtual void make(const Upload& upload, std::size_t index) = 0;
  /// True while a submission is being recorded (something placed and not yet submitted).
  [[nodiscard]] virtual bool batch_open() const = 0;
  /// Submits the open batch (if any) and ends it.
  virtual void flush(bool early) = 0;
  /// Submits reservations recorded but not yet submitted (before a direct upload takes the next
  /// queue value), without ending a run that goes by the other route.
  virtual void submit_pending() = 0;
  /// After the queue drained: copies the core's stats into the result and cross-checks them.
  virtual void finish() = 0;
};

std::unique_ptr<StrategyRunner> make_byte_strategy(SimContext& ctx, std::string* error);
std::unique_ptr<StrategyRunner> make_slot_strategy(SimContext& ctx, std::string* error);

}  // namespace staging::sim
