// Streamer: see include/staging/vulkan/streamer.hpp.
//
// The Vulkan side is StreamerBackend: the core scheduler's RegionAllocator (one staging buffer
// of ring_bytes, from the MemoryHook) and StreamBackend (records a batch's barriers and copies
// into a command buffer of its own pool and submits it, signalling the next value of its
// timeline semaphore). Each upload's target travels as the request's context (an UploadTarget,
// deleted when the scheduler releases it).
#include "staging/vulkan/streamer.hpp"

#include <algorithm>
#include <atomic>
#include <limits>
#include <thread>
#include <vector>

#include "staging/detail/core/align.hpp"
#include "staging/detail/core/atomic_counters.hpp"
#include "staging/detail/core/stream_scheduler.hpp"
#include "staging/detail/core/upload_pieces.hpp"
#include "staging/detail/vulkan/default_memory.hpp"
#include "staging/detail/vulkan/format.hpp"
#include "staging/detail/vulkan/stream_target.hpp"

namespace staging::vulkan {

namespace detail {

namespace {

// What a batch's pieces are copied to.
struct UploadTarget {
  bool image = false;
  BufferTarget buffer;
  uint64_t size = 0;  // buffer uploads
  ImageTarget image_target;
  VkImageAspectFlags copy_aspect = 0;
};

uint64_t to_ns(Duration d) {
  return d <= Duration{0} ? 0 : static_cast<uint64_t>(d.count());
}

}  // namespace

class StreamerBackend final : public StreamBackend, public RegionAllocator {
 public:
  // `graphics`: whether the queue's family supports GRAPHICS (copies into depth and stencil).
  StreamerBackend(const Device& device, const StreamerConfig& config, bool graphics)
      : device_(device.device), d_(device.dispatch), config_(config), graphics_(graphics) {
    if (config.memory == nullptr) {
      own_memory_ = std::make_unique<DefaultMemory>(device.physical_device, device.device,
                                                    device.dispatch, config.prefer_device_local);
      hook_ = own_memory_.get();
    } else {
      hook_ = config.memory;
    }
    d_.vkGetPhysicalDeviceProperties(device.physical_device, &properties_);
  }
  ~StreamerBackend() override {
    if (semaphore_ != VK_NULL_HANDLE) d_.vkDestroySemaphore(device_, semaphore_, nullptr);
    if (pool_ != VK_NULL_HANDLE) d_.vkDestroyCommandPool(device_, pool_, nullptr);
  }
  StreamerBackend(const StreamerBackend&) = delete;
  StreamerBackend& operator=(const StreamerBackend&) = delete;

  // Creates the command pool and the timeline semaphore.
  bool init() {
    const VkCommandPoolCreateInfo pool_info{
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags =
            VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT | VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
        .queueFamilyIndex = config_.queue_family,
    };
    if (d_.vkCreateCommandPool(device_, &pool_info, nullptr, &pool_) != VK_SUCCESS) return false;
    const VkSemaphoreTypeCreateInfo type{
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
        .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
        .initialValue = 0,
    };
    const VkSemaphoreCreateInfo sem_info{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
                                         .pNext = &type};
    return d_.vkCreateSemaphore(device_, &sem_info, nullptr, &semaphore_) == VK_SUCCESS;
  }

  // --- RegionAllocator: region 0 only (the scheduler's ring never grows) ---------------------

  Expected<void, AllocError> create_region(uint32_t region, uint64_t bytes) override {
    if (region != 0 || staging_.buffer != VK_NULL_HANDLE) return unexpected(AllocError::Other);
    auto made = hook_->allocate(bytes);
    if (!made) return unexpected(made.error());
    staging_ = *made;
    return {};
  }
  void destroy_region(uint32_t /*region*/) noexcept override {
    if (staging_.buffer != VK_NULL_HANDLE) hook_->release(staging_);
    staging_ = StagingMemory{};
  }

  // --- StreamBackend -------------------------------------------------------------------------

  std::byte* mapped(uint32_t /*region*/) override { return staging_.mapped; }

  Expected<TimelineValue, UploadError> submit(const StreamBatch& batch) override {
    if (lost_.load(std::memory_order_relaxed)) return unexpected(UploadError::DeviceLost);
    // The batch's bytes visible to the device first: a failed flush records and submits
    // nothing (the scheduler fails the batch's uploads and reclaims its bytes).
    if (!staging_.coherent) {
      counters_.add<&S::flushes>(1);
      if (auto flushed = hook_->flush(staging_, batch.offset, batch.bytes); !flushed) {
        if (flushed.error() != AllocError::DeviceLost) return unexpected(UploadError::Failed);
        mark_lost();
        return unexpected(UploadError::DeviceLost);
      }
    }
    Slot* slot = free_command_buffer();
    if (slot == nullptr) return unexpected(UploadError::Failed);
    const VkCommandBufferBeginInfo begin{
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    if (d_.vkBeginCommandBuffer(slot->cmd, &begin) != VK_SUCCESS) {
      return unexpected(UploadError::Failed);
    }
    record(slot->cmd, batch);
    if (d_.vkEndCommandBuffer(slot->cmd) != VK_SUCCESS) {
      (void)d_.vkResetCommandBuffer(slot->cmd, 0);  // not left recording for its next use
      return unexpected(UploadError::Failed);
    }
    const TimelineValue value = next_value_ + 1;
    const VkCommandBufferSubmitInfo cmd_info{
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
        .commandBuffer = slot->cmd,
    };
    const VkSemaphoreSubmitInfo signal{
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
        .semaphore = semaphore_,
        .value = value,
        .stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
    };
    const VkSubmitInfo2 submit{
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO_2,
        .commandBufferInfoCount = 1,
        .pCommandBufferInfos = &cmd_info,
        .signalSemaphoreInfoCount = 1,
        .pSignalSemaphoreInfos = &signal,
    };
    VkResult result = VK_SUCCESS;
    if (config_.queue_mutex != nullptr) {
      std::lock_guard lock(*config_.queue_mutex);
      result = d_.vkQueueSubmit2(config_.queue, 1, &submit, VK_NULL_HANDLE);
    } else {
      result = d_.vkQueueSubmit2(config_.queue, 1, &submit, VK_NULL_HANDLE);
    }
    if (result != VK_SUCCESS) {
      if (result == VK_ERROR_DEVICE_LOST) {
        mark_lost();
        return unexpected(UploadError::DeviceLost);
      }
      return unexpected(UploadError::Failed);
    }
    next_value_ = value;
    slot->value = value;
    counters_.add<&S::submissions>(1);
    last_submitted_.store(value, std::memory_order_release);
    return value;
  }

  TimelineValue completed() override {
    uint64_t value = 0;
    const VkResult r = d_.vkGetSemaphoreCounterValue(device_, semaphore_, &value);
    if (r == VK_ERROR_DEVICE_LOST) mark_lost();
    if (r != VK_SUCCESS) return completed_.load(std::memory_order_acquire);
    // Never decreases (a racing reader may have stored a higher one).
    uint64_t seen = completed_.load(std::memory_order_relaxed);
    while (seen < value &&
           !completed_.compare_exchange_weak(seen, value, std::memory_order_acq_rel)) {
    }
    return std::max(seen, value);
  }

  TimelineValue wait(TimelineValue value, Duration timeout) override {
    if (completed() >= value || lost()) return completed_.load(std::memory_order_acquire);
    if (value > last_submitted_.load(std::memory_order_acquire)) return completed();  // unreachable
    const VkSemaphoreWaitInfo info{
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
        .semaphoreCount = 1,
        .pSemaphores = &semaphore_,
        .pValues = &value,
    };
    if (d_.vkWaitSemaphores(device_, &info, to_ns(timeout)) == VK_ERROR_DEVICE_LOST) mark_lost();
    return completed();
  }

  bool lost() const noexcept override { return lost_.load(std::memory_order_acquire); }

  void released(void* context) noexcept override { delete static_cast<UploadTarget*>(context); }

  // --- queries ---------------------------------------------------------------------------------

  VkSemaphore semaphore() const noexcept { return semaphore_; }
  TimelineValue last_submitted() const noexcept {
    return last_submitted_.load(std::memory_order_acquire);
  }
  const VkPhysicalDeviceProperties& properties() const noexcept { return properties_; }
  const Dispatch& dispatch() const noexcept { return d_; }
  bool graphics() const noexcept { return graphics_; }
  void add_stats(StreamerStats& s) const { counters_.store_into(s); }
  // Waits (without a limit) for every submission to complete, unless the device is lost.
  void wait_all() {
    const TimelineValue last = last_submitted();
    if (last == 0 || semaphore_ == VK_NULL_HANDLE) return;  // nothing submitted (or not created)
    while (!lost_.load() && completed() < last)
      (void)wait(last, std::chrono::seconds(1));
  }

  // The families an ownership transfer moves between (StreamerConfig::queue_family, then
  // consumer_family).
  QueueFamilies families() const noexcept {
    return {config_.queue_family, config_.consumer_family};
  }

 private:
  struct Slot {
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    TimelineValue value = 0;  // the submission that last used it (0: never)
  };

  void mark_lost() {
    if (!lost_.exchange(true, std::memory_order_acq_rel)) counters_.add<&S::device_lost>(1);
  }

  // A command buffer whose last submission completed, or a new one.
  Slot* free_command_buffer() {
    const TimelineValue done = completed();
    for (Slot& s : slots_) {
      if (s.value <= done) return &s;
    }
    const VkCommandBufferAllocateInfo info{
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = pool_,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    Slot s;
    if (d_.vkAllocateCommandBuffers(device_, &info, &s.cmd) != VK_SUCCESS) return nullptr;
    counters_.add<&S::command_buffers>(1);
    slots_.push_back(s);
    return &slots_.back();
  }

  // The batch's barriers before, its copies (one command per run of pieces to one target), and
  // its barriers after.
  void record(VkCommandBuffer cmd, const StreamBatch& batch) {
    images_.clear();
    buffers_.clear();
    for (const BatchPiece& p : batch.pieces) {
      const auto* t = static_cast<const UploadTarget*>(p.context);
      if (t->image && p.piece.first) images_.push_back(image_begin_barrier(t->image_target));
    }
    record_barrier(cmd);
    for (std::size_t i = 0; i < batch.pieces.size();) {
      const auto* t = static_cast<const UploadTarget*>(batch.pieces[i].context);
      std::size_t j = i;
      if (t->image) {
        image_regions_.clear();
        for (; j < batch.pieces.size() && batch.pieces[j].context == t; ++j) {
          const BatchPiece& p = batch.pieces[j];
          const ImagePiece& r = p.piece.image;
          image_regions_.push_back(VkBufferImageCopy{
              .bufferOffset = p.staging_offset,
              // 0: rows as tightly packed as the region (the streamer's own layout)
              .bufferRowLength = r.layout.tight() ? 0 : static_cast<uint32_t>(r.layout.row_length),
              .bufferImageHeight = r.layout.tight() ? 0 : r.layout.rows * r.layout.block.height,
              .imageSubresource = {t->copy_aspect, r.level, r.base_layer, r.layers},
              .imageOffset = {static_cast<int32_t>(r.x), static_cast<int32_t>(r.y),
                              static_cast<int32_t>(r.z)},
              .imageExtent = {r.width, r.height, r.depth},
          });
        }
        d_.vkCmdCopyBufferToImage(
            cmd, staging_.buffer, t->image_target.image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
            static_cast<uint32_t>(image_regions_.size()), image_regions_.data());
        counters_.add<&S::copy_regions>(image_regions_.size());
      } else {
        buffer_regions_.clear();
        for (; j < batch.pieces.size() && batch.pieces[j].context == t; ++j) {
          const BatchPiece& p = batch.pieces[j];
          buffer_regions_.push_back(
              VkBufferCopy{p.staging_offset, p.piece.dst_offset, p.piece.bytes});
        }
        d_.vkCmdCopyBuffer(cmd, staging_.buffer, t->buffer.buffer,
                           static_cast<uint32_t>(buffer_regions_.size()), buffer_regions_.data());
        counters_.add<&S::copy_regions>(buffer_regions_.size());
      }
      counters_.add<&S::copy_commands>(1);
      i = j;
    }
    for (const BatchPiece& p : batch.pieces) {
      if (!p.piece.last) continue;
      const auto* t = static_cast<const UploadTarget*>(p.context);
      if (t->image) {
        images_.push_back(image_end_barrier(t->image_target, families()));
      } else if (auto b = buffer_end_barrier(t->buffer, t->size, families())) {
        buffers_.push_back(*b);
      }
    }
    record_barrier(cmd);
  }

  void record_barrier(VkCommandBuffer cmd) {
    if (images_.empty() && buffers_.empty()) return;
    const VkDependencyInfo dep{
        .sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
        .bufferMemoryBarrierCount = static_cast<uint32_t>(buffers_.size()),
        .pBufferMemoryBarriers = buffers_.data(),
        .imageMemoryBarrierCount = static_cast<uint32_t>(images_.size()),
        .pImageMemoryBarriers = images_.data(),
    };
    d_.vkCmdPipelineBarrier2(cmd, &dep);
    counters_.add<&S::barriers>(1);
    images_.clear();
    buffers_.clear();
  }

  VkDevice device_;
  Dispatch d_;
  StreamerConfig config_;
  bool graphics_;
  VkPhysicalDeviceProperties properties_{};
  std::unique_ptr<DefaultMemory> own_memory_;
  MemoryHook* hook_ = nullptr;
  StagingMemory staging_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkSemaphore semaphore_ = VK_NULL_HANDLE;
  // Used by submit() only (one at a time).
  std::vector<Slot> slots_;
  std::vector<VkImageMemoryBarrier2> images_;
  std::vector<VkBufferMemoryBarrier2> buffers_;
  std::vector<VkBufferImageCopy> image_regions_;
  std::vector<VkBufferCopy> buffer_regions_;
  TimelineValue next_value_ = 0;
  // Read from any thread.
  std::atomic<TimelineValue> last_submitted_{0};
  std::atomic<TimelineValue> completed_{0};
  std::atomic<bool> lost_{false};
  // The Vulkan side's counters of StreamerStats.
  using S = StreamerStats;
  AtomicCounters<S, &S::submissions, &S::copy_commands, &S::copy_regions, &S::barriers,
                 &S::command_buffers, &S::flushes, &S::device_lost>
      counters_;
};

}  // namespace detail

namespace {

// The own pool's default size is capped here: more fill threads than the copies need fill the
// ring faster than it retires and then contend for its room (docs/benchmarks.md, "The streamer at
// its default thread count": 8 threads beat 12 and 16 on both queues of a 16-core host).
constexpr unsigned kMostDefaultFillThreads = 8;

UploadError from(EnqueueError e) noexcept {
  switch (e) {
    case EnqueueError::Empty:
      return UploadError::ZeroSize;
    case EnqueueError::QueueFull:
      return UploadError::WouldBlock;
    case EnqueueError::Timeout:
      return UploadError::Timeout;
    case EnqueueError::TooLarge:
      return UploadError::TooLarge;
    case EnqueueError::Stopped:
      return UploadError::Inactive;
    case EnqueueError::DeviceLost:
      return UploadError::DeviceLost;
  }
  return UploadError::ZeroSize;
}

// Staging-offset alignment of buffer pieces (with 16 bytes); image pieces use
// image_copy_alignment().
uint64_t optimal_alignment(const VkPhysicalDeviceProperties& p) noexcept {
  return std::max<uint64_t>(1, p.limits.optimalBufferCopyOffsetAlignment);
}

// Whether the device's queue family `family` supports GRAPHICS; InvalidConfig when the device
// has no such family or it supports none of TRANSFER, GRAPHICS and COMPUTE (no copies). Without
// vkGetPhysicalDeviceQueueFamilyProperties in the dispatch nothing is checked: GRAPHICS is
// assumed.
Expected<bool, CreateError> family_has_graphics(const Device& device, uint32_t family) {
  const PFN_vkGetPhysicalDeviceQueueFamilyProperties get =
      device.dispatch.vkGetPhysicalDeviceQueueFamilyProperties;
  if (get == nullptr) return true;
  uint32_t count = 0;
  get(device.physical_device, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  get(device.physical_device, &count, families.data());
  families.resize(count);
  if (family >= families.size()) return unexpected(CreateError::InvalidConfig);
  const VkQueueFlags flags = families[family].queueFlags;
  if ((flags & (VK_QUEUE_TRANSFER_BIT | VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT)) == 0) {
    return unexpected(CreateError::InvalidConfig);
  }
  return (flags & VK_QUEUE_GRAPHICS_BIT) != 0;
}

}  // namespace

Expected<std::unique_ptr<Streamer>, CreateError> Streamer::create(const Device& device,
                                                                  const StreamerConfig& config) {
  if (!device.dispatch.missing_for_streamer().empty()) {
    return unexpected(CreateError::MissingFunction);
  }
  if (config.queue == VK_NULL_HANDLE || config.ring_bytes == 0 || device.device == VK_NULL_HANDLE) {
    return unexpected(CreateError::InvalidConfig);
  }
  if (config.schedule.ring_bytes != 0 && config.schedule.ring_bytes != config.ring_bytes) {
    return unexpected(CreateError::InvalidConfig);  // two sizes for one ring
  }
  const Expected<bool, CreateError> graphics = family_has_graphics(device, config.queue_family);
  if (!graphics) return unexpected(graphics.error());
  std::unique_ptr<Streamer> s(new Streamer());
  s->backend_ = std::make_unique<detail::StreamerBackend>(device, config, *graphics);
  if (!s->backend_->init()) return unexpected(CreateError::ObjectCreationFailed);
  if (config.fill_pool) {
    s->pool_ = config.fill_pool;
  } else {
    FillPoolConfig pc;
    pc.threads = config.fill_threads;
    if (pc.threads == 0) {
      const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
      pc.threads = std::clamp(cpus > 2 ? cpus - 2 : 1u, 1u, kMostDefaultFillThreads);
    }
    pc.pinning = config.fill_pinning;
    auto pool = FillPool::create(pc);
    if (!pool) return unexpected(pool.error());
    s->pool_ = std::move(*pool);
  }
  StreamSchedulerConfig sc = config.schedule;
  sc.ring_bytes = config.ring_bytes;
  StreamScheduler::Deps deps;
  deps.fill_pool = s->pool_.get();
  deps.backend = s->backend_.get();
  deps.allocator = s->backend_.get();
  deps.observer = config.observer;
  auto scheduler = StreamScheduler::create(sc, deps);
  if (!scheduler) return unexpected(scheduler.error());
  s->scheduler_ = std::move(*scheduler);
  if (config.pump_thread) {
    try {
      StreamScheduler* sched = s->scheduler_.get();
      s->pump_ = std::thread([sched] { sched->run(); });
    } catch (...) {
      return unexpected(CreateError::ThreadStartFailed);
    }
  }
  return s;
}

Streamer::~Streamer() {
  if (scheduler_) scheduler_->stop();
  if (pump_.joinable()) pump_.join();
  if (backend_) backend_->wait_all();  // the GPU no longer reads staging memory
  scheduler_.reset();                  // releases queued uploads, destroys the staging buffer
  backend_.reset();
  pool_.reset();
}

namespace detail {
namespace {

// The packed shape of an image target's levels (its format and aspect checked already).
Expected<ImageShape, UploadError> shape_of(const ImageTarget& target) {
  const auto block = texel_block(target.format, target.aspect);
  if (!block) return unexpected(UploadError::UnsupportedFormat);
  return ImageShape{*block,
                    {target.extent.width, target.extent.height, target.extent.depth},
                    target.base_level,
                    target.levels,
                    target.base_layer,
                    target.layers};
}

// image_target(), and BadAspect for copies into a depth or stencil aspect when the streamer's
// queue family lacks GRAPHICS (`graphics` false): Vulkan records those only on such a queue.
Expected<ImageTarget, UploadError> stream_image_target(const ImageDestination& destination,
                                                       const ImageLevels& levels, bool graphics) {
  auto target = image_target(destination, levels);
  if (target && !graphics && copies_need_graphics(*target)) {
    return unexpected(UploadError::BadAspect);
  }
  return target;
}

}  // namespace
}  // namespace detail

Expected<StreamTicket, UploadError> Streamer::upload(const BufferDestination& destination,
                                                     uint64_t offset,
                                                     std::span<const std::byte> data,
                                                     StreamPriority priority, Duration timeout) {
  const auto target = detail::buffer_target(destination, offset, data.size());
  if (!target) return unexpected(target.error());
  auto cursor = PieceCursor::buffer(data.size(), offset, scheduler_->config().buffer_granule);
  if (!cursor) return unexpected(UploadError::ZeroSize);
  auto* t = new detail::UploadTarget{false, *target, data.size(), {}, 0};
  StreamRequest r;
  r.pieces = *cursor;
  r.source = data.data();
  r.alignment = std::max<uint64_t>(16, optimal_alignment(backend_->properties()));
  r.priority = priority;
  r.context = t;
  auto ticket = scheduler_->enqueue(r, timeout);
  if (!ticket) {
    delete t;
    return unexpected(from(ticket.error()));
  }
  return *ticket;
}

Expected<uint64_t, UploadError> Streamer::image_bytes(const ImageDestination& destination,
                                                      const ImageLevels& levels) const {
  const auto target = detail::stream_image_target(destination, levels, backend_->graphics());
  if (!target) return unexpected(target.error());
  const auto shape = detail::shape_of(*target);
  if (!shape) return unexpected(shape.error());
  const auto bytes = staging::image_bytes(*shape);
  if (!bytes) return unexpected(UploadError::Overflow);
  return *bytes;
}

Expected<StreamTicket, UploadError> Streamer::queue_image(const detail::ImageTarget& target,
                                                          const std::byte* texels, uint64_t size,
                                                          StreamPriority priority, Duration timeout,
                                                          bool in_place) {
  const auto shape = detail::shape_of(target);
  if (!shape) return unexpected(shape.error());
  const auto bytes = staging::image_bytes(*shape);
  if (!bytes) return unexpected(UploadError::Overflow);
  if (!in_place && size != *bytes) return unexpected(UploadError::SizeMismatch);
  // Rows tightly packed (one memcpy a piece); offsets at the device's optimal copy alignment, a
  // multiple of 4 (a transfer-only queue's rule) and the format's block rule.
  CopyLimits limits;
  limits.texture_copy_alignment = image_copy_alignment(backend_->properties().limits);
  auto cursor = PieceCursor::image(*shape, limits);
  if (!cursor) return unexpected(UploadError::Overflow);
  auto* t = new detail::UploadTarget{true, {}, 0, target, detail::copy_aspect(target)};
  StreamRequest r;
  r.pieces = *cursor;
  r.source = texels;
  r.alignment = cursor->alignment();
  r.priority = priority;
  r.context = t;
  auto ticket = in_place ? scheduler_->write_in_place(r) : scheduler_->enqueue(r, timeout);
  if (!ticket) {
    delete t;
    return unexpected(from(ticket.error()));
  }
  return *ticket;
}

Expected<StreamTicket, UploadError> Streamer::upload(const ImageDestination& destination,
                                                     const ImageLevels& levels,
                                                     std::span<const std::byte> texels,
                                                     StreamPriority priority, Duration timeout) {
  const auto target = detail::stream_image_target(destination, levels, backend_->graphics());
  if (!target) return unexpected(target.error());
  if (texels.empty()) return unexpected(UploadError::SizeMismatch);
  return queue_image(*target, texels.data(), texels.size(), priority, timeout, false);
}

Expected<StreamTicket, UploadError> Streamer::write_in_place(const BufferDestination& destination,
                                                             uint64_t offset, uint64_t size,
                                                             StreamPriority priority) {
  const auto target = detail::buffer_target(destination, offset, size);
  if (!target) return unexpected(target.error());
  auto cursor = PieceCursor::buffer(size, offset, scheduler_->config().buffer_granule);
  if (!cursor) return unexpected(UploadError::ZeroSize);
  auto* t = new detail::UploadTarget{false, *target, size, {}, 0};
  StreamRequest r;
  r.pieces = *cursor;
  r.alignment = std::max<uint64_t>(16, optimal_alignment(backend_->properties()));
  r.priority = priority;
  r.context = t;
  auto ticket = scheduler_->write_in_place(r);
  if (!ticket) {
    delete t;
    return unexpected(from(ticket.error()));
  }
  return *ticket;
}

Expected<StreamTicket, UploadError> Streamer::write_in_place(const ImageDestination& destination,
                                                             const ImageLevels& levels,
                                                             StreamPriority priority) {
  const auto target = detail::stream_image_target(destination, levels, backend_->graphics());
  if (!target) return unexpected(target.error());
  return queue_image(*target, nullptr, 0, priority, Duration{0}, true);
}

Expected<InPlacePiece, UploadError> Streamer::next_piece(const StreamTicket& ticket,
                                                         Duration timeout) {
  return scheduler_->next_piece(ticket, timeout);
}

Expected<RetirementPoint, UploadError> Streamer::commit(const StreamTicket& ticket,
                                                        const InPlacePiece& piece) {
  const Expected<TimelineValue, UploadError> value = scheduler_->commit(ticket, piece);
  if (!value) return unexpected(value.error());
  return RetirementPoint{backend_->semaphore(), *value};
}

void Streamer::abandon(const StreamTicket& ticket, const InPlacePiece& piece) {
  scheduler_->abandon(ticket, piece);
}

StreamStatus Streamer::cancel(const StreamTicket& ticket) {
  return scheduler_->cancel(ticket);
}

StreamStatus Streamer::status(const StreamTicket& ticket) {
  return scheduler_->status(ticket);
}

StreamStatus Streamer::wait(const StreamTicket& ticket, Duration timeout) {
  return scheduler_->wait(ticket, timeout);
}

bool Streamer::drain(Duration timeout) {
  if (pump_.joinable()) return scheduler_->wait_idle(timeout);
  return scheduler_->drain(timeout);
}

std::optional<RetirementPoint> Streamer::point(const StreamTicket& ticket) const {
  if (!scheduler_->owns(ticket)) return std::nullopt;  // empty, or another streamer's
  const std::optional<TimelineValue> value = ticket.value();
  if (!value) return std::nullopt;
  return RetirementPoint{backend_->semaphore(), *value};
}

Expected<void, UploadError> Streamer::record_acquire(VkCommandBuffer cmd,
                                                     const ImageDestination& destination,
                                                     const ImageLevels& levels,
                                                     VkPipelineStageFlags2 stages,
                                                     VkAccessFlags2 access) const {
  const auto target = detail::stream_image_target(destination, levels, backend_->graphics());
  if (!target) return unexpected(target.error());
  const auto barrier = detail::image_acquire_barrier(*target, backend_->families(), stages, access);
  if (!barrier) return {};
  VkDependencyInfo dep{.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO};
  dep.imageMemoryBarrierCount = 1;
  dep.pImageMemoryBarriers = &*barrier;
  backend_->dispatch().vkCmdPipelineBarrier2(cmd, &dep);
  return {};
}

Expected<void, UploadError> Streamer::record_acquire(VkCommandBuffer cmd,
                                                     const BufferDestination& destination,
                                                     uint64_t offset, uint64_t size,
                                                     VkPipelineStageFlags2 stages,
                                                     VkAccessFlags2 access) const {
  const auto target = detail::buffer_target(destination, offset, size);
  if (!target) return unexpected(target.error());
  const auto barrier =
      detail::buffer_acquire_barrier(*target, size, backend_->families(), stages, access);
  if (!barrier) return {};
  VkDependencyInfo dep{.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO};
  dep.bufferMemoryBarrierCount = 1;
  dep.pBufferMemoryBarriers = &*barrier;
  backend_->dispatch().vkCmdPipelineBarrier2(cmd, &dep);
  return {};
}

bool Streamer::pump_once(Duration max_wait) {
  return scheduler_->pump_once(max_wait) == PumpResult::Submitted;
}

VkSemaphore Streamer::semaphore() const noexcept {
  return backend_->semaphore();
}

TimelineValue Streamer::completed() const {
  return backend_->completed();
}

StreamerStats Streamer::stats() const {
  StreamerStats s;
  s.stream = scheduler_->stats();
  s.ring = scheduler_->ring_stats();
  backend_->add_stats(s);
  return s;
}

}  // namespace staging::vulkan
