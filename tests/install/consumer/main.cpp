// A program outside the project, built against the installed package: a byte ring over memory
// of its own, one upload placed and retired.
#include <cstdio>
#include <staging/core.hpp>

namespace {

// The program's staging memory: the ring asks for regions and gives them back.
class Regions final : public staging::RegionAllocator {
 public:
  staging::Expected<void, staging::AllocError> create_region(uint32_t, uint64_t) override {
    return {};
  }
  void destroy_region(uint32_t) noexcept override {}
};

}  // namespace

int main() {
  Regions regions;
  staging::ByteRingConfig config;
  config.capacity = 1 << 16;
  auto ring = staging::ByteRing::create(config, regions);
  if (!ring) return 1;
  auto placed = ring->reserve({.size = 1000, .alignment = 256, .token = 1});
  if (!placed) return 2;
  const uint64_t in_use = ring->capacity() - ring->free_bytes();
  ring->retire(1);  // the queue's timeline reached 1: the copy has read the bytes
  std::printf("consumer: %llu bytes in use after one upload, %llu after its retirement\n",
              static_cast<unsigned long long>(in_use),
              static_cast<unsigned long long>(ring->capacity() - ring->free_bytes()));
  return in_use >= 1000 && ring->free_bytes() == ring->capacity() ? 0 : 3;
}
