// The fault sweep (see fault_sweep.hpp): the script, the checks of each run, the sweep itself.
#include "fault_sweep.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "staging/cuda/multi_uploader.hpp"
#include "test_bytes.hpp"

namespace staging::cuda::testing {
namespace {

using namespace std::chrono_literals;

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
         kind == Call::HostFree || kind == Call::Timing;
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
// The source stays alive until the run ends: a failed upload has returned, and must not read it
// any more, but a device the sweep only declared lost (a real GPU) may still run queued copies.
struct Landed {
  std::vector<std::byte> src;
  const std::byte* dst = nullptr;
  bool landed = true;       // the upload succeeded: its bytes are checked...
  TimelineValue point = 0;  // ...once this point completed (a lost device may never run it)
};

// Runs the script against one Uploader over `api`; records errors that carry `injected`.
void script(Uploader& u, SweepDevice& device, cudaStream_t s1, cudaStream_t s2,
            cudaError_t injected, Outcome& out, std::vector<Landed>& landed, uint64_t seed) {
  const auto note = [&](const UploadFailure& e) {
    if (e.cuda == injected) out.reported = true;
  };
  // `dst`: a destination allocated beforehand (null: allocated here). On a real device alloc()
  // synchronises the device, which must not happen while a gate holds a stream.
  const auto upload = [&](uint64_t bytes, cudaStream_t s, const UploadOptions& o,
                          std::byte* dst = nullptr) {
    Landed l{random_bytes(bytes, seed++), dst != nullptr ? dst : device.alloc(bytes)};
    auto p = u.upload(const_cast<std::byte*>(l.dst), l.src.data(), bytes, s, o);
    l.landed = p.has_value();
    l.point = p.value_or(0);
    // A failed upload no longer reads its source: overwrite it (ThreadSanitizer sees a copy that
    // still reads it; on the fake device nothing may, the device being halted when lost).
    if (!p) std::fill(l.src.begin(), l.src.end(), std::byte{0});
    landed.push_back(std::move(l));  // kept to the end of the run either way
    if (p) return *p;
    note(p.error());
    return TimelineValue{0};
  };
  upload(1000, s1, {});
  upload(700 * KiB, s1, {});  // wraps the ring
  if (auto span = u.reserve(32 * KiB)) {
    Landed l{random_bytes(32 * KiB, seed++), device.alloc(32 * KiB)};
    std::memcpy(span->data(), l.src.data(), l.src.size());
    auto p = u.commit(std::move(*span), const_cast<std::byte*>(l.dst), s2);
    l.landed = p.has_value();
    l.point = p.value_or(0);
    landed.push_back(std::move(l));
    if (!p) note(p.error());
  } else {
    note(span.error());
  }
  // An upload held back behind a gate, so that stream_wait has something to wait for.
  const cudaStream_t held = device.stream();
  std::byte* const gated_dst = device.alloc(2000);  // before the gate (see upload)
  const int gate = device.close_gate(held);
  const TimelineValue gated = upload(2000, held, {}, gated_dst);
  if (auto w = u.stream_wait(s2, gated); !w) note(w.error());
  device.open_gate(gate);
  UploadOptions wait;
  wait.policy = ExhaustionPolicy::Wait;
  const TimelineValue last = upload(100 * KiB, s2, wait);
  (void)u.wait(last, 2s);  // may fail: the sweep checks only that nothing breaks
  (void)u.stats();
}

// After the script: one more upload either lands byte-exactly or is refused as Failed. An upload
// that meets the fault itself (it fired late in the run) reports it, and the next one must then
// land: a transient fault is gone.
void recovery(Uploader& u, SweepDevice& device, cudaStream_t s, cudaError_t injected, Outcome& out,
              std::vector<Landed>& landed) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    Landed l{random_bytes(50 * KiB, 999 + static_cast<uint64_t>(attempt)), device.alloc(50 * KiB)};
    auto p = u.upload(const_cast<std::byte*>(l.dst), l.src.data(), l.src.size(), s);
    l.landed = p.has_value();
    l.point = p.value_or(0);
    landed.push_back(std::move(l));
    if (p) {
      if (!u.wait(*p, 2s) && !u.failed()) out.broken("the recovery upload never completed");
      break;
    }
    if (p.error().cuda == injected) {
      out.reported = true;
      if (u.failed()) break;       // the fault failed it (and said so)
      if (attempt == 0) continue;  // a transient fault fired here: once more
    }
    if (p.error().kind != UploadError::Failed || !u.failed()) {
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

// Every upload that succeeded has its bytes on the device — on a lost device, those whose point
// was seen completed (`completed`) before the loss; the others may never have run.
void check_landed(SweepDevice& device, const std::vector<Landed>& landed, Outcome& out,
                  TimelineValue completed) {
  device.synchronize();
  for (const Landed& l : landed) {
    if (!l.landed || l.point > completed) continue;
    const std::vector<std::byte> back = device.read(l.dst, l.src.size());
    const std::string diff = first_difference(back.data(), l.src.data(), l.src.size());
    if (!diff.empty()) out.broken("an upload that succeeded has wrong bytes: " + diff);
  }
  if (const std::string v = device.violation(); !v.empty()) out.broken("device violation: " + v);
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
Outcome run_single(const SweepDeviceFactory& make, const Fault& fault,
                   std::vector<uint64_t>* counts, bool& fired) {
  Outcome out;
  const std::unique_ptr<SweepDevice> device = make();
  const cudaStream_t s1 = device->stream();
  const cudaStream_t s2 = device->stream();
  FaultyDevice api(device->api(), fault);
  api.on_lost([&] { device->lose(); });
  std::vector<Landed> landed;
  TimelineValue completed = ~TimelineValue{0};  // every point, unless the device is lost
  {
    auto created = detail::create_uploader(sweep_config(), api);
    if (!created) {
      out.reported = true;  // create() named its failure
      // Once the fault is gone (a new attempt), create() succeeds.
      if (!fault.lost && !detail::create_uploader(sweep_config(), device->api())) {
        out.broken("create() failed again without a fault");
      }
    } else {
      Uploader& u = *created;
      script(u, *device, s1, s2, fault.error, out, landed, 7);
      recovery(u, *device, s1, fault.error, out, landed);
      out.at_destruction = !api.fired();
      if (api.lost()) completed = u.completed();
    }
  }
  check_landed(*device, landed, out, completed);
  check_books(api, out.failed, out);
  fired = api.fired();
  if (counts != nullptr) {
    counts->clear();
    for (std::size_t k = 0; k <= kCallKinds; ++k)
      counts->push_back(api.calls(static_cast<Call>(k)));
  }
  return out;
}

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

// Two devices under one MultiUploader, the fault on the second: the first keeps uploading
// byte-exactly whatever happens to the second.
Outcome run_multi(const SweepDeviceFactory& make, const Fault& fault, std::vector<uint64_t>* counts,
                  bool& fired) {
  Outcome out;
  const std::unique_ptr<SweepDevice> d0 = make(), d1 = make();
  const cudaStream_t a0 = d0->stream(), b0 = d0->stream();
  const cudaStream_t a1 = d1->stream(), b1 = d1->stream();
  FaultyDevice f0(d0->api(), Fault{});
  FaultyDevice f1(d1->api(), fault);
  f1.on_lost([&] { d1->lose(); });
  std::vector<Landed> landed0, landed1;
  bool failed1 = false;
  TimelineValue completed1 = ~TimelineValue{0};  // every point, unless device 1 is lost
  {
    MultiUploaderConfig mc;
    mc.uploader = sweep_config();
    mc.fill_threads = 2;
    DeviceApi* apis[] = {&f0, &f1};
    auto multi = detail::create_multi_uploader(mc, apis);
    if (!multi) {
      out.reported = true;
    } else {
      Outcome healthy;
      script(multi->uploader(0), *d0, a0, b0, cudaSuccess, healthy, landed0, 11);
      script(multi->uploader(1), *d1, a1, b1, fault.error, out, landed1, 21);
      recovery(multi->uploader(0), *d0, a0, cudaSuccess, healthy, landed0);
      recovery(multi->uploader(1), *d1, a1, fault.error, out, landed1);
      if (healthy.failed || !healthy.problem.empty()) {
        out.broken("device 0 was hurt by device 1's fault: " + healthy.problem);
      }
      failed1 = out.failed;
      out.at_destruction = !f1.fired();
      if (f1.lost()) completed1 = multi->uploader(1).completed();
    }
  }
  check_landed(*d0, landed0, out, ~TimelineValue{0});
  check_landed(*d1, landed1, out, completed1);
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

// Counts the calls of a clean run, checks it, then sweeps every fault point with `run`.
template <class Run>
SweepTotals counted_sweep(Run&& run, const char* name) {
  std::vector<uint64_t> counts;
  bool fired = false;
  const Outcome clean = run(Fault{}, &counts, fired);
  EXPECT_EQ(clean.problem, "") << name << ": the run without a fault";
  EXPECT_FALSE(clean.failed) << name << ": the run without a fault";
  for (Call k :
       {Call::HostAlloc, Call::EventCreate, Call::EventRecord, Call::Copy, Call::StreamIsCapturing,
        Call::AddressRange, Call::StreamWaitEvent, Call::Timing}) {
    EXPECT_GT(counts[static_cast<std::size_t>(k)], 0u) << call_name(k) << " never called";
  }
  const SweepTotals t = sweep(
      counts,
      [&](const Fault& f, bool& hit) {
        // Call counts of queries vary with timing: a few tries for the ordinal to be reached.
        Outcome o;
        for (int attempt = 0; attempt < 3 && !hit; ++attempt)
          o = run(f, nullptr, hit);
        return o;
      },
      name);
  report(name, t);
  return t;
}

}  // namespace

SweepTotals sweep_one_uploader(const SweepDeviceFactory& make, const char* name) {
  return counted_sweep([&](const Fault& f, std::vector<uint64_t>* counts,
                           bool& fired) { return run_single(make, f, counts, fired); },
                       name);
}

SweepTotals sweep_one_device_of_two(const SweepDeviceFactory& make, const char* name) {
  return counted_sweep([&](const Fault& f, std::vector<uint64_t>* counts,
                           bool& fired) { return run_multi(make, f, counts, fired); },
                       name);
}

}  // namespace staging::cuda::testing
