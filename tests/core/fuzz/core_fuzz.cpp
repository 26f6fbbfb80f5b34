// libFuzzer target over the core beyond the byte ring's operation sequences (byte_ring_fuzz.cpp):
//   part 0  the alignment and limits arithmetic (align_up, checked_add, checked_mul,
//           next_power_of_two, gcd, lcm, slot_capacity, texture_offset_alignment), each result
//           checked against unsigned __int128 arithmetic;
//   part 1  the slot ring driven by random frames (begin, place, finish with a token or at a
//           timeline value, signal, abandon, fail, retire, dropped tokens and leases, allocation
//           failures), every placed byte stamped and verified when the frame's slot is given
//           back, every slot's state checked against a model;
//   part 2  the byte ring fed raw 64-bit inputs: capacities, caps, grow steps, fallback caps and
//           minimum chunks near 2^64, sizes, alignments and granularities of any value, through
//           reserve() and reserve_waiting(), Split's "reserve the rest" loop run on; every
//           answer checked (sizes, alignment, bounds, the cap) and an InvariantChecker fed every
//           operation;
//   part 3  the texture copy layout (texture_layout, mip_extent, row_band, rows_that_fit) on any
//           extent, block and limits against 128-bit arithmetic, and repack_rows() of stamped
//           bytes, whole and by bands, for layouts that fit in 64 KiB: texel bytes in place,
//           padding never written.
// The first input byte picks the part; the rest is read as little-endian 64-bit words (zeros past
// the end). A broken check aborts (a crash for libFuzzer); so does anything ASan or UBSan finds.
// Built only with clang (-fsanitize=fuzzer,address,undefined): tests/core/fuzz/CMakeLists.txt.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

#include "staging/core/byte_ring.hpp"
#include "staging/detail/core/align.hpp"
#include "staging/detail/core/byte_ring_deps.hpp"
#include "staging/detail/core/copy_layout.hpp"
#include "staging/detail/core/invariant_checker.hpp"
#include "staging/detail/core/limits.hpp"
#include "staging/detail/core/staging_ring.hpp"
#include "staging/testing/fake_queue.hpp"
#include "staging/testing/fake_slot_allocator.hpp"

namespace {

using u128 = unsigned __int128;
using namespace staging;

[[noreturn]] void fail(const char* what, uint64_t a = 0, uint64_t b = 0, uint64_t c = 0) {
  std::fprintf(stderr, "core fuzz: %s (%llu, %llu, %llu)\n", what,
               static_cast<unsigned long long>(a), static_cast<unsigned long long>(b),
               static_cast<unsigned long long>(c));
  std::abort();
}
#define CHECK(cond, ...)                                 \
  do {                                                   \
    if (!(cond)) fail(#cond __VA_OPT__(, ) __VA_ARGS__); \
  } while (false)

// The input as a stream of bytes and 64-bit words, zeros past its end.
class Input {
 public:
  Input(const uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  [[nodiscard]] bool more() const noexcept { return pos_ < size_; }
  uint8_t u8() noexcept { return pos_ < size_ ? data_[pos_++] : 0; }
  uint64_t u64() noexcept {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
      v |= uint64_t{u8()} << (8 * i);
    return v;
  }
  // A value of interest near a boundary or anywhere: small, a power of two and its neighbours,
  // near 2^64, or raw.
  uint64_t value() noexcept {
    const uint8_t how = u8();
    const uint64_t raw = u64();
    switch (how % 6) {
      case 0:
        return raw % 256;
      case 1: {
        const uint64_t p = uint64_t{1} << (raw % 64);
        return p + static_cast<uint64_t>(static_cast<int64_t>((raw >> 8) % 3) - 1);
      }
      case 2:
        return UINT64_MAX - raw % 256;
      case 3:
        return (uint64_t{1} << 63) + raw % 512 - 256;
      case 4:
        return raw % 65536;
      default:
        return raw;
    }
  }

 private:
  const uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

// --- part 0: arithmetic -------------------------------------------------------------------------

u128 gcd128(u128 a, u128 b) {
  while (b != 0) {
    const u128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

void check_arithmetic(Input& in) {
  constexpr u128 kMax = UINT64_MAX;
  for (int round = 0; round < 64 && in.more(); ++round) {
    const uint64_t a = in.value(), b = in.value(), c = in.value();
    // align_up: the least multiple of b (0 and 1 mean 1) >= a, or none above 2^64 - 1.
    const u128 step = b <= 1 ? 1 : b;
    const u128 aligned = (u128{a} + step - 1) / step * step;
    const std::optional<uint64_t> au = align_up(a, b);
    CHECK(aligned > kMax ? !au : (au && *au == aligned), a, b);
    // checked_add, checked_mul.
    const std::optional<uint64_t> sum = checked_add(a, b);
    CHECK(u128{a} + b > kMax ? !sum : (sum && *sum == u128{a} + b), a, b);
    const std::optional<uint64_t> product = checked_mul(a, b);
    CHECK(u128{a} * b > kMax ? !product : (product && *product == u128{a} * b), a, b);
    // is_power_of_two, next_power_of_two (none above 2^63).
    CHECK(is_power_of_two(a) == (a != 0 && (a & (a - 1)) == 0), a);
    u128 p = 1;
    while (p < a)
      p <<= 1;
    const std::optional<uint64_t> np = next_power_of_two(a);
    CHECK(p > (u128{1} << 63) ? !np : (np && *np == p), a);
    // gcd, lcm (0 means 1).
    CHECK(gcd(a, b) == gcd128(a, b), a, b);
    const u128 la = a == 0 ? 1 : a, lb = b == 0 ? 1 : b;
    const u128 l = la / gcd128(la, lb) * lb;
    const std::optional<uint64_t> lc = lcm(a, b);
    CHECK(l > kMax ? !lc : (lc && *lc == l), a, b);
    CopyLimits limits;
    limits.texture_copy_alignment = a;
    const std::optional<uint64_t> toa = texture_offset_alignment(limits, b);
    CHECK(toa == lc, a, b);
    // slot_capacity(needed, min, max) for a valid pair: min a power of two <= max.
    const uint64_t min = uint64_t{1} << (b % 64);
    const uint64_t max = std::max(min, c);
    u128 want = min;
    while (want < a)
      want <<= 1;
    const std::optional<uint64_t> cap = slot_capacity(a, min, max);
    CHECK(want > max ? !cap : (cap && *cap == want && *cap >= a), a, min, max);
    // validate(): the documented bounds, in their documented order.
    StagingRingConfig config{
        .slots = static_cast<std::size_t>(a % 1024), .min_slot_bytes = b, .max_slot_bytes = c};
    const auto valid = validate(config);
    std::optional<CreateError> expected;
    if (config.slots == 0) {
      expected = CreateError::NoSlots;
    } else if (config.slots > STAGING_SLOTS_LIMIT) {
      expected = CreateError::TooManySlots;
    } else if (b == 0 || (b & (b - 1)) != 0) {
      expected = CreateError::MinNotPowerOfTwo;
    } else if (c < b) {
      expected = CreateError::MaxBelowMin;
    } else if (c > SLOT_BYTES_LIMIT) {
      expected = CreateError::SlotTooLarge;
    }
    CHECK(expected ? (!valid && valid.error() == *expected) : valid.has_value(), a, b, c);
  }
}

// --- part 1: the slot ring with byte stamps ---------------------------------------------------

using testing::FakeBuffer;
using testing::FakeSlotAllocator;

uint8_t stamp_byte(uint64_t seed, uint64_t i) {
  uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull ^ (i + 1) * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  return static_cast<uint8_t>(x * 0x94D049BB133111EBull >> 56);
}

struct Stamp {
  uint64_t offset, size, seed;
};
struct Frame {  // a lease being recorded, or a finished frame waiting for its fence
  SlotLease lease;
  FenceToken token;                    // finished with a token ...
  std::optional<TimelineValue> value;  // ... or at a value the ring retires
  std::size_t slot = 0;
  uint64_t capacity = 0;
  uint64_t cursor = 0;
  std::vector<Stamp> stamps;
};

class SlotRingRun {
 public:
  explicit SlotRingRun(Input& in) : in_(in) {
    config_.slots = 1 + in.u8() % 6;
    config_.min_slot_bytes = uint64_t{1} << (in.u8() % 11);            // 1 B .. 1 KiB
    config_.max_slot_bytes = config_.min_slot_bytes << (in.u8() % 6);  // up to 32x
    config_.max_slot_bytes += in.u8() % 3 == 0 ? in.u8() : 0;          // not always a power of two
    allocator_.set_budget(in.u8() % 4 == 0 ? std::optional<uint64_t>(in.u8() * 64) : std::nullopt);
    auto made = StagingRing<FakeBuffer>::create(allocator_, config_);
    CHECK(made.has_value());
    ring_.emplace(std::move(made).value());
  }

  void run() {
    for (int step = 0; step < 512 && in_.more(); ++step) {
      switch (in_.u8() % 10) {
        case 0:
        case 1:
          begin();
          break;
        case 2:
        case 3:
          place();
          break;
        case 4:
          finish();
          break;
        case 5:
          fire(0);
          break;
        case 6:
          fire(1 + in_.u8() % 3);  // abandon, fail, or drop the token
          break;
        case 7:
          drop_lease();
          break;
        case 8:
          allocator_.fail_next(in_.u8() % 3, static_cast<AllocError>(in_.u8() % 4));
          break;
        default:
          by_value();
          break;
      }
      check_states();
    }
    for (const Frame& f : in_flight_)
      verify(f);
    ring_->retire(next_value_);
    for (Frame& f : in_flight_) {
      if (!f.value) CHECK(f.token.signal());
      CHECK(ring_->state(f.slot) == SlotState::Ready, f.slot);
    }
    in_flight_.clear();
  }

 private:
  void begin() {
    const uint64_t needed =
        in_.u8() % 4 == 0 ? in_.value() : in_.u64() % (config_.max_slot_bytes + 2);
    auto lease = ring_->begin(needed);
    if (!lease) {
      if (lease.error() == UploadError::TooLarge) {
        CHECK(!slot_capacity(needed, config_.min_slot_bytes, config_.max_slot_bytes), needed);
      } else if (lease.error() == UploadError::RingFull) {
        CHECK(recording_.size() + in_flight_.size() == config_.slots, needed);
      }
      return;
    }
    CHECK(lease->capacity() >= needed, lease->capacity(), needed);
    CHECK(lease->capacity() <= config_.max_slot_bytes, lease->capacity());
    CHECK(!busy(lease->slot()), lease->slot());
    CHECK(ring_->state(lease->slot()) == SlotState::Recording);
    CHECK(ring_->capacity(lease->slot()) == lease->capacity());
    Frame f;
    f.slot = lease->slot();
    f.capacity = lease->capacity();
    f.lease = std::move(lease).value();
    recording_.push_back(std::move(f));
  }

  void place() {
    if (recording_.empty()) return;
    Frame& f = recording_[in_.u8() % recording_.size()];
    const uint64_t size = in_.u8() % 4 == 0 ? in_.value() : in_.u8();
    const uint64_t alignment = in_.u8() % 4 == 0 ? in_.value() : uint64_t{1} << (in_.u8() % 9);
    const auto at = f.lease.place(size, alignment);
    const u128 start =
        alignment <= 1 ? f.cursor : (u128{f.cursor} + alignment - 1) / alignment * alignment;
    if (!at) {
      CHECK(size == 0 || start + size > f.capacity, size, alignment, f.cursor);
      CHECK(f.lease.cursor() == f.cursor);
      return;
    }
    CHECK(size != 0 && *at == start && start + size <= f.capacity, *at, size, alignment);
    f.cursor = *at + size;
    CHECK(f.lease.cursor() == f.cursor);
    const uint64_t seed = next_seed_++;
    std::byte* p = ring_->buffer(f.lease).data() + *at;
    for (uint64_t i = 0; i < size; ++i)
      p[i] = std::byte{stamp_byte(seed, i)};
    f.stamps.push_back({*at, size, seed});
  }

  void finish() {
    if (recording_.empty()) return;
    const std::size_t i = in_.u8() % recording_.size();
    Frame f = std::move(recording_[i]);
    recording_.erase(recording_.begin() + static_cast<std::ptrdiff_t>(i));
    if (in_.u8() % 2 == 0) {  // at a value of the owner's timeline, retired by the ring
      f.value = ++next_value_;
      CHECK(ring_->finish(std::move(f.lease), *f.value).has_value());
    } else {  // with a token fired by hand
      auto token = ring_->finish(std::move(f.lease));
      CHECK(token.has_value());
      f.token = std::move(token).value();
    }
    CHECK(ring_->state(f.slot) == SlotState::InFlight);
    in_flight_.push_back(std::move(f));
  }

  // The owner's timeline: retire up to a value, abandon one value, or lose the device.
  void by_value() {
    const uint8_t how = in_.u8() % 4;
    const TimelineValue at = next_value_ == 0 ? 0 : 1 + in_.u8() % next_value_;
    if (how <= 1) {
      completed_ = std::max(completed_, at);
      for (const Frame& f : in_flight_)
        if (f.value && *f.value <= completed_) verify(f);
      std::size_t expect = 0;
      for (const Frame& f : in_flight_)
        expect += f.value && *f.value <= completed_ ? 1 : 0;
      CHECK(ring_->retire(completed_) == expect, completed_, expect);
      take_out([&](const Frame& f) { return f.value && *f.value <= completed_; }, SlotState::Ready);
    } else if (how == 2) {
      std::size_t expect = 0;
      for (const Frame& f : in_flight_)
        expect += f.value && *f.value == at ? 1 : 0;
      CHECK(ring_->abandon(at) == expect, at, expect);
      take_out([&](const Frame& f) { return f.value && *f.value == at; }, SlotState::Abandoned);
    } else {
      std::size_t expect = 0;
      for (const Frame& f : in_flight_)
        expect += f.value ? 1 : 0;
      CHECK(ring_->fail_in_flight() == expect, expect);
      take_out([&](const Frame& f) { return f.value.has_value(); }, SlotState::Failed);
    }
  }

  // Removes the in-flight frames `which` selects, checking their slots are now `state`.
  template <class Which>
  void take_out(Which which, SlotState state) {
    for (std::size_t i = 0; i < in_flight_.size();) {
      if (which(in_flight_[i])) {
        CHECK(ring_->state(in_flight_[i].slot) == state, in_flight_[i].slot);
        in_flight_.erase(in_flight_.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
  }

  // The GPU "reads" a finished frame: its stamps must still be there.
  void verify(const Frame& f) {
    const FakeBuffer* buffer = ring_->buffer(f.slot);
    CHECK(buffer != nullptr, f.slot);
    const std::byte* p = const_cast<FakeBuffer*>(buffer)->data();
    for (const Stamp& s : f.stamps) {
      for (uint64_t i = 0; i < s.size; ++i)
        CHECK(p[s.offset + i] == std::byte{stamp_byte(s.seed, i)}, f.slot, s.offset, i);
    }
  }

  // 0 signal, 1 abandon, 2 fail, 3 drop unfired (frames finished with a token only).
  void fire(int how) {
    std::vector<std::size_t> tokens;
    for (std::size_t k = 0; k < in_flight_.size(); ++k)
      if (!in_flight_[k].value) tokens.push_back(k);
    if (tokens.empty()) return;
    const std::size_t i = tokens[in_.u8() % tokens.size()];
    Frame f = std::move(in_flight_[i]);
    in_flight_.erase(in_flight_.begin() + static_cast<std::ptrdiff_t>(i));
    verify(f);
    const SlotState expect[] = {SlotState::Ready, SlotState::Abandoned, SlotState::Failed,
                                SlotState::Abandoned};
    if (how == 0) CHECK(f.token.signal());
    if (how == 1) CHECK(f.token.abandon());
    if (how == 2) CHECK(f.token.fail());
    if (how == 3) f.token = FenceToken{};
    CHECK(ring_->state(f.slot) == expect[how], f.slot, static_cast<uint64_t>(how));
    CHECK(!f.token.signal());  // spent: a late duplicate changes nothing
    CHECK(ring_->state(f.slot) == expect[how]);
  }

  void drop_lease() {
    if (recording_.empty()) return;
    const std::size_t i = in_.u8() % recording_.size();
    const std::size_t slot = recording_[i].slot;
    recording_.erase(recording_.begin() + static_cast<std::ptrdiff_t>(i));
    CHECK(ring_->state(slot) == SlotState::Ready);
  }

  [[nodiscard]] bool busy(std::size_t slot) const {
    for (const Frame& f : recording_)
      if (f.slot == slot) return true;
    for (const Frame& f : in_flight_)
      if (f.slot == slot) return true;
    return false;
  }

  void check_states() {
    for (std::size_t s = 0; s < ring_->slot_count(); ++s) {
      const SlotState state = ring_->state(s);
      bool recording = false, in_flight = false;
      for (const Frame& f : recording_)
        recording = recording || f.slot == s;
      for (const Frame& f : in_flight_)
        in_flight = in_flight || f.slot == s;
      CHECK(recording == (state == SlotState::Recording), s);
      CHECK(in_flight == (state == SlotState::InFlight), s);
    }
    const StagingStats& st = ring_->stats();
    CHECK(st.bytes_allocated <= st.peak_bytes_allocated);
    CHECK(st.bytes_allocated <= config_.slots * config_.max_slot_bytes);
  }

  Input& in_;
  StagingRingConfig config_;
  FakeSlotAllocator allocator_;
  std::optional<StagingRing<FakeBuffer>> ring_;
  std::vector<Frame> recording_;
  std::vector<Frame> in_flight_;
  uint64_t next_seed_ = 1;
  TimelineValue next_value_ = 0;  // the last value a frame was finished at
  TimelineValue completed_ = 0;   // the highest value retired
};

// --- part 2: the byte ring with raw 64-bit inputs ---------------------------------------------

// Regions as bookkeeping only: any size, no memory (sizes near 2^64 are the point).
class CountingAllocator final : public RegionAllocator {
 public:
  Expected<void, AllocError> create_region(uint32_t region, uint64_t bytes) override {
    if (fail_next_ > 0) {
      --fail_next_;
      return unexpected(AllocError::OutOfMemory);
    }
    CHECK(bytes > 0 && !bytes_.contains(region), region, bytes);
    bytes_[region] = bytes;
    return {};
  }
  void destroy_region(uint32_t region) noexcept override {
    if (bytes_.erase(region) != 1) fail("destroying a region that does not exist", region);
  }
  [[nodiscard]] uint64_t size(uint32_t region) const {
    const auto it = bytes_.find(region);
    return it == bytes_.end() ? 0 : it->second;
  }
  uint64_t fail_next_ = 0;

 private:
  std::map<uint32_t, uint64_t> bytes_;
};

void check_byte_ring(Input& in) {
  using testing::DelayModel;
  using testing::FakeClock;
  using testing::FakeQueue;
  FakeClock clock;
  FakeQueue queue(clock, DelayModel::fixed(Duration{static_cast<int64_t>(in.u8()) * 1000}));
  CountingAllocator allocator;
  ByteRingConfig config;
  config.capacity = in.value();
  config.cap = in.u8() % 3 == 0 ? 0 : in.value();
  config.policy = static_cast<ExhaustionPolicy>(in.u8() % 5);
  config.wait_timeout = Duration{static_cast<int64_t>(in.u8()) * 1000};
  config.grow_step = in.value();
  config.trim_after = Duration{static_cast<int64_t>(in.u8()) * 1000};
  config.fallback_cap = in.u8() % 2 == 0 ? 0 : in.value();
  config.split_min_chunk = in.value();
  const uint64_t effective_cap = config.cap == 0 ? config.capacity : config.cap;
  InvariantChecker checker(InvariantChecker::Mode::Record, effective_cap);
  auto made = staging::detail::create_byte_ring(config, {&allocator, &clock, nullptr, &checker});
  if (!made) {
    const auto e = made.error();
    using E = CreateError;
    CHECK(e == E::ZeroCapacity          ? config.capacity == 0
          : e == E::CapBelowCapacity    ? effective_cap < config.capacity
          : e == E::FallbackCapAboveCap ? config.fallback_cap > effective_cap
                                        : false,
          config.capacity, config.cap, config.fallback_cap);
    return;
  }
  ByteRing& ring = *made;
  CHECK(ring.cap() == effective_cap && ring.fallback_cap() <= ring.cap() - ring.capacity());
  std::vector<uint64_t> live_ids;

  const auto check_reservation = [&](const Reservation& r, const ReserveRequest& q) {
    const uint64_t alignment = q.alignment == 0 ? 1 : q.alignment;
    CHECK(r.size > 0 && r.size <= q.size, r.size, q.size);
    CHECK(r.offset % alignment == 0, r.offset, alignment);
    CHECK(u128{r.offset} + r.size <= allocator.size(r.region), r.offset, r.size, r.region);
    live_ids.push_back(r.id);
  };
  const auto check_ring = [&] {
    CHECK(ring.held_bytes() <= ring.cap(), ring.held_bytes(), ring.cap());
    CHECK(ring.stats().fallback_held_bytes <= ring.fallback_cap());
    CHECK(ring.free_bytes() <= ring.capacity() && ring.largest_free() <= ring.free_bytes());
    if (!checker.violations().empty()) fail(checker.violations().front().message.c_str());
  };

  for (int step = 0; step < 256 && in.more(); ++step) {
    switch (in.u8() % 8) {
      case 0:
      case 1:
      case 2: {
        ReserveRequest q;
        q.size = in.value();
        q.alignment = in.u8() % 3 == 0 ? in.value() : uint64_t{1} << (in.u8() % 12);
        q.granularity = in.u8() % 2 == 0 ? in.value() : 1 + in.u8();
        q.token = queue.next_value();
        q.timeout = Duration{static_cast<int64_t>(in.u8()) * 1000};
        if (in.u8() % 3 == 0) q.policy = static_cast<ExhaustionPolicy>(in.u8() % 5);
        const ExhaustionPolicy policy = q.policy.value_or(config.policy);
        const bool waiting = in.u8() % 2 == 0;  // reserve_waiting(), else reserve()
        // Split: reserve the rest until all is placed or a refusal. Each call must place at
        // least one byte (an empty chunk would leave the rest unchanged forever); a payload of
        // 2^63 bytes through a small ring takes more calls than the 4096 made here.
        for (int call = 0; call < 4096; ++call) {
          const auto r = waiting ? reserve_waiting(ring, queue, q) : ring.reserve(q);
          if (!r) {
            const ReserveError& e = r.error();
            const uint64_t a = q.alignment == 0 ? 1 : q.alignment;
            CHECK((e.kind == UploadError::ZeroSize) == (q.size == 0), q.size);
            CHECK((e.kind == UploadError::Overflow) ==
                      (q.size != 0 && u128{q.size} + a - 1 > UINT64_MAX),
                  q.size, a);
            break;
          }
          check_reservation(*r, q);
          if (policy != ExhaustionPolicy::Split || r->size == q.size) {
            CHECK(r->size == q.size, r->size, q.size);
            break;
          }
          q.size -= r->size;
          if (in.u8() % 2 == 0) queue.submit();
        }
        break;
      }
      case 3:
        queue.submit();
        break;
      case 4:
        clock.advance(Duration{static_cast<int64_t>(in.u8()) * 1000});
        ring.retire(queue.completed());
        break;
      case 5:
        ring.retire(queue.submitted() == 0 ? 0 : in.u64() % (queue.completed() + 1));  // stale
        break;
      case 6:
        if (!live_ids.empty()) ring.cancel(live_ids[in.u8() % live_ids.size()]);
        break;
      default:
        allocator.fail_next_ = in.u8() % 2;
        clock.advance(Duration{static_cast<int64_t>(in.u8()) * 1000});
        ring.trim_idle();
        break;
    }
    check_ring();
  }
}

// --- part 3: the texture copy layout ------------------------------------------------------------

// a * b * c in 128 bits (each below 2^64, so the product of two fits; the third may not: then
// anything above 2^64 - 1 is all a caller needs to know).
u128 mul3(u128 a, u128 b, u128 c) {
  const u128 ab = a * b;
  if (ab > UINT64_MAX || c > UINT64_MAX) return u128{UINT64_MAX} + 1;
  return ab * c;
}

uint32_t u32_value(Input& in) {
  const uint8_t how = in.u8();
  const uint32_t raw = static_cast<uint32_t>(in.u64());
  switch (how % 4) {
    case 0:
      return raw % 64;
    case 1:
      return raw % 4096;
    case 2:
      return UINT32_MAX - raw % 64;
    default:
      return raw;
  }
}

// texture_layout() on any extent, layer count, block and limits, against 128-bit arithmetic;
// then bands of its rows (row_band, rows_that_fit), and, for layouts small enough to hold in
// memory, repack_rows() of stamped bytes, whole and by bands: every texel byte lands at its row's
// place, no padding byte is written.
void check_copy_layout(Input& in) {
  constexpr u128 kMax = UINT64_MAX;
  for (int round = 0; round < 16 && in.more(); ++round) {
    const TexelExtent extent{u32_value(in), u32_value(in),
                             u32_value(in) % 3 == 0 ? 1 : u32_value(in)};
    const uint32_t layers = u32_value(in);
    TexelBlock block;
    block.bytes = u32_value(in);
    block.width = in.u8() % 2 ? 1 : u32_value(in);
    block.height = in.u8() % 2 ? block.width : u32_value(in);
    block.depth = in.u8() % 4 ? 1 : u32_value(in);
    block.offset_alignment = in.u8() % 2 ? 0 : u32_value(in);
    CopyLimits limits;
    limits.texture_copy_alignment = in.value();
    limits.texture_row_pitch_alignment = in.value();
    const auto layout = texture_layout(extent, layers, block, limits);

    if (extent.width == 0 || extent.height == 0 || extent.depth == 0 || layers == 0 ||
        block.bytes == 0 || block.width == 0 || block.height == 0 || block.depth == 0) {
      CHECK(!layout && layout.error() == LayoutError::Empty, extent.width, layers, block.bytes);
      continue;
    }
    // The reference, in 128 bits.
    const u128 row_bytes = u128{(extent.width + u128{block.width} - 1) / block.width} * block.bytes;
    const u128 rows = (extent.height + u128{block.height} - 1) / block.height;
    const u128 slices = (extent.depth + u128{block.depth} - 1) / block.depth;
    const u128 rpa =
        limits.texture_row_pitch_alignment == 0 ? 1 : limits.texture_row_pitch_alignment;
    const u128 pitch_alignment = rpa / gcd128(rpa, block.bytes) * block.bytes;
    const u128 row_pitch = (row_bytes + pitch_alignment - 1) / pitch_alignment * pitch_alignment;
    const u128 tca = limits.texture_copy_alignment == 0 ? 1 : limits.texture_copy_alignment;
    const u128 rule = block.offset_alignment != 0 ? block.offset_alignment : block.bytes;
    const u128 offset_alignment = tca / gcd128(tca, rule) * rule;
    const bool pitch_ok = pitch_alignment <= kMax && row_pitch <= kMax;
    const u128 row_length = pitch_ok ? row_pitch / block.bytes * block.width : 0;
    const u128 padded = pitch_ok ? mul3(row_pitch, rows, slices) : kMax + 1;
    const u128 padded_all = padded <= kMax ? mul3(padded, layers, 1) : kMax + 1;
    const u128 packed = mul3(row_bytes, rows, slices * layers);
    const bool overflow = !pitch_ok || offset_alignment > kMax || row_length > UINT32_MAX ||
                          padded_all > kMax || packed > kMax;
    if (overflow) {
      CHECK(!layout && layout.error() == LayoutError::Overflow, extent.width, block.bytes,
            limits.texture_row_pitch_alignment);
      continue;
    }
    CHECK(layout.has_value(), extent.width, block.bytes, limits.texture_row_pitch_alignment);
    const TextureLayout& l = *layout;
    CHECK(l.row_bytes == row_bytes && l.rows == rows && l.slices == slices, l.row_bytes, l.rows);
    CHECK(l.images == slices * layers && l.row_pitch == row_pitch, l.images, l.row_pitch);
    CHECK(l.row_length == row_length && l.offset_alignment == offset_alignment, l.row_length);
    CHECK(l.slice_pitch == row_pitch * rows && l.layer_pitch == row_pitch * rows * slices,
          l.slice_pitch, l.layer_pitch);
    CHECK(l.padded_bytes == padded_all && l.packed_bytes == packed, l.padded_bytes, l.packed_bytes);
    CHECK(l.copy_bytes == padded_all - (row_pitch - row_bytes), l.copy_bytes, l.padded_bytes);
    CHECK(l.row_pitch % block.bytes == 0 && l.row_pitch % rpa == 0, l.row_pitch, block.bytes);
    CHECK(l.tight() == (row_pitch == row_bytes), l.row_pitch, l.row_bytes);
    // A mip level of the extent: halved, never below 1.
    const uint32_t level = in.u8() % 40;
    const TexelExtent mip = mip_extent(extent, level);
    const auto halve = [&](uint32_t v) -> uint32_t {
      return level >= 32 ? 1 : std::max<uint32_t>(1, v >> level);
    };
    CHECK(mip.width == halve(extent.width) && mip.height == halve(extent.height) &&
              mip.depth == halve(extent.depth),
          level, mip.width);

    // A band: OutOfRange exactly when it is not inside the region; otherwise its bytes.
    const uint64_t image = in.u8() % 2 ? in.u64() % (l.images + 1) : in.u64();
    const uint32_t first_row = static_cast<uint32_t>(in.u64() % (u128{l.rows} + 1));
    const uint32_t band_rows =
        in.u8() % 2 ? static_cast<uint32_t>(in.u64() % (u128{l.rows} + 1)) : u32_value(in);
    const auto band = row_band(l, image, first_row, band_rows);
    const bool inside = image < l.images && band_rows != 0 && u128{first_row} + band_rows <= l.rows;
    CHECK(inside ? band.has_value() : (!band && band.error() == LayoutError::OutOfRange), image,
          first_row, band_rows);
    if (band) {
      const RowBand& b = *band;
      CHECK(b.layer == image / l.slices && b.slice == image % l.slices, b.layer, b.slice);
      CHECK(b.source_offset == (u128{image} * l.rows + first_row) * l.row_bytes &&
                b.source_offset + b.source_bytes <= l.packed_bytes,
            b.source_offset, b.source_bytes);
      CHECK(b.copy_bytes == u128{band_rows - 1} * l.row_pitch + l.row_bytes, b.copy_bytes);
      CHECK(u128{b.y} == u128{first_row} * block.height && b.y < extent.height && b.height >= 1 &&
                u128{b.y} + b.height <= extent.height,
            b.y, b.height);
      CHECK(b.z < extent.depth && b.depth >= 1 && u128{b.z} + b.depth <= extent.depth, b.z,
            b.depth);
    }
    // rows_that_fit: the most rows whose copy fits, never more than the region has.
    const uint64_t bytes = in.value();
    const uint32_t fit = rows_that_fit(l, bytes);
    CHECK(fit <= l.rows, fit, l.rows);
    if (fit > 0) CHECK(u128{fit - 1} * l.row_pitch + l.row_bytes <= bytes, fit, bytes);
    if (fit < l.rows) CHECK(u128{fit} * l.row_pitch + l.row_bytes > bytes, fit, bytes);

    // Repack into real memory when small: stamped source bytes, a sentinel in the padding.
    if (l.padded_bytes > 64 * 1024 || l.packed_bytes > 64 * 1024) continue;
    std::vector<std::byte> src(l.packed_bytes), dst(l.padded_bytes, std::byte{0xA5});
    const uint64_t seed = in.u64();
    for (uint64_t i = 0; i < src.size(); ++i)
      src[i] = std::byte{stamp_byte(seed, i)};
    repack_rows(dst.data(), src.data(), l);
    const uint64_t all_rows = l.rows * l.images;
    for (uint64_t r = 0; r < all_rows; ++r) {
      for (uint64_t x = 0; x < l.row_pitch; ++x) {
        const std::byte got = dst[r * l.row_pitch + x];
        if (x < l.row_bytes) {
          CHECK(got == src[r * l.row_bytes + x], r, x);
        } else {
          CHECK(got == std::byte{0xA5}, r, x);  // padding never written
        }
      }
    }
    // By bands of `per` rows: each band's staging bytes equal the whole repack's.
    const uint32_t per = 1 + static_cast<uint32_t>(in.u8() % l.rows);
    for (uint64_t img = 0; img < l.images; ++img) {
      for (uint32_t row = 0; row < l.rows; row += per) {
        const auto piece = row_band(l, img, row, std::min(per, l.rows - row));
        CHECK(piece.has_value(), img, row, per);
        std::vector<std::byte> out(piece->copy_bytes, std::byte{0xA5});
        repack_rows(out.data(), src.data(), l, *piece);
        const uint64_t base = (img * l.rows + row) * l.row_pitch;
        for (uint64_t i = 0; i < out.size(); ++i)
          CHECK(out[i] == dst[base + i], img, row, i);
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  Input in(data, size);
  switch (in.u8() % 4) {
    case 0:
      check_arithmetic(in);
      break;
    case 1: {
      SlotRingRun run(in);
      run.run();
      break;
    }
    case 2:
      check_byte_ring(in);
      break;
    default:
      check_copy_layout(in);
      break;
  }
  return 0;
}
