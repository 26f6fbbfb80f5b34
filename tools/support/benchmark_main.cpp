// main() of the Google Benchmark binaries (staging-bench-core, staging-bench-vulkan-frame):
// Google Benchmark's own flags (--benchmark_filter=..., --benchmark_repetitions=...; --help lists
// them and exits 0), and like every tool of the project an unknown argument is refused with one
// line on stderr and exit status 2 (naming the closest flag), and so is a --benchmark_out file
// that cannot be created — both before any benchmark runs.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "did_you_mean.hpp"
#include "exception_exit.hpp"
#include "io_paths.hpp"

namespace {

// Google Benchmark's flags (benchmark 1.7), for "did you mean".
const std::vector<std::string> kFlags = {"--benchmark_list_tests",
                                         "--benchmark_filter",
                                         "--benchmark_min_time",
                                         "--benchmark_min_warmup_time",
                                         "--benchmark_repetitions",
                                         "--benchmark_enable_random_interleaving",
                                         "--benchmark_report_aggregates_only",
                                         "--benchmark_display_aggregates_only",
                                         "--benchmark_format",
                                         "--benchmark_out",
                                         "--benchmark_out_format",
                                         "--benchmark_color",
                                         "--benchmark_counters_tabular",
                                         "--benchmark_context",
                                         "--benchmark_time_unit",
                                         "--benchmark_perf_counters",
                                         "--v",
                                         "--help"};

// The binary's name without its folder, for messages.
const char* tool_name(const char* argv0) {
  const char* slash = std::strrchr(argv0, '/');
  return slash != nullptr ? slash + 1 : argv0;
}

int usage_error(const char* tool, const std::string& what) {
  std::fprintf(stderr, "%s: %s (--help lists the options)\n", tool_name(tool), what.c_str());
  return 2;
}

// Why the arguments left after Google Benchmark took its flags, or its --benchmark_out file,
// cannot be used; empty when they can.
std::string argument_error(const std::vector<std::string>& given, int argc, char** argv) {
  if (argc > 1) {
    const std::string arg = argv[1];
    if (arg.empty() || arg[0] != '-') return "unexpected argument '" + arg + "'";
    const std::string name = arg.substr(0, arg.find('='));
    std::string message = "unknown option " + name;
    if (const auto guess = staging::tools::closest(name, kFlags))
      message += " (did you mean " + *guess + "?)";
    return message;
  }
  const std::string out_flag = "--benchmark_out=";
  for (const std::string& arg : given) {
    if (arg.rfind(out_flag, 0) != 0) continue;
    if (const auto error = staging::tools::output_file_error(arg.substr(out_flag.size())))
      return "--benchmark_out: " + *error;
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) try {
  const std::vector<std::string> given(argv + 1, argv + argc);
  benchmark::Initialize(&argc, argv);  // consumes its flags; --help prints them and exits 0
  if (const std::string error = argument_error(given, argc, argv); !error.empty())
    return usage_error(argv[0], error);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
} catch (...) {
  return staging::tools::exception_exit(tool_name(argv[0]));
}
