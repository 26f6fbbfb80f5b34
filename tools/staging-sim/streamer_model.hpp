// The streamer beside the frame ring: a workload's frame uploads (frame >= 0) go through a byte
// ring on the graphics queue, as simulate() runs them; its streaming uploads (frame -1) go
// through the core's StreamScheduler (what staging::vulkan::Streamer runs) on a transfer queue of
// their own, enqueued by producer threads. The staging memory is shared out evenly: half the
// configured capacity for each ring, so a streamer row holds what the other rows hold.
//
//   graphics queue   frame uploads ─> byte ring (capacity / 2, the configured policy)
//   transfer queue   producers 0..P-1 ─> StreamScheduler queue ─> pump ─> ring (capacity / 2)
//                                                                  └─> batches of pieces
//
// Uploads larger than the streamer's ring stream through it in pieces. The workload's stall
// windows stop both queues (a stalled GPU). The producers are modelled
// in virtual time: upload i belongs to producer i % P, which enqueues its uploads in order, each
// at its arrival time or once the producer's previous upload was accepted; a producer whose
// upload the queue refuses (at its cap) tries again after the pump's next step, while the others
// go on. Every streamed byte is copied by the fake transfer queue when its batch completes and
// compared with its source once the upload is complete.
#pragma once

#include <cstdint>
#include <string>

#include "run_result.hpp"
#include "sim_config.hpp"
#include "staging/core/errors.hpp"
#include "staging/core/timeline.hpp"
#include "upload.hpp"

namespace staging::sim {

/// What the streaming half of a streamer run did (virtual time).
struct StreamerFigures {
  uint64_t uploads = 0;             ///< streaming uploads made
  uint64_t bytes = 0;               ///< their bytes
  uint64_t larger_than_ring = 0;    ///< uploads larger than the streamer's ring
  uint64_t pieces = 0;              ///< pieces cut
  uint64_t batches = 0;             ///< batches submitted on the transfer queue
  uint64_t queue_refusals = 0;      ///< enqueues refused at the queue's cap (tried again later)
  uint64_t ring_full = 0;           ///< pump steps that found work but no ring room
  uint64_t peak_held_bytes = 0;     ///< the streamer's ring at its fullest
  Duration producer_wait_total{0};  ///< time uploads waited for the queue to take them
  Duration submitted_max{0};        ///< longest from arrival to the last piece submitted
  Duration complete_max{0};         ///< longest from arrival to complete (on the transfer queue)
  Duration complete_p99{0};         ///< its 99th percentile
  Duration end{0};                  ///< when the last upload completed
  Duration busy{0};                 ///< time some upload had arrived and was not complete
  uint64_t byte_mismatches = 0;     ///< uploads whose destination differs from the source
  uint64_t failed = 0;              ///< uploads that did not complete
};

/// A streamer run: the graphics half (a simulate() run of the frame uploads) and the streaming
/// half.
struct StreamerRun {
  RunResult graphics;
  StreamerFigures streaming;
};

/// Producer threads a streamer run models.
inline constexpr unsigned kStreamerProducers = 4;

/// Runs `workload` as the file comment says: the frame uploads under `config` (strategy Byte,
/// its policy; capacity / 2), the streaming uploads through a StreamScheduler of capacity / 2 fed
/// by `producers` producers (>= 1). Errors: a configuration either half refuses.
[[nodiscard]] Expected<StreamerRun, std::string> simulate_streamer(
    const SimConfig& config, const Workload& workload, unsigned producers = kStreamerProducers);

}  // namespace staging::sim
