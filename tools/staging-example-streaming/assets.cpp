#include "assets.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace example {

namespace {

// A colour of its own per object: a hue around the wheel.
void hue(uint32_t index, float rgb[3]) {
  const float h = std::fmod(static_cast<float>(index) * 0.618034f, 1.0f) * 6.0f;
  const float x = 1.0f - std::fabs(std::fmod(h, 2.0f) - 1.0f);
  const int sector = static_cast<int>(h);
  const float table[6][3] = {{1, x, 0}, {x, 1, 0}, {0, 1, x}, {0, x, 1}, {x, 0, 1}, {1, 0, x}};
  for (int i = 0; i < 3; ++i)
    rgb[i] = 0.25f + 0.75f * table[std::min(sector, 5)][i];
}

}  // namespace

void AssetSource::generate(uint32_t index, uint32_t size, uint32_t mesh_grid) {
  texture_size = size;
  levels = 1;
  while ((size >> levels) > 0)
    ++levels;
  uint64_t total = 0;
  for (uint32_t l = 0; l < levels; ++l) {
    const uint64_t s = std::max(1u, size >> l);
    total += s * s * 4;
  }
  texels.resize(total);
  // Level 0: rings and a checker in the object's colour.
  float rgb[3];
  hue(index, rgb);
  auto* p = reinterpret_cast<uint8_t*>(texels.data());
  const float inv = 1.0f / static_cast<float>(size);
  for (uint32_t y = 0; y < size; ++y) {
    for (uint32_t x = 0; x < size; ++x) {
      const float u = (static_cast<float>(x) + 0.5f) * inv - 0.5f;
      const float v = (static_cast<float>(y) + 0.5f) * inv - 0.5f;
      const float ring = 0.5f + 0.5f * std::cos(std::sqrt(u * u + v * v) * 60.0f);
      const bool check = (((x * 8) / size) + ((y * 8) / size)) % 2 == 0;
      const float k = (check ? 0.55f : 0.85f) * (0.6f + 0.4f * ring);
      uint8_t* t = p + (static_cast<uint64_t>(y) * size + x) * 4;
      t[0] = static_cast<uint8_t>(255.0f * rgb[0] * k);
      t[1] = static_cast<uint8_t>(255.0f * rgb[1] * k);
      t[2] = static_cast<uint8_t>(255.0f * rgb[2] * k);
      t[3] = 255;
    }
  }
  // The mips: 2 × 2 box filter.
  uint64_t src = 0, dst = static_cast<uint64_t>(size) * size * 4;
  for (uint32_t l = 1; l < levels; ++l) {
    const uint32_t ps = std::max(1u, size >> (l - 1));
    const uint32_t s = std::max(1u, size >> l);
    for (uint32_t y = 0; y < s; ++y) {
      for (uint32_t x = 0; x < s; ++x) {
        for (int c = 0; c < 4; ++c) {
          uint32_t sum = 0;
          for (uint32_t dy = 0; dy < 2; ++dy) {
            for (uint32_t dx = 0; dx < 2; ++dx) {
              const uint32_t sx = std::min(ps - 1, 2 * x + dx), sy = std::min(ps - 1, 2 * y + dy);
              sum += p[src + (static_cast<uint64_t>(sy) * ps + sx) * 4 + c];
            }
          }
          p[dst + (static_cast<uint64_t>(y) * s + x) * 4 + c] = static_cast<uint8_t>(sum / 4);
        }
      }
    }
    src = dst;
    dst += static_cast<uint64_t>(s) * s * 4;
  }

  // The mesh: a grid over the square, slightly domed so that it is not just two triangles.
  grid = std::max(2u, mesh_grid);
  std::vector<Vertex> vertices;
  vertices.reserve(static_cast<std::size_t>(grid) * grid);
  for (uint32_t j = 0; j < grid; ++j) {
    for (uint32_t i = 0; i < grid; ++i) {
      const float u = static_cast<float>(i) / static_cast<float>(grid - 1);
      const float v = static_cast<float>(j) / static_cast<float>(grid - 1);
      const float x = 2.0f * u - 1.0f, y = 2.0f * v - 1.0f;
      const float bulge = 0.92f + 0.08f * std::cos(x * 1.5f) * std::cos(y * 1.5f);
      vertices.push_back({x * bulge, y * bulge, u, v});
    }
  }
  std::vector<uint32_t> indices;
  indices.reserve(static_cast<std::size_t>(grid - 1) * (grid - 1) * 6);
  for (uint32_t j = 0; j + 1 < grid; ++j) {
    for (uint32_t i = 0; i + 1 < grid; ++i) {
      const uint32_t a = j * grid + i, b = a + 1, c = a + grid, d = c + 1;
      indices.insert(indices.end(), {a, b, c, b, d, c});
    }
  }
  vertex_bytes = vertices.size() * sizeof(Vertex);
  index_count = static_cast<uint32_t>(indices.size());
  mesh.resize(vertex_bytes + indices.size() * sizeof(uint32_t));
  std::memcpy(mesh.data(), vertices.data(), vertex_bytes);
  std::memcpy(mesh.data() + vertex_bytes, indices.data(), indices.size() * sizeof(uint32_t));
}

bool AssetResources::create(const StreamingDevice& d, const AssetSource& source) {
  texture = d.make_image(VK_FORMAT_R8G8B8A8_UNORM, {source.texture_size, source.texture_size, 1},
                         source.levels, 1,
                         VK_IMAGE_USAGE_TRANSFER_DST_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT |
                             VK_IMAGE_USAGE_SAMPLED_BIT);
  if (texture.image == VK_NULL_HANDLE) return false;
  const VkImageViewCreateInfo view_info{
      .sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO,
      .image = texture.image,
      .viewType = VK_IMAGE_VIEW_TYPE_2D,
      .format = VK_FORMAT_R8G8B8A8_UNORM,
      .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, source.levels, 0, 1}};
  if (vkCreateImageView(d.device, &view_info, nullptr, &view) != VK_SUCCESS) return false;
  mesh = d.make_buffer(source.mesh.size(),
                       VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                           VK_BUFFER_USAGE_VERTEX_BUFFER_BIT | VK_BUFFER_USAGE_INDEX_BUFFER_BIT);
  if (mesh.buffer == VK_NULL_HANDLE) return false;

  texture_target =
      staging::vulkan::ImageDestination{.image = texture.image,
                                        .format = VK_FORMAT_R8G8B8A8_UNORM,
                                        .extent = {source.texture_size, source.texture_size, 1},
                                        .mip_levels = source.levels,
                                        .sharing = VK_SHARING_MODE_EXCLUSIVE};
  mesh_target = staging::vulkan::BufferDestination{
      .buffer = mesh.buffer, .size = mesh.size, .sharing = VK_SHARING_MODE_EXCLUSIVE};
  vertex_bytes = source.vertex_bytes;
  index_count = source.index_count;
  return true;
}

void AssetResources::destroy(const StreamingDevice& d) {
  if (view != VK_NULL_HANDLE) vkDestroyImageView(d.device, view, nullptr);
  d.destroy(texture);
  d.destroy(mesh);
  *this = AssetResources{};
}

}  // namespace example
