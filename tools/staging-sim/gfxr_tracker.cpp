#include "gfxr_tracker.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "gfxr_format.hpp"
#include "staging/detail/core/align.hpp"
#include "units.hpp"

namespace staging::sim::gfxr {
namespace {

using nlohmann::json;
using Fail = Unexpected<std::string>;

constexpr uint64_t kMaxAlignment = 256;
constexpr uint32_t kHostVisible = 0x2;  // VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
constexpr std::size_t kMaxMemoryTypes = 32;

// A handle: an id, or "VK_NULL_HANDLE" (0). None for anything else.
std::optional<uint64_t> handle(const json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_string() && v.get_ref<const std::string&>() == "VK_NULL_HANDLE") return 0;
  return std::nullopt;
}

// obj[key] as an unsigned integer; none when absent or not one.
std::optional<uint64_t> num(const json& obj, const char* key) {
  if (!obj.is_object()) return std::nullopt;
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_number_unsigned()) return std::nullopt;
  return it->get<uint64_t>();
}
std::optional<uint64_t> handle_at(const json& obj, const char* key) {
  if (!obj.is_object()) return std::nullopt;
  const auto it = obj.find(key);
  return it == obj.end() ? std::nullopt : handle(*it);
}
// obj[key] when it is an array (null: an empty one); nullptr otherwise.
const json* array_at(const json& obj, const char* key) {
  static const json kEmpty = json::array();
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(key);
  if (it == obj.end()) return nullptr;
  if (it->is_null()) return &kEmpty;
  return it->is_array() ? &*it : nullptr;
}
const json& object_at(const json& obj, const char* key) {
  static const json kNull;
  if (!obj.is_object()) return kNull;
  const auto it = obj.find(key);
  return it == obj.end() || !it->is_object() ? kNull : *it;
}
// The handles of array obj[key]; none when any is not a handle.
std::optional<std::vector<uint64_t>> handles_at(const json& obj, const char* key) {
  const json* a = array_at(obj, key);
  if (a == nullptr) return std::nullopt;
  std::vector<uint64_t> out;
  for (const json& v : *a) {
    const auto h = handle(v);
    if (!h) return std::nullopt;
    out.push_back(*h);
  }
  return out;
}

uint64_t ceil_div(uint64_t a, uint64_t b) {
  return a / b + (a % b != 0);
}

// Bytes and row pitch a buffer-to-image region reads, checked; none on overflow or a bad region.
std::optional<std::pair<uint64_t, uint64_t>> image_region(const json& r, const TexelBlock& b) {
  const json& extent = object_at(r, "imageExtent");
  const auto w = num(extent, "width"), h = num(extent, "height"), d = num(extent, "depth");
  const auto row_length = num(r, "bufferRowLength"), image_height = num(r, "bufferImageHeight");
  const auto layers = num(object_at(r, "imageSubresource"), "layerCount");
  if (!w || !h || !d || !row_length || !image_height || !layers) return std::nullopt;
  const uint64_t texels_w = *row_length != 0 ? *row_length : *w;
  const uint64_t texels_h = *image_height != 0 ? *image_height : *h;
  const auto pitch = checked_mul(ceil_div(texels_w, b.width), b.bytes);
  if (!pitch) return std::nullopt;
  auto size = checked_mul(*pitch, ceil_div(texels_h, b.height));
  if (size) size = checked_mul(*size, *d);
  if (size) size = checked_mul(*size, *layers);
  if (!size) return std::nullopt;
  return std::pair(*size, *pitch);
}

}  // namespace

uint64_t derived_alignment(uint64_t offset) noexcept {
  if (offset == 0) return kMaxAlignment;
  return std::min<uint64_t>(kMaxAlignment, offset & (~offset + 1));
}

void Tracker::skip(std::string_view reason, uint64_t n) {
  if (n > 0) stats_.skipped[std::string(reason)] += n;
}

Expected<void, std::string> Tracker::count_upload() {
  if (uploads_.size() + recorded_ >= kMaxImportedUploads) {
    return Fail{
        fmt::format("more than {} uploads (recorded or submitted): more than the "
                    "simulator replays; capture fewer frames",
                    kMaxImportedUploads)};
  }
  return {};
}

Expected<void, std::string> Tracker::call(std::string_view name, const json& args,
                                          const json& result) {
  ++call_number_;
  ++stats_.calls;
  // A call that returned an error did nothing we follow (VK_NOT_READY, VK_TIMEOUT included).
  const bool ok = result.is_null() ||
                  (result.is_string() && result.get_ref<const std::string&>() == "VK_SUCCESS");
  static const json kNoArgs = json::object();  // a call we follow then finds its handles missing
  return dispatch(name, args.is_object() ? args : kNoArgs, ok);
}

Expected<void, std::string> Tracker::dispatch(std::string_view n, const Args& a, bool ok) {
  if (n == "vkCmdCopyBuffer") return copy_buffer(a, a);
  if (n == "vkCmdCopyBuffer2" || n == "vkCmdCopyBuffer2KHR") {
    return copy_buffer(object_at(a, "pCopyBufferInfo"), a);
  }
  if (n == "vkCmdCopyBufferToImage") return copy_buffer_to_image(a, a);
  if (n == "vkCmdCopyBufferToImage2" || n == "vkCmdCopyBufferToImage2KHR") {
    return copy_buffer_to_image(object_at(a, "pCopyBufferToImageInfo"), a);
  }
  if (n == "vkCmdUpdateBuffer") return update_buffer(a);
  if (n == "vkCmdExecuteCommands") return execute_commands(a);
  if (n == "vkQueuePresentKHR") return present(), Expected<void, std::string>{};
  if (!ok) return {};  // an error (VK_NOT_READY, VK_TIMEOUT included): nothing happened
  if (n == "vkQueueSubmit" || n == "vkQueueSubmit2" || n == "vkQueueSubmit2KHR") {
    return submit(a, n != "vkQueueSubmit");
  }
  if (!follow_resource(n, a)) follow_sync(n, a);
  return {};
}

bool Tracker::follow_resource(std::string_view n, const Args& a) {
  const auto with = [&](const char* key, auto&& action) {
    if (const auto h = handle_at(a, key)) {
      action(*h);
    } else {
      skip("malformed_call");
    }
  };
  if (n == "vkAllocateMemory") {
    allocate_memory(a);
  } else if (n == "vkFreeMemory") {
    free_memory(a);
  } else if (n == "vkMapMemory" || n == "vkMapMemory2KHR") {
    map_memory(n == "vkMapMemory" ? a : object_at(a, "pMemoryMapInfo"));
  } else if (n == "vkGetPhysicalDeviceMemoryProperties") {
    memory_properties(a, false);
  } else if (n == "vkGetPhysicalDeviceMemoryProperties2" ||
             n == "vkGetPhysicalDeviceMemoryProperties2KHR") {
    memory_properties(a, true);
  } else if (n == "vkCreateDevice") {
    create_device(a);
  } else if (n == "vkCreateBuffer") {
    create_buffer(a);
  } else if (n == "vkDestroyBuffer") {
    with("buffer", [&](uint64_t b) { buffers_.erase(b); });
  } else if (n == "vkBindBufferMemory") {
    with("buffer", [&](uint64_t b) { bind_buffer(a, b); });
  } else if (n == "vkBindBufferMemory2" || n == "vkBindBufferMemory2KHR") {
    const json* infos = array_at(a, "pBindInfos");
    if (infos == nullptr) return skip("malformed_call"), true;
    for (const json& i : *infos) {
      const auto b = handle_at(i, "buffer");
      b ? bind_buffer(i, *b) : skip("malformed_call");
    }
  } else if (n == "vkCreateImage") {
    create_image(a);
  } else if (n == "vkDestroyImage") {
    with("image", [&](uint64_t i) { image_formats_.erase(i); });
  } else if (n == "vkAllocateCommandBuffers") {
    allocate_command_buffers(a);
  } else if (n == "vkFreeCommandBuffers") {
    free_command_buffers(a);
  } else if (n == "vkBeginCommandBuffer" || n == "vkResetCommandBuffer") {
    with("commandBuffer", [&](uint64_t cb) { reset_command_buffer(cb); });
  } else if (n == "vkResetCommandPool" || n == "vkDestroyCommandPool") {
    reset_command_pool(a);
  } else {
    return false;
  }
  return true;
}

void Tracker::follow_sync(std::string_view n, const Args& a) {
  if (n == "vkWaitForFences") {
    const auto fences = handles_at(a, "pFences");
    const auto all = num(a, "waitAll");
    if (!fences || !all) return skip("malformed_call");
    if (*all == 0 && fences->size() > 1) return skip("wait_for_any_fence");
    for (const uint64_t f : *fences)
      fence_completed(f);
  } else if (n == "vkGetFenceStatus") {
    if (const auto f = handle_at(a, "fence")) fence_completed(*f);
  } else if (n == "vkResetFences") {
    for (const uint64_t f : handles_at(a, "pFences").value_or(std::vector<uint64_t>{}))
      fences_.erase(f);
  } else if (n == "vkWaitSemaphores" || n == "vkWaitSemaphoresKHR") {
    const json& info = object_at(a, "pWaitInfo");
    const auto sems = handles_at(info, "pSemaphores");
    const json* values = array_at(info, "pValues");
    const auto flags = num(info, "flags");
    if (!sems || values == nullptr || !flags || values->size() != sems->size()) {
      return skip("malformed_call");
    }
    if ((*flags & 1) != 0 && sems->size() > 1) return skip("wait_for_any_semaphore");
    for (std::size_t i = 0; i < sems->size(); ++i) {
      if ((*values)[i].is_number_unsigned())
        semaphore_reached((*sems)[i], (*values)[i].get<uint64_t>());
    }
  } else if (n == "vkGetSemaphoreCounterValue" || n == "vkGetSemaphoreCounterValueKHR") {
    const auto s = handle_at(a, "semaphore");
    const auto v = num(a, "pValue");
    if (!s || !v) return skip("malformed_call");
    semaphore_reached(*s, *v);
  } else if (n == "vkQueueWaitIdle") {
    if (const auto q = handle_at(a, "queue")) queue_idle(*q);
  } else if (n == "vkDeviceWaitIdle") {
    for (const uint64_t q : busy_queues_)
      queue_idle(q);
    busy_queues_.clear();
  }
}

void Tracker::memory_properties(const Args& a, bool v2) {
  const auto pd = handle_at(a, "physicalDevice");
  const json& props = v2 ? object_at(object_at(a, "pMemoryProperties"), "memoryProperties")
                         : object_at(a, "pMemoryProperties");
  const json* types = array_at(props, "memoryTypes");
  if (!pd || types == nullptr || types->size() > kMaxMemoryTypes) return skip("malformed_call");
  std::vector<uint32_t> flags;
  for (const json& t : *types) {
    const auto f = num(t, "propertyFlags");
    flags.push_back(f ? static_cast<uint32_t>(*f) : 0);
  }
  memory_types_[*pd] = std::move(flags);
}

void Tracker::create_device(const Args& a) {
  const auto pd = handle_at(a, "physicalDevice"), d = handle_at(a, "pDevice");
  if (pd && d)
    device_physical_[*d] = *pd;
  else
    skip("malformed_call");
}

void Tracker::allocate_memory(const Args& a) {
  const json& info = object_at(a, "pAllocateInfo");
  const auto size = num(info, "allocationSize"), type = num(info, "memoryTypeIndex");
  const auto device = handle_at(a, "device"), id = handle_at(a, "pMemory");
  if (!size || !type || !device || !id || *id == 0) return skip("malformed_call");
  Memory m{*size, *device, static_cast<uint32_t>(std::min<uint64_t>(*type, UINT32_MAX))};
  const auto pd = device_physical_.find(*device);
  if (pd != device_physical_.end()) {
    const auto types = memory_types_.find(pd->second);
    if (types != memory_types_.end() && m.type < types->second.size()) {
      m.host_visible = (types->second[m.type] & kHostVisible) != 0;
    }
  } else if (memory_types_.size() == 1 && m.type < memory_types_.begin()->second.size()) {
    m.host_visible = (memory_types_.begin()->second[m.type] & kHostVisible) != 0;
  }
  m.allocated_at = call_number_;
  if (const auto old = memory_.find(*id); old != memory_.end()) add_staging_interval(old->second);
  memory_[*id] = m;
}

void Tracker::add_staging_interval(const Memory& m) {
  if (!m.copy_source || !m.host_visible) return;
  staging_events_.emplace_back(m.allocated_at,
                               static_cast<int64_t>(std::min<uint64_t>(m.size, INT64_MAX)));
  staging_events_.emplace_back(call_number_,
                               -static_cast<int64_t>(std::min<uint64_t>(m.size, INT64_MAX)));
}

void Tracker::free_memory(const Args& a) {
  const auto id = handle_at(a, "memory");
  if (!id) return skip("malformed_call");
  const auto it = memory_.find(*id);
  if (it == memory_.end()) return;  // freeing VK_NULL_HANDLE is allowed
  add_staging_interval(it->second);
  memory_.erase(it);
}

void Tracker::map_memory(const Args& a) {
  const auto id = handle_at(a, "memory");
  const auto offset = num(a, "offset");
  if (!id || !offset) return skip("malformed_call");
  const auto it = memory_.find(*id);
  if (it == memory_.end()) return skip("unknown_memory");
  it->second.host_visible = true;  // only host-visible memory can be mapped
  it->second.map_offset = *offset;
}

void Tracker::create_buffer(const Args& a) {
  const auto id = handle_at(a, "pBuffer");
  if (!id || *id == 0) return skip("malformed_call");
  buffers_[*id] = Buffer{};
}

void Tracker::bind_buffer(const Args& bind, uint64_t buffer) {
  const auto memory = handle_at(bind, "memory");
  const auto offset = num(bind, "memoryOffset");
  if (!memory || !offset) return skip("malformed_call");
  const auto it = buffers_.find(buffer);
  if (it == buffers_.end()) return skip("unknown_buffer");
  if (memory_.count(*memory) == 0) return skip("unknown_memory");
  it->second = Buffer{*memory, *offset, true};
}

void Tracker::create_image(const Args& a) {
  const auto id = handle_at(a, "pImage");
  const json& info = object_at(a, "pCreateInfo");
  if (!id || *id == 0 || !info.is_object()) return skip("malformed_call");
  const auto f = info.find("format");
  image_formats_[*id] = f != info.end() && f->is_string() ? f->get<std::string>() : std::string();
}

void Tracker::allocate_command_buffers(const Args& a) {
  const auto pool = handle_at(object_at(a, "pAllocateInfo"), "commandPool");
  const auto cbs = handles_at(a, "pCommandBuffers");
  if (!pool || !cbs) return skip("malformed_call");
  for (const uint64_t cb : *cbs) {
    reset_command_buffer(cb);
    command_buffers_[cb].pool = *pool;
  }
}

void Tracker::free_command_buffers(const Args& a) {
  const auto cbs = handles_at(a, "pCommandBuffers");
  if (!cbs) return skip("malformed_call");
  for (const uint64_t cb : *cbs) {
    reset_command_buffer(cb);
    command_buffers_.erase(cb);
  }
}

void Tracker::reset_command_buffer(uint64_t cb) {
  const auto it = command_buffers_.find(cb);
  if (it == command_buffers_.end()) return;
  if (it->second.unsubmitted) skip("never_submitted", it->second.recorded.size());
  recorded_ -= it->second.recorded.size();
  it->second.recorded.clear();
  it->second.unsubmitted = false;
}

void Tracker::reset_command_pool(const Args& a) {
  const auto pool = handle_at(a, "commandPool");
  if (!pool) return skip("malformed_call");
  const auto it = pools_.find(*pool);
  if (it == pools_.end()) return;
  const std::vector<uint64_t> dirty = std::move(it->second);
  pools_.erase(it);
  for (const uint64_t cb : dirty) {
    const auto c = command_buffers_.find(cb);
    if (c != command_buffers_.end() && c->second.pool == *pool) reset_command_buffer(cb);
  }
}

Expected<void, std::string> Tracker::execute_commands(const Args& a) {
  const auto cb = handle_at(a, "commandBuffer");
  const auto secondaries = handles_at(a, "pCommandBuffers");
  if (!cb || !secondaries) return skip("malformed_call"), Expected<void, std::string>{};
  for (const uint64_t s : *secondaries) {
    const auto sec = command_buffers_.find(s);
    if (sec == command_buffers_.end()) {
      skip("unknown_command_buffer");
      continue;
    }
    const std::vector<RawUpload> copy = sec->second.recorded;
    sec->second.unsubmitted = false;
    for (const RawUpload& u : copy) {
      if (auto e = record(*cb, u); !e) return e;
    }
  }
  return {};
}

Expected<void, std::string> Tracker::record(uint64_t cb, const RawUpload& u) {
  const auto it = command_buffers_.find(cb);
  if (it == command_buffers_.end())
    return skip("unknown_command_buffer"), Expected<void, std::string>{};
  if (auto room = count_upload(); !room) return room;
  if (it->second.recorded.empty()) pools_[it->second.pool].push_back(cb);
  it->second.recorded.push_back(u);
  it->second.unsubmitted = true;
  ++recorded_;
  return {};
}

const Tracker::Memory* Tracker::copy_source(uint64_t buffer_id, uint64_t* bind_offset) {
  const auto b = buffers_.find(buffer_id);
  if (b == buffers_.end()) return skip("unknown_buffer"), nullptr;
  if (!b->second.bound) return skip("unbound_buffer"), nullptr;
  const auto m = memory_.find(b->second.memory);
  if (m == memory_.end()) return skip("unknown_memory"), nullptr;
  m->second.copy_source = true;
  copy_source_memory_.insert(b->second.memory);
  if (!m->second.host_visible) return skip("source_not_host_visible"), nullptr;
  *bind_offset = b->second.offset;
  return &m->second;
}

Expected<void, std::string> Tracker::copy_buffer(const Args& a, const Args& call) {
  const auto cb = handle_at(call, "commandBuffer");
  const auto src = handle_at(a, "srcBuffer");
  const json* regions = array_at(a, "pRegions");
  if (!cb || !src || regions == nullptr)
    return skip("malformed_call"), Expected<void, std::string>{};
  constexpr auto k = static_cast<std::size_t>(CopyCommand::CopyBuffer);
  ++stats_.commands[k];
  uint64_t bind_offset = 0;
  const Memory* memory = copy_source(*src, &bind_offset);
  for (const json& r : *regions) {
    const auto size = num(r, "size"), offset = num(r, "srcOffset");
    if (!size || !offset) {
      skip("malformed_region");
      continue;
    }
    ++stats_.regions[k];
    stats_.bytes[k] = add_sat(stats_.bytes[k], *size);
    if (memory == nullptr) continue;
    const auto at = checked_add(bind_offset, *offset);
    if (*size == 0 || !at) {
      skip(*size == 0 ? "zero_size" : "malformed_region");
      continue;
    }
    if (auto e = record(*cb, {*size, derived_alignment(*at), 1, Moved::BufferCopy}); !e) return e;
  }
  return {};
}

Expected<void, std::string> Tracker::copy_buffer_to_image(const Args& a, const Args& call) {
  const auto cb = handle_at(call, "commandBuffer");
  const auto src = handle_at(a, "srcBuffer"), image = handle_at(a, "dstImage");
  const json* regions = array_at(a, "pRegions");
  if (!cb || !src || !image || regions == nullptr) {
    return skip("malformed_call"), Expected<void, std::string>{};
  }
  constexpr auto k = static_cast<std::size_t>(CopyCommand::CopyBufferToImage);
  ++stats_.commands[k];
  const auto format = image_formats_.find(*image);
  uint64_t bind_offset = 0;
  const Memory* memory = copy_source(*src, &bind_offset);
  for (const json& r : *regions) {
    ++stats_.regions[k];
    const auto offset = num(r, "bufferOffset");
    const auto aspect = num(object_at(r, "imageSubresource"), "aspectMask");
    if (format == image_formats_.end()) {
      skip("unknown_image");
      continue;
    }
    const auto block = texel_block(format->second, static_cast<uint32_t>(aspect.value_or(1)));
    if (!block) {
      skip("unknown_format");
      continue;
    }
    const auto sized = image_region(r, *block);
    const auto at = offset ? checked_add(bind_offset, *offset) : std::nullopt;
    if (!sized || !at) {
      skip("malformed_region");
      continue;
    }
    stats_.bytes[k] = add_sat(stats_.bytes[k], sized->first);
    if (memory == nullptr) continue;
    if (sized->first == 0) {
      skip("zero_size");
      continue;
    }
    const RawUpload u{sized->first, derived_alignment(*at), sized->second, Moved::ImageCopy};
    if (auto e = record(*cb, u); !e) return e;
  }
  return {};
}

Expected<void, std::string> Tracker::update_buffer(const Args& a) {
  const auto cb = handle_at(a, "commandBuffer");
  const auto size = num(a, "dataSize");
  if (!cb || !size) return skip("malformed_call"), Expected<void, std::string>{};
  constexpr auto k = static_cast<std::size_t>(CopyCommand::UpdateBuffer);
  ++stats_.commands[k];
  ++stats_.regions[k];
  stats_.bytes[k] = add_sat(stats_.bytes[k], *size);
  if (*size == 0) return skip("zero_size"), Expected<void, std::string>{};
  return record(*cb, {*size, 4, 1, Moved::Update});
}

}  // namespace staging::sim::gfxr
