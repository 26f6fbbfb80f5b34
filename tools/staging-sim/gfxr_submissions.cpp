// The Tracker's submissions, frames, completions and host writes, and the import's result.
#include <fmt/format.h>

#include <algorithm>

#include "gfxr_tracker.hpp"
#include "staging/detail/core/align.hpp"
#include "units.hpp"

namespace staging::sim::gfxr {
namespace {

using nlohmann::json;
using Fail = Unexpected<std::string>;

constexpr int kMaxChain = 16;  // pNext structures looked at

const json* field(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}
std::optional<uint64_t> handle(const json* v) {
  if (v == nullptr) return std::nullopt;
  if (v->is_number_unsigned()) return v->get<uint64_t>();
  if (v->is_string() && v->get_ref<const std::string&>() == "VK_NULL_HANDLE") return 0;
  return std::nullopt;
}
const json& items(const json& obj, const char* key) {
  static const json kEmpty = json::array();
  const json* v = field(obj, key);
  return v != nullptr && v->is_array() ? *v : kEmpty;
}

// The timeline values a VkSubmitInfo signals (VkTimelineSemaphoreSubmitInfo in its pNext chain).
const json& timeline_values(const json& info) {
  const json* next = field(info, "pNext");
  for (int i = 0; i < kMaxChain && next != nullptr && next->is_object(); ++i) {
    const json* type = field(*next, "sType");
    if (type != nullptr && type->is_string() &&
        type->get_ref<const std::string&>() == "VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO") {
      return items(*next, "pSignalSemaphoreValues");
    }
    next = field(*next, "pNext");
  }
  return items(json::object(), "none");
}

}  // namespace

Expected<void, std::string> Tracker::submit(const Args& a, bool v2) {
  const auto queue = handle(field(a, "queue"));
  const auto fence = handle(field(a, "fence"));
  const json* infos = field(a, "pSubmits");
  if (!queue || !fence || infos == nullptr || !(infos->is_array() || infos->is_null())) {
    return skip("malformed_call"), Expected<void, std::string>{};
  }
  const json& list = infos->is_array() ? *infos : json::array();
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& info = list[i];
    std::vector<uint64_t> cbs;
    std::vector<std::pair<uint64_t, uint64_t>> signals;
    bool bad = false;
    if (v2) {
      for (const json& c : items(info, "pCommandBufferInfos")) {
        const auto cb = handle(field(c, "commandBuffer"));
        bad |= !cb;
        if (cb) cbs.push_back(*cb);
      }
      for (const json& s : items(info, "pSignalSemaphoreInfos")) {
        const auto sem = handle(field(s, "semaphore"));
        const json* value = field(s, "value");
        if (sem && value != nullptr && value->is_number_unsigned())
          signals.emplace_back(*sem, value->get<uint64_t>());
      }
    } else {
      for (const json& c : items(info, "pCommandBuffers")) {
        const auto cb = handle(&c);
        bad |= !cb;
        if (cb) cbs.push_back(*cb);
      }
      const json& sems = items(info, "pSignalSemaphores");
      const json& values = timeline_values(info);
      for (std::size_t s = 0; s < sems.size() && s < values.size(); ++s) {
        const auto sem = handle(&sems[s]);
        if (sem && values[s].is_number_unsigned())
          signals.emplace_back(*sem, values[s].get<uint64_t>());
      }
    }
    if (bad) skip("malformed_call");
    const uint64_t f = i + 1 == list.size() ? *fence : 0;  // the fence signals after them all
    if (auto e = submit_one(*queue, cbs, f, signals); !e) return e;
  }
  return {};
}

Expected<void, std::string> Tracker::submit_one(
    uint64_t queue, const std::vector<uint64_t>& cbs, uint64_t fence,
    const std::vector<std::pair<uint64_t, uint64_t>>& signals) {
  const uint64_t s = submissions_.size();
  submissions_.push_back(Submission{queue, stats_.presents, std::nullopt, std::nullopt});
  QueueState& q = queues_[queue];
  if (q.completed == q.submissions.size()) busy_queues_.push_back(queue);
  queue_position_[s] = q.submissions.size();
  q.submissions.push_back(s);
  ++stats_.submissions;
  for (const uint64_t id : cbs) {
    const auto cb = command_buffers_.find(id);
    if (cb == command_buffers_.end()) {
      skip("unknown_command_buffer");
      continue;
    }
    for (RawUpload u : cb->second.recorded) {
      if (auto room = count_upload(); !room) return room;
      u.submission = s;
      u.present_frame = stats_.presents;
      uploads_.push_back(u);
    }
    cb->second.unsubmitted = false;
  }
  if (fence != 0) fences_[fence] = s;
  for (const auto& [semaphore, value] : signals) {
    if (value > 0) semaphores_[semaphore].signals.push_back({value, s});
  }
  return {};
}

void Tracker::present() {
  ++stats_.presents;
}

void Tracker::complete_through(uint64_t submission) {
  QueueState& q = queues_[submissions_[submission].queue];
  const std::size_t position = queue_position_[submission];
  for (; q.completed <= position && q.completed < q.submissions.size(); ++q.completed) {
    Submission& done = submissions_[q.submissions[q.completed]];
    done.learned_frame = stats_.presents;
    done.learned_submissions = submissions_.size();
  }
}

void Tracker::fence_completed(uint64_t fence) {
  const auto it = fences_.find(fence);
  if (it != fences_.end()) complete_through(it->second);
}

void Tracker::semaphore_reached(uint64_t semaphore, uint64_t value) {
  const auto it = semaphores_.find(semaphore);
  if (it == semaphores_.end()) return;
  SemaphoreState& s = it->second;
  for (; s.completed < s.signals.size() && s.signals[s.completed].value <= value; ++s.completed)
    complete_through(s.signals[s.completed].submission);
}

void Tracker::queue_idle(uint64_t queue) {
  const auto it = queues_.find(queue);
  if (it != queues_.end() && !it->second.submissions.empty()) {
    complete_through(it->second.submissions.back());
  }
}

Expected<void, std::string> Tracker::host_write(const FillCommand& fill) {
  ++stats_.host_writes;
  stats_.host_write_bytes = add_sat(stats_.host_write_bytes, fill.size);
  const auto m = memory_.find(fill.memory_id);
  if (m == memory_.end()) return skip("host_write_unknown_memory"), Expected<void, std::string>{};
  const auto at = checked_add(m->second.map_offset, fill.offset);
  if (!at) return skip("malformed_host_write"), Expected<void, std::string>{};
  if (fill.size == 0) return skip("zero_size"), Expected<void, std::string>{};
  if (auto room = count_upload(); !room) return room;
  RawUpload u{fill.size, derived_alignment(*at), 1, Moved::HostWrite};
  u.submission = submissions_.size();  // the next one
  u.present_frame = stats_.presents;
  u.memory = fill.memory_id;
  uploads_.push_back(u);
  return {};
}

}  // namespace staging::sim::gfxr
