// Enum names (enum_names.hpp): one table per enum, one to_string() and enum_from_string() for all.
#include "staging/detail/core/enum_names.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "staging/core/byte_ring.hpp"
#include "staging/core/slot_ring.hpp"
#include "staging/detail/core/counters.hpp"
#include "staging/detail/core/invariant_checker.hpp"
#include "staging/detail/core/slot_lease.hpp"
#include "staging/detail/core/staging_ring.hpp"
#include "staging/testing/fake_queue.hpp"

namespace staging {
namespace {

// Every value of E, in order, by name; then one past the end reads "?", and every name parses
// back to its value.
template <class E>
void expect_names(const std::vector<std::string>& names) {
  ASSERT_EQ(enum_count<E>, names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(to_string(static_cast<E>(i)), names[i]);
    EXPECT_EQ(enum_from_string<E>(names[i]), static_cast<E>(i)) << names[i];
  }
  EXPECT_EQ(to_string(static_cast<E>(names.size())), "?");
  EXPECT_EQ(to_string(static_cast<E>(255)), "?");
  EXPECT_EQ(enum_from_string<E>("NoSuchValue"), std::nullopt);
  EXPECT_EQ(enum_from_string<E>(""), std::nullopt);
}

TEST(EnumNames, EveryCoreEnumHasItsNames) {
  expect_names<SlotState>({"Empty", "Ready", "Recording", "InFlight", "Abandoned", "Failed"});
  expect_names<AllocError>({"OutOfMemory", "MapFailed", "DeviceLost", "Other"});
  expect_names<CreateError>({"InvalidConfig", "ZeroCapacity", "CapBelowCapacity",
                             "FallbackCapAboveCap", "NoSlots", "MinNotPowerOfTwo", "MaxBelowMin",
                             "TooManySlots", "SlotTooLarge", "UnsupportedPolicy",
                             "MissingDependency", "MissingFunction", "ApiVersionTooOld", "NoDevice",
                             "AllocationFailed", "ObjectCreationFailed", "ThreadStartFailed"});
  expect_names<Route>({"Ring", "Fallback"});
  expect_names<UploadError>({"Inactive",
                             "NullDestination",
                             "ZeroSize",
                             "Overflow",
                             "UnsupportedFormat",
                             "BadAspect",
                             "Misaligned",
                             "SizeMismatch",
                             "OverlapsEarlierUpload",
                             "ConflictingLayouts",
                             "FallbackCapReached",
                             "AllocationFailed",
                             "RingFull",
                             "TooLarge",
                             "InvalidDestination",
                             "OutOfBounds",
                             "NoSuchSubresource",
                             "FormatMismatch",
                             "DestinationMismatch",
                             "Sealed",
                             "DoesNotFit",
                             "AlreadyShared",
                             "NoSlot",
                             "InvalidArgument",
                             "WouldBlock",
                             "Timeout",
                             "Cuda",
                             "Failed",
                             "DeviceLost",
                             "Cancelled",
                             "Done"});
  expect_names<WaitError>({"Timeout", "DeviceLost", "Failed"});
  expect_names<FinishError>({"Inactive", "NullSemaphore", "PointAlreadyReached", "DeviceLost",
                             "WritersActive", "SharedConflict", "FlushFailed", "NotFinished",
                             "NullEncoder", "ForeignLease"});
  expect_names<PlaceError>({"ZeroSize", "Overflow", "DoesNotFit", "Inactive"});
  expect_names<ExhaustionPolicy>({"Defer", "Wait", "Split", "Grow", "Fallback"});
  expect_names<BlockCause>({"InFlight", "Fragmentation", "Cap"});
  expect_names<Invariant>({"I1", "I2", "I3", "I4", "I5"});
  expect_names<CounterUnit>({"Count", "Bytes", "Nanoseconds"});
  expect_names<testing::DelayModel::Kind>({"Fixed", "SeededRandom", "Bursty", "Stalled"});
}

TEST(EnumNames, UsableInConstantExpressions) {
  static_assert(to_string(BlockCause::Fragmentation) == "Fragmentation");
  static_assert(enum_from_string<SlotState>("Ready") == SlotState::Ready);
  static_assert(enum_count<ExhaustionPolicy> == 5);
}

// The completeness check refuses a table that does not match its enum.
enum class Short : uint8_t { A, B, C };
constexpr auto enum_names(std::type_identity<Short>) noexcept {
  return std::to_array<std::string_view>({"A", "B"});
}
enum class Long : uint8_t { A, B };
constexpr auto enum_names(std::type_identity<Long>) noexcept {
  return std::to_array<std::string_view>({"A", "B", "C"});
}
enum class Repeated : uint8_t { A, B };
constexpr auto enum_names(std::type_identity<Repeated>) noexcept {
  return std::to_array<std::string_view>({"A", "A"});
}
enum class Signed : int8_t { Minus = -1, Zero, One };
constexpr auto enum_names(std::type_identity<Signed>) noexcept {
  return std::to_array<std::string_view>({"Zero", "One"});
}
static_assert(!enum_names_complete<Repeated>());
#if (defined(__GNUC__) || defined(__clang__))
static_assert(!enum_names_complete<Short>());
static_assert(!enum_names_complete<Long>());
#endif

TEST(EnumNames, NegativeValuesReadAsUnknown) {
  EXPECT_EQ(to_string(Signed::Minus), "?");
  EXPECT_EQ(to_string(Signed::One), "One");
}

}  // namespace
}  // namespace staging
