// Test support for the Vulkan tests: one device per test process (lavapipe in CI, a GPU where
// there is one), made by the shared support::TestDevice (tests/support/vulkan_test_device.hpp):
// VK_LAYER_KHRONOS_validation with synchronization validation when the layer exists, and every
// finding (tests/support/vulkan_messages.hpp says which messages are findings) fails the running
// test. The layer's notes about its own set-up (its cache file on a fresh machine) pass.
//
// Validation policy (environment variable STAGING_VULKAN_VALIDATION):
//   auto (default)  use the layer when installed. A CPU device (lavapipe) without the layer is a
//                   broken CI setup and fails the test; a GPU without it runs unvalidated.
//   require         fail when the layer is missing.     off   never enable it.
// Device choice: the first device (discrete > integrated > virtual > CPU) with Vulkan 1.2+,
// timeline semaphores and synchronization2; STAGING_VULKAN_DEVICE=<substring> picks by name.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "staging/detail/core/invariant_checker.hpp"
#include "staging/detail/vulkan/ring_inspect.hpp"
#include "staging/vulkan.hpp"
#include "vulkan_test_device.hpp"

namespace staging::vulkan::test {

/// A device buffer (device-local when possible) or a host-visible, coherent, mapped one.
using TestBuffer = support::Buffer;

/// An optimal-tiling image with TRANSFER_SRC | TRANSFER_DST usage.
using TestImage = support::Image;

/// The process's Vulkan context. Created by Gpu::get(); destroyed at exit.
class Gpu {
 public:
  /// The context, or null with `reason` set when there is no usable device (the test skips).
  static Gpu* get(std::string& reason);

  ~Gpu();
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  /// The shared set-up (instance, device, queues, messages).
  std::unique_ptr<support::TestDevice> context;
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical_device = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties properties{};
  bool validation = false;
  bool sync_validation = false;
  bool bc_formats = false;
  /// staging's dispatch table for the device.
  Dispatch dispatch;
  /// The handles and dispatch a Ring needs.
  [[nodiscard]] Device ring_device() const { return Device{physical_device, device, dispatch}; }
  /// One line: device name, type, API version, validation state.
  [[nodiscard]] std::string describe() const;

  TestBuffer make_buffer(uint64_t size, VkBufferUsageFlags usage, bool host_visible);
  void destroy(TestBuffer& buffer);
  /// Null image (format unsupported for optimal-tiling transfer) when `format` cannot be used.
  TestImage make_image(VkFormat format, VkExtent3D extent, uint32_t mips, uint32_t layers);
  void destroy(TestImage& image);
  VkSemaphore make_timeline(uint64_t initial = 0);
  void destroy(VkSemaphore semaphore);

  /// A command buffer from the pool, begun for one-time submission.
  VkCommandBuffer begin_commands();
  /// Ends `cmd` and submits it, waiting on `waits` and signalling `signals`.
  void submit(VkCommandBuffer cmd, std::span<const VkSemaphoreSubmitInfo> waits,
              std::span<const VkSemaphoreSubmitInfo> signals);
  /// Ends, submits and waits for `cmd` (vkQueueWaitIdle), then frees it.
  void submit_and_wait(VkCommandBuffer cmd);
  void free_commands(VkCommandBuffer cmd);
  /// Host waits for `value` on `semaphore` (asserts it is reached within 60 s).
  void wait(VkSemaphore semaphore, uint64_t value);

  /// Records a copy of `src` [offset, offset+size) into `dst` at `dst_offset` followed by a
  /// barrier that makes it visible to host reads.
  void record_readback(VkCommandBuffer cmd, VkBuffer src, uint64_t offset, uint64_t size,
                       VkBuffer dst, uint64_t dst_offset);
  /// Records copies of every mip level (all layers, aspect `aspect`) of `image`, which must be in
  /// TRANSFER_SRC_OPTIMAL, into `dst` at `offsets[mip]` (tightly packed), then a barrier making
  /// them visible to host reads.
  void record_image_readback(VkCommandBuffer cmd, const TestImage& image, VkImageAspectFlags aspect,
                             VkBuffer dst, std::span<const uint64_t> offsets);

 private:
  Gpu() = default;
  bool init(std::string& reason);
};

/// Fixture: SetUp gets the Gpu (or skips with the reason); TearDown waits for the device idle.
/// Validation messages fail the test that caused them (the messenger adds a failure).
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  Gpu* gpu = nullptr;
};

/// While alive, validation messages are collected here instead of failing the test (for tests
/// proving that validation sees a deliberate mistake). One at a time.
class ExpectValidationMessages {
 public:
  ExpectValidationMessages();
  ~ExpectValidationMessages();
  ExpectValidationMessages(const ExpectValidationMessages&) = delete;
  ExpectValidationMessages& operator=(const ExpectValidationMessages&) = delete;
  /// The message ids seen so far (e.g. "SYNC-HAZARD-WRITE-AFTER-READ").
  std::vector<std::string> ids;
};

/// The ring configurations the stress tests run under: the slot ring, and the byte ring under
/// each of its policies (the backend's policy is Fallback in all of them).
enum class Setup { Slots, BytesWait, BytesGrow, BytesFallback };
/// "Slots", "BytesWait", ... (test names).
const char* setup_name(Setup setup);
/// `base` with the strategy and byte-ring policy of `setup`; byte rings get `byte_capacity`
/// bytes (Grow and Fallback may hold up to 3x that).
RingConfig with_setup(RingConfig base, Setup setup, uint64_t byte_capacity);

/// The random seed of a test: STAGING_TEST_SEED when set, else `fallback`. Printed.
uint64_t test_seed(uint64_t fallback);
/// `n` random bytes (never all zero).
std::vector<std::byte> random_bytes(std::mt19937_64& rng, std::size_t n);
/// The index of the first differing byte, or -1 when equal (sizes must match).
int64_t first_difference(std::span<const std::byte> a, std::span<const std::byte> b);
/// Validation messages seen so far in this process (each also failed its test).
std::size_t validation_message_count();

/// An invariant checker over a Ring's staging events (I1, I3, I4), independent of the ring's own
/// bookkeeping: every range the CPU is handed must lie inside its buffer and must not overlap a
/// range of another frame that is still open, or finished with a point the semaphore (read
/// directly) has not reached; every retirement must be at a reached point. It also feeds the
/// core's InvariantChecker (each staging buffer a region, each range a reservation whose token is
/// its frame, cancelled when the ring releases the frame), so that the core's checker runs on the
/// slot strategy too; its violations count here.
class StagingChecker final : public Observer {
 public:
  explicit StagingChecker(Gpu& gpu) : gpu_(&gpu) {}
  /// The ring's FrameWrite, FrameFinish and FrameRelease events, to the calls below; the byte
  /// ring's events are left to the core's own checker (RingConfig::checker).
  void on_event(const Event& event) override;
  void on_write(uint64_t frame, VkBuffer buffer, uint64_t capacity, uint64_t offset, uint64_t size);
  void on_finish(uint64_t frame, const RetirementPoint& point);
  /// `retired`: released because its point was reached (not abandoned, dropped or lost).
  void on_release(uint64_t frame, bool retired);

  /// Writes checked, and the violations found (each also fails the test).
  uint64_t writes = 0;
  uint64_t releases = 0;
  uint64_t violations = 0;

 private:
  struct Range {
    VkBuffer buffer;
    uint64_t begin, end;
  };
  struct Frame {
    uint64_t id;
    std::vector<Range> ranges;
    bool finished = false;
    RetirementPoint point;
  };
  bool reached(const RetirementPoint& point);
  void check_core();
  Gpu* gpu_;
  std::vector<Frame> frames_;
  InvariantChecker core_{InvariantChecker::Mode::Record};
  struct Region {
    VkBuffer buffer;
    uint64_t capacity;
  };
  std::vector<Region> regions_;                              // index = the core checker's region id
  std::vector<std::pair<uint64_t, uint64_t>> reservations_;  // (frame, reservation id)
  uint64_t next_reservation_ = 1;
  std::size_t core_seen_ = 0;
};

}  // namespace staging::vulkan::test
