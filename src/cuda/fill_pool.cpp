#include "fill_pool.hpp"

#include <algorithm>

#include "fill_copy.hpp"
#include "staging/core/assert.hpp"

namespace staging::cuda::detail {

FillPool::FillPool(unsigned threads, FillMethod method) : method_(resolve(method)) {
  STAGING_ASSERT(threads >= 1, "FillPool needs at least one thread");
  threads_.reserve(threads);
  try {
    for (unsigned i = 0; i < threads; ++i)
      threads_.emplace_back([this] { run(); });
  } catch (...) {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : threads_)
      t.join();
    throw;
  }
}

FillPool::~FillPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : threads_)
    t.join();
}

void FillPool::submit(FillJob& job, uint64_t slice_bytes) {
  STAGING_ASSERT(job.bytes > 0, "FillPool::submit of an empty job");
  constexpr uint64_t kPage = 4096;
  slice_bytes = std::max<uint64_t>(kPage, (slice_bytes + kPage - 1) / kPage * kPage);
  {
    std::lock_guard lock(mu_);
    job.remaining = 0;
    for (uint64_t off = 0; off < job.bytes; off += slice_bytes) {
      queue_.push_back({&job, off, std::min(slice_bytes, job.bytes - off)});
      ++job.remaining;
    }
  }
  work_cv_.notify_all();
}

bool FillPool::done(const FillJob& job) {
  std::lock_guard lock(mu_);
  return job.remaining == 0;
}

void FillPool::wait(FillJob& job) {
  std::unique_lock lock(mu_);
  done_cv_.wait(lock, [&] { return job.remaining == 0; });
}

void FillPool::cancel(FillJob& job) {
  std::unique_lock lock(mu_);
  const auto before = queue_.size();
  queue_.erase(
      std::remove_if(queue_.begin(), queue_.end(), [&](const Slice& s) { return s.job == &job; }),
      queue_.end());
  job.remaining -= before - queue_.size();
  done_cv_.wait(lock, [&] { return job.remaining == 0; });
}

void FillPool::run() noexcept {
  std::unique_lock lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left to copy
    const Slice slice = queue_.front();
    queue_.pop_front();
    lock.unlock();
    const FillMethod method = slice.job->method == FillMethod::Auto ? method_ : slice.job->method;
    copy_to_staging(slice.job->dst + slice.offset, slice.job->src + slice.offset,
                    static_cast<std::size_t>(slice.bytes), method);
    lock.lock();
    // The job may be destroyed by its submitter as soon as remaining reaches 0 and the lock is
    // released: it is not touched after this.
    if (--slice.job->remaining == 0) done_cv_.notify_all();
  }
}

}  // namespace staging::cuda::detail
