// The readable summary table of one run.
#include <fmt/format.h>

#include <fstream>

#include "reports.hpp"
#include "units.hpp"

namespace staging::sim {
namespace {

void line(std::string& out, std::string_view label, std::string_view value) {
  out += fmt::format("  {:<20} {}\n", label, value);
}

// The run's settings.
void add_configuration(std::string& out, const RunResult& r) {
  const SimConfig& c = r.config;
  out += "configuration\n";
  if (c.strategy == Strategy::Slot) {
    line(out, "capacity",
         format_bytes(r.capacity) + fmt::format(" ({} slots of up to ", r.slots) +
             format_bytes(r.max_slot_bytes) + ")");
  } else {
    line(out, "capacity", format_bytes(r.capacity));
  }
  line(out, "cap", format_bytes(r.cap));
  line(out, "frames in flight", std::to_string(c.frames_in_flight));
  line(out, "queue delay", r.delay);
  line(out, "copy bandwidth",
       c.bandwidth == 0 ? std::string("not modelled") : format_bytes(c.bandwidth) + "/s");
  line(out, "wait timeout", format_duration(c.wait_timeout));
  line(out, "poll interval", format_duration(c.poll_interval));
  if (!r.stalls.empty()) {
    std::string s;
    for (const StallWindow& w : r.stalls) {
      if (!s.empty()) s += ", ";
      s += format_duration(w.length) + " at " + format_duration(w.at);
    }
    line(out, "queue stalls", s);
  }
  if (c.fault != Fault::None) line(out, "planted fault", "early completion (self-check)");
}

// What was uploaded, over how long.
void add_workload(std::string& out, const RunResult& r) {
  out += "\nworkload\n";
  line(out, "uploads",
       format_count(r.uploads) + " (" + format_bytes(r.upload_bytes) + "), " +
           format_count(r.frames) + " frames, " + format_count(r.streaming_uploads) + " streaming");
  line(out, "simulated time",
       format_duration(r.makespan()) + (r.drained ? "" : " (the queue never drained)"));
  line(out, "busy time", format_duration(r.busy) + " (some upload arrived and not yet copied)");
  line(out, "throughput",
       fmt::format("{:.1f} MiB/s simulated (bytes / busy time)", r.throughput_mib_s()));
}

// What the ring did: reservations, peaks, waits, the policy's actions, delay and latency.
void add_ring(std::string& out, const RunResult& r) {
  const SimConfig& c = r.config;
  out += "\nring\n";
  line(out, "reservations",
       format_count(r.reservations) + " (" + format_bytes(r.bytes_reserved) + ") in " +
           format_count(r.submissions) + " submissions (" + format_count(r.early_flushes) +
           " flushed early)");
  line(out, "peak held",
       format_bytes(r.peak_held) + " (capacity " + format_bytes(r.capacity) + ", cap " +
           format_bytes(r.cap) + ")");
  line(out, "peak in flight", format_bytes(r.peak_in_flight));
  if (c.strategy == Strategy::Byte) {
    line(out, "wraps", format_count(r.wraps) + ", " + format_bytes(r.bytes_skipped) + " skipped");
  }
  line(out, "waits",
       format_count(r.waits) + ", total " + format_duration(r.wait_total) + ", longest " +
           format_duration(r.wait_longest) + ", " + format_count(r.timeouts) + " timed out");
  line(out, "grows / trims", format_count(r.grows) + " / " + format_count(r.trims));
  line(out, "fallbacks (ring)",
       format_count(r.fallbacks) + " (" + format_bytes(r.fallback_bytes) + ")");
  line(out, "direct (caller)",
       format_count(r.direct) + " (" + format_bytes(r.direct_bytes) + ") sent by another route");
  line(out, "upload delay",
       "max " + format_duration(r.delay_max) + ", total " + format_duration(r.delay_total) + ", " +
           format_count(r.delayed_uploads) + " uploads delayed (arrival -> placed)");
  line(out, "upload latency",
       "max " + format_duration(r.latency_max) + ", mean " +
           format_duration(r.uploads == 0 ? Duration{0}
                                          : r.latency_total / static_cast<int64_t>(r.uploads)) +
           " (arrival -> GPU copy done)");
  line(out, "frame pacing",
       format_count(r.pacing_waits) + " waits, total " + format_duration(r.pacing_total) +
           ", longest " + format_duration(r.pacing_longest));
}

// Why reservations could not be placed at once, per cause.
void add_causes(std::string& out, const RunResult& r) {
  // The header in the rows' column widths ("  " + 14 = 16), so every title sits over its column.
  constexpr auto kCauseRow = "  {:<14} {:>14} {:>14} {:>14} {:>14}\n";
  out += fmt::format("\n{:<16} {:>14} {:>14} {:>14} {:>14}\n", "causes", "InFlight(GPU)",
                     "Fragmentation", "Cap", "total");
  for (const CauseTable& t : kCauseTables) {
    const CauseCounts& n = r.*t.counts;
    out += fmt::format(kCauseRow, t.label, format_count(n[BlockCause::InFlight]),
                       format_count(n[BlockCause::Fragmentation]), format_count(n[BlockCause::Cap]),
                       format_count(n.total()));
  }
}

// The checker's verdict and the byte checks.
void add_checks(std::string& out, const RunResult& r) {
  out += "\nchecks\n";
  line(out, "invariant checker",
       format_count(r.checks) + " reservations checked against the queue's true completion");
  line(out, "byte checks",
       format_count(r.stamps_checked) + " reservations verified after the GPU read them, " +
           format_count(r.stamps_corrupted) + " corrupted");
  if (!r.stat_mismatches.empty()) {
    line(out, "stats mismatches", std::to_string(r.stat_mismatches.size()));
    for (const std::string& m : r.stat_mismatches)
      out += "    " + m + "\n";
  }
  if (r.violations.empty()) {
    line(out, "invariant violations", "0");
  } else {
    line(out, "INVARIANT VIOLATIONS",
         fmt::format("{} (I1 {}, I2 {}, I3 {}, I4 {}, I5 {})", r.violations.size(),
                     r.violations_by_invariant[0], r.violations_by_invariant[1],
                     r.violations_by_invariant[2], r.violations_by_invariant[3],
                     r.violations_by_invariant[4]));
    std::size_t shown = 0;
    for (const Violation& v : r.violations) {
      if (shown++ == 5) {
        out += fmt::format("    ... and {} more (see --json)\n", r.violations.size() - 5);
        break;
      }
      out += "    " + v.message + "\n";
    }
  }
}

}  // namespace

std::string summary_text(const RunResult& r) {
  const SimConfig& c = r.config;
  std::string out;
  out += fmt::format("staging-sim: workload {}, strategy {}, policy {}, seed {}\n", r.workload,
                     to_string(c.strategy), policy_name(c.policy), c.seed);
  out += "  " + r.workload_description + "\n\n";
  add_configuration(out, r);
  add_workload(out, r);
  add_ring(out, r);
  add_causes(out, r);
  add_checks(out, r);
  return out;
}

bool write_file(const std::string& path, const std::string& text, std::string* error) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    *error = "cannot write " + path;
    return false;
  }
  out << text;
  out.flush();
  if (!out) {
    *error = "writing " + path + " failed";
    return false;
  }
  return true;
}

}  // namespace staging::sim
