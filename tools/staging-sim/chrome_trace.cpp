// The Chrome trace-event file of one run (--trace): opens in Perfetto (ui.perfetto.dev) and
// chrome://tracing. Format:
// https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU
//
// Tracks (processes):
//   1  "staging-sim"        counters (held, in flight, capacity, cap) and the policy's events,
//                           one thread per kind: waits, would-blocks, splits, fallbacks, grows and
//                           trims, wraps, timeouts and cap refusals, direct uploads, frame pacing
//   2  "GPU queue"          each submission from submit to completion; stall windows
//   10 "ring (region 0)"    byte ring: every reservation from reserve to retire, in lanes
//   11 "grown regions"      byte ring: reservations in regions added by Grow
//   12 "fallback regions"   byte ring: Fallback's dedicated reservations
//   10+s "slot s"           slot ring: every placement from place to its frame's signal
#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <vector>

#include "reports.hpp"

namespace staging::sim {
namespace {

using nlohmann::ordered_json;

double us(Duration d) {
  return static_cast<double>(d.count()) / 1e3;
}

ordered_json meta(const char* what, int pid, int tid, const std::string& name) {
  ordered_json e{{"name", what}, {"ph", "M"}, {"pid", pid}};
  if (tid >= 0) e["tid"] = tid;
  e["args"] = {{"name", name}};
  return e;
}

// A complete event ("X"): `name` from `begin` for `length` on thread `tid` of process `pid`.
ordered_json span(std::string name, const char* cat, Duration begin, Duration length, int pid,
                  int tid, ordered_json args = nullptr) {
  ordered_json e{{"name", std::move(name)}, {"cat", cat}, {"ph", "X"}, {"ts", us(begin)},
                 {"dur", us(length)},       {"pid", pid}, {"tid", tid}};
  if (!args.is_null()) e["args"] = std::move(args);
  return e;
}

ordered_json sort_index(int pid, int index) {
  return {
      {"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid}, {"args", {{"sort_index", index}}}};
}

// Greedy interval colouring: the lowest lane whose last span ended by `begin`.
class Lanes {
 public:
  int take(Duration begin, Duration end) {
    for (std::size_t i = 0; i < ends_.size(); ++i) {
      if (ends_[i] <= begin) {
        ends_[i] = end;
        return static_cast<int>(i);
      }
    }
    ends_.push_back(end);
    return static_cast<int>(ends_.size() - 1);
  }
  [[nodiscard]] std::size_t count() const noexcept { return ends_.size(); }

 private:
  std::vector<Duration> ends_;
};

// The staging-sim process's threads (tid = index + 1): the policy's events by kind.
struct Thread {
  const char* name;
  MarkKind first, second;  // the marks it shows (second == first: one kind)
};
constexpr Thread kThreads[] = {
    {"waits", MarkKind::Wait, MarkKind::Wait},
    {"would-blocks", MarkKind::WouldBlock, MarkKind::WouldBlock},
    {"splits", MarkKind::Split, MarkKind::Split},
    {"fallbacks", MarkKind::Fallback, MarkKind::Fallback},
    {"grows / trims", MarkKind::Grow, MarkKind::Trim},
    {"wraps", MarkKind::Wrap, MarkKind::Wrap},
    {"timeouts / cap refusals", MarkKind::Timeout, MarkKind::CapRefusal},
    {"direct (caller's other route)", MarkKind::Direct, MarkKind::Direct},
    {"frame pacing", MarkKind::Pacing, MarkKind::Pacing},
};

int thread_of(MarkKind k) {
  for (std::size_t i = 0; i < std::size(kThreads); ++i) {
    if (kThreads[i].first == k || kThreads[i].second == k) return static_cast<int>(i) + 1;
  }
  return 1;
}

// The staging bytes held and in flight, and the limits, as counters.
void add_counters(ordered_json& events, const RunResult& r) {
  for (const Sample& s : r.samples) {
    events.push_back({{"name", "staging bytes"},
                      {"ph", "C"},
                      {"ts", us(s.time)},
                      {"pid", 1},
                      {"args", {{"held", s.held}, {"in flight", s.in_flight}}}});
  }
  for (Duration t : {Duration{0}, r.end}) {
    events.push_back({{"name", "limits"},
                      {"ph", "C"},
                      {"ts", us(t)},
                      {"pid", 1},
                      {"args", {{"capacity", r.capacity}, {"cap", r.cap}}}});
  }
}

// The queue: submissions, in lanes, and stalls.
void add_queue(ordered_json& events, const RunResult& r) {
  Lanes queue_lanes;
  for (const Submission& s : r.queue_log) {
    const Duration end = s.completes && *s.completes <= r.end ? *s.completes : r.end;
    const int lane = queue_lanes.take(s.submitted, end);
    ordered_json args{{"value", s.value}, {"submitted_ns", s.submitted.count()}};
    args["completed_ns"] = s.completes ? ordered_json(s.completes->count()) : ordered_json(nullptr);
    events.push_back(span("submission " + std::to_string(s.value), "queue", s.submitted,
                          end - s.submitted, 2, lane + 1, std::move(args)));
  }
  for (std::size_t i = 0; i < queue_lanes.count(); ++i) {
    events.push_back(
        meta("thread_name", 2, static_cast<int>(i) + 1, "in flight " + std::to_string(i + 1)));
  }
  for (const StallWindow& w : r.stalls) {
    events.push_back(span("queue stalled", "queue", w.at, w.length, 2, 0));
  }
}

// Reservations, per track, in lanes.
void add_reservations(ordered_json& events, const RunResult& r) {
  const bool slot = r.config.strategy == Strategy::Slot;
  std::map<int, std::pair<std::string, Lanes>> tracks;
  const auto track_of = [&](const Span& s) -> int {
    if (slot) return 10 + static_cast<int>(s.track);
    if (s.placed.fallback) return 12;
    return s.track == 0 ? 10 : 11;
  };
  const auto track_name = [&](int pid) -> std::string {
    if (slot) return "slot " + std::to_string(pid - 10);
    if (pid == 10) return "ring (region 0)";
    if (pid == 11) return "grown regions";
    return "fallback regions";
  };
  for (const Span& s : r.spans) {
    const int pid = track_of(s);
    auto& [name, lanes] = tracks[pid];
    if (name.empty()) name = track_name(pid);
    const Duration end = s.end.value_or(r.end);
    const int lane = lanes.take(s.begin, end);
    const std::string kind = s.kind < r.kinds.size() ? r.kinds[s.kind].name : "upload";
    const Reservation& p = s.placed;
    ordered_json args{
        {"id", p.id},           {"region", s.track},        {"offset", p.offset},
        {"size", p.size},       {"alignment", p.alignment}, {"skipped", p.skipped},
        {"charged", s.charged}, {"asked", s.asked},         {"token", p.token},
        {"kind", kind},         {"frame", s.frame},         {"policy", policy_name(s.policy)}};
    if (p.fallback) args["fallback"] = true;
    if (!s.end) args["retired"] = false;
    events.push_back(span(kind + " #" + std::to_string(p.id), "reservation", s.begin, end - s.begin,
                          pid, lane + 1, std::move(args)));
  }
  for (auto& [pid, track] : tracks) {
    events.push_back(meta("process_name", pid, -1, track.first));
    events.push_back(sort_index(pid, pid));
    for (std::size_t i = 0; i < track.second.count(); ++i) {
      events.push_back(
          meta("thread_name", pid, static_cast<int>(i) + 1, "lane " + std::to_string(i + 1)));
    }
  }
}

// The policy's events: waits and pacing as spans, the others as instants.
void add_marks(ordered_json& events, const RunResult& r) {
  for (const Mark& m : r.marks) {
    const std::string kind = m.kind_index < r.kinds.size() ? r.kinds[m.kind_index].name : "";
    ordered_json args{{"cause", std::string(to_string(m.cause))}, {"bytes", m.bytes}};
    if (m.id != 0) args["id"] = m.id;
    if (m.token != 0) args["token"] = m.token;
    if (m.kind == MarkKind::Grow || m.kind == MarkKind::Trim || m.kind == MarkKind::Fallback ||
        m.kind == MarkKind::Wrap) {
      args["region"] = m.region;
    }
    if (!kind.empty()) args["kind"] = kind;
    if (m.kind == MarkKind::Wait) args["timed_out"] = m.flag;
    if (m.kind == MarkKind::CapRefusal) args["permanent"] = m.flag;
    if (m.kind == MarkKind::Pacing) args.erase("cause");
    std::string name(to_string(m.kind));
    if (m.kind != MarkKind::Pacing && m.kind != MarkKind::Trim && m.kind != MarkKind::Wrap) {
      name += " (" + std::string(to_string(m.cause)) + ")";
    }
    if (m.kind == MarkKind::Wait || m.kind == MarkKind::Pacing) {
      events.push_back(span(name, "policy", m.time, m.duration, 1, thread_of(m.kind), args));
    } else {
      events.push_back({{"name", name},
                        {"cat", "policy"},
                        {"ph", "i"},
                        {"s", "t"},
                        {"ts", us(m.time)},
                        {"pid", 1},
                        {"tid", thread_of(m.kind)},
                        {"args", args}});
    }
  }
}

}  // namespace

ordered_json chrome_trace(const RunResult& r) {
  ordered_json events = ordered_json::array();
  events.push_back(meta("process_name", 1, -1, "staging-sim: " + r.workload));
  events.push_back(sort_index(1, 1));
  for (std::size_t i = 0; i < std::size(kThreads); ++i)
    events.push_back(meta("thread_name", 1, static_cast<int>(i) + 1, kThreads[i].name));
  events.push_back(meta("process_name", 2, -1, "GPU queue (" + r.delay + ")"));
  events.push_back(sort_index(2, 2));
  events.push_back(meta("thread_name", 2, 0, "stalls"));

  add_counters(events, r);
  add_queue(events, r);
  add_reservations(events, r);
  add_marks(events, r);

  ordered_json trace;
  trace["traceEvents"] = std::move(events);
  trace["displayTimeUnit"] = "ms";
  trace["otherData"] = {{"tool", "staging-sim"},
                        {"workload", r.workload},
                        {"strategy", std::string(to_string(r.config.strategy))},
                        {"policy", policy_name(r.config.policy)},
                        {"capacity", r.capacity},
                        {"cap", r.cap},
                        {"seed", r.config.seed},
                        {"invariant_violations", r.invariant_violations()}};
  return trace;
}

}  // namespace staging::sim
