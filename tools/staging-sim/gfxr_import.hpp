// Imports a GFXReconstruct capture as an upload stream: what an application moved into device
// memory, frame by frame, so the simulator can size a staging ring for it (docs/sim.md,
// "Sizing a ring for a captured application").
//
// Input: the JSON Lines that `gfxrecon-convert CAPTURE.gfxr` writes (one call a line, in call
// order, each with its block "index"), read one line at a time — never the whole file — and,
// optionally, the uncompressed capture itself for its fill-memory commands (gfxr_blocks.hpp).
//
// What becomes an upload (Upload::kind names how the application moved the bytes):
//   buffer_copy  each region of vkCmdCopyBuffer(2) whose source buffer is bound to host-visible
//                memory (the memory type's flags from vkGetPhysicalDeviceMemoryProperties(2), or
//                memory the application mapped)
//   image_copy   each region of vkCmdCopyBufferToImage(2) from such a buffer; its size is
//                row pitch x rows x depth x layers in texel blocks, its granularity the row pitch
//   update       each vkCmdUpdateBuffer (alignment 4, as Vulkan requires of its offset)
//   host_write   each fill-memory command of the capture (bytes written into mapped memory,
//                as the capture layer saw them: whole dirty pages, or the whole mapped range),
//                except into memory that also backs a copy source (the application filling its
//                own staging memory: the copies out of it are the uploads)
// A command is imported once per submission of its command buffer (a command buffer submitted
// twice uploads twice); vkCmdExecuteCommands brings in the secondary's commands.
// Alignment: the largest power of two dividing the bytes' offset in their source memory object
// (the buffer's bind offset + the region's offset; for a host write the mapping's offset + the
// write's), at most 256 (the strictest copy-offset alignment devices ask for); offset 0 gives 256.
// Frames: vkQueuePresentKHR ends a frame; an application that never presents has one frame per
// submission. A host write belongs to the next submission and the frame it was made in.
// Times: 60 frames a second; a frame's uploads spread evenly over it, in capture order.
// Completion: for each submission, the frame in which the application learned that it had
// completed (a fence it waited for or found signalled, a timeline value it waited for or read,
// vkQueueWaitIdle, vkDeviceWaitIdle; a queue completes in submission order). The workload's
// delay model is fixed at the median of (that frame - the submission's frame), plus half a frame:
// the GPU finished somewhere in the frame the application found out.
//
// Robustness: a line that is not JSON, nested deeper than 64, longer than 64 MiB, or out of
// block order is an error naming the file and line; a call whose arguments are missing or of the
// wrong type, or that names a handle never created, is skipped and counted by reason
// (ImportStats::skipped); arithmetic on sizes is overflow-checked. At most kMaxImportedUploads
// uploads. Time and memory are linear in the file. Not synchronised; one thread.
#pragma once

#include <array>
#include <cstdint>
#include <istream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "gfxr_blocks.hpp"
#include "staging/core/errors.hpp"
#include "upload.hpp"

namespace staging::sim {

/// The copy commands counted, in ImportStats' arrays: vkCmdCopyBuffer (and vkCmdCopyBuffer2),
/// vkCmdCopyBufferToImage (and ...2), vkCmdUpdateBuffer.
enum class CopyCommand : uint8_t { CopyBuffer, CopyBufferToImage, UpdateBuffer };
inline constexpr std::array<const char*, 3> kCopyCommandNames = {
    "vkCmdCopyBuffer", "vkCmdCopyBufferToImage", "vkCmdUpdateBuffer"};

/// The most uploads one import makes (a command buffer submitted many times counts each time).
inline constexpr uint64_t kMaxImportedUploads = uint64_t{1} << 22;
/// One frame of the synthesized timeline: 60 Hz.
inline constexpr Duration kImportFramePeriod{16'666'667};

/// What the import saw and made. "capture" counts are every such command in the capture (as
/// recorded); "imported" counts are uploads (one per region and submission).
struct ImportStats {
  std::array<uint64_t, 3> commands{};  ///< commands recorded, by CopyCommand
  std::array<uint64_t, 3> regions{};   ///< their regions (vkCmdUpdateBuffer: 1 each)
  std::array<uint64_t, 3> bytes{};     ///< their bytes (image regions of a known format)
  std::array<uint64_t, 3> imported_uploads{};
  std::array<uint64_t, 3> imported_bytes{};
  uint64_t host_writes = 0;  ///< fill-memory commands in the capture (with --gfxr-binary)
  uint64_t host_write_bytes = 0;
  uint64_t imported_host_writes = 0;
  uint64_t imported_host_write_bytes = 0;
  uint64_t lines = 0;
  uint64_t calls = 0;
  uint64_t submissions = 0;  ///< submit infos (one VkSubmitInfo(2) each) with command buffers
  uint64_t presents = 0;
  uint64_t frames = 0;
  /// The most bytes of host-visible memory backing copy sources alive at once.
  uint64_t app_staging_peak_bytes = 0;
  /// Submissions whose completion the application learned, and those it never learned.
  uint64_t completions_learned = 0;
  uint64_t completions_unknown = 0;
  /// Frames from a submission to the frame its completion was learned in: p50, p99, max.
  std::array<uint64_t, 3> lag_frames{};
  /// Reason -> count of what was not imported (docs/sim.md lists the reasons).
  std::map<std::string, uint64_t> skipped;
};

/// An imported capture: the upload stream as a workload (Upload::kind indexes
/// "buffer_copy", "image_copy", "update", "host_write"), and the counts.
struct GfxrImport {
  Workload workload;
  ImportStats stats;
};

/// Imports `jsonl` (gfxrecon-convert's output) and, when `binary` is not empty, the capture's
/// fill-memory commands. Errors name the file and line (or block) and what is wrong.
[[nodiscard]] Expected<GfxrImport, std::string> import_gfxr(const std::string& jsonl,
                                                            const std::string& binary);

/// The same from an open stream; `name` is used in messages; `fills` may be null.
[[nodiscard]] Expected<GfxrImport, std::string> import_gfxr(std::istream& jsonl,
                                                            std::string_view name,
                                                            FillMemoryReader* fills);

/// The counts as --import-stats writes them (docs/sim.md gives every key).
[[nodiscard]] nlohmann::ordered_json import_stats_json(const ImportStats& stats);

/// The workload as a trace CSV (time_us,size,alignment,kind,frame,granularity), which --replay
/// reads back.
[[nodiscard]] std::string trace_csv(const Workload& workload);

}  // namespace staging::sim
