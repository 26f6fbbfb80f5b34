#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <thread>

#include "bench.hpp"

namespace staging::bench {
namespace {

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

}  // namespace

Report::Report(const CommonOptions& options) : options_(options) {}

void Report::context(const std::string& key, nlohmann::json value) {
  std::printf("# %s: %s\n", key.c_str(),
              value.is_string() ? value.get<std::string>().c_str() : value.dump().c_str());
  context_[key] = std::move(value);
}

void Report::add(Row row) {
  std::string extra;
  for (auto it = row.fields.begin(); it != row.fields.end(); ++it) {
    std::string v;
    if (it->is_number_float()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.3f", it->get<double>());
      v = buf;
    } else if (it->is_string()) {
      v = it->get<std::string>();
    } else {
      v = it->dump();
    }
    extra += " " + it.key() + "=" + v;
  }
  std::printf("%-10s %9.3f MiB  %7.2f GB/s (best %7.2f, %3u reps)%s\n", row.section.c_str(),
              static_cast<double>(row.bytes) / (1024.0 * 1024.0), row.gbps, row.gbps_best, row.reps,
              extra.c_str());
  std::fflush(stdout);
  rows_.push_back(std::move(row));
}

void Report::note(const std::string& text) {
  std::printf("# %s\n", text.c_str());
  notes_.push_back(text);
}

void Report::target(const std::string& name, bool met, const std::string& detail) {
  std::printf("TARGET %-4s %s: %s\n", met ? "PASS" : "MISS", name.c_str(), detail.c_str());
  targets_.push_back({{"target", name}, {"met", met}, {"detail", detail}});
}

bool Report::write() const {
  if (options_.json_path.empty()) return true;
  nlohmann::json j;
  j["tool"] = "staging-bench";
  j["date"] = utc_now();
  j["command"] = options_.command;
  j["host"] = {{"name", host_name()}, {"cpus", std::thread::hardware_concurrency()}};
  j["context"] = context_;
  j["results"] = nlohmann::json::array();
  for (const Row& r : rows_) {
    nlohmann::json o = r.fields;
    o["section"] = r.section;
    o["bytes"] = r.bytes;
    o["gbps"] = r.gbps;
    o["gbps_best"] = r.gbps_best;
    o["reps"] = r.reps;
    j["results"].push_back(std::move(o));
  }
  j["notes"] = notes_;
  j["targets"] = targets_;
  std::ofstream out(options_.json_path);
  out << j.dump(2) << "\n";
  if (!out) {
    std::fprintf(stderr, "staging-bench: cannot write %s\n", options_.json_path.c_str());
    return false;
  }
  std::printf("# wrote %s\n", options_.json_path.c_str());
  return true;
}

Row measure(const CommonOptions& options, const std::string& section, uint64_t bytes,
            const std::function<double()>& once) {
  once();  // warm-up: first-use costs (context, lazy pinning of driver buffers, thread start)
  std::vector<double> seconds;
  double total = 0;
  while (seconds.size() < options.max_reps &&
         (seconds.size() < options.min_reps || total < options.min_seconds)) {
    const double s = once();
    seconds.push_back(s);
    total += s;
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  Row row;
  row.section = section;
  row.bytes = bytes;
  row.reps = static_cast<unsigned>(seconds.size());
  row.gbps = median > 0 ? static_cast<double>(bytes) / median / 1e9 : 0;
  row.gbps_best = seconds.front() > 0 ? static_cast<double>(bytes) / seconds.front() / 1e9 : 0;
  return row;
}

}  // namespace staging::bench
