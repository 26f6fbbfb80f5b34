// Helpers shared by the Vulkan scenarios: random data, parallel compare, medians, timestamps.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include "vulkan_scenarios.hpp"

namespace staging::bench::vk {

void fill_random(std::byte* out, uint64_t n, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(out + i, &x, 8);
  }
  for (; i < n; ++i)
    out[i] = static_cast<std::byte>((x >> (8 * (i & 7))) | 1);
}

void fill_random_parallel(std::byte* out, uint64_t n, uint64_t seed, unsigned threads) {
  threads = std::max(1u, threads);
  const uint64_t per = (n / threads + 4095) & ~uint64_t{4095};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    const uint64_t begin = std::min(n, per * t);
    const uint64_t end = std::min(n, begin + per);
    if (end > begin) pool.emplace_back([=] { fill_random(out + begin, end - begin, seed + t); });
  }
  for (auto& t : pool)
    t.join();
}

std::optional<uint64_t> first_difference(const std::byte* a, const std::byte* b, uint64_t n,
                                         unsigned threads) {
  threads = std::max(1u, threads);
  const uint64_t per = (n / threads + 4095) & ~uint64_t{4095};
  std::atomic<uint64_t> first{UINT64_MAX};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    const uint64_t begin = std::min(n, per * t);
    const uint64_t end = std::min(n, begin + per);
    if (end <= begin) continue;
    pool.emplace_back([&, begin, end] {
      if (std::memcmp(a + begin, b + begin, end - begin) == 0) return;
      for (uint64_t i = begin; i < end; ++i) {
        if (a[i] != b[i]) {
          uint64_t seen = first.load();
          while (i < seen && !first.compare_exchange_weak(seen, i)) {
          }
          return;
        }
      }
    });
  }
  for (auto& t : pool)
    t.join();
  if (first.load() == UINT64_MAX) return std::nullopt;
  return first.load();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::optional<std::vector<Interval>> read_intervals(Context& vk, VkQueryPool pool,
                                                    uint32_t first_pair, uint32_t pairs,
                                                    uint32_t valid_bits) {
  if (pool == VK_NULL_HANDLE || valid_bits == 0 || pairs == 0) return std::nullopt;
  std::vector<uint64_t> ticks(2 * static_cast<std::size_t>(pairs));
  if (vkGetQueryPoolResults(vk.device(), pool, 2 * first_pair, 2 * pairs,
                            ticks.size() * sizeof(uint64_t), ticks.data(), sizeof(uint64_t),
                            VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) != VK_SUCCESS) {
    return std::nullopt;
  }
  const uint64_t mask = valid_bits >= 64 ? UINT64_MAX : (uint64_t{1} << valid_bits) - 1;
  std::vector<Interval> out;
  for (uint32_t i = 0; i < pairs; ++i) {
    const uint64_t start = ticks[2 * i] & mask;
    uint64_t end = ticks[2 * i + 1] & mask;
    if (end < start) end = mask == UINT64_MAX ? start : end + mask + 1;  // wrapped (bits < 64)
    out.push_back({start, end});
  }
  return out;
}

GpuTimes union_of(std::vector<Interval> spans, double period_ns) {
  GpuTimes t;
  if (spans.empty()) return t;
  std::sort(spans.begin(), spans.end(),
            [](const Interval& a, const Interval& b) { return a.start < b.start; });
  uint64_t cur_begin = spans.front().start, cur_end = spans.front().end, last = 0, busy = 0;
  for (const Interval& s : spans) {
    if (s.start > cur_end) {
      busy += cur_end - cur_begin;
      cur_begin = s.start;
      cur_end = s.end;
    } else {
      cur_end = std::max(cur_end, s.end);
    }
    last = std::max(last, s.end);
  }
  busy += cur_end - cur_begin;
  t.busy_s = static_cast<double>(busy) * period_ns * 1e-9;
  t.span_s = static_cast<double>(last - spans.front().start) * period_ns * 1e-9;
  return t;
}

std::optional<GpuTimes> read_timestamps(Context& vk, VkQueryPool pool, uint32_t pairs,
                                        uint32_t valid_bits) {
  auto spans = read_intervals(vk, pool, 0, pairs, valid_bits);
  if (!spans) return std::nullopt;
  return union_of(std::move(*spans), vk.timestamp_period());
}

}  // namespace staging::bench::vk
