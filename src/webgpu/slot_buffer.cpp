#include "staging/detail/webgpu/slot_buffer.hpp"

#include <utility>

namespace staging::webgpu {

SlotBuffer::SlotBuffer(SlotBuffer&& other) noexcept
    : buffer_(std::exchange(other.buffer_, nullptr)),
      capacity_(std::exchange(other.capacity_, 0)) {}

SlotBuffer& SlotBuffer::operator=(SlotBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    buffer_ = std::exchange(other.buffer_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

SlotBuffer::~SlotBuffer() {
  reset();
}

void SlotBuffer::reset() noexcept {
  if (buffer_ == nullptr) return;
  wgpuBufferDestroy(buffer_);
  wgpuBufferRelease(buffer_);
  buffer_ = nullptr;
  capacity_ = 0;
}

SlotBufferAllocator::SlotBufferAllocator(WGPUDevice device, const char* label) noexcept
    : device_(device), label_(label) {
  if (device_ != nullptr) wgpuDeviceReference(device_);
}

SlotBufferAllocator::~SlotBufferAllocator() {
  if (device_ != nullptr) wgpuDeviceRelease(device_);
}

Expected<SlotBuffer, AllocError> SlotBufferAllocator::create(uint64_t capacity) {
  if (device_ == nullptr) return unexpected(AllocError::Other);
  WGPUBufferDescriptor desc{};
  desc.label = label_;
  desc.usage = STAGING_USAGE;
  desc.size = capacity;
  desc.mappedAtCreation = true;
  WGPUBuffer buffer = wgpuDeviceCreateBuffer(device_, &desc);
  if (buffer == nullptr) return unexpected(AllocError::Other);
  ++created_;
  return SlotBuffer(buffer, capacity);
}

}  // namespace staging::webgpu
