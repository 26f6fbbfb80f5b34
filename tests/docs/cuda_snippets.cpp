// The CUDA code README.md and docs/cuda.md show, compiled with the project's warnings (never run:
// each function is one snippet, its inputs the names the snippet uses). The marked regions are
// what the pages show, line for line (tests/docs/check_snippets.py checks it).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "staging/cuda.hpp"

namespace docs {

void produce_into(std::byte* bytes, uint64_t size);  // the program's own in-place producer

inline void readme(void* device_ptr, const void* host_ptr, uint64_t bytes, cudaStream_t stream,
                   cudaStream_t other_stream) {
  // [snippet:readme]
  staging::cuda::UploaderConfig config;
  config.ring_bytes = 64 << 20;  // pinned memory, allocated once: the cap
  config.fill_threads = 8;       // threads that copy pageable memory into the ring
  auto uploader = staging::cuda::Uploader::create(config);
  if (!uploader) return;  // uploader.error(): NoDevice, AllocationFailed, ...

  // Any size; the source may be reused on return.
  auto point = uploader->upload(device_ptr, host_ptr, bytes, stream);
  if (!point) return;  // point.error().kind: WouldBlock, Timeout, TooLarge, Cuda, ...

  // Work queued on other_stream from now on waits for the copies (no host wait);
  // or wait on the host: uploader->wait(*point, timeout).
  if (!uploader->stream_wait(other_stream, *point)) return;  // a CUDA error
  // [snippet-end]
}

inline void uploader(void* device_ptr, const void* host_ptr, uint64_t bytes, cudaStream_t stream,
                     cudaStream_t other_stream, uint64_t n, void* device_ptr2,
                     void* device_ptr_on_1, cudaStream_t stream_on_1) {
  // [snippet:uploader]
  staging::cuda::UploaderConfig config;  // 64 MiB pinned ring, fill threads: one per CPU less two
  auto uploader = staging::cuda::Uploader::create(config);  // pins once, starts threads
  if (!uploader) return;  // uploader.error(): NoDevice, AllocationFailed, ...

  // Any size, any alignment, from any host memory:
  auto point = uploader->upload(device_ptr, host_ptr, bytes, stream);
  // host_ptr may be reused now: every byte is in the ring or already on its way.
  if (!point) return;  // point.error().kind: WouldBlock, Timeout, TooLarge, Cuda, Failed, ...
  if (!uploader->stream_wait(other_stream, *point)) return;  // GPU-side dependency, no host wait
  if (!uploader->wait(*point, std::chrono::seconds(1))) return;  // host-side: Timeout, Failed

  // In place: write straight into pinned memory (Split may give less than asked), then commit.
  auto span = uploader->reserve(n);
  if (!span) return;
  produce_into(span->data(), span->size());  // e.g. staging::copy_to_staging
  auto p2 = uploader->commit(std::move(*span), device_ptr2, stream);

  // Every GPU of the host: one ring each under one cap, one fill pool (per NUMA node) for all.
  staging::cuda::MultiUploaderConfig multi_config;  // every device, 64 MiB ring each
  auto all = staging::cuda::MultiUploader::create(multi_config);
  if (!all) return;
  auto p3 = all->upload(/*device index*/ 1, device_ptr_on_1, host_ptr, bytes, stream_on_1);
  // [snippet-end]
  (void)p2;
  (void)p3;
}

}  // namespace docs
