// Links staging::cuda from the installed package and makes an Uploader: with a GPU it uploads a
// few bytes; without one, create() answers NoDevice. Either way the package worked.
#include <cstdio>
#include <staging/cuda.hpp>

int main() {
  staging::cuda::UploaderConfig config;
  config.ring_bytes = 1 << 20;
  config.fill_threads = 1;
  auto uploader = staging::cuda::Uploader::create(config);
  if (!uploader) {
    std::printf("no uploader: %s\n", std::string(to_string(uploader.error())).c_str());
    return uploader.error() == staging::CreateError::NoDevice ? 0 : 1;
  }
  void* dst = nullptr;
  if (cudaMalloc(&dst, 16) != cudaSuccess) return 1;
  const char src[16] = "staging::cuda";
  auto point = uploader->upload(dst, src, sizeof src, nullptr);
  const bool ok = point && uploader->wait(*point, std::chrono::seconds(5));
  cudaFree(dst);
  std::printf("uploaded: %s\n", ok ? "yes" : "no");
  return ok ? 0 : 1;
}
