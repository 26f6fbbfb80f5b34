// Results and the error vocabulary every backend shares.
//
// Expected<T, E>: a value or an error, the library's way of reporting anything a caller can
// cause. C++20 has no std::expected (it arrives in C++23), so the library carries this small subset
// of it. The names follow std::expected so that a later switch is mechanical: has_value(), operator
// bool, value(), error(), operator*, operator->, value_or(), and Unexpected<E>.
//
// Threading: a plain value type; no internal synchronisation.
// Misuse: value() on an error (or error() on a value) is a bug in the caller's code and aborts
// through STAGING_ASSERT; it never throws, as no exception crosses this library's API.
//
// The errors, one name per idea whatever the backend: why staging memory could not be created
// (AllocError), which route a frame's bytes take (Route), why an upload was refused (UploadError),
// why a frame could not be finished (FinishError), why a wait returned early (WaitError) and why
// a create() made nothing (CreateError).
// A Vulkan frame, a Vulkan shared-frame writer, a WebGPU frame and the CUDA uploader answer with
// the same values, and each call's documentation lists the values it can return. Every enum has
// names for staging::to_string and enum_from_string.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "staging/detail/core/assert.hpp"
#include "staging/detail/core/enum_names.hpp"

namespace staging {

/// Wraps an error so that it can be returned where an Expected<T, E> is expected.
template <class E>
struct Unexpected {
  E error;  ///< the error an Expected<T, E> constructed from this will hold
};

/// Makes an Unexpected<E> from an error value: `return unexpected(UploadError::ZeroSize);`.
template <class E>
[[nodiscard]] constexpr Unexpected<std::decay_t<E>> unexpected(E&& error) {
  return Unexpected<std::decay_t<E>>{std::forward<E>(error)};
}

/// Either a T (success) or an E (why not). Cheap to move when T and E are.
template <class T, class E>
class [[nodiscard]] Expected {
 public:
  using value_type = T;  ///< T, as std::expected names it
  using error_type = E;  ///< E, as std::expected names it

  /// Success holding `value`.
  constexpr Expected(T value) : storage_(std::in_place_index<0>, std::move(value)) {}
  /// Failure holding `u.error`.
  template <class G>
  constexpr Expected(Unexpected<G> u) : storage_(std::in_place_index<1>, E(std::move(u.error))) {}

  /// True when a value is held.
  [[nodiscard]] constexpr bool has_value() const noexcept { return storage_.index() == 0; }
  /// has_value().
  constexpr explicit operator bool() const noexcept { return has_value(); }

  ///@{
  /// The value (the && overload moves it out). Precondition: has_value(); aborts otherwise.
  constexpr T& value() & {
    STAGING_ASSERT(has_value(), "Expected::value() called on an error");
    return *std::get_if<0>(&storage_);
  }
  constexpr const T& value() const& {
    STAGING_ASSERT(has_value(), "Expected::value() called on an error");
    return *std::get_if<0>(&storage_);
  }
  constexpr T&& value() && {
    STAGING_ASSERT(has_value(), "Expected::value() called on an error");
    return std::move(*std::get_if<0>(&storage_));
  }
  ///@}
  /// The error. Precondition: !has_value(); aborts otherwise.
  constexpr const E& error() const& {
    STAGING_ASSERT(!has_value(), "Expected::error() called on a value");
    return *std::get_if<1>(&storage_);
  }

  ///@{
  /// value(), with the same precondition (aborts on an error; unlike std::expected, never UB).
  constexpr T& operator*() & { return value(); }
  constexpr const T& operator*() const& { return value(); }
  constexpr T&& operator*() && { return std::move(*this).value(); }
  ///@}
  ///@{
  /// &value(), with the same precondition.
  constexpr T* operator->() { return &value(); }
  constexpr const T* operator->() const { return &value(); }
  ///@}

  /// A copy of the value, or `fallback` converted to T when an error is held.
  template <class U>
  constexpr T value_or(U&& fallback) const& {
    return has_value() ? value() : static_cast<T>(std::forward<U>(fallback));
  }

  /// True when a value equal to `v` is held (as std::expected's comparison with a value).
  template <class U>
  requires(!std::is_same_v<std::decay_t<U>, Expected>) friend constexpr bool operator==(
      const Expected& x, const U& v) {
    return x.has_value() && *std::get_if<0>(&x.storage_) == v;
  }
  /// True when an error equal to `u.error` is held.
  template <class G>
  friend constexpr bool operator==(const Expected& x, const Unexpected<G>& u) {
    return !x.has_value() && *std::get_if<1>(&x.storage_) == u.error;
  }

 private:
  std::variant<T, E> storage_;
};

/// Success carrying no value, or an E. E must be default-constructible (it is stored either way).
template <class E>
class [[nodiscard]] Expected<void, E> {
 public:
  using value_type = void;  ///< void: success carries nothing
  using error_type = E;     ///< E, as std::expected names it

  /// Success.
  constexpr Expected() noexcept = default;
  /// Failure holding `u.error`.
  template <class G>
  constexpr Expected(Unexpected<G> u) : error_(E(std::move(u.error))), ok_(false) {}

  /// True on success.
  [[nodiscard]] constexpr bool has_value() const noexcept { return ok_; }
  /// has_value().
  constexpr explicit operator bool() const noexcept { return ok_; }
  /// Checks success. Precondition: has_value(); aborts otherwise.
  constexpr void value() const { STAGING_ASSERT(ok_, "Expected::value() called on an error"); }
  /// The error. Precondition: !has_value(); aborts otherwise.
  constexpr const E& error() const& {
    STAGING_ASSERT(!ok_, "Expected::error() called on a value");
    return error_;
  }

 private:
  E error_{};
  bool ok_ = true;
};

/// Why a buffer could not be created.
enum class AllocError : uint8_t {
  /// The device or host is out of memory, or a configured budget refuses the request.
  OutOfMemory,
  /// The buffer was created but could not be mapped.
  MapFailed,
  /// The device was lost.
  DeviceLost,
  /// Anything else the backend reports (its own log/stats say more).
  Other,
};

/// Names of AllocError's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<AllocError>) noexcept {
  return std::to_array<std::string_view>({"OutOfMemory", "MapFailed", "DeviceLost", "Other"});
}
static_assert(enum_names_complete<AllocError>(), "AllocError: a value has no name");

/// Which memory a frame's uploads go through.
enum class Route : uint8_t {
  /// The ring's staging memory: written by the CPU into a slot or a byte-ring reservation, copied
  /// by commands the frame records.
  Ring,
  /// The fallback route: the bytes the ring could not take still arrive — Vulkan: through
  /// vkCmdUpdateBuffer where legal, else one-off staging buffers; WebGPU: through
  /// wgpuQueueWriteBuffer / wgpuQueueWriteTexture (the queue's own staging) at call time.
  Fallback,
};

/// Names of Route's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<Route>) noexcept {
  return std::to_array<std::string_view>({"Ring", "Fallback"});
}
static_assert(enum_names_complete<Route>(), "Route: a value has no name");

/// Why an upload, a byte ring's reservation or (a slot ring's begin()) a whole frame was refused.
/// Nothing is placed or recorded for a refused upload (only the counters note it); the frame
/// stays usable. A value that names a backend is returned by that
/// backend only.
enum class UploadError : uint8_t {
  /// The frame was finished, submitted, moved from, or default-constructed; a Vulkan Streamer is
  /// being destroyed (or, next_piece(), stopping).
  Inactive,
  /// The destination buffer, image or texture is null.
  NullDestination,
  /// Size 0, or a region with a zero extent, level count or layer count (a byte ring's
  /// reserve(): a request of 0 bytes).
  ZeroSize,
  /// An offset, size or layout computation overflows 64 bits (or the 32-bit row pitch of a
  /// WebGPU texture copy; a byte ring's reserve(): size + alignment - 1).
  Overflow,
  /// The format's texel block is not known (Vulkan: multi-planar or undefined formats, see
  /// docs/vulkan.md; WebGPU: a region whose block is not set).
  UnsupportedFormat,
  /// Vulkan: the aspect is not one aspect of the format, or a Streamer on a queue without
  /// GRAPHICS support was asked to copy into a depth or stencil aspect.
  BadAspect,
  /// An offset, size or origin is not a multiple of what the copy needs: the format's block
  /// extent for an image or texture region; 4 bytes for a WebGPU buffer upload's size and
  /// destination offset (COPY_BUFFER_ALIGNMENT).
  Misaligned,
  /// The data's size differs from the region's tightly packed size.
  SizeMismatch,
  /// The destination range overlaps one written earlier in this frame (copies batched into one
  /// command must not overlap; upload the union once instead).
  OverlapsEarlierUpload,
  /// Another upload of this frame to the same mip level named different layouts.
  ConflictingLayouts,
  /// Vulkan: the ring could not place the upload and the fallback route is at its cap
  /// (RingConfig::fallback_max_oneoff_bytes) for now: one-off buffers of frames in flight hold it.
  /// Retry in a later frame.
  FallbackCapReached,
  /// Vulkan: a one-off staging buffer could not be allocated (Ring::last_alloc_error()).
  /// A slot ring's begin() (Vulkan Ring::begin() and, under
  /// Fallback, StagingFrame::refusal(); WebGPU StagingRing::begin() under Defer and, under
  /// Fallback, a frame's refusal()): creating, growing or replacing the picked slot's buffer
  /// failed. A byte ring's reserve(): creating a
  /// Grow or Fallback region failed (ReserveError::alloc_error).
  AllocationFailed,
  /// Vulkan, a byte ring with a policy other than Fallback: the byte ring refused the
  /// reservation (Ring::last_reserve_error() says why: WouldBlock, Timeout naming the oldest
  /// pending frame, TooLarge, AllocationFailed). Retry later, or use the Fallback policy.
  /// A slot ring's begin() (Vulkan Ring::begin() and, under
  /// Fallback, StagingFrame::refusal(); WebGPU StagingRing::begin() under Defer and, under
  /// Fallback, a frame's refusal()): every slot is Recording or InFlight.
  RingFull,
  /// No route can ever take it. CUDA (Wait, Defer): larger than the ring. Vulkan frame: larger
  /// than the fallback route's one-off cap (RingConfig::fallback_max_oneoff_bytes) and than the
  /// ring can hold (the largest slot, or the byte ring's cap). Vulkan Streamer: one row of texel
  /// blocks does not fit its staging memory. WebGPU: larger than the C API can pass (size_t:
  /// 4 GiB on wasm32). A slot ring's begin() (Vulkan Ring::begin() and, under
  /// Fallback, StagingFrame::refusal(); WebGPU StagingRing::begin() under Defer and, under
  /// Fallback, a frame's refusal()): the frame needs more than the largest slot. A byte
  /// ring's reserve(): the request can never be met under the policy in force (ReserveError).
  /// Retrying cannot help: split the upload.
  TooLarge,
  /// The described destination itself is invalid: a buffer of size 0; an image or texture with
  /// an undefined format, a zero extent, mip level or layer count, or more mip levels than its
  /// extent has.
  InvalidDestination,
  /// The upload writes outside the described destination: bytes past a buffer's size, texels
  /// past the mip level's extent (rounded up to whole texel blocks), or at a negative offset.
  /// CUDA (UploaderConfig::check_destinations): the destination range does not lie inside one
  /// device allocation, or the driver knows no allocation at that address; nothing was copied.
  OutOfBounds,
  /// The region names a mip level or array layers the described image or texture does not have.
  NoSuchSubresource,
  /// The region's format differs from the described destination's: copying would reinterpret
  /// texels (same size) or read or write past the data (different size).
  FormatMismatch,
  /// The region names another image or texture than the described one.
  DestinationMismatch,
  /// Vulkan: a shared-space writer arrived after the space was sealed (SharedUploads::seal(), or
  /// the frame's finish()).
  Sealed,
  /// No room here for it, nothing placed: Vulkan: the frame's shared space is full (upload it
  /// through the frame itself, on the owner thread, or in a later frame); WebGPU: reserve() and
  /// the slot has no room left (upload() would take the fallback route instead).
  DoesNotFit,
  /// Vulkan: share() was already called on this frame (one shared space per frame).
  AlreadyShared,
  /// WebGPU: reserve() on a frame without a slot (Route::Fallback).
  NoSlot,
  /// CUDA: a null pointer with bytes > 0, an address range that wraps, a policy Grow or
  /// Fallback, a stream capturing a graph, reserve(0), a commit of 0 bytes or of more than the
  /// span, or a span that is empty or from another Uploader. Vulkan Streamer, next_piece(): the
  /// ticket is empty, not an in-place upload of this streamer, or a piece of it is still
  /// uncommitted (one piece at a time per upload); an image upload's new_layout UNDEFINED or
  /// PREINITIALIZED. Vulkan Ring::begin(): a null command buffer.
  InvalidArgument,
  /// No room now, and the caller asked not to wait. CUDA, ExhaustionPolicy::Defer: no ring room
  /// (also: every pooled event is pending, or another call is waiting for room); Vulkan
  /// Streamer: the upload queue is at its cap; a byte ring's reserve(): not enough space now
  /// (ReserveError). Nothing was staged or queued.
  WouldBlock,
  /// No room within the timeout. CUDA, Wait or Split: no ring room (a stalled stream, or spans
  /// held uncommitted), or no free pooled event, or the ring lock not free within it; the
  /// failure's `reserve->oldest_pending` names the oldest pending point when the ring was
  /// reached. Vulkan Streamer: the upload queue stayed at its cap for the whole timeout, or
  /// (next_piece()) the ring had no room for the smallest next piece within it (0: at once).
  /// Vulkan Ring::begin(), policy Wait: every slot stayed in flight for wait_timeout
  /// (Ring::oldest_in_flight() names the point waited for). A byte ring's reserve_waiting(): the
  /// bytes did not free up within the timeout (ReserveError).
  Timeout,
  /// CUDA: a CUDA call failed (the failure's `cuda` says which). When it is sticky, or was the
  /// record of the copies' event, the Uploader has failed too (failed()).
  Cuda,
  /// CUDA: the Uploader failed earlier (a sticky CUDA error, or a direct part that did not
  /// complete within drain_timeout); it does nothing any more.
  /// Vulkan Streamer, commit(): recording or submitting the piece failed otherwise than by a
  /// lost device (nothing was submitted; the upload is Failed).
  Failed,
  /// Vulkan Streamer: the device was lost; nothing streams any more (make a new device and
  /// streamer).
  DeviceLost,
  /// Vulkan Streamer, next_piece(): the in-place upload was cancelled (or failed): no piece.
  Cancelled,
  /// Vulkan Streamer, next_piece(): every piece of the in-place upload has been handed out
  /// already. The normal end of a next_piece() loop.
  Done,
};

/// Names of UploadError's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<UploadError>) noexcept {
  return std::to_array<std::string_view>({"Inactive",
                                          "NullDestination",
                                          "ZeroSize",
                                          "Overflow",
                                          "UnsupportedFormat",
                                          "BadAspect",
                                          "Misaligned",
                                          "SizeMismatch",
                                          "OverlapsEarlierUpload",
                                          "ConflictingLayouts",
                                          "FallbackCapReached",
                                          "AllocationFailed",
                                          "RingFull",
                                          "TooLarge",
                                          "InvalidDestination",
                                          "OutOfBounds",
                                          "NoSuchSubresource",
                                          "FormatMismatch",
                                          "DestinationMismatch",
                                          "Sealed",
                                          "DoesNotFit",
                                          "AlreadyShared",
                                          "NoSlot",
                                          "InvalidArgument",
                                          "WouldBlock",
                                          "Timeout",
                                          "Cuda",
                                          "Failed",
                                          "DeviceLost",
                                          "Cancelled",
                                          "Done"});
}
static_assert(enum_names_complete<UploadError>(), "UploadError: a value has no name");

/// Why a frame could not be finished (or, WebGPU, marked submitted). The frame is unchanged: fix
/// the cause and finish again, or drop it. A value that names a backend is returned by that
/// backend only.
enum class FinishError : uint8_t {
  /// The frame was already finished (WebGPU submitted(): already submitted), moved from, or
  /// default-constructed.
  Inactive,
  /// Vulkan: the external point's semaphore is VK_NULL_HANDLE.
  NullSemaphore,
  /// Vulkan: the external semaphore has already reached the point's value: the ring would
  /// reclaim the memory before the GPU reads it. Pass a value your submission will signal.
  PointAlreadyReached,
  /// Vulkan: reading the external semaphore failed (VK_ERROR_DEVICE_LOST).
  DeviceLost,
  /// Vulkan: writers are still inside the frame's shared space (it is now sealed): call finish()
  /// again once they have left (SharedUploads::wait_drained()).
  WritersActive,
  /// Vulkan: a shared upload overlaps another upload of the frame, or names other layouts for a
  /// mip level than another upload: the copies cannot be recorded. Drop the frame.
  SharedConflict,
  /// Vulkan: flushing the frame's writes to non-coherent memory failed (MemoryHook::flush; out
  /// of memory or a lost device): nothing was recorded, so no copy reads bytes the device may not
  /// see. Finish again (the flush is retried) or drop the frame.
  FlushFailed,
  /// WebGPU: submitted() before finish().
  NotFinished,
  /// WebGPU: finish() of a slot frame with copies to record was given a null encoder.
  NullEncoder,
  /// A slot handed back to a ring that did not issue it (the core slot ring's finish()).
  ForeignLease,
};

/// Names of FinishError's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<FinishError>) noexcept {
  return std::to_array<std::string_view>(
      {"Inactive", "NullSemaphore", "PointAlreadyReached", "DeviceLost", "WritersActive",
       "SharedConflict", "FlushFailed", "NotFinished", "NullEncoder", "ForeignLease"});
}
static_assert(enum_names_complete<FinishError>(), "FinishError: a value has no name");

/// Why a bounded wait returned without its point reached: vulkan::wait() and vulkan::reached(),
/// vulkan::Ring::wait() and wait_idle(), cuda::Uploader::wait() and reached(). Waiting again
/// later is allowed;
/// the point may still be reached.
enum class WaitError : uint8_t {
  /// The point was not reached within the timeout (Vulkan Ring::wait(): also a vkWaitSemaphores
  /// failure other than VK_ERROR_DEVICE_LOST).
  Timeout,
  /// Vulkan: the device was lost; a Ring's waits have failed every frame in flight (as
  /// Ring::poll() does).
  DeviceLost,
  /// CUDA: the Uploader failed earlier (a sticky CUDA error or a direct part's timeout;
  /// Uploader::error() says which); nothing completes any more. Vulkan vulkan::reached() and
  /// vulkan::wait(): the semaphore could not be read or waited on (an error other than
  /// VK_ERROR_DEVICE_LOST); these and Ring::wait(): a point with no semaphore has a value.
  Failed,
};

/// Names of WaitError's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<WaitError>) noexcept {
  return std::to_array<std::string_view>({"Timeout", "DeviceLost", "Failed"});
}
static_assert(enum_names_complete<WaitError>(), "WaitError: a value has no name");

/// Why a create() made nothing, whatever it makes: a byte ring, a slot ring's configuration, a
/// fill pool, a Vulkan ring or streamer, a WebGPU ring, a CUDA uploader. Each create() lists, in
/// the order it checks them, the values it can return; a value that names an object or a backend
/// is returned by that one only. Nothing was made and nothing is left behind: whatever create()
/// had made before the failing step is destroyed.
enum class CreateError : uint8_t {
  /// A configuration value out of range that has no value of its own below (each create() says
  /// which fields it checks).
  InvalidConfig,
  /// ByteRing: ByteRingConfig::capacity is 0.
  ZeroCapacity,
  /// ByteRing: the cap (after 0 means capacity) is below capacity.
  CapBelowCapacity,
  /// ByteRing: ByteRingConfig::fallback_cap is above the cap.
  FallbackCapAboveCap,
  /// Slot rings: StagingRingConfig::slots is 0.
  NoSlots,
  /// Slot rings: min_slot_bytes is 0 or not a power of two.
  MinNotPowerOfTwo,
  /// Slot rings: max_slot_bytes is below min_slot_bytes.
  MaxBelowMin,
  /// Slot rings: slots is above STAGING_SLOTS_LIMIT.
  TooManySlots,
  /// Slot rings: max_slot_bytes (and so perhaps min_slot_bytes) is above SLOT_BYTES_LIMIT.
  SlotTooLarge,
  /// An ExhaustionPolicy the object cannot honour (Vulkan Ring: RingConfig::policy Split or Grow,
  /// Wait with a byte ring, ByteRingConfig::policy Split; WebGPU: other than Defer and
  /// Fallback; CUDA: Grow or Fallback).
  UnsupportedPolicy,
  /// A dependency create() needs is null (the internal detail::create_byte_ring()'s allocator;
  /// the stream scheduler's backend or allocator; a CUDA MultiUploader's DeviceApi).
  MissingDependency,
  /// Vulkan: a Dispatch member the object needs is null.
  MissingFunction,
  /// Vulkan: the physical device reports an API version below 1.2.
  ApiVersionTooOld,
  /// CUDA: there is no device, the configured device is out of range, or the current device
  /// could not be read.
  NoDevice,
  /// Staging memory could not be created or pinned (out of memory, a budget refused it, or the
  /// API failed).
  AllocationFailed,
  /// A GPU object other than memory could not be created: a Vulkan timeline semaphore or command
  /// pool, CUDA events.
  ObjectCreationFailed,
  /// A thread (a fill pool's, a pump thread) could not be started; those started were stopped.
  ThreadStartFailed,
};

/// Names of CreateError's values, in order (to_string, enum_from_string).
constexpr auto enum_names(std::type_identity<CreateError>) noexcept {
  return std::to_array<std::string_view>(
      {"InvalidConfig", "ZeroCapacity", "CapBelowCapacity", "FallbackCapAboveCap", "NoSlots",
       "MinNotPowerOfTwo", "MaxBelowMin", "TooManySlots", "SlotTooLarge", "UnsupportedPolicy",
       "MissingDependency", "MissingFunction", "ApiVersionTooOld", "NoDevice", "AllocationFailed",
       "ObjectCreationFailed", "ThreadStartFailed"});
}
static_assert(enum_names_complete<CreateError>(), "CreateError: a value has no name");

}  // namespace staging
