// HostMemory: the simulator's staging memory — a region's or a slot buffer's real host bytes,
// followed by a guard whose pattern shows a write past the end (invariant I4). Pages are mapped
// lazily (anonymous mmap, zeroed by the system): making or releasing a region costs the same at
// any size, and only the bytes written (the byte checks' stamps) become resident. So a run's time
// does not grow with the sizes it stages.
//
// Move-only; not synchronised (the simulator's thread; live_bytes() counts for the process).
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

namespace staging::sim {

class HostMemory {
 public:
  /// Bytes of guard after the memory.
  static constexpr std::size_t kGuardBytes = 64;

  /// `bytes` of zeroed memory and the guard; empty (data() null) when the system refuses.
  explicit HostMemory(uint64_t bytes) : size_(bytes) {
    void* p = bytes > SIZE_MAX - kGuardBytes
                  ? MAP_FAILED
                  : mmap(nullptr, mapped(), PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return;
    data_ = static_cast<std::byte*>(p);
    std::memset(data_ + size_, kGuard, kGuardBytes);
    live_bytes_ += size_;
  }
  HostMemory(HostMemory&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  HostMemory& operator=(HostMemory&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    return *this;
  }
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;
  ~HostMemory() {
    if (data_ == nullptr) return;
    munmap(data_, mapped());
    live_bytes_ -= size_;
  }

  /// The first byte, or null when empty.
  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  /// The usable bytes (the guard not counted).
  [[nodiscard]] uint64_t size() const noexcept { return size_; }
  /// Bytes of every HostMemory alive now, in this process (0 once every ring is gone).
  [[nodiscard]] static uint64_t live_bytes() noexcept { return live_bytes_; }
  /// False when something wrote into the guard (past the end).
  [[nodiscard]] bool guard_intact() const noexcept {
    for (std::size_t i = 0; i < kGuardBytes; ++i) {
      if (data_ != nullptr && data_[size_ + i] != std::byte{kGuard}) return false;
    }
    return true;
  }

 private:
  static constexpr unsigned char kGuard = 0xCD;
  [[nodiscard]] std::size_t mapped() const noexcept {
    return static_cast<std::size_t>(size_) + kGuardBytes;
  }
  std::byte* data_ = nullptr;
  uint64_t size_ = 0;
  static inline uint64_t live_bytes_ = 0;
};

}  // namespace staging::sim
