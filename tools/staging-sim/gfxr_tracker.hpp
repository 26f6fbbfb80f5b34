// The Vulkan state an import follows through a capture's calls (gfxr_import.hpp says what it
// makes of them): memory objects and their types, buffers and their bindings, images and their
// formats, command buffers and the uploads recorded in them, submissions, frames, and when the
// application learned each submission had completed. Internal to the importer.
//
// Every handle is the capture's id; a call naming one that was never created, or with arguments
// missing or of the wrong type, is skipped and counted (ImportStats::skipped). Memory grows with
// the live handles and the uploads made, never with the calls seen. Not synchronised.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gfxr_blocks.hpp"
#include "gfxr_import.hpp"
#include "staging/core/errors.hpp"

namespace staging::sim::gfxr {

/// How the application moved an upload's bytes (the trace's kind names, in this order).
enum class Moved : uint8_t { BufferCopy, ImageCopy, Update, HostWrite };
inline constexpr std::array<const char*, 4> kMovedNames = {"buffer_copy", "image_copy", "update",
                                                           "host_write"};

/// An upload before its time is known.
struct RawUpload {
  uint64_t size = 0;
  uint64_t alignment = 1;
  uint64_t granularity = 1;
  Moved moved = Moved::BufferCopy;
  uint64_t submission = 0;     ///< index of the submission that carried it
  uint64_t present_frame = 0;  ///< presents before it
  uint64_t memory = 0;         ///< host writes: the memory written
};

class Tracker {
 public:
  /// Follows one call: `name`, its "args" object, its "return" (null when none). Errors only
  /// when the import must stop (too many uploads).
  [[nodiscard]] Expected<void, std::string> call(std::string_view name, const nlohmann::json& args,
                                                 const nlohmann::json& result);
  /// A fill-memory command read from the capture, in block order among the calls.
  [[nodiscard]] Expected<void, std::string> host_write(const FillCommand& fill);
  /// The import's result once every call and write is in.
  [[nodiscard]] GfxrImport finish(std::string_view name);

 private:
  struct Memory {
    uint64_t size = 0;
    uint64_t device = 0;
    uint32_t type = 0;
    bool host_visible = false;
    bool copy_source = false;
    uint64_t map_offset = 0;
    uint64_t allocated_at = 0;  // call number
  };
  struct Buffer {
    uint64_t memory = 0;
    uint64_t offset = 0;
    bool bound = false;
  };
  struct CommandBuffer {
    uint64_t pool = 0;
    std::vector<RawUpload> recorded;
    bool unsubmitted = false;  // recorded since its last begin and not yet submitted
  };
  struct Submission {
    uint64_t queue = 0;
    uint64_t frame = 0;  // presents before it
    std::optional<uint64_t> learned_frame;
    std::optional<uint64_t> learned_submissions;  // submissions made when it was learned
  };
  struct QueueState {
    std::vector<uint64_t> submissions;
    std::size_t completed = 0;  // a prefix of `submissions`
  };
  struct Signal {
    uint64_t value = 0;
    uint64_t submission = 0;
  };
  struct SemaphoreState {
    std::vector<Signal> signals;
    std::size_t completed = 0;
  };

  using Args = nlohmann::json;
  void skip(std::string_view reason, uint64_t n = 1);
  Expected<void, std::string> dispatch(std::string_view name, const Args& a, bool ok);
  /// Memory, buffers, images, command buffers: false when `name` is none of those calls.
  bool follow_resource(std::string_view name, const Args& a);
  /// Fences, semaphores, idle waits.
  void follow_sync(std::string_view name, const Args& a);
  void allocate_memory(const Args& a);
  void free_memory(const Args& a);
  void map_memory(const Args& a);
  void memory_properties(const Args& a, bool v2);
  void create_device(const Args& a);
  void create_buffer(const Args& a);
  void bind_buffer(const Args& bind, uint64_t buffer);
  void create_image(const Args& a);
  void allocate_command_buffers(const Args& a);
  void free_command_buffers(const Args& a);
  void reset_command_buffer(uint64_t cb);
  void reset_command_pool(const Args& a);
  Expected<void, std::string> execute_commands(const Args& a);
  Expected<void, std::string> copy_buffer(const Args& a, const Args& regions);
  Expected<void, std::string> copy_buffer_to_image(const Args& a, const Args& regions);
  Expected<void, std::string> update_buffer(const Args& a);
  Expected<void, std::string> record(uint64_t cb, const RawUpload& u);
  Expected<void, std::string> submit(const Args& a, bool v2);
  Expected<void, std::string> submit_one(uint64_t queue, const std::vector<uint64_t>& cbs,
                                         uint64_t fence,
                                         const std::vector<std::pair<uint64_t, uint64_t>>& signals);
  void present();
  void fence_completed(uint64_t fence);
  void semaphore_reached(uint64_t semaphore, uint64_t value);
  void complete_through(uint64_t submission);
  void queue_idle(uint64_t queue);
  /// The source memory of buffer `id` when it is a host-visible copy source; counts the skip
  /// otherwise.
  const Memory* copy_source(uint64_t buffer_id, uint64_t* bind_offset);
  void add_staging_interval(const Memory& m);
  Expected<void, std::string> count_upload();

  std::unordered_map<uint64_t, std::vector<uint32_t>> memory_types_;  // physical device
  std::unordered_map<uint64_t, uint64_t> device_physical_;
  std::unordered_map<uint64_t, Memory> memory_;
  std::unordered_map<uint64_t, Buffer> buffers_;
  std::unordered_map<uint64_t, std::string> image_formats_;
  std::unordered_map<uint64_t, CommandBuffer> command_buffers_;
  // Per pool, its command buffers that recorded an upload since their last reset (so a pool
  // reset costs what was recorded, not the pool's size).
  std::unordered_map<uint64_t, std::vector<uint64_t>> pools_;
  std::unordered_map<uint64_t, uint64_t> fences_;  // fence -> its last submission
  std::unordered_map<uint64_t, SemaphoreState> semaphores_;
  std::unordered_map<uint64_t, QueueState> queues_;
  std::vector<uint64_t> busy_queues_;  // queues given work since the last vkDeviceWaitIdle
  std::unordered_map<uint64_t, std::size_t> queue_position_;  // submission -> index in its queue
  std::unordered_set<uint64_t> copy_source_memory_;           // memory ever bound to a copy source
  std::vector<Submission> submissions_;
  std::vector<RawUpload> uploads_;
  std::vector<std::pair<uint64_t, int64_t>> staging_events_;  // (call number, +-bytes)
  uint64_t recorded_ = 0;  // uploads recorded in command buffers (bounded like uploads_)
  uint64_t call_number_ = 0;
  ImportStats stats_;
};

/// The largest power of two dividing `offset`, at most 256 (256 for 0).
[[nodiscard]] uint64_t derived_alignment(uint64_t offset) noexcept;

}  // namespace staging::sim::gfxr
