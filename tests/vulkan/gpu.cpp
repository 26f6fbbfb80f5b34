#include "gpu.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "vulkan_commands.hpp"

namespace staging::vulkan::test {

namespace {

std::atomic<std::size_t> g_messages{0};
std::unique_ptr<Gpu> g_gpu;
bool g_tried = false;
bool g_fatal = false;
std::string g_reason;
ExpectValidationMessages* g_expect = nullptr;  // collects findings instead of failing

// Every finding fails the running test, unless an ExpectValidationMessages collects it.
void on_finding(const support::Message& m) {
  if (g_expect != nullptr) {
    g_expect->ids.push_back(m.id);
    return;
  }
  ++g_messages;
  std::fprintf(stderr, "[vulkan] validation message [%s]: %s\n", m.id.c_str(), m.text.c_str());
  ADD_FAILURE() << "validation message [" << m.id << "]: " << m.text;
}

// Tears the process's Gpu down inside the test program, so that validation messages at device
// destruction (leaked objects) still fail the run.
class GpuEnvironment final : public ::testing::Environment {
 public:
  void TearDown() override { g_gpu.reset(); }
};
[[maybe_unused]] ::testing::Environment* const g_environment =
    ::testing::AddGlobalTestEnvironment(new GpuEnvironment);

}  // namespace

Gpu* Gpu::get(std::string& reason) {
  if (!g_tried) {
    g_tried = true;
    std::unique_ptr<Gpu> gpu(new Gpu);
    if (gpu->init(g_reason)) {
      g_gpu = std::move(gpu);
      std::printf("[vulkan] %s\n", g_gpu->describe().c_str());
      std::fflush(stdout);
    } else if (!g_fatal) {
      std::printf("[vulkan] no usable device: %s\n", g_reason.c_str());
      std::fflush(stdout);
    }
  }
  reason = g_reason;
  return g_gpu.get();
}

bool Gpu::init(std::string& reason) {
  const std::optional<support::Validation> mode =
      support::validation_from_environment(support::Validation::Auto);
  if (!mode) {
    g_fatal = true;
    reason = "STAGING_VULKAN_VALIDATION: use auto, require or off";
    return false;
  }
  const char* name = std::getenv("STAGING_VULKAN_DEVICE");
  support::Failure failure;
  context = support::TestDevice::create({.application = "staging-test-vulkan",
                                         .validation = *mode,
                                         .device_name = name ? name : "",
                                         .api_version = VK_API_VERSION_1_2,
                                         .transfer_queue = true,
                                         .on_finding = on_finding},
                                        failure);
  if (!context) {
    g_fatal = failure.broken;
    reason = failure.reason;
    return false;
  }
  const support::TestDevice& d = *context;
  if (!d.validation() && *mode == support::Validation::Auto &&
      d.properties().deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU) {
    g_fatal = true;
    reason = std::string("software device ") + d.properties().deviceName +
             " without VK_LAYER_KHRONOS_validation: install vulkan-validationlayers (or set "
             "STAGING_VULKAN_VALIDATION=off to run unvalidated)";
    return false;
  }
  instance = d.instance();
  physical_device = d.physical_device();
  device = d.device();
  queue = d.universal().queue;
  queue_family = d.universal().family;
  pool = d.universal().pool;
  properties = d.properties();
  validation = d.validation();
  sync_validation = d.synchronization_validation();
  bc_formats = d.bc_formats();
  dispatch = d.dispatch();
  return true;
}

Gpu::~Gpu() = default;

std::string Gpu::describe() const {
  return "device: " + context->describe() + " | validation: " + (validation ? "on" : "off") +
         " | synchronization validation: " +
         (!sync_validation ? std::string("off")
          : context->layer_status().find("SYNCHRONIZATION_VALIDATION") != std::string::npos
              ? std::string("on (the layer's status message confirms it)")
              : std::string("on"));
}

TestBuffer Gpu::make_buffer(uint64_t size, VkBufferUsageFlags usage, bool host_visible) {
  TestBuffer b = context->make_buffer(size, usage, host_visible);
  EXPECT_NE(b.buffer, VK_NULL_HANDLE) << "make_buffer(" << size << ") failed";
  return b;
}

void Gpu::destroy(TestBuffer& b) {
  context->destroy(b);
}

TestImage Gpu::make_image(VkFormat format, VkExtent3D extent, uint32_t mips, uint32_t layers) {
  return context->make_image(format, extent, mips, layers,
                             VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT);
}

void Gpu::destroy(TestImage& img) {
  context->destroy(img);
}

VkSemaphore Gpu::make_timeline(uint64_t initial) {
  const VkSemaphoreTypeCreateInfo type{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                       .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
                                       .initialValue = initial};
  const VkSemaphoreCreateInfo info{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
                                   .pNext = &type};
  VkSemaphore s = VK_NULL_HANDLE;
  EXPECT_EQ(vkCreateSemaphore(device, &info, nullptr, &s), VK_SUCCESS);
  return s;
}

void Gpu::destroy(VkSemaphore s) {
  vkDestroySemaphore(device, s, nullptr);
}

VkCommandBuffer Gpu::begin_commands() {
  VkCommandBuffer cmd = context->begin_commands(context->universal());
  EXPECT_NE(cmd, VK_NULL_HANDLE);
  return cmd;
}

void Gpu::submit(VkCommandBuffer cmd, std::span<const VkSemaphoreSubmitInfo> waits,
                 std::span<const VkSemaphoreSubmitInfo> signals) {
  EXPECT_EQ(context->submit(context->universal(), cmd, waits, signals), VK_SUCCESS);
}

void Gpu::submit_and_wait(VkCommandBuffer cmd) {
  submit(cmd, {}, {});
  EXPECT_EQ(vkQueueWaitIdle(queue), VK_SUCCESS);
  free_commands(cmd);
}

void Gpu::free_commands(VkCommandBuffer cmd) {
  vkFreeCommandBuffers(device, pool, 1, &cmd);
}

void Gpu::wait(VkSemaphore semaphore, uint64_t value) {
  const VkSemaphoreWaitInfo info{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                                 .semaphoreCount = 1,
                                 .pSemaphores = &semaphore,
                                 .pValues = &value};
  ASSERT_EQ(vkWaitSemaphores(device, &info, uint64_t{60} * 1000 * 1000 * 1000), VK_SUCCESS)
      << "semaphore value " << value << " not reached within 60 s";
}

void Gpu::record_readback(VkCommandBuffer cmd, VkBuffer src, uint64_t offset, uint64_t size,
                          VkBuffer dst, uint64_t dst_offset) {
  // The readback buffer may have been written by an earlier submission (write-after-write).
  support::buffer_barrier(cmd, dst, dst_offset, size, support::kCopyWrite, support::kCopyWrite);
  const VkBufferCopy region{offset, dst_offset, size};
  vkCmdCopyBuffer(cmd, src, dst, 1, &region);
  support::buffer_barrier(cmd, dst, dst_offset, size, support::kCopyWrite, support::kHostRead);
}

void Gpu::record_image_readback(VkCommandBuffer cmd, const TestImage& image,
                                VkImageAspectFlags aspect, VkBuffer dst,
                                std::span<const uint64_t> offsets) {
  support::memory_barrier(cmd, support::kCopyWrite, support::kCopyWrite);
  std::vector<VkBufferImageCopy> regions;
  for (uint32_t m = 0; m < image.mips; ++m) {
    regions.push_back(VkBufferImageCopy{
        .bufferOffset = offsets[m],
        .imageSubresource = {aspect, m, 0, image.layers},
        .imageExtent = {std::max(1u, image.extent.width >> m),
                        std::max(1u, image.extent.height >> m), 1},
    });
  }
  vkCmdCopyImageToBuffer(cmd, image.image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, dst,
                         static_cast<uint32_t>(regions.size()), regions.data());
  support::memory_barrier(cmd, support::kCopyWrite, support::kHostRead);
}

void GpuTest::SetUp() {
  std::string reason;
  gpu = Gpu::get(reason);
  if (gpu == nullptr) {
    if (g_fatal) {
      FAIL() << reason;
    } else {
      GTEST_SKIP() << reason;
    }
  }
}

void GpuTest::TearDown() {
  if (gpu != nullptr) vkDeviceWaitIdle(gpu->device);
}

const char* setup_name(Setup setup) {
  switch (setup) {
    case Setup::Slots:
      return "Slots";
    case Setup::BytesWait:
      return "BytesWait";
    case Setup::BytesGrow:
      return "BytesGrow";
    case Setup::BytesFallback:
      return "BytesFallback";
  }
  return "?";
}

RingConfig with_setup(RingConfig base, Setup setup, uint64_t byte_capacity) {
  if (setup == Setup::Slots) return base;  // the base's slot ring
  ByteRingConfig bytes{.capacity = byte_capacity, .wait_timeout = std::chrono::seconds(2)};
  switch (setup) {
    case Setup::BytesWait:
      bytes.policy = ExhaustionPolicy::Wait;
      break;
    case Setup::BytesGrow:
      bytes.policy = ExhaustionPolicy::Grow;
      bytes.cap = 3 * byte_capacity;
      bytes.trim_after = std::chrono::milliseconds(50);
      break;
    case Setup::BytesFallback:
      bytes.policy = ExhaustionPolicy::Fallback;
      bytes.cap = 3 * byte_capacity;
      break;
    case Setup::Slots:
      break;
  }
  base.strategy = bytes;
  return base;
}

uint64_t test_seed(uint64_t fallback) {
  const char* s = std::getenv("STAGING_TEST_SEED");
  const uint64_t v = s ? std::strtoull(s, nullptr, 0) : fallback;
  std::printf("[vulkan] random seed %llu (set STAGING_TEST_SEED to change)\n",
              static_cast<unsigned long long>(v));
  return v;
}

std::vector<std::byte> random_bytes(std::mt19937_64& rng, std::size_t n) {
  std::vector<std::byte> out(n);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t v = rng();
    std::memcpy(out.data() + i, &v, 8);
  }
  if (i < n) {
    const uint64_t v = rng();
    std::memcpy(out.data() + i, &v, n - i);
  }
  return out;
}

int64_t first_difference(std::span<const std::byte> a, std::span<const std::byte> b) {
  if (a.size() != b.size()) return 0;
  if (std::memcmp(a.data(), b.data(), a.size()) == 0) return -1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return static_cast<int64_t>(i);
  }
  return -1;
}

ExpectValidationMessages::ExpectValidationMessages() {
  g_expect = this;
}
ExpectValidationMessages::~ExpectValidationMessages() {
  g_expect = nullptr;
}

std::size_t validation_message_count() {
  return g_messages.load();
}

// ---- StagingChecker ---------------------------------------------------------------------------

bool StagingChecker::reached(const RetirementPoint& point) {
  uint64_t value = 0;
  if (vkGetSemaphoreCounterValue(gpu_->device, point.semaphore, &value) != VK_SUCCESS) return false;
  return value >= point.value;
}

namespace {

// Event::object back to the Vulkan handle it carries (a pointer on 64-bit hosts).
template <class Handle>
Handle handle_from_bits(uint64_t bits) {
  if constexpr (std::is_pointer_v<Handle>) {
    return reinterpret_cast<Handle>(static_cast<std::uintptr_t>(bits));
  } else {
    return static_cast<Handle>(bits);
  }
}

}  // namespace

void StagingChecker::on_event(const Event& e) {
  switch (e.kind) {
    case EventKind::FrameWrite:
      on_write(e.id, handle_from_bits<VkBuffer>(e.object), e.object_bytes, e.offset, e.bytes);
      break;
    case EventKind::FrameFinish:
      on_finish(e.id, RetirementPoint{handle_from_bits<VkSemaphore>(e.object), e.value});
      break;
    case EventKind::FrameRelease:
      on_release(e.id, !e.cancelled && !e.failed);
      break;
    default:
      break;
  }
}

void StagingChecker::on_write(uint64_t frame, VkBuffer buffer, uint64_t capacity, uint64_t offset,
                              uint64_t size) {
  ++writes;
  if (size == 0 || offset > capacity || size > capacity - offset) {
    ++violations;
    ADD_FAILURE() << "I4: frame " << frame << " writes [" << offset << ", +" << size
                  << ") past its buffer of " << capacity << " bytes";
  }
  const uint64_t end = offset + size;
  Frame* mine = nullptr;
  for (Frame& f : frames_) {
    if (f.id == frame) {
      mine = &f;
      continue;
    }
    for (const Range& r : f.ranges) {
      if (r.buffer != buffer || r.end <= offset || end <= r.begin) continue;
      if (!f.finished) {
        ++violations;
        ADD_FAILURE() << "I1: frame " << frame << " writes [" << offset << ", " << end
                      << ") over open frame " << f.id << "'s [" << r.begin << ", " << r.end << ")";
      } else if (!reached(f.point)) {
        ++violations;
        ADD_FAILURE() << "I1: frame " << frame << " writes [" << offset << ", " << end
                      << ") over frame " << f.id << "'s [" << r.begin << ", " << r.end
                      << ") still read by the GPU (point " << f.point.value << " not reached)";
      }
    }
  }
  if (mine == nullptr) {
    frames_.push_back(Frame{frame, {}, false, {}});
    mine = &frames_.back();
  }
  mine->ranges.push_back({buffer, offset, end});

  // The core's checker: one region per staging buffer (a handle reused for a new buffer of
  // another size is a new region; its old ranges were released before the buffer was freed).
  uint32_t region = 0;
  while (region < regions_.size() && regions_[region].buffer != buffer)
    ++region;
  if (region < regions_.size() && regions_[region].capacity != capacity) {
    core_.forget_region(region);
    regions_[region].capacity = capacity;
    core_.on_region_created(region, capacity);
  } else if (region == regions_.size()) {
    regions_.push_back({buffer, capacity});
    core_.on_region_created(region, capacity);
  }
  Reservation r;
  r.id = next_reservation_++;
  r.region = region;
  r.offset = offset;
  r.size = size;
  r.token = frame;
  r.owner = frame;
  core_.on_reserve(r);
  reservations_.emplace_back(frame, r.id);
  check_core();
}

void StagingChecker::check_core() {
  const auto& found = core_.violations();
  for (; core_seen_ < found.size(); ++core_seen_) {
    ++violations;
    ADD_FAILURE() << "core InvariantChecker: " << found[core_seen_].message;
  }
}

void StagingChecker::on_finish(uint64_t frame, const RetirementPoint& point) {
  for (Frame& f : frames_) {
    if (f.id == frame) {
      f.finished = true;
      f.point = point;
      return;
    }
  }
  frames_.push_back(Frame{frame, {}, true, point});
}

void StagingChecker::on_release(uint64_t frame, bool retired) {
  ++releases;
  std::erase_if(reservations_, [&](const std::pair<uint64_t, uint64_t>& r) {
    if (r.first != frame) return false;
    core_.on_cancel(r.second);  // no longer read by the GPU (or never submitted)
    return true;
  });
  check_core();
  for (auto it = frames_.begin(); it != frames_.end(); ++it) {
    if (it->id != frame) continue;
    if (retired && !(it->finished && reached(it->point))) {
      ++violations;
      ADD_FAILURE() << "I3: frame " << frame << " retired before its point " << it->point.value
                    << " was reached";
    }
    frames_.erase(it);
    return;
  }
}

}  // namespace staging::vulkan::test
