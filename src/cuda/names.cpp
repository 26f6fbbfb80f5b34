// Names of the cuda layer's enums, for logs, tables and test output.
#include "staging/cuda/uploader.hpp"

namespace staging::cuda {

std::string_view to_string(UploadErrorKind kind) noexcept {
  switch (kind) {
    case UploadErrorKind::InvalidArgument:
      return "InvalidArgument";
    case UploadErrorKind::WouldBlock:
      return "WouldBlock";
    case UploadErrorKind::Timeout:
      return "Timeout";
    case UploadErrorKind::TooLarge:
      return "TooLarge";
    case UploadErrorKind::Cuda:
      return "Cuda";
    case UploadErrorKind::Failed:
      return "Failed";
  }
  return "?";
}

std::string_view to_string(Uploader::CreateError error) noexcept {
  switch (error) {
    case Uploader::CreateError::InvalidConfig:
      return "InvalidConfig";
    case Uploader::CreateError::NoDevice:
      return "NoDevice";
    case Uploader::CreateError::PinnedAllocationFailed:
      return "PinnedAllocationFailed";
    case Uploader::CreateError::EventCreationFailed:
      return "EventCreationFailed";
    case Uploader::CreateError::ThreadStartFailed:
      return "ThreadStartFailed";
  }
  return "?";
}

}  // namespace staging::cuda
