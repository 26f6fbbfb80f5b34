// LandingTimer on the fake device, whose streams run each operation on a thread of their own:
// one upload timed at a time (start refused while a sample is open or not yet collected), the
// sample read only once its end event has run, at least the call's own duration, freed by
// abandon(); and a device whose timing calls keep failing, which the timer gives up on.
//
//   stream:  [start event] [gate, held 3 ms] [end event]     collect(): >= 3 ms, once
#include "landing_timer.hpp"

#include <gtest/gtest.h>

#include <thread>

#include "fake_device.hpp"
#include "faulty_device.hpp"

namespace staging::cuda::detail {
namespace {

using namespace std::chrono_literals;
using testing::FakeDevice;

TEST(LandingTimer, TimesAnUploadUntilItsLastCopyHasRun) {
  FakeDevice device;
  const cudaStream_t stream = device.create_stream();
  LandingTimer timer(device);
  ASSERT_TRUE(timer.available());
  UploadPlan plan;
  plan.method = FillMethod::Streaming;

  ASSERT_TRUE(timer.start(stream));
  EXPECT_FALSE(timer.start(stream));  // one upload at a time
  device.synchronize(stream);         // the start event is stamped before the 3 ms below begin
  const int gate = device.close_gate(stream);
  timer.finish(stream, plan, 4096, Duration(1000));
  EXPECT_FALSE(timer.collect().has_value());  // the end event waits behind the gate
  EXPECT_FALSE(timer.start(stream));          // the sample is not collected yet
  std::this_thread::sleep_for(3ms);
  device.open_gate(gate);
  device.synchronize(stream);
  const auto landed = timer.collect();
  ASSERT_TRUE(landed.has_value());
  EXPECT_GE(landed->landed, 3ms);
  EXPECT_EQ(landed->bytes, 4096u);
  EXPECT_EQ(landed->plan.method, FillMethod::Streaming);
  EXPECT_FALSE(timer.collect().has_value());  // once

  // A call that took longer than the device's span: the call's duration.
  ASSERT_TRUE(timer.start(stream));
  timer.finish(stream, plan, 1, Duration(std::chrono::seconds(1)));
  device.synchronize(stream);
  const auto slow_call = timer.collect();
  ASSERT_TRUE(slow_call.has_value());
  EXPECT_EQ(slow_call->landed, Duration(std::chrono::seconds(1)));

  // An upload that failed gives the timer back; a finish without a start keeps nothing.
  ASSERT_TRUE(timer.start(stream));
  timer.abandon();
  timer.finish(stream, plan, 1, Duration(1));
  EXPECT_FALSE(timer.collect().has_value());
  EXPECT_TRUE(timer.start(stream));
  timer.abandon();
  device.synchronize_all();
  EXPECT_TRUE(device.violations().empty()) << device.violations().front();
}

// A device that cannot make timing events gives a timer that never starts; one whose timing calls
// fail (a device lost after the timer was made) is given up on after 8 failures in a row.
TEST(LandingTimer, ADeviceThatCannotTimeGivesATimerThatNeverStarts) {
  FakeDevice fake;
  const cudaStream_t stream = fake.create_stream();
  {
    testing::FaultyDevice cannot(fake, testing::Fault{testing::Call::Timing, 1});
    LandingTimer timer(cannot);
    EXPECT_FALSE(timer.available());
    EXPECT_FALSE(timer.start(stream));
  }
  testing::FaultyDevice failing(fake,
                                testing::Fault{testing::Call::Timing, 3, cudaErrorUnknown, true});
  LandingTimer timer(failing);
  ASSERT_TRUE(timer.available());  // its two events were made
  for (int i = 0; i < 7; ++i)
    EXPECT_FALSE(timer.start(stream));
  EXPECT_TRUE(timer.available());
  EXPECT_FALSE(timer.start(stream));
  EXPECT_FALSE(timer.available());
}

}  // namespace
}  // namespace staging::cuda::detail
