// staging-bench: measures real devices through the library's public API.
//
// main.cpp parses the command line and dispatches to one backend (`--backend NAME`); each backend
// lives in bench_<name>.cpp, is compiled only when its library layer is built, and registers
// itself in main.cpp's table (the STAGING_BENCH_HAVE_<NAME> definitions come from CMakeLists.txt).
// A backend adds its own options to the command line, runs its measurements, and adds rows to the
// Report, which prints them as they come and writes them to --json FILE at the end.
//
// To add a backend: write bench_vulkan.cpp defining make_vulkan_backend(), declare
// it below under STAGING_BENCH_HAVE_VULKAN, add it to main.cpp's table, and add the file and the
// definition in CMakeLists.txt when TARGET staging::vulkan exists.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace staging::bench {

/// Options every backend understands.
struct CommonOptions {
  /// Upload sizes in MiB (each measured separately).
  std::vector<uint64_t> sizes_mib{1, 4, 16, 64, 256, 1024};
  /// CPU thread counts for the multi-threaded paths.
  std::vector<unsigned> threads{1, 2, 4, 8, 16};
  /// Least time spent measuring one configuration (after a warm-up run), and the bounds on the
  /// number of timed repetitions.
  double min_seconds = 0.25;
  unsigned min_reps = 3;
  unsigned max_reps = 200;
  /// Where to write the JSON report ("" for none).
  std::string json_path;
  /// The command line, for the report.
  std::string command;
};

/// One measured configuration: a section ("ceiling", "pageable", "ring", ...), the numbers, and
/// free-form fields (threads, chunk, ratio, ...).
struct Row {
  std::string section;
  uint64_t bytes = 0;
  double gbps = 0;       // median over the repetitions
  double gbps_best = 0;  // best repetition
  unsigned reps = 0;
  nlohmann::json fields = nlohmann::json::object();
};

/// Collects rows, prints each as a table line when added, and writes the JSON report.
/// Threading: one thread.
class Report {
 public:
  explicit Report(const CommonOptions& options);
  /// Backend-wide facts (device name, driver, ring size, ...), printed and stored under "context".
  void context(const std::string& key, nlohmann::json value);
  /// Adds and prints a row.
  void add(Row row);
  /// A line of commentary (also stored under "notes").
  void note(const std::string& text);
  /// A target check: printed as PASS/MISS and stored under "targets".
  void target(const std::string& name, bool met, const std::string& detail);
  [[nodiscard]] const std::vector<Row>& rows() const { return rows_; }
  /// Writes the JSON file if --json was given; false (with a message) if it cannot.
  bool write() const;

 private:
  const CommonOptions& options_;
  nlohmann::json context_ = nlohmann::json::object();
  std::vector<Row> rows_;
  nlohmann::json notes_ = nlohmann::json::array();
  nlohmann::json targets_ = nlohmann::json::array();
};

/// The exit status of a run that found no usable device (the reason printed): CTest counts it as
/// skipped. (Status 2 is a usage error, refused before any device is touched.)
inline constexpr int kNoDevice = 77;

/// A backend: adds its options to the command line (with validators, so that a bad value is a
/// usage error), checks them together, then runs. run() returns the process exit status (0:
/// measured; 1: a failure; kNoDevice: the device is not usable here, with the reason printed).
struct Backend {
  std::string name;
  std::string description;
  std::function<void(CLI::App&)> add_options;
  /// Checks that span options (called after parsing, before any device is touched): empty when
  /// they are usable, else what is wrong (a usage error). May be empty.
  std::function<std::string()> check;
  std::function<int(const CommonOptions&, Report&)> run;
};

/// Repeats `once` (which returns the seconds one run took) after one warm-up run, at least
/// min_reps times and until min_seconds have been measured (at most max_reps), and returns the
/// row's timing fields for `bytes` per run.
Row measure(const CommonOptions& options, const std::string& section, uint64_t bytes,
            const std::function<double()>& once);

#if defined(STAGING_BENCH_HAVE_CUDA)
Backend make_cuda_backend();
#endif
#if defined(STAGING_BENCH_HAVE_VULKAN)
Backend make_vulkan_backend();
#endif

}  // namespace staging::bench
