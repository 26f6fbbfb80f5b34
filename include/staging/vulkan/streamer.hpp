// Streamer: uploads of any size from any thread, on a queue of its own (a transfer queue), while
// the application renders — the Vulkan side of the core's StreamScheduler.
//
//   auto streamer = Streamer::create(device, {.queue = transfer_queue,
//                                             .queue_family = transfer_family,
//                                             .consumer_family = graphics_family})
//                       .value();
//   StreamTicket t = streamer->upload(texture, {}, texels, StreamPriority::Now).value();
//   ...
//   if (std::optional<RetirementPoint> done = streamer->point(t))
//     add done->submit_info(VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT) to the frame's waits, and
//     streamer->record_acquire(cmd, texture, {}, FRAGMENT_SHADER, SHADER_SAMPLED_READ) before use;
//   or, host-side: streamer->status(t) == StreamStatus::Complete (swap the texture in).
//
// It owns: its staging memory (one persistently mapped buffer of ring_bytes, the cap: uploads
// larger than it stream through it in pieces), a command pool on the queue's family and its
// command buffers (reused as their submissions complete), a timeline semaphore (each submission
// signals its next value; an upload's ticket gets the value of the submission with its last
// piece), and a pump thread that cuts pieces (Now before Prefetch), fills them from the callers'
// pointers, records their copies with the layout transitions and ownership transfers their
// targets ask for, and submits them. What is cut when, backpressure and cancellation are the
// core scheduler's (staging/core/stream.hpp: its vocabulary); this layer records and submits.
//
// Threading: every member function is safe from any thread, except the pump's own calls:
// pump_once(), and drain() on a streamer without a pump thread (it pumps on the calling thread),
// are for one thread at a time, and never while the streamer's own pump thread runs. The queue is
// used by the pump (and by threads committing in-place pieces) for vkQueueSubmit2 only, under
// StreamerConfig::queue_mutex when given — give one when anything else submits to that queue.
#pragma once

#include <vulkan/vulkan_core.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <thread>

#include "staging/core/byte_ring.hpp"
#include "staging/core/errors.hpp"
#include "staging/core/fill_pool.hpp"
#include "staging/core/observer.hpp"
#include "staging/core/stream.hpp"
#include "staging/detail/core/counters.hpp"
#include "staging/detail/core/enum_names.hpp"
#include "staging/vulkan/dispatch.hpp"
#include "staging/vulkan/memory.hpp"
#include "staging/vulkan/ring.hpp"

namespace staging::vulkan {

// Where a streamed upload goes, and the barriers around it: layouts, and queue family ownership
// between the streamer's queue (a transfer queue) and the queue that uses the resource.
//
// On the streamer's queue, per upload:
//   before its first piece   images: old_layout -> TRANSFER_DST_OPTIMAL (the whole range written)
//   its pieces' copies       vkCmdCopyBuffer / vkCmdCopyBufferToImage
//   after its last piece     images: TRANSFER_DST_OPTIMAL -> new_layout;
//                            VK_SHARING_MODE_EXCLUSIVE with two families: the release of
//                            ownership to the consumer's family (buffers too)
// On the consumer's queue, after waiting on the upload's timeline value:
//   Exclusive with two families: the matching acquire (record_acquire()), into the consumer's
//   command buffer before the first use. Otherwise nothing: the semaphore wait makes the copies
//   visible to the stages it names.
//
// Which applies is the destination's `sharing` (its create-info's sharingMode): EXCLUSIVE with
// two different families moves ownership; CONCURRENT across both families, or one family for
// both, moves nothing. The release and acquire barriers of one upload match exactly (families,
// layouts, ranges), as the specification requires; they are built from the same destination.

/// staging's generic to_string(), visible here beside the layer's own overloads.
using staging::to_string;

/// Which part of an ImageDestination a streamed upload writes — every texel of levels
/// [base_level, base_level + levels) and layers [base_layer, base_layer + layers) — and the layouts
/// around it. The defaults write every level and layer of a texture being filled, and leave it
/// ready for sampling. The image must not be in use by any queue while the upload streams.
struct ImageLevels {
  /// The aspect written (0: the format's only aspect; depth/stencil formats with both aspects
  /// need one named, and are transitioned with both).
  VkImageAspectFlags aspect = 0;
  uint32_t base_level = 0;  ///< the first level written
  uint32_t levels = 0;      ///< levels written; 0: every level from base_level on
  uint32_t base_layer = 0;  ///< the first array layer written
  uint32_t layers = 0;      ///< layers written; 0: every layer from base_layer on
  /// The subresources' layout before the upload; UNDEFINED discards their contents (right for a
  /// texture being filled).
  VkImageLayout old_layout = VK_IMAGE_LAYOUT_UNDEFINED;
  /// The layout the upload leaves them in (not UNDEFINED or PREINITIALIZED).
  VkImageLayout new_layout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL;
};

/// The family of `families` (vkGetPhysicalDeviceQueueFamilyProperties's answer, `count` of them)
/// that supports TRANSFER and neither GRAPHICS nor COMPUTE — a dedicated copy engine — or none.
/// Create the device with a queue of it and give that queue to the Streamer.
[[nodiscard]] std::optional<uint32_t> transfer_only_family(const VkQueueFamilyProperties* families,
                                                           uint32_t count) noexcept;

/// How a Streamer is made.
struct StreamerConfig {
  /// The queue copies are submitted to (not null): a queue of the device's transfer-only family
  /// where it has one (transfer_only_family()), else any queue with TRANSFER support. Vulkan
  /// copies into the depth or stencil aspect of an image only on a queue with GRAPHICS support:
  /// on a queue without it, the streamer refuses image uploads into those aspects
  /// (UploadError::BadAspect); stream depth/stencil images through a streamer on a graphics
  /// queue. The check reads the family's flags with
  /// Dispatch::vkGetPhysicalDeviceQueueFamilyProperties (Dispatch::load() fills it); with that
  /// member null, the family is taken to support GRAPHICS and nothing is refused.
  VkQueue queue = VK_NULL_HANDLE;
  /// The family of `queue`: a family of the device that supports TRANSFER, GRAPHICS or COMPUTE
  /// (checked by create() when the dispatch has vkGetPhysicalDeviceQueueFamilyProperties).
  uint32_t queue_family = 0;
  /// The family of the queues that use the uploaded resources (the graphics queue's, usually).
  /// Another family than queue_family moves ownership of EXCLUSIVE destinations (see above).
  uint32_t consumer_family = 0;
  /// Held around every vkQueueSubmit2 of the streamer when not null: the lock everyone who
  /// submits to `queue` takes (a queue shared with rendering). Must outlive the streamer.
  std::mutex* queue_mutex = nullptr;
  /// Bytes of staging memory (> 0): the cap on what the streamer holds, whatever the uploads'
  /// sizes.
  uint64_t ring_bytes = uint64_t{64} << 20;
  /// Batches, queue cap, granule and waits. Its ring_bytes is the one above: leave it 0 (or
  /// equal to ring_bytes); another value is refused (InvalidConfig).
  StreamSchedulerConfig schedule;
  /// Start a pump thread of its own (else the caller runs pump_once() on its thread).
  bool pump_thread = true;
  /// The threads that copy uploads from the callers' pointers into staging memory, shared with
  /// other users (an Uploader, another Streamer); null: the streamer makes its own pool of
  /// fill_threads threads.
  std::shared_ptr<FillPool> fill_pool;
  /// Threads of the streamer's own pool: 0 is one per CPU less two, at most 8 (more threads
  /// than the copies need only contend for ring room; docs/benchmarks.md); pinned as
  /// fill_pinning says (on the whole host). How many of them fill at once adapts to the copies
  /// (schedule.adapt_fill_threads, on by default): one fewer each time the ring is found full,
  /// one more each time the copies wait for the fill.
  unsigned fill_threads = 0;
  /// Where the own pool's threads run (FillPoolConfig::pinning).
  ThreadPinning fill_pinning = ThreadPinning::None;
  /// Staging memory source; null: the built-in hook (as RingConfig::memory). Must outlive the
  /// streamer.
  MemoryHook* memory = nullptr;
  /// The built-in hook ranks DEVICE_LOCAL | HOST_VISIBLE types first (RingConfig::
  /// prefer_device_local). Ignored with a hook of your own.
  bool prefer_device_local = false;
  /// The uploads' and the byte ring's timeline, one Event at a time (staging-sim, a Perfetto
  /// trace); may be null. Must outlive the streamer. Called from the streamer's threads with its
  /// lock held (see Observer).
  Observer* observer = nullptr;
};

/// What a Streamer has done: the scheduler's counters and the Vulkan side's.
struct StreamerStats {
  StreamStats stream;            ///< uploads, pieces, batches, refusals, waits
  ByteRingStats ring;            ///< the staging ring's placements and retirements
  uint64_t submissions = 0;      ///< vkQueueSubmit2 calls
  uint64_t copy_commands = 0;    ///< vkCmdCopyBuffer and vkCmdCopyBufferToImage recorded
  uint64_t copy_regions = 0;     ///< regions of those copies
  uint64_t barriers = 0;         ///< vkCmdPipelineBarrier2 recorded
  uint64_t command_buffers = 0;  ///< command buffers allocated (reused afterwards)
  uint64_t flushes = 0;          ///< flushes of non-coherent staging memory
  uint64_t device_lost = 0;      ///< submissions or semaphore reads that found the device lost
};

/// StreamerStats' counters, in declaration order (counters.hpp): the scheduler's and the ring's
/// as groups, then the Vulkan side's.
constexpr auto counters_of(std::type_identity<StreamerStats>) noexcept {
  using S = StreamerStats;
  return std::tuple{counter_group("stream", "stream", &S::stream),
                    counter_group("ring", "staging ring", &S::ring),
                    counter("submissions", "submissions", &S::submissions),
                    counter("copy_commands", "copy commands", &S::copy_commands),
                    counter("copy_regions", "copy regions", &S::copy_regions),
                    counter("barriers", "barriers", &S::barriers),
                    counter("command_buffers", "command buffers", &S::command_buffers),
                    counter("flushes", "flushes", &S::flushes),
                    counter("device_lost", "device lost", &S::device_lost)};
}
static_assert(counters_complete<StreamerStats>(),
              "StreamerStats: a member is missing from counters_of");

namespace detail {
class StreamerBackend;
struct ImageTarget;
}  // namespace detail

/// See the file comment.
///
/// Ownership: owns its staging memory, command pool, semaphore and pump thread, and shares its
/// fill pool. Destroying it stops the pump, cancels what is queued and the in-place uploads
/// between pieces, fails in-place pieces handed out and not committed, waits (without a time limit,
/// unless the device is lost) for its last submission to complete, then frees everything — the
/// staging memory too: commit or abandon every piece written in place, and stop writing it, before
/// destroying the streamer. References the device and hook, which must outlive it.
class Streamer {
 public:
  /// Makes a streamer on `device` (Vulkan 1.2+ with timelineSemaphore and synchronization2).
  /// Errors (CreateError), in this order: MissingFunction (a function a Streamer needs is missing
  /// from the dispatch: Dispatch::missing_for_streamer()); InvalidConfig (the queue is null,
  /// ring_bytes is 0, schedule.ring_bytes is neither 0 nor ring_bytes, or the scheduler's
  /// configuration is invalid); ObjectCreationFailed (the command pool or the timeline
  /// semaphore); ThreadStartFailed (the fill pool's threads); the scheduler's InvalidConfig or
  /// AllocationFailed (the staging memory); ThreadStartFailed (the pump thread).
  /// InvalidConfig also when `device.device` is null, and, with
  /// Dispatch::vkGetPhysicalDeviceQueueFamilyProperties set, when queue_family is not below the
  /// device's family count or names a family that supports none of TRANSFER, GRAPHICS and
  /// COMPUTE (both checked with the first InvalidConfig checks, before anything is created).
  static Expected<std::unique_ptr<Streamer>, CreateError> create(const Device& device,
                                                                 const StreamerConfig& config);
  /// Stops the pump, cancels what is queued, waits for the last submission, frees everything
  /// (see Ownership).
  ~Streamer();
  Streamer(const Streamer&) = delete;
  Streamer& operator=(const Streamer&) = delete;

  /// Queues `data` for bytes [offset, offset + data.size()) of the described buffer — the same
  /// arguments as StagingFrame::upload(), checked the same way. `data` must stay valid and
  /// unchanged until the ticket's status is past Streaming. When the queue is at its cap, waits
  /// up to `timeout` (0: refuses at once). Errors (the shared UploadError): NullDestination,
  /// InvalidDestination, ZeroSize, Overflow, OutOfBounds (as check_destination()), TooLarge (its
  /// first piece and its alignment do not fit the staging memory), WouldBlock (at the cap,
  /// timeout 0), Timeout, Inactive (the streamer is being destroyed), DeviceLost.
  Expected<StreamTicket, UploadError> upload(const BufferDestination& destination, uint64_t offset,
                                             std::span<const std::byte> data,
                                             StreamPriority priority,
                                             Duration timeout = Duration{0});
  /// Queues `texels` — every texel of `levels` of the described image, tightly packed (level
  /// after level, then layers, slices, rows of texel blocks; image_bytes() says how many) — for
  /// the image. Errors: NullDestination, InvalidDestination, UnsupportedFormat, BadAspect (the
  /// aspect is not one of the format's, or it is a depth or stencil aspect and the streamer's
  /// queue family lacks GRAPHICS: see StreamerConfig::queue; nothing is queued),
  /// NoSuchSubresource (a level or layer the image lacks), InvalidArgument (new_layout UNDEFINED
  /// or PREINITIALIZED), Overflow (the packed size does not fit 64 bits), SizeMismatch (also for
  /// empty texels), TooLarge (one row of texel blocks does not fit the staging memory),
  /// WouldBlock, Timeout, Inactive, DeviceLost.
  Expected<StreamTicket, UploadError> upload(const ImageDestination& destination,
                                             const ImageLevels& levels,
                                             std::span<const std::byte> texels,
                                             StreamPriority priority,
                                             Duration timeout = Duration{0});
  /// The packed size upload() expects for `levels` of the image. Errors: as upload() up to
  /// Overflow.
  [[nodiscard]] Expected<uint64_t, UploadError> image_bytes(const ImageDestination& destination,
                                                            const ImageLevels& levels = {}) const;

  /// Starts an upload of `size` bytes at `offset` of the buffer, written in place (a decoder
  /// writes straight into staging): take its pieces with next_piece(), write them, commit().
  /// Errors: as upload() for a buffer, without WouldBlock and Timeout (the ring's room is the
  /// backpressure, at next_piece()).
  Expected<StreamTicket, UploadError> write_in_place(const BufferDestination& destination,
                                                     uint64_t offset, uint64_t size,
                                                     StreamPriority priority);
  /// The same for `levels` of an image (errors as upload() for an image, without SizeMismatch,
  /// WouldBlock and Timeout).
  Expected<StreamTicket, UploadError> write_in_place(const ImageDestination& destination,
                                                     const ImageLevels& levels,
                                                     StreamPriority priority);
  /// Reserves the next piece of an in-place upload, as large as the staging memory's room and
  /// the batch size allow; waits up to `timeout` for room (0: refuses at once). The piece's bytes
  /// hold back the reuse of every later piece of the ring until committed: write them promptly.
  /// One piece at a time per upload; write it as InPlacePiece says (rows at its row_pitch).
  /// Errors (UploadError): Done (every piece handed out: the loop's normal end), InvalidArgument
  /// (not an in-place ticket of this streamer, or a piece of it still uncommitted), Cancelled,
  /// Failed (a commit of the upload failed), Timeout, TooLarge (one row of texel blocks is larger
  /// than the staging memory), Inactive (the streamer is stopping), DeviceLost.
  Expected<InPlacePiece, UploadError> next_piece(const StreamTicket& ticket,
                                                 Duration timeout = Duration{0});
  /// Submits a written piece: one vkQueueSubmit2 (under StreamerConfig::queue_mutex when
  /// given). Returns the point it signals (the streamer's semaphore), or the submission's error
  /// (the upload is then Failed): UploadError::DeviceLost, or Failed (recording or submitting
  /// failed otherwise; nothing was submitted). InvalidArgument (nothing submitted, the upload
  /// unchanged): the ticket is not an in-place upload of this streamer, or `piece` is not the
  /// piece next_piece() handed out for it (never handed out, already committed or abandoned).
  Expected<RetirementPoint, UploadError> commit(const StreamTicket& ticket,
                                                const InPlacePiece& piece);
  /// Gives a piece back unwritten: its bytes are reclaimed and the upload ends Cancelled, as
  /// cancel() would (the ticket keeps a value when pieces had been committed). Precondition,
  /// checked (the process aborts with a message otherwise): `piece` is the uncommitted piece
  /// next_piece() handed out for this in-place upload of this streamer.
  void abandon(const StreamTicket& ticket, const InPlacePiece& piece);

  /// Cancels an upload and answers its status after the call:
  ///  - Cancelled: nothing more of it will be cut. When none of it had been cut, nothing reaches
  ///    the destination and the ticket never gets a value; when some pieces had been, they
  ///    still arrive, and the ticket's value (once known) says when the device is done with the
  ///    destination (partly written). Those pieces may still be being filled from upload()'s
  ///    data: keep it until status() is past Streaming. Also the answer for an upload cancelled
  ///    before;
  ///  - Streaming, Submitted or Complete: too late, every piece was cut already: the upload
  ///    completes as if not cancelled;
  ///  - Failed: the upload failed before, or the ticket is empty or another streamer's.
  StreamStatus cancel(const StreamTicket& ticket);
  /// The upload's status, Complete once the streamer's semaphore has reached its value; Failed
  /// when it had not when the device was lost, and for an empty ticket or another streamer's.
  [[nodiscard]] StreamStatus status(const StreamTicket& ticket);
  /// Waits up to `timeout` for the upload to be complete (or to end otherwise) and returns its
  /// status: until its last piece is submitted, then on the semaphore (Failed at once for an
  /// empty ticket or another streamer's; a timeout of 0 or less looks once). The device counts as
  /// lost once a submission or a read of the semaphore finds it lost: every upload not complete
  /// then fails (queued ones at once, waiters wake), and later uploads answer DeviceLost.
  StreamStatus wait(const StreamTicket& ticket, Duration timeout);
  /// Waits up to `timeout` until nothing is queued and every submission has completed (the
  /// pump thread keeps going meanwhile; without one, pumps on the calling thread: then one
  /// thread at a time, as pump_once()). True when idle. In-place pieces handed out and not
  /// committed are not waited for (nor is the rest of their upload).
  bool drain(Duration timeout);

  /// The upload's point: this streamer's semaphore at the ticket's value — after it the
  /// destination holds the data (Submitted), or the device no longer writes it (Cancelled or
  /// Failed after some pieces were submitted). The consumer's submission waits for it
  /// (`point->submit_info(stages)` among its pWaitSemaphoreInfos). None until the ticket has a
  /// value (its last piece is not submitted yet), or when it never will (cancelled before
  /// starting), and for an empty ticket or another streamer's.
  [[nodiscard]] std::optional<RetirementPoint> point(const StreamTicket& ticket) const;
  /// Records into the consumer's `cmd` the acquire of an image upload (the destination and
  /// levels as given to upload()) for `stages`/`access` — only when ownership moves between two
  /// families (the destination's sharing EXCLUSIVE); otherwise nothing. Record it after the wait
  /// on the ticket's value (in a submission that waits for point()), before the first use.
  /// Returns what upload() would answer for those arguments when they are invalid (nothing
  /// recorded).
  Expected<void, UploadError> record_acquire(VkCommandBuffer cmd,
                                             const ImageDestination& destination,
                                             const ImageLevels& levels,
                                             VkPipelineStageFlags2 stages,
                                             VkAccessFlags2 access) const;
  /// The same for a buffer upload of `size` bytes at `offset`.
  Expected<void, UploadError> record_acquire(VkCommandBuffer cmd,
                                             const BufferDestination& destination, uint64_t offset,
                                             uint64_t size, VkPipelineStageFlags2 stages,
                                             VkAccessFlags2 access) const;

  /// One round of the pump (when made without a pump thread): retires what the semaphore
  /// completed, cuts the next batches (Now first) as large as the staging memory's room allows,
  /// fills them and submits the oldest. With nothing to do, waits up to `max_wait` (capped at
  /// StreamSchedulerConfig::wait_slice) for work; with no room, for the oldest batch. True when
  /// it submitted a batch; false when it found nothing to cut, no ring room (stats().stream.
  /// ring_full counts those rounds), a failed submission (the batch's uploads are Failed), or a
  /// streamer being destroyed. One thread at a time, and only on a streamer made with
  /// `pump_thread` false.
  bool pump_once(Duration max_wait = Duration{0});

  /// The streamer's timeline semaphore.
  [[nodiscard]] VkSemaphore semaphore() const noexcept;
  /// The timeline's completed value (read now).
  [[nodiscard]] TimelineValue completed() const;
  /// A snapshot of every counter.
  [[nodiscard]] StreamerStats stats() const;

 private:
  Streamer() = default;
  Expected<StreamTicket, UploadError> queue_image(const detail::ImageTarget& target,
                                                  const std::byte* texels, uint64_t size,
                                                  StreamPriority priority, Duration timeout,
                                                  bool in_place);
  std::shared_ptr<FillPool> pool_;
  std::unique_ptr<detail::StreamerBackend> backend_;
  std::unique_ptr<StreamScheduler> scheduler_;
  std::thread pump_;
};

}  // namespace staging::vulkan
