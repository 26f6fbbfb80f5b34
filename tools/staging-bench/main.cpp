// staging-bench --backend NAME [options]: see bench.hpp for the structure, `--help` for the
// options of the backends built into this binary.
#include <cstdio>
#include <vector>

#include "bench.hpp"

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

int main(int argc, char** argv) {
  using namespace staging::bench;
  CommonOptions options;
  for (int i = 0; i < argc; ++i)
    options.command += (i ? " " : "") + std::string(argv[i]);

  std::vector<Backend> all = backends();
  std::string names;
  for (const Backend& b : all)
    names += (names.empty() ? "" : ", ") + b.name;

  CLI::App app{
      "staging-bench: upload throughput of the staging library on a real device.\n"
      "Backends built in: " +
      (names.empty() ? std::string("none") : names)};
  std::string backend;
  app.add_option("--backend", backend, "which backend to measure (" + names + ")")->required();
  app.add_option("--sizes", options.sizes_mib, "upload sizes in MiB")->delimiter(',');
  app.add_option("--threads", options.threads, "CPU thread counts to measure")->delimiter(',');
  app.add_option("--min-seconds", options.min_seconds, "least time measured per configuration");
  app.add_option("--min-reps", options.min_reps, "least repetitions per configuration");
  app.add_option("--max-reps", options.max_reps, "most repetitions per configuration");
  app.add_option("--json", options.json_path, "write the results as JSON to this file");
  for (Backend& b : all)
    b.add_options(app);
  CLI11_PARSE(app, argc, argv);

  for (Backend& b : all) {
    if (b.name != backend) continue;
    Report report(options);
    report.context("backend", b.name);
    const int status = b.run(options, report);
    if (!report.write()) return 1;
    return status;
  }
  std::fprintf(stderr, "staging-bench: backend '%s' is not built into this binary (built: %s)\n",
               backend.c_str(), names.empty() ? "none" : names.c_str());
  return 2;
}
