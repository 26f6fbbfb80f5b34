// The simulator: runs a workload through the real core (ByteRing or StagingRing) against the fake
// queue, in virtual time, and measures what happened. Deterministic: the same config and workload
// give the same RunResult, bit for bit.
//
// The caller it models (docs/sim.md, "What the simulated caller does"):
//   * uploads are made at their arrival time, in order; an upload that cannot be placed holds
//     back the ones behind it (the caller's upload queue is FIFO);
//   * uploads of one frame go into one submission, submitted after the frame's last upload; a
//     streaming upload (frame -1) is submitted on its own; the open submission is also flushed
//     before a reservation that might have to wait (so the ring never waits on a token nobody
//     will submit);
//   * before frame f starts, frame f - frames_in_flight - 1 has completed (frame pacing);
//   * WouldBlock: come back at the next poll tick or the queue's next completion, whichever is
//     first (never when nothing can change: then it gives up); Timeout: try again while the queue
//     can still complete; TooLarge, or a queue that will never free the bytes: send the upload
//     by another route ("direct", counted);
//   * the ring is polled (retire) before every upload and every poll_interval in between.
//
// Independence of the checks: the InvariantChecker (Record mode) and the byte checks are fed from
// the observer's events, the region allocator's calls and the queue's *true* completion value —
// never from the ring's own bookkeeping — so a ring that retires early is caught.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "run_result.hpp"
#include "sim_config.hpp"
#include "staging/core/errors.hpp"
#include "upload.hpp"

namespace staging::sim {

/// Called now and then with (uploads done, uploads in total); for a progress bar.
using ProgressFn = std::function<void(uint64_t done, uint64_t total)>;

/// Runs `workload` under `config`. Errors: a configuration the core refuses (the message says
/// which value), e.g. a policy the strategy does not support.
[[nodiscard]] Expected<RunResult, std::string> simulate(const SimConfig& config,
                                                        const Workload& workload,
                                                        const ProgressFn& progress = {});

}  // namespace staging::sim
