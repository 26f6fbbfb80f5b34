#include "staging_memory.hpp"

namespace staging::vulkan::detail {

MemorySource::MemorySource(const Device& device, const RingConfig& config)
    : hook_(config.memory), flush_always_(config.flush_always) {
  if (hook_ == nullptr) {
    default_ = std::make_unique<DefaultMemory>(device.physical_device, device.device,
                                               device.dispatch, config.prefer_device_local);
    hook_ = default_.get();
  }
}

Expected<StagingMemory, AllocError> MemorySource::allocate(uint64_t size) {
  Expected<StagingMemory, AllocError> made = hook_->allocate(size);
  if (!made) {
    last_error_ = made.error();
    return made;
  }
  memory_type_ = made->memory_type;
  coherent_ = made->coherent;
  return made;
}

void MemorySource::release(const StagingMemory& memory) noexcept {
  if (!leaking_) hook_->release(memory);
}

Expected<void, AllocError> MemorySource::flush(const StagingMemory& memory, uint64_t offset,
                                               uint64_t size) {
  if (size == 0 || !needs_flush(memory)) return {};
  ++flushes_;
  flushed_bytes_ += size;
  return hook_->flush(memory, offset, size);
}

}  // namespace staging::vulkan::detail
