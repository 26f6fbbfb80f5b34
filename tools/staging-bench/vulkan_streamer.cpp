// streamer: uploads from a pointer through a Streamer (its own queue, its fill pool), against the
// single-copy ceiling of the same run, per queue (--queues):
//
//   streamer-ceiling  one vkCmdCopyBuffer of stream_mib from a prefilled staging buffer of that
//                     size (host wall time from submission to completion)
//   streamer-pointer  one upload of stream_mib from pageable memory (pre-touched) through
//                     ring_mib of staging in batches of at most chunk_mib, copied by N fill
//                     threads (--threads): end to end, from upload() until the ticket is complete;
//                     per --streamer-memory: the built-in hook's choice (system), and/or
//                     HOST_CACHED system memory through a MemoryHook (cached)
//   streamer-fill     N threads (--threads) copying the same source into a staging buffer of
//                     ring_mib (the streamer's memory type and fill method, cycled, 1 MiB at a
//                     time), nothing copied to the device: the rate the fill threads alone reach
//   streamer-beside-fill  the ceiling's copy while N threads fill as above without pause: what
//                     the copy reaches beside a fill, and the fill beside the copy
//   streamer-texture  8 full mip chains of texture_size² per format (--formats), tightly packed
//                     in pageable memory, uploaded back to back through the same streamer (the
//                     most fill threads of --threads), until every ticket is complete; against
//                     the buffer ceiling and against the same copies from one prefilled staging
//                     buffer in one submission (the texture ceiling)
//
// Every configuration's destination is read back after its last repetition and compared byte
// for byte. Target lines: pointer >= 0.9 x the ceiling; textures >= 0.7 x the ceiling. A pointer
// row's `x_fill` is its rate over streamer-fill's at the same thread count: near 1, the fill
// threads bound it.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include "copy_crew.hpp"
#include "staging/detail/vulkan/format.hpp"
#include "vulkan_commands.hpp"
#include "vulkan_scenarios.hpp"

namespace staging::bench::vk {
namespace {

using namespace staging::vulkan;

struct TextureFormat {
  std::string name;
  VkFormat format;
};

class StreamerBench {
 public:
  StreamerBench(Context& vk, const CommonOptions& common, const VulkanOptions& options,
                Report& report)
      : vk_(vk), common_(common), o_(options), report_(report) {}
  ~StreamerBench() {
    vkDeviceWaitIdle(vk_.device());
    vk_.destroy(dst_);
    vk_.destroy(readback_);
    std::free(source_);
  }
  StreamerBench(const StreamerBench&) = delete;
  StreamerBench& operator=(const StreamerBench&) = delete;

  int run() {
    total_ = o_.stream_mib * MiB;
    source_ = static_cast<std::byte*>(std::aligned_alloc(4096, total_));
    if (source_ == nullptr) return fail("cannot allocate the pageable source");
    fill_random_parallel(source_, total_, 21, std::max(4u, std::thread::hardware_concurrency()));
    dst_ =
        vk_.make_buffer(total_, VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                        Memory::DeviceLocal);
    readback_ = vk_.make_buffer(total_, VK_BUFFER_USAGE_TRANSFER_DST_BIT, Memory::Readback);
    if (dst_.buffer == VK_NULL_HANDLE || readback_.mapped == nullptr) {
      return fail("cannot make the destination or readback buffer");
    }
    report_.context("streamer", "ring " + std::to_string(o_.ring_mib) +
                                    " MiB, batches <= " + std::to_string(o_.chunk_mib) +
                                    " MiB, source pageable and pre-touched");
    fill_rows();
    for (const std::string& qname : o_.queues) {
      Queue* queue = qname == "graphics"   ? &vk_.graphics()
                     : qname == "transfer" ? vk_.transfer()
                                           : nullptr;
      if (queue == nullptr) {
        report_.note("streamer: no " + qname + " queue on this device; skipped");
        continue;
      }
      const double ceiling = ceiling_row(*queue);
      if (ceiling <= 0) return failures_ + 1;
      for (const std::string& memory : o_.streamer_memory) {
        std::unique_ptr<TypedMemory> hook;
        if (memory == "cached") {
          const std::optional<uint32_t> cached = vk_.cached_type();
          if (!cached) {
            report_.note("streamer: no HOST_CACHED system memory type; 'cached' skipped");
            continue;
          }
          hook = std::make_unique<TypedMemory>(vk_, *cached);
        }
        for (unsigned threads : common_.threads)
          pointer_row(*queue, std::max(1u, threads), ceiling, hook.get(), memory);
      }
      if (beside_fill_rows(*queue, ceiling) != 0) return failures_ + 1;
      for (const std::string& f : o_.formats)
        texture_row(*queue, f, ceiling);
    }
    return failures_;
  }

 private:
  int fail(const char* what) {
    std::fprintf(stderr, "staging-bench: streamer: %s\n", what);
    return 1;
  }

  std::unique_ptr<Streamer> make_streamer(const Queue& queue, unsigned threads,
                                          MemoryHook* memory = nullptr) {
    StreamerConfig c;
    c.queue = queue.queue;
    c.queue_family = queue.family;
    c.consumer_family = queue.family;
    c.ring_bytes = o_.ring_mib * MiB;
    c.schedule.max_batch_bytes = o_.chunk_mib * MiB;
    c.schedule.max_queued_bytes = UINT64_MAX / 2;
    c.fill_threads = threads;
    c.memory = memory;
    auto s = Streamer::create(vk_.staging_device(), c);
    if (!s) {
      std::fprintf(stderr, "staging-bench: Streamer::create: %s\n",
                   std::string(to_string(s.error())).c_str());
      return nullptr;
    }
    return std::move(*s);
  }

  // Reads `bytes` of dst back (on `queue`, after everything submitted there) and compares them
  // with `expected`.
  bool check_buffer(const Queue& queue, const std::byte* expected, uint64_t bytes) {
    std::memset(readback_.mapped, 0, bytes);
    const bool ran = vk_.run_once(queue, [&](VkCommandBuffer cmd) {
      const VkBufferCopy region{0, 0, bytes};
      vkCmdCopyBuffer(cmd, dst_.buffer, readback_.buffer, 1, &region);
    });
    const auto diff = first_difference(readback_.mapped, expected, bytes,
                                       std::max(4u, std::thread::hardware_concurrency()));
    if (diff) std::fprintf(stderr, "streamer: first difference at byte %" PRIu64 "\n", *diff);
    return ran && !diff;
  }

  // streamer-fill: the fill threads alone, per thread count (remembered for the pointer rows).
  void fill_rows() {
    Buffer ring =
        vk_.make_buffer(o_.ring_mib * MiB, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, Memory::Staging);
    if (ring.mapped == nullptr) {
      report_.note("streamer: cannot make a ring-sized staging buffer; no fill rows");
      return;
    }
    for (unsigned threads : common_.threads) {
      const unsigned n = std::max(1u, threads);
      Row row = measure(common_, "streamer-fill", total_, [&] {
        const auto t0 = Clock::now();
        CopyCrew::Options fill;
        fill.bytes = total_;
        CopyCrew crew(n, source_, total_, ring.mapped, ring.size, fill);
        crew.finish();
        return seconds_since(t0);
      });
      row.fields["threads"] = n;
      row.fields["what"] = "the fill threads alone, into a ring-sized staging buffer";
      fill_gbps_[n] = row.gbps;
      report_.add(std::move(row));
    }
    vk_.destroy(ring);
  }

  // streamer-beside-fill: the ceiling's copy while N threads fill a ring-sized staging buffer.
  int beside_fill_rows(const Queue& queue, double ceiling) {
    Buffer whole = vk_.make_buffer(total_, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, Memory::Staging);
    Buffer ring =
        vk_.make_buffer(o_.ring_mib * MiB, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, Memory::Staging);
    if (whole.mapped == nullptr || ring.mapped == nullptr) {
      vk_.destroy(whole);
      vk_.destroy(ring);
      report_.note("streamer: cannot make the beside-fill buffers; no beside-fill rows");
      return 0;
    }
    std::memcpy(whole.mapped, source_, total_);
    bool ok = true;
    for (unsigned threads : common_.threads) {
      const unsigned n = std::max(1u, threads);
      CopyCrew crew(n, source_, total_, ring.mapped, ring.size, CopyCrew::Options{});
      Row row = whole_copy_row("streamer-beside-fill", queue, whole, ok);
      row.fields["queue"] = queue.name;
      row.fields["threads"] = n;
      row.fields["fill_gbps"] = crew.stop();
      row.fields["ratio"] = ceiling > 0 ? row.gbps / ceiling : 0.0;
      row.fields["what"] = "the ceiling's copy while the threads fill without pause";
      report_.add(std::move(row));
    }
    vk_.destroy(whole);
    vk_.destroy(ring);
    if (!ok) ++failures_;
    return ok ? 0 : 1;
  }

  // One vkCmdCopyBuffer of the whole size from `staging` into the destination, timed from
  // submission to completion; `ok` turns false when a copy fails.
  Row whole_copy_row(const char* section, const Queue& queue, const Buffer& staging, bool& ok) {
    return measure(common_, section, total_, [&] {
      const auto t0 = Clock::now();
      ok = vk_.run_once(queue, [&](VkCommandBuffer cmd) {
        const VkBufferCopy region{0, 0, total_};
        vkCmdCopyBuffer(cmd, staging.buffer, dst_.buffer, 1, &region);
      }) && ok;
      return seconds_since(t0);
    });
  }

  double ceiling_row(const Queue& queue) {
    Buffer staging = vk_.make_buffer(total_, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, Memory::Staging);
    if (staging.mapped == nullptr) {
      fail("cannot make a staging buffer of the whole size");
      return 0;
    }
    std::memcpy(staging.mapped, source_, total_);
    bool ok = true;
    Row row = whole_copy_row("streamer-ceiling", queue, staging, ok);
    vk_.destroy(staging);
    const bool same = ok && check_buffer(queue, source_, total_);
    row.fields["queue"] = queue.name;
    row.fields["what"] = "one vkCmdCopyBuffer from a prefilled staging buffer of the whole size";
    row.fields["check"] = same ? "ok" : "MISMATCH";
    if (!same) ++failures_;
    const double gbps = row.gbps;
    report_.add(std::move(row));
    return gbps;
  }

  void pointer_row(const Queue& queue, unsigned threads, double ceiling, MemoryHook* memory,
                   const std::string& memory_name) {
    auto streamer = make_streamer(queue, threads, memory);
    if (!streamer) {
      ++failures_;
      return;
    }
    bool ok = true;
    Row row = measure(common_, "streamer-pointer", total_, [&] {
      const auto t0 = Clock::now();
      auto ticket = streamer->upload(BufferDestination{dst_.buffer, dst_.size}, 0,
                                     std::span(source_, total_), StreamPriority::Now);
      ok = ticket && streamer->wait(*ticket, std::chrono::seconds(120)) == StreamStatus::Complete &&
           ok;
      return seconds_since(t0);
    });
    const StreamerStats s = streamer->stats();
    streamer.reset();
    const bool same = ok && check_buffer(queue, source_, total_);
    row.fields["queue"] = queue.name;
    row.fields["threads"] = threads;
    row.fields["memory"] = memory_name;
    row.fields["ratio"] = ceiling > 0 ? row.gbps / ceiling : 0.0;
    row.fields["submissions"] = s.submissions;
    if (const auto f = fill_gbps_.find(threads);
        memory == nullptr && f != fill_gbps_.end() && f->second > 0)
      row.fields["x_fill"] = row.gbps / f->second;
    row.fields["ring_full_rounds"] = s.stream.ring_full;
    row.fields["check"] = same ? "ok" : "MISMATCH";
    if (!same) ++failures_;
    if (threads == common_.threads.back() && memory == nullptr) {
      report_.target(
          "streamer: 1 GiB from a pointer >= 0.9 x the single-copy ceiling (" + queue.name + ")",
          row.gbps >= 0.9 * ceiling,
          std::to_string(row.gbps) + " GB/s vs " + std::to_string(ceiling) + " GB/s with " +
              std::to_string(threads) + " fill threads");
    }
    report_.add(std::move(row));
  }

  void texture_row(const Queue& queue, const std::string& name, double ceiling) {
    const VkFormat format = name == "rgba8" ? VK_FORMAT_R8G8B8A8_UNORM
                            : name == "bc7" ? VK_FORMAT_BC7_UNORM_BLOCK
                            : name == "bc1" ? VK_FORMAT_BC1_RGBA_UNORM_BLOCK
                                            : VK_FORMAT_UNDEFINED;
    if (format == VK_FORMAT_UNDEFINED || !vk_.image_format_ok(format)) {
      report_.note("streamer: format " + name + " not usable here; skipped");
      return;
    }
    constexpr uint32_t kTextures = 8;
    const uint32_t size = o_.texture_size;
    uint32_t mips = 1;
    while ((size >> mips) > 0)
      ++mips;
    std::vector<Image> images;
    for (uint32_t i = 0; i < kTextures; ++i)
      images.push_back(vk_.make_image(format, size, size, mips));
    auto streamer = make_streamer(queue, common_.threads.back());
    if (!streamer) {
      ++failures_;
      return;
    }
    ImageDestination target{.format = format, .extent = {size, size, 1}, .mip_levels = mips};
    const ImageLevels levels{.new_layout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL};
    target.image = images[0].image;
    const uint64_t chain = streamer->image_bytes(target, levels).value();
    if (chain > total_) {
      report_.note("streamer: a " + name + " chain is larger than --stream-mib; skipped");
      return;
    }
    bool ok = true;
    Row row = measure(common_, "streamer-texture", chain * kTextures, [&] {
      const auto t0 = Clock::now();
      std::vector<StreamTicket> tickets;
      for (const Image& img : images) {
        target.image = img.image;
        auto t = streamer->upload(target, levels, std::span(source_, chain), StreamPriority::Now);
        ok = ok && t.has_value();
        if (t) tickets.push_back(*t);
      }
      for (const StreamTicket& t : tickets)
        ok = streamer->wait(t, std::chrono::seconds(120)) == StreamStatus::Complete && ok;
      return seconds_since(t0);
    });
    streamer.reset();
    // The last texture's levels, read back tightly packed, equal the source.
    bool same = ok && read_back_levels(queue, images.back(), format, size, mips);
    same = same && !first_difference(readback_.mapped, source_, chain, 4);
    const double texture_ceiling = texture_ceiling_gbps(queue, images, format, mips, chain);
    for (Image& img : images)
      vk_.destroy(img);
    row.fields["queue"] = queue.name;
    row.fields["format"] = name;
    row.fields["textures"] = kTextures;
    row.fields["texture_size"] = size;
    row.fields["ratio"] = ceiling > 0 ? row.gbps / ceiling : 0.0;
    row.fields["texture_ceiling_gbps"] = texture_ceiling;
    row.fields["check"] = same ? "ok" : "MISMATCH";
    if (!same) ++failures_;
    report_.target("streamer: " + std::to_string(size) + "^2 " + name +
                       " mip chains from a pointer >= 0.7 x the ceiling (" + queue.name + ")",
                   row.gbps >= 0.7 * ceiling,
                   std::to_string(row.gbps) + " GB/s vs " + std::to_string(ceiling) + " GB/s");
    report_.add(std::move(row));
  }

  // Copies every level of `image` (in TRANSFER_SRC_OPTIMAL) into the readback buffer, tightly
  // packed. False when the copy failed.
  bool read_back_levels(const Queue& queue, const Image& image, VkFormat format, uint32_t size,
                        uint32_t mips) {
    return vk_.run_once(queue, [&](VkCommandBuffer cmd) {
      std::vector<VkBufferImageCopy> regions;
      uint64_t offset = 0;
      const TexelBlock b = texel_block(format).value();
      for (uint32_t m = 0; m < mips; ++m) {
        const uint32_t e = std::max(1u, size >> m);
        regions.push_back({.bufferOffset = offset,
                           .imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, m, 0, 1},
                           .imageExtent = {e, e, 1}});
        const uint64_t blocks = (e + b.width - 1) / b.width;
        offset += blocks * ((e + b.height - 1) / b.height) * b.bytes;
      }
      vkCmdCopyImageToBuffer(cmd, image.image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                             readback_.buffer, static_cast<uint32_t>(regions.size()),
                             regions.data());
    });
  }

  // The same textures' copies from one prefilled staging buffer, in one submission.
  double texture_ceiling_gbps(const Queue& queue, const std::vector<Image>& images, VkFormat format,
                              uint32_t mips, uint64_t chain) {
    Buffer staging = vk_.make_buffer(chain, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, Memory::Staging);
    if (staging.mapped == nullptr) return 0;
    std::memcpy(staging.mapped, source_, chain);
    const TexelBlock b = texel_block(format).value();
    const uint32_t size = o_.texture_size;
    Row row = measure(common_, "texture-ceiling", chain * images.size(), [&] {
      const auto t0 = Clock::now();
      vk_.run_once(queue, [&](VkCommandBuffer cmd) {
        std::vector<VkImageMemoryBarrier2> to_dst;
        for (const Image& img : images) {
          to_dst.push_back(support::layout_barrier(
              img.image, mips, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
              {VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, VK_ACCESS_2_NONE}, support::kCopyWrite));
        }
        support::pipeline_barrier(cmd, to_dst);
        std::vector<VkBufferImageCopy> regions;
        uint64_t offset = 0;
        for (uint32_t m = 0; m < mips; ++m) {
          const uint32_t e = std::max(1u, size >> m);
          regions.push_back({.bufferOffset = offset,
                             .imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, m, 0, 1},
                             .imageExtent = {e, e, 1}});
          offset +=
              uint64_t{(e + b.width - 1) / b.width} * ((e + b.height - 1) / b.height) * b.bytes;
        }
        for (const Image& img : images) {
          vkCmdCopyBufferToImage(cmd, staging.buffer, img.image,
                                 VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                                 static_cast<uint32_t>(regions.size()), regions.data());
        }
      });
      return seconds_since(t0);
    });
    vk_.destroy(staging);
    const double gbps = row.gbps;
    row.fields["queue"] = queue.name;
    row.fields["what"] = "the same copies from one prefilled staging buffer, one submission";
    report_.add(std::move(row));
    return gbps;
  }

  Context& vk_;
  const CommonOptions& common_;
  const VulkanOptions& o_;
  Report& report_;
  uint64_t total_ = 0;
  std::byte* source_ = nullptr;
  Buffer dst_;
  Buffer readback_;
  std::map<unsigned, double> fill_gbps_;  // streamer-fill's rate per thread count
  int failures_ = 0;
};

}  // namespace

int run_streamer(Context& vk, const CommonOptions& common, const VulkanOptions& options,
                 Report& report) {
  StreamerBench bench(vk, common, options, report);
  return bench.run();
}

}  // namespace staging::bench::vk
