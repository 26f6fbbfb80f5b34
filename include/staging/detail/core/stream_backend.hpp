// What a StreamScheduler hands a backend, and what it needs from it: the batches of pieces to
// copy, and a queue with a completion timeline.
//
// A batch is one reservation of the scheduler's byte ring holding pieces of one or more uploads,
// already filled; the backend records one copy per piece (buffer-to-buffer or buffer-to-image,
// from the ring's staging memory) into its own command buffer, the layout transitions and
// ownership transfers the pieces' first/last flags call for, and submits it on its queue,
// signalling the next value of its timeline. The scheduler reclaims the batch's bytes once that
// value is reached. A backend is thin: which bytes a piece gets, when, in what order and what
// happens when staging is full is the scheduler's. Not part of the API (see stream_scheduler.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "staging/core/byte_ring.hpp"
#include "staging/core/errors.hpp"
#include "staging/core/stream.hpp"
#include "staging/core/timeline.hpp"
#include "staging/detail/core/enum_names.hpp"
#include "staging/detail/core/upload_pieces.hpp"

namespace staging {

/// One piece of a batch: where its bytes are in staging memory and where they go.
struct BatchPiece {
  /// The region and source range of the upload, and its destination (dst_offset or image).
  UploadPiece piece;
  /// Where the piece's bytes are: this offset of the batch's region (a multiple of the upload's
  /// alignment).
  uint64_t staging_offset = 0;
  /// The upload's id (StreamTicket::id()).
  uint64_t upload = 0;
  /// The backend's record of the upload (StreamRequest::context), as given.
  void* context = nullptr;
};

/// A batch of pieces to record and submit together.
struct StreamBatch {
  /// The batch's number (1, 2, ... per scheduler): its ring token.
  uint64_t token = 0;
  /// The ring reservation holding it: `bytes` bytes at `offset` of region `region`.
  uint32_t region = 0;
  uint64_t offset = 0;  ///< first byte of the reservation
  uint64_t bytes = 0;   ///< bytes of the reservation (padding between pieces included)
  /// The pieces, in staging order (which is the order they were cut: an upload's pieces are in
  /// order, in this batch and across batches).
  std::span<const BatchPiece> pieces;
};

/// The backend's side of a StreamScheduler. Implemented by a backend (the Vulkan streamer) or a
/// fake (testing/fake_stream_backend.hpp). Its queue's timeline is a CompletionSource, the one
/// read-only view of a timeline every ring is fed from: completed() and wait() as specified there.
///
/// Threading: submit() is called by one thread at a time (the scheduler serialises it), from the
/// pump or from a thread committing a piece written in place. completed(), wait(), mapped() and
/// released() may be called from any thread, concurrently with everything (wider than
/// CompletionSource's rule), and must not call the scheduler.
class StreamBackend : public CompletionSource {
 public:
  /// The mapped memory of the ring's region `region` (as created through the scheduler's
  /// RegionAllocator). Stays valid while the region lives.
  [[nodiscard]] virtual std::byte* mapped(uint32_t region) = 0;
  /// Makes the batch's bytes visible to the device (flushes non-coherent memory), records its
  /// copies and submits them, signalling a new value of the timeline, which it returns: greater
  /// than every value returned before. The batch's span is valid during the call only.
  /// Errors: DeviceLost, Failed (nothing was submitted; the scheduler fails the batch's uploads
  /// and reclaims its bytes).
  virtual Expected<TimelineValue, UploadError> submit(const StreamBatch& batch) = 0;
  /// Whether the device is lost: nothing submitted completes past completed() any more and
  /// submit() answers DeviceLost. Once true, stays true. Cheap (no device call); any thread.
  /// The scheduler then fails every upload not complete (see StreamScheduler).
  [[nodiscard]] virtual bool lost() const noexcept { return false; }
  /// The upload whose record is `context` will have no more pieces submitted (its last piece
  /// was submitted, or it was cancelled or failed): the backend may drop what it kept for
  /// recording its pieces. Called once per upload that had a non-null context.
  virtual void released(void* /*context*/) noexcept {}
};

}  // namespace staging
