// Test access to an Uploader's internals: its planner (to force a plan's path). Not installed.
#pragma once

#include "staging/cuda/uploader.hpp"
#include "upload_planner.hpp"

namespace staging::cuda::detail {

/// See the file comment.
struct UploaderTestAccess {
  /// The Uploader's planner (lives as long as the Uploader).
  static UploadPlanner& planner(Uploader& uploader);
};

}  // namespace staging::cuda::detail
