// A program outside the project, built against the installed package.
#include <cstdio>
#include <staging/core.hpp>
#include <staging/testing/fake_slot_allocator.hpp>

int main() {
  staging::testing::FakeSlotAllocator allocator;
  auto ring = staging::StagingRing<staging::testing::FakeBuffer>::create(allocator);
  if (!ring) return 1;
  auto lease = ring->begin(1000);
  if (!lease || !lease->place(1000, staging::BUFFER_COPY_ALIGNMENT)) return 2;
  auto token = ring->finish(std::move(*lease));
  if (!token || !token->signal()) return 3;
  std::printf("consumer: slot 0 is %s after one frame\n",
              std::string(staging::to_string(ring->state(0))).c_str());
  return ring->state(0) == staging::SlotState::Ready ? 0 : 4;
}
