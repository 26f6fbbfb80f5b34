// The state of a webgpu::StagingFrame, and its copy list's element (defined in the library's
// sources: only the frame's implementation reads it).
#pragma once

#include <cstdint>

namespace staging::webgpu {

/// Where a frame is in its life.
enum class FrameState : uint8_t { Recording, Finished, Submitted, Closed };

/// One copy a frame records at finish() (src/webgpu/frame_copy.hpp).
struct FrameCopy;

}  // namespace staging::webgpu
