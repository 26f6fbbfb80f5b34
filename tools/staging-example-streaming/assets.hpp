// The example's assets: generated textures (RGBA8 mip chains) and meshes (grids of vertices with
// an index list), their source bytes in host memory — as a loader would have them after reading
// and decompressing a file — and the device resources the streamer fills.
#pragma once

#include <volk.h>  // Vulkan, loaded at run time

#include <cstddef>
#include <cstdint>
#include <vector>

#include "staging/vulkan.hpp"
#include "streaming_device.hpp"

namespace example {

/// One mesh vertex: position in [-1, 1]^2 and texture coordinates.
struct Vertex {
  float x, y, u, v;
};

/// An object's source data, generated once.
struct AssetSource {
  uint32_t texture_size = 0;      ///< level 0 is texture_size × texture_size texels
  uint32_t levels = 1;            ///< down to 1 × 1
  std::vector<std::byte> texels;  ///< every level, tightly packed (the streamer's layout)
  uint32_t grid = 2;              ///< mesh vertices per side
  std::vector<std::byte> mesh;    ///< vertices, then 32-bit indices
  uint64_t vertex_bytes = 0;      ///< where the indices start in `mesh`
  uint32_t index_count = 0;

  /// Generates object `index`'s texture (a pattern of its own) and mesh. Any thread.
  void generate(uint32_t index, uint32_t texture_size, uint32_t grid);
  [[nodiscard]] uint64_t bytes() const { return texels.size() + mesh.size(); }
};

/// The device side of one object's texture and mesh, and where the streamer puts them.
struct AssetResources {
  staging::vulkan::support::Image texture;
  VkImageView view = VK_NULL_HANDLE;
  staging::vulkan::support::Buffer mesh;             ///< vertices then indices
  staging::vulkan::ImageDestination texture_target;  ///< every level, sampled after the upload
  staging::vulkan::BufferDestination mesh_target;
  uint64_t vertex_bytes = 0;
  uint32_t index_count = 0;

  /// Creates the image (with a view) and the buffer for `source` (device-local; exclusive to
  /// the graphics family, which the streamer's release hands them to). Returns false on failure.
  bool create(const StreamingDevice& device, const AssetSource& source);
  /// Destroys them (the device must no longer use them).
  void destroy(const StreamingDevice& device);
};

}  // namespace example
