// Every DeviceApi call an Uploader makes, failed in turn: a scripted sequence of uploads runs once
// to count its calls, then once per call with that call failing (FaultyDevice), for every kind
// and every N — transiently (that one call fails) and as a lost device (that call and everything
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
// The count of fault points that fired is printed and recorded as a test property.
//
//   script:  create | upload 1000 B | upload 700 KiB (ring 256 KiB: wraps) | reserve+commit 32 KiB
//            on a 2nd stream | upload 2000 B on a gated 3rd stream, stream_wait on it, open the
//            gate | upload 100 KiB (Wait) | wait | recovery upload
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "fake_device.hpp"
#include "faulty_device.hpp"
#include "staging/cuda/multi_uploader.hpp"
#include "staging/cuda/uploader.hpp"
#include "test_bytes.hpp"

namespace staging::cuda {
namespace {

using namespace std::chrono_literals;
using testing::Call;
using testing::call_name;
using testing::FakeDevice;
using testing::Fault;
using testing::FaultyDevice;
using testing::first_difference;
using testing::kCallKinds;
using testing::random_bytes;

constexpr uint64_t KiB = 1024;

UploaderConfig sweep_config() {
  UploaderConfig c;
  c.ring_bytes = 256 * KiB;
  c.chunk_bytes = 64 * KiB;
  c.min_piece_bytes = 16 * KiB;
  c.inline_fill_bytes = 4 * KiB;
  c.fill_threads = 2;
  c.events = 8;
  // Generous (loaded hosts, sanitizers): a fault that stops the timeline ends every wait at once,
  // so only a run that really stalls would take this long.
  c.wait_timeout = 5s;
  c.drain_timeout = 5s;
  c.check_invariants = true;
  return c;
}

// A call whose failure the Uploader absorbs by contract: nothing to report to a caller.
bool absorbed(Call kind) {
  return kind == Call::StreamQuery || kind == Call::HostNumaNode || kind == Call::EventDestroy ||
         kind == Call::HostFree;
}

// What one run saw.
struct Outcome {
  bool reported = false;        // the injected error reached a caller as a value
  bool failed = false;          // the Uploader(s) ended failed
  bool at_destruction = false;  // the fault fired only while the Uploader was being destroyed
  std::string problem;          // the first broken expectation; empty when all held
  void broken(const std::string& what) {
    if (problem.empty()) problem = what;
  }
};

// An upload that succeeded, to be checked once the device is idle.
struct Landed {
  std::vector<std::byte> src;
  const std::byte* dst = nullptr;
};

// Runs the script against one Uploader over `api`; records errors that carry `injected`.
void script(Uploader& u, FakeDevice& device, cudaStream_t s1, cudaStream_t s2, cudaError_t injected,
            Outcome& out, std::vector<Landed>& landed, uint64_t seed) {
  const auto note = [&](const UploadError& e) {
    if (e.cuda == injected) out.reported = true;
  };
  const auto upload = [&](uint64_t bytes, cudaStream_t s, const UploadOptions& o) {
    Landed l{random_bytes(bytes, seed++), device.device_alloc(bytes)};
    auto p = u.upload(const_cast<std::byte*>(l.dst), l.src.data(), bytes, s, o);
    if (p) {
      landed.push_back(std::move(l));
      return *p;
    }
    note(p.error());
    return TimelineValue{0};
  };
  upload(1000, s1, {});
  upload(700 * KiB, s1, {});  // wraps the ring
  if (auto span = u.reserve(32 * KiB)) {
    Landed l{random_bytes(32 * KiB, seed++), device.device_alloc(32 * KiB)};
    std::memcpy(span->data(), l.src.data(), l.src.size());
    auto p = u.commit(std::move(*span), const_cast<std::byte*>(l.dst), s2);
    if (p) {
      landed.push_back(std::move(l));
    } else {
      note(p.error());
    }
  } else {
    note(span.error());
  }
  // An upload held back behind a gate, so that stream_wait has something to wait for.
  const cudaStream_t held = device.create_stream();
  const int gate = device.close_gate(held);
  const TimelineValue gated = upload(2000, held, {});
  if (auto w = u.stream_wait(s2, gated); !w) note(w.error());
  device.open_gate(gate);
  UploadOptions wait;
  wait.policy = ExhaustionPolicy::Wait;
  const TimelineValue last = upload(100 * KiB, s2, wait);
  u.wait(last, 2s);
  (void)u.stats();
}

// After the script: one more upload either lands byte-exactly or is refused as Failed. An upload
// that meets the fault itself (it fired late in the run) reports it, and the next one must then
// land: a transient fault is gone.
void recovery(Uploader& u, FakeDevice& device, cudaStream_t s, cudaError_t injected, Outcome& out,
              std::vector<Landed>& landed) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    Landed l{random_bytes(50 * KiB, 999 + static_cast<uint64_t>(attempt)),
             device.device_alloc(50 * KiB)};
    auto p = u.upload(const_cast<std::byte*>(l.dst), l.src.data(), l.src.size(), s);
    if (p) {
      landed.push_back(std::move(l));
      if (!u.wait(*p, 2s) && !u.failed()) out.broken("the recovery upload never completed");
      break;
    }
    if (p.error().cuda == injected) {
      out.reported = true;
      if (u.failed()) break;       // the fault failed it (and said so)
      if (attempt == 0) continue;  // a transient fault fired here: once more
    }
    if (p.error().kind != UploadErrorKind::Failed || !u.failed()) {
      out.broken("after the fault an upload failed with " + std::string(to_string(p.error().kind)) +
                 " on an Uploader that has not failed");
    }
    break;
  }
  if (u.failed()) {
    out.failed = true;
    if (u.error() == injected) out.reported = true;
  }
}

void check_landed(FakeDevice& device, const std::vector<Landed>& landed, Outcome& out) {
  device.synchronize_all();
  for (const Landed& l : landed) {
    const std::string diff = first_difference(l.dst, l.src.data(), l.src.size());
    if (!diff.empty()) out.broken("an upload that succeeded has wrong bytes: " + diff);
  }
  if (!device.violations().empty()) out.broken("device violation: " + device.violations().front());
}

// Leftovers after destruction: none, or (a failed Uploader) exactly its ring and no event.
void check_books(const FaultyDevice& api, bool failed, Outcome& out) {
  const int64_t allowed = failed ? 1 : 0;
  if (api.live_events() != 0) {
    out.broken(std::to_string(api.live_events()) + " events not destroyed");
  }
  if (api.live_allocations() < 0 || api.live_allocations() > allowed) {
    out.broken(std::to_string(api.live_allocations()) +
               " pinned allocations not freed (failed: " + (failed ? "yes" : "no") + ")");
  }
}

// One single-device run with `fault`.
Outcome run_single(const Fault& fault, std::vector<uint64_t>* counts, bool& fired) {
  Outcome out;
  FakeDevice device;
  const cudaStream_t s1 = device.create_stream();
  const cudaStream_t s2 = device.create_stream();
  FaultyDevice api(device, fault);
  std::vector<Landed> landed;
  {
    auto created = Uploader::create(sweep_config(), &api);
    if (!created) {
      out.reported = true;  // create() named its failure
      // Once the fault is gone (a new attempt), create() succeeds.
      if (!fault.lost && !Uploader::create(sweep_config(), &device)) {
        out.broken("create() failed again without a fault");
      }
    } else {
      Uploader& u = *created;
      script(u, device, s1, s2, fault.error, out, landed, 7);
      recovery(u, device, s1, fault.error, out, landed);
      out.at_destruction = !api.fired();
    }
  }
  check_landed(device, landed, out);
  check_books(api, out.failed, out);
  fired = api.fired();
  if (counts != nullptr) {
    counts->clear();
    for (std::size_t k = 0; k <= kCallKinds; ++k)
      counts->push_back(api.calls(static_cast<Call>(k)));
  }
  return out;
}

struct SweepTotals {
  int fired = 0;           // fault points that fired
  int not_fired = 0;       // ordinals the run never reached (timing-dependent call counts)
  int recovered = 0;       // runs that ended with a usable Uploader
  int lost = 0;            // runs that ended with the Uploader failed
  int at_destruction = 0;  // of the fired ones, faults met only by the destructor's calls
};

// Sweeps `run` over every ordinal of every kind (transient) and of any call (lost device).
template <class Run>
SweepTotals sweep(const std::vector<uint64_t>& counts, Run&& run, const char* what) {
  SweepTotals t;
  std::vector<Fault> faults;
  for (std::size_t k = 0; k < kCallKinds; ++k) {
    for (uint64_t n = 1; n <= counts[k]; ++n)
      faults.push_back(Fault{static_cast<Call>(k), n, cudaErrorMemoryAllocation, false});
  }
  for (uint64_t n = 1; n <= counts[kCallKinds]; ++n)
    faults.push_back(Fault{Call::Any, n, cudaErrorDevicesUnavailable, true});
  // Once an ordinal is out of reach (the runs make fewer calls of that kind than the counting
  // run did, e.g. fewer event queries on a quieter host), so are the ones after it.
  std::array<uint64_t, kCallKinds + 1> out_of_reach{};
  for (const Fault& f : faults) {
    uint64_t& limit = out_of_reach[static_cast<std::size_t>(f.kind)];
    if (limit != 0 && f.nth > limit) {
      ++t.not_fired;
      continue;
    }
    bool fired = false;
    const Outcome o = run(f, fired);
    if (!fired) {
      ++t.not_fired;
      limit = f.nth;
      continue;
    }
    ++t.fired;
    (o.failed ? t.lost : t.recovered) += 1;
    if (o.at_destruction) ++t.at_destruction;
    const std::string where = std::string(what) + ": " + std::string(call_name(f.kind)) + " #" +
                              std::to_string(f.nth) + (f.lost ? " (device lost)" : "");
    EXPECT_EQ(o.problem, "") << where;
    if (!o.at_destruction && (!absorbed(f.kind) || f.lost)) {
      EXPECT_TRUE(o.reported) << where << ": error not reported";
    }
  }
  return t;
}

void report(const char* name, const SweepTotals& t) {
  std::printf(
      "fault sweep (%s): %d fault points covered (%d recovered, %d reported the Uploader "
      "failed; %d met only by the destructor), %d ordinals not reached in that run\n",
      name, t.fired, t.recovered, t.lost, t.at_destruction, t.not_fired);
  ::testing::Test::RecordProperty(std::string(name) + "_fault_points", t.fired);
}

TEST(FaultSweep, EveryCallOfOneUploaderFailedInTurn) {
  std::vector<uint64_t> counts;
  bool fired = false;
  const Outcome clean = run_single(Fault{}, &counts, fired);
  ASSERT_EQ(clean.problem, "");
  ASSERT_FALSE(clean.failed);
  for (Call k : {Call::HostAlloc, Call::EventCreate, Call::EventRecord, Call::Copy,
                 Call::StreamIsCapturing, Call::AddressRange, Call::StreamWaitEvent}) {
    ASSERT_GT(counts[static_cast<std::size_t>(k)], 0u) << call_name(k) << " never called";
  }
  const SweepTotals t = sweep(
      counts,
      [](const Fault& f, bool& hit) {
        // Call counts of queries vary with timing: a few tries for the ordinal to be reached.
        Outcome o;
        for (int attempt = 0; attempt < 3 && !hit; ++attempt)
          o = run_single(f, nullptr, hit);
        return o;
      },
      "single device");
  report("single_device", t);
  EXPECT_GT(t.fired, 100);
}

// Two devices under one MultiUploader, the fault on the second: the first keeps uploading
// byte-exactly whatever happens to the second.
Outcome run_multi(const Fault& fault, std::vector<uint64_t>* counts, bool& fired) {
  Outcome out;
  FakeDevice d0, d1;
  const cudaStream_t a0 = d0.create_stream(), b0 = d0.create_stream();
  const cudaStream_t a1 = d1.create_stream(), b1 = d1.create_stream();
  FaultyDevice f0(d0, Fault{});
  FaultyDevice f1(d1, fault);
  std::vector<Landed> landed0, landed1;
  bool failed1 = false;
  {
    MultiUploaderConfig mc;
    mc.uploader = sweep_config();
    mc.fill_threads = 2;
    DeviceApi* apis[] = {&f0, &f1};
    auto multi = MultiUploader::create(mc, apis);
    if (!multi) {
      out.reported = true;
    } else {
      Outcome healthy;
      script(multi->uploader(0), d0, a0, b0, cudaSuccess, healthy, landed0, 11);
      script(multi->uploader(1), d1, a1, b1, fault.error, out, landed1, 21);
      recovery(multi->uploader(0), d0, a0, cudaSuccess, healthy, landed0);
      recovery(multi->uploader(1), d1, a1, fault.error, out, landed1);
      if (healthy.failed || !healthy.problem.empty()) {
        out.broken("device 0 was hurt by device 1's fault: " + healthy.problem);
      }
      failed1 = out.failed;
      out.at_destruction = !f1.fired();
    }
  }
  check_landed(d0, landed0, out);
  check_landed(d1, landed1, out);
  check_books(f0, false, out);
  check_books(f1, failed1, out);
  fired = f1.fired();
  if (counts != nullptr) {
    counts->clear();
    for (std::size_t k = 0; k <= kCallKinds; ++k)
      counts->push_back(f1.calls(static_cast<Call>(k)));
  }
  return out;
}

TEST(FaultSweep, EveryCallOfOneDeviceOfTwoFailedInTurn) {
  std::vector<uint64_t> counts;
  bool fired = false;
  const Outcome clean = run_multi(Fault{}, &counts, fired);
  ASSERT_EQ(clean.problem, "");
  ASSERT_FALSE(clean.failed);
  const SweepTotals t = sweep(
      counts,
      [](const Fault& f, bool& hit) {
        Outcome o;
        for (int attempt = 0; attempt < 3 && !hit; ++attempt)
          o = run_multi(f, nullptr, hit);
        return o;
      },
      "two devices");
  report("two_devices", t);
  EXPECT_GT(t.fired, 100);
}

}  // namespace
}  // namespace staging::cuda
