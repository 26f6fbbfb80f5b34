// Test access to an Uploader's internals: its planner (to force a plan's path). Not installed.
#pragma once

#include "staging/cuda/uploader.hpp"
#include "upload_planner.hpp"

namespace staging::cuda::detail {

/// See the file comment.
struct UploaderTestAccess {
  /// The Uploader's planner (lives as long as the Uploader).
  static UploadPlanner& planner(Uploader& uploader);
  /// Forces the plans of `uploader`'s next uploads (nullopt: the planner's own decision).
  static void force(Uploader& uploader, std::optional<uint64_t> direct_bytes,
                    std::optional<uint64_t> piece_bytes,
                    std::optional<FillMethod> method = std::nullopt,
                    std::optional<bool> wake = std::nullopt) {
    PlanOverride o;
    o.direct_bytes = direct_bytes;
    o.piece_bytes = piece_bytes;
    o.method = method;
    o.wake = wake;
    planner(uploader).set_override(o);
  }
};

}  // namespace staging::cuda::detail
