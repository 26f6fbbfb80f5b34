// main() of the Google Benchmark binaries (staging-bench-core, staging-bench-vulkan-frame):
// Google Benchmark's own flags (--benchmark_filter=..., --benchmark_repetitions=...; --help lists
// them and exits 0), and like every tool of the project an unknown argument is refused with one
// line on stderr and exit status 2.
#include <benchmark/benchmark.h>

#include <cstdio>

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);  // consumes its flags; --help prints them and exits 0
  if (argc > 1) {
    std::fprintf(stderr, "%s: unknown argument '%s' (--help lists the options)\n", argv[0],
                 argv[1]);
    return 2;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
