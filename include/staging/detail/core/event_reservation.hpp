// reservation_of: the Reservation a Reserve event reports, rebuilt from the event's fields (for
// observers that track reservations: the simulator, the test harnesses).
#pragma once

#include "staging/core/observer.hpp"
#include "staging/detail/core/assert.hpp"

namespace staging::detail {

/// The reservation placed by `e`, which must be a Reserve event.
[[nodiscard]] inline Reservation reservation_of(const Event& e) noexcept {
  STAGING_ASSERT(e.kind == EventKind::Reserve, "reservation_of needs a Reserve event");
  return Reservation{.id = e.id,
                     .region = e.region,
                     .offset = e.offset,
                     .size = e.bytes,
                     .alignment = e.alignment,
                     .skipped = e.skipped,
                     .token = e.token,
                     .owner = e.owner,
                     .fallback = e.fallback};
}

}  // namespace staging::detail
