#include "staging/detail/core/invariant_checker.hpp"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "staging/detail/core/align.hpp"

namespace staging {
namespace {

std::string u64(uint64_t v) {
  return std::to_string(v);
}

}  // namespace

InvariantChecker::InvariantChecker(Mode mode, uint64_t cap) : mode_(mode), cap_(cap) {}

std::string InvariantChecker::describe(const Reservation& r) {
  const std::optional<uint64_t> end = checked_add(r.offset, r.size);
  std::string s = "reservation #" + u64(r.id) + " (region " + u64(r.region) + ", bytes [" +
                  u64(r.offset) + ", " + (end ? u64(*end) : std::string("overflow")) + "), align " +
                  u64(r.alignment) + ", token " + u64(r.token) + ", owner " + u64(r.owner);
  if (r.skipped != 0) s += ", skipped " + u64(r.skipped);
  if (r.fallback) s += ", fallback";
  return s + ")";
}

void InvariantChecker::violate(Invariant invariant, std::string message) {
  std::string text = std::string(to_string(invariant)) + " violated: " + std::move(message);
  if (mode_ == Mode::Abort) {
    std::fprintf(stderr, "staging: invariant checker: %s\n", text.c_str());
    std::fflush(stderr);
    std::abort();
  }
  ++counts_[static_cast<std::size_t>(invariant)];
  violations_.push_back(Violation{invariant, std::move(text)});
}

void InvariantChecker::report(Invariant invariant, std::string message) {
  violate(invariant, std::move(message));
}

uint64_t InvariantChecker::count(Invariant invariant) const noexcept {
  return counts_[static_cast<std::size_t>(invariant)];
}

void InvariantChecker::on_region_created(uint32_t region, uint64_t bytes) {
  if (auto it = regions_.find(region); it != regions_.end()) {
    violate(Invariant::I4_InBounds, "region " + u64(region) + " created again while live (" +
                                        u64(it->second.by_offset.size()) +
                                        " live reservations in it would dangle)");
    forget_region(region);
  }
  regions_[region].bytes = bytes;
  const std::optional<uint64_t> held = checked_add(held_, bytes);
  held_ = held.value_or(UINT64_MAX);  // saturates: above any cap
  if (!held || held_ > cap_) {
    violate(Invariant::I5_UnderCap, "creating region " + u64(region) + " of " + u64(bytes) +
                                        " bytes takes the held bytes to " +
                                        (held ? u64(held_) : std::string("more than 2^64 - 1")) +
                                        ", above the cap of " + u64(cap_));
  }
}

void InvariantChecker::on_region_destroyed(uint32_t region) {
  const auto it = regions_.find(region);
  if (it == regions_.end()) return;
  if (!it->second.by_offset.empty()) {
    const Reservation& r = live_.at(it->second.by_offset.begin()->second);
    violate(Invariant::I1_NoOverlap, "region " + u64(region) +
                                         " destroyed while the GPU may still read " + describe(r) +
                                         " (completed " + u64(completed_) + ")");
  }
  forget_region(region);
}

void InvariantChecker::forget_region(uint32_t region) noexcept {
  const auto it = regions_.find(region);
  if (it == regions_.end()) return;
  for (const auto& [offset, id] : it->second.by_offset) {
    const auto live = live_.find(id);
    if (live == live_.end()) continue;
    const auto range = by_token_.equal_range(live->second.token);
    for (auto t = range.first; t != range.second; ++t) {
      if (t->second == id) {
        by_token_.erase(t);
        break;
      }
    }
    live_.erase(live);
  }
  regions_.erase(it);
  // The sum again (held_ may have saturated): regions are few, and this is not a hot path.
  held_ = 0;
  for (const auto& [id, model] : regions_)
    held_ = checked_add(held_, model.bytes).value_or(UINT64_MAX);
}

void InvariantChecker::on_reserve(const Reservation& r) {
  ++checks_;
  const uint64_t alignment = r.alignment == 0 ? 1 : r.alignment;
  // I2: a real size, an aligned offset, no overflow.
  if (r.size == 0) violate(Invariant::I2_AlignedNoOverflow, describe(r) + " has size 0");
  if (r.offset % alignment != 0) {
    violate(Invariant::I2_AlignedNoOverflow,
            describe(r) + ": offset is not a multiple of the alignment");
  }
  const std::optional<uint64_t> end = checked_add(r.offset, r.size);
  if (!end) {
    violate(Invariant::I2_AlignedNoOverflow, describe(r) + ": offset + size overflows 64 bits");
    return;
  }
  // I4: inside a live region.
  const auto region = regions_.find(r.region);
  if (region == regions_.end()) {
    violate(Invariant::I4_InBounds,
            describe(r) + " is in region " + u64(r.region) + ", which does not exist");
    return;
  }
  RegionModel& m = region->second;
  if (*end > m.bytes) {
    violate(Invariant::I4_InBounds, describe(r) + " ends past its region of " + u64(m.bytes) +
                                        " bytes (into whatever follows it)");
  }
  // I1: against every live interval that can reach [offset, end): those starting in
  // (offset - longest, end).
  const uint64_t from = r.offset >= m.max_size ? r.offset - m.max_size + 1 : 0;
  for (auto it = m.by_offset.lower_bound(from); it != m.by_offset.end() && it->first < *end; ++it) {
    const Reservation& other = live_.at(it->second);
    if (other.offset + other.size > r.offset) {
      violate(Invariant::I1_NoOverlap,
              describe(r) + " overlaps live " + describe(other) + "; completed " + u64(completed_));
    }
  }
  if (live_.contains(r.id)) {
    violate(Invariant::I1_NoOverlap, describe(r) + " reuses the id of a live reservation");
    remove_live(r.id);
  }
  // Live until the queue completes its token (a token already completed — token 0 included,
  // as a completed value of 0 retires it — is never live).
  if (r.token <= completed_) return;
  live_.emplace(r.id, r);
  m.by_offset.emplace(r.offset, r.id);
  m.max_size = std::max(m.max_size, r.size);
  by_token_.emplace(r.token, r.id);
}

void InvariantChecker::remove_live(uint64_t id) {
  const auto it = live_.find(id);
  if (it == live_.end()) return;
  const Reservation& r = it->second;
  if (auto region = regions_.find(r.region); region != regions_.end()) {
    auto range = region->second.by_offset.equal_range(r.offset);
    for (auto i = range.first; i != range.second; ++i) {
      if (i->second == id) {
        region->second.by_offset.erase(i);
        break;
      }
    }
  }
  auto range = by_token_.equal_range(r.token);
  for (auto i = range.first; i != range.second; ++i) {
    if (i->second == id) {
      by_token_.erase(i);
      break;
    }
  }
  live_.erase(it);
}

void InvariantChecker::on_completed(TimelineValue completed) {
  if (completed < completed_) return;
  completed_ = completed;
  while (!by_token_.empty() && by_token_.begin()->first <= completed_) {
    remove_live(by_token_.begin()->second);
  }
}

void InvariantChecker::on_cancel(uint64_t id) {
  remove_live(id);
}

void InvariantChecker::on_reclaim(uint64_t id) {
  const auto it = live_.find(id);
  if (it == live_.end()) return;
  violate(Invariant::I3_ReclaimAfterCompletion,
          describe(it->second) + " reclaimed while the completed value is only " + u64(completed_) +
              " (< its token): the GPU may still read it");
}

}  // namespace staging
