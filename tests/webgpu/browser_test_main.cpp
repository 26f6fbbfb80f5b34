// main() of the browser tests: GoogleTest, run by tools/webgpu-harness/run-page.mjs, which passes
// --gtest_filter through Module.arguments and reads the exit code from Module.onExit.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "webgpu_test_support.hpp"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (staging::webgpu::test::device() == nullptr) {
    std::printf("FATAL: the page handed over no WebGPU device\n");
    return 1;
  }
  const int rc = RUN_ALL_TESTS();
  std::fflush(stdout);
  // exit(), not return: after ASYNCIFY has unwound main() the returned value is not the exit code.
  std::exit(rc);
}
