// Property test of the slot policy: random sequences of begin / place / finish / signal /
// abandon / fail / drop, checked after every step against a small reference model of the slots.
//
// What must hold after every step:
//   P1 every slot's state equals the model's (the state machine of slot_ring.hpp);
//   P2 a lease only ever lands in a slot whose fence has fired (the model says Empty, Ready,
//      Abandoned or Failed — never Recording or InFlight);
//   P3 a slot InFlight keeps its buffer: same id, same capacity, and the bytes its frame wrote are
//      intact when its fence fires (the "GPU" reads them then) — no growth, replacement or other
//      frame's write touched them;
//   P4 every placement is aligned, inside its slot, and disjoint from the lease's earlier ones;
//   P5 refusals are right: TooLarge iff needed > max_slot_bytes; RingFull only when the model
//      has no slot to give; AllocationFailed only when a failure was armed.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>
#include <vector>

#include "rc_params.hpp"
#include "staging/detail/core/staging_ring.hpp"
#include "staging/testing/fake_slot_allocator.hpp"

// Longer runs than rapidcheck's default (100 cases of up to 100 steps), unless RC_PARAMS says
// otherwise. rapidcheck reads RC_PARAMS on first use, after static initialisation.
[[maybe_unused]] const int kDefaultParams =
    staging::test::set_rc_params("max_success=400 max_size=400");

namespace staging {
namespace {

using testing::FakeBuffer;
using testing::FakeSlotAllocator;

uint64_t g_operations = 0;  // reported at the end of the run

enum class OpKind : uint8_t {
  Begin,
  Place,
  Finish,
  DropLease,
  Signal,
  Abandon,
  Fail,
  DropToken,
  ArmFailure
};

struct Op {
  OpKind kind;
  uint32_t a;  // needed bytes / size / index
  uint32_t b;  // alignment
};

struct Written {  // bytes one placement wrote, to check when the GPU "reads" them
  uint64_t offset;
  std::vector<std::byte> bytes;
};

struct LiveLease {
  SlotLease lease;
  std::vector<Written> writes;
};

struct LiveToken {
  FenceToken token;
  std::size_t slot;
  uint64_t buffer_id;
  uint64_t capacity;
  std::vector<Written> writes;
};

struct Model {
  std::vector<SlotState> state;
};

bool gives_slot(SlotState s) {
  return s == SlotState::Empty || s == SlotState::Ready || s == SlotState::Abandoned ||
         s == SlotState::Failed;
}

void run_sequence(const std::vector<Op>& ops, std::size_t slots, bool poll_fires) {
  constexpr uint64_t kMin = 64, kMax = 1024;
  FakeSlotAllocator allocator;
  std::deque<LiveToken> tokens;  // oldest first
  std::vector<LiveLease> leases;
  Model model{std::vector<SlotState>(slots, SlotState::Empty)};
  bool armed = false;
  uint8_t pattern = 1;

  // Firing a token = the GPU has read the slot: its frame's bytes must be intact (P3).
  const auto fire = [&](std::size_t i, SlotState to) {
    LiveToken& t = tokens[i];
    bool ok = false;
    if (to == SlotState::Ready) ok = t.token.signal();
    if (to == SlotState::Abandoned) ok = t.token.abandon();
    if (to == SlotState::Failed) ok = t.token.fail();
    RC_ASSERT(ok);
    model.state[t.slot] = to;
    tokens.erase(tokens.begin() + static_cast<std::ptrdiff_t>(i));
  };

  auto ring =
      std::move(StagingRing<FakeBuffer>::create(
                    allocator, {.slots = slots, .min_slot_bytes = kMin, .max_slot_bytes = kMax}))
          .value();

  // P3 helper: the bytes a pending token's frame wrote are still in its slot's buffer.
  const auto check_in_flight_bytes = [&] {
    for (const LiveToken& t : tokens) {
      const FakeBuffer* buf = ring.buffer(t.slot);
      RC_ASSERT(buf != nullptr);
      RC_ASSERT(buf->id() == t.buffer_id);
      RC_ASSERT(buf->capacity() == t.capacity);
      for (const Written& w : t.writes) {
        auto* data = const_cast<FakeBuffer*>(buf)->data();
        RC_ASSERT(std::memcmp(data + w.offset, w.bytes.data(), w.bytes.size()) == 0);
      }
    }
  };

  for (const Op& op : ops) {
    ++g_operations;
    switch (op.kind) {
      case OpKind::Begin: {
        const uint64_t needed = op.a % (kMax + 64);  // sometimes above the max
        const uint64_t failures_before = allocator.log().failed;
        // An owner that retires what completed before asking for a slot.
        if (poll_fires && !tokens.empty()) fire(0, SlotState::Ready);
        auto result = ring.begin(needed);
        const bool failure_consumed = allocator.log().failed != failures_before;
        if (needed > kMax) {  // P5
          RC_ASSERT(!result);
          RC_ASSERT(result.error() == UploadError::TooLarge);
          RC_ASSERT(!failure_consumed);
          break;
        }
        if (result) {
          const std::size_t k = result->slot();
          // P2: the slot's fence had fired, or the slot had no frame yet.
          RC_ASSERT(gives_slot(model.state[k]));
          RC_ASSERT(result->capacity() >= needed);
          RC_ASSERT(!failure_consumed);
          model.state[k] = SlotState::Recording;
          leases.push_back({std::move(*result), {}});
        } else if (result.error() == UploadError::RingFull) {
          for (SlotState s : model.state)
            RC_ASSERT(!gives_slot(s));  // P5
          RC_ASSERT(!failure_consumed);
        } else {
          RC_ASSERT(result.error() == UploadError::AllocationFailed);  // P5: only an armed failure
          RC_ASSERT(armed && failure_consumed);
          armed = false;
          // At most one slot changed: an Empty/Abandoned/Failed one became Failed (a failed
          // growth changes nothing).
          for (std::size_t i = 0; i < slots; ++i) {
            if (ring.state(i) != model.state[i]) {
              RC_ASSERT(ring.state(i) == SlotState::Failed);
              RC_ASSERT(model.state[i] == SlotState::Empty ||
                        model.state[i] == SlotState::Abandoned ||
                        model.state[i] == SlotState::Failed);
              model.state[i] = SlotState::Failed;
            }
          }
        }
        break;
      }
      case OpKind::Place: {
        if (leases.empty()) break;
        LiveLease& l = leases[op.a % leases.size()];
        const uint64_t size = 1 + op.b % 300;
        const uint64_t alignment = (op.b >> 9) % 5 == 0 ? 0 : uint64_t{1} << ((op.b >> 12) % 8);
        const uint64_t cursor = l.lease.cursor();
        auto offset = l.lease.place(size, alignment);
        if (!offset) {
          RC_ASSERT(offset.error() == PlaceError::DoesNotFit);
          RC_ASSERT(*align_up(cursor, alignment) + size > l.lease.capacity());
          break;
        }
        // P4: aligned, in bounds, after every earlier placement of this lease.
        RC_ASSERT(*offset % (alignment == 0 ? 1 : alignment) == 0);
        RC_ASSERT(*offset >= cursor);
        RC_ASSERT(*offset + size <= l.lease.capacity());
        Written w{*offset, std::vector<std::byte>(size, std::byte{pattern})};
        pattern = static_cast<uint8_t>(pattern * 5 + 3);
        std::memcpy(ring.buffer(l.lease).data() + *offset, w.bytes.data(), size);
        l.writes.push_back(std::move(w));
        break;
      }
      case OpKind::Finish: {
        if (leases.empty()) break;
        const std::size_t i = op.a % leases.size();
        const std::size_t k = leases[i].lease.slot();
        const FakeBuffer& buf = ring.buffer(leases[i].lease);
        const uint64_t id = buf.id(), cap = buf.capacity();
        auto token = ring.finish(std::move(leases[i].lease));
        RC_ASSERT(token.has_value());
        model.state[k] = SlotState::InFlight;
        tokens.push_back({std::move(*token), k, id, cap, std::move(leases[i].writes)});
        leases.erase(leases.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
      case OpKind::DropLease: {
        if (leases.empty()) break;
        const std::size_t i = op.a % leases.size();
        model.state[leases[i].lease.slot()] = SlotState::Ready;
        leases.erase(leases.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
      case OpKind::Signal:
      case OpKind::Abandon:
      case OpKind::Fail: {
        if (tokens.empty()) break;
        const std::size_t i = op.a % tokens.size();
        check_in_flight_bytes();  // P3 at the moment the GPU finishes reading
        fire(i, op.kind == OpKind::Signal    ? SlotState::Ready
                : op.kind == OpKind::Abandon ? SlotState::Abandoned
                                             : SlotState::Failed);
        break;
      }
      case OpKind::DropToken: {
        if (tokens.empty()) break;
        const std::size_t i = op.a % tokens.size();
        model.state[tokens[i].slot] = SlotState::Abandoned;
        tokens.erase(tokens.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
      case OpKind::ArmFailure:
        allocator.fail_next(1);
        armed = true;
        break;
    }
    // After every step: P1 and P3.
    for (std::size_t i = 0; i < slots; ++i)
      RC_ASSERT(ring.state(i) == model.state[i]);
    check_in_flight_bytes();
  }
}

rc::Gen<Op> gen_op() {
  return rc::gen::apply(
      [](uint8_t kind, uint32_t a, uint32_t b) {
        // Weights: begin, place and finish dominate so frames actually flow.
        static constexpr OpKind table[] = {
            OpKind::Begin,     OpKind::Begin,     OpKind::Begin,  OpKind::Place,
            OpKind::Place,     OpKind::Place,     OpKind::Place,  OpKind::Finish,
            OpKind::Finish,    OpKind::Finish,    OpKind::Signal, OpKind::Signal,
            OpKind::Signal,    OpKind::Abandon,   OpKind::Fail,   OpKind::DropLease,
            OpKind::DropToken, OpKind::ArmFailure};
        return Op{table[kind % std::size(table)], a, b};
      },
      rc::gen::arbitrary<uint8_t>(), rc::gen::arbitrary<uint32_t>(),
      rc::gen::arbitrary<uint32_t>());
}

RC_GTEST_PROP(StagingRingProperty, NoLeaseLandsInASlotWhoseFenceHasNotFired, ()) {
  const auto slots = *rc::gen::inRange<std::size_t>(1, 5);
  const bool poll_fires = *rc::gen::arbitrary<bool>();
  const auto ops = *rc::gen::container<std::vector<Op>>(gen_op());
  run_sequence(ops, slots, poll_fires);
}

class ReportOperations : public ::testing::Environment {
 public:
  void TearDown() override {
    std::printf("[property] %llu random slot-ring operations checked against the model\n",
                static_cast<unsigned long long>(g_operations));
  }
};
const auto* const kReport = ::testing::AddGlobalTestEnvironment(new ReportOperations);

}  // namespace
}  // namespace staging
