// staging-bench --backend NAME [options]: see bench.hpp for the structure, `--help` for the
// options of the backends built into this binary. Every option is checked before a device is
// touched: a bad one (or a --json file that cannot be created) is refused with exit status 2.
#include <cstdio>
#include <vector>

#include "bench.hpp"
#include "cli.hpp"
#include "exception_exit.hpp"
#include "io_paths.hpp"

namespace {

std::vector<staging::bench::Backend> backends() {
  std::vector<staging::bench::Backend> all;
#if defined(STAGING_BENCH_HAVE_CUDA)
  all.push_back(staging::bench::make_cuda_backend());
#endif
#if defined(STAGING_BENCH_HAVE_VULKAN)
  all.push_back(staging::bench::make_vulkan_backend());
#endif
  return all;
}

}  // namespace

int main(int argc, char** argv) try {
  using namespace staging::bench;
  CommonOptions options;
  for (int i = 0; i < argc; ++i)
    options.command += (i ? " " : "") + std::string(argv[i]);

  std::vector<Backend> all = backends();
  std::vector<std::string> names;
  std::string listed;
  for (const Backend& b : all) {
    names.push_back(b.name);
    listed += (listed.empty() ? "" : ", ") + b.name;
  }
  if (listed.empty()) listed = "none";

  CLI::App app{
      "staging-bench: upload throughput of the staging library on a real device.\n"
      "Backends built in: " +
          listed,
      "staging-bench"};
  std::string backend;
  app.add_option("--backend", backend, "which backend to measure (" + listed + "); required")
      ->check(CLI::IsMember(names));
  app.add_option("--sizes", options.sizes_mib, "upload sizes in MiB")
      ->delimiter(',')
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20));
  app.add_option("--threads", options.threads, "CPU thread counts to measure")
      ->delimiter(',')
      ->check(CLI::Range(1u, 1024u));
  app.add_option("--min-seconds", options.min_seconds, "least time measured per configuration")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--min-reps", options.min_reps, "least repetitions per configuration")
      ->check(CLI::Range(1u, 1000000u));
  app.add_option("--max-reps", options.max_reps, "most repetitions per configuration")
      ->check(CLI::Range(1u, 1000000u));
  app.add_option("--json", options.json_path, "write the results as JSON to this file")
      ->check(staging::tools::writable_file());
  for (Backend& b : all)
    b.add_options(app);
  if (const std::optional<int> exit = staging::tools::parse(app, argc, argv)) return *exit;
  if (backend.empty()) {
    std::fprintf(stderr, "staging-bench: --backend is required (--help lists the options)\n");
    return 2;
  }
  if (options.min_reps > options.max_reps) {
    std::fprintf(stderr,
                 "staging-bench: --min-reps %u is above --max-reps %u (--help lists the options)\n",
                 options.min_reps, options.max_reps);
    return 2;
  }

  for (Backend& b : all) {
    if (b.name != backend) continue;
    if (b.check) {
      if (const std::string wrong = b.check(); !wrong.empty()) {
        std::fprintf(stderr, "staging-bench: %s (--help lists the options)\n", wrong.c_str());
        return 2;
      }
    }
    Report report(options);
    report.context("backend", b.name);
    const int status = b.run(options, report);
    if (!report.write()) return 1;
    return status;
  }
  return 2;  // (not reached: --backend is one of the names)
} catch (...) {
  return staging::tools::exception_exit("staging-bench");
}
