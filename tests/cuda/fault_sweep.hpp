// The fault sweep over any device: a scripted sequence of uploads runs once to count its
// DeviceApi calls, then once per call with that call failing (FaultyDevice) — every kind, every
// ordinal, transiently (that one call fails) and as a lost device (that call and everything
// after it fail). Each run checks:
//   - the error reaches the caller as a value (an error returned by create() or an Uploader call,
//     or failed()/error() naming it), except for the calls whose failure the Uploader absorbs
//     by contract (a stream query taken as "busy", a NUMA query taken as "unknown", the
//     destroying calls at destruction);
//   - every upload that succeeded put exactly its bytes on the device (no byte handed out twice);
//   - afterwards the Uploader either uploads again byte-exactly (recovered) or answers Failed
//     (it reports the device lost);
//   - after destruction every pinned allocation and event made was given back — except, when the
//     Uploader has failed, the ring it keeps pinned on purpose (a copy may still read it).
// SweepDevice is what the script needs of a device besides its DeviceApi: the fake device
// (fault_sweep_test.cpp) and a real GPU (fault_sweep_gpu_test.cpp) provide it.
//
//   script:  create | upload 1000 B | upload 700 KiB (ring 256 KiB: wraps) | reserve+commit 32 KiB
//            on a 2nd stream | upload 2000 B on a gated 3rd stream, stream_wait on it, open the
//            gate | upload 100 KiB (Wait) | wait | recovery upload
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "faulty_device.hpp"
#include "staging/cuda/uploader.hpp"

namespace staging::cuda::testing {

/// A device for one run of the sweep. Everything it made is freed by its destructor, after
/// every stream has finished.
class SweepDevice {
 public:
  virtual ~SweepDevice() = default;
  /// The DeviceApi the Uploader is given (wrapped in a FaultyDevice by the sweep).
  virtual DeviceApi& api() = 0;
  /// `bytes` of zeroed device memory, alive as long as the device.
  virtual std::byte* alloc(std::size_t bytes) = 0;
  /// A new stream.
  virtual cudaStream_t stream() = 0;
  /// Holds `stream` until open_gate(id): work queued after it waits.
  virtual int close_gate(cudaStream_t stream) = 0;
  virtual void open_gate(int id) = 0;
  /// Waits until every stream is idle.
  virtual void synchronize() = 0;
  /// `bytes` of device memory at `p`, read back.
  virtual std::vector<std::byte> read(const std::byte* p, std::size_t bytes) = 0;
  /// A contract violation the device saw ("" when none).
  virtual std::string violation() = 0;
  /// The sweep has declared the device lost: a device that can stop running work does (a lost
  /// one runs nothing more); one that cannot keeps going (the sources stay alive until the run
  /// ends).
  virtual void lose() {}
};

/// Makes a fresh device for each run.
using SweepDeviceFactory = std::function<std::unique_ptr<SweepDevice>()>;

/// What one sweep covered.
struct SweepTotals {
  int fired = 0;           ///< fault points that fired
  int not_fired = 0;       ///< ordinals the runs never reached (timing-dependent call counts)
  int recovered = 0;       ///< runs that ended with a usable Uploader
  int lost = 0;            ///< runs that ended with the Uploader failed
  int at_destruction = 0;  ///< of the fired ones, faults met only by the destructor's calls
};

/// Sweeps one Uploader (GoogleTest expectations per run); prints and records the totals as
/// `<name>_fault_points`.
SweepTotals sweep_one_uploader(const SweepDeviceFactory& make, const char* name);
/// Sweeps the second device of a two-device MultiUploader (the first must stay unharmed).
SweepTotals sweep_one_device_of_two(const SweepDeviceFactory& make, const char* name);

}  // namespace staging::cuda::testing
