// The decode workers of FileStream (decode_pool.h).
#include "lib/read/decode_pool.h"

#include "lib/read/block_window.h"

namespace dlprof::read {

DecodePool::DecodePool(unsigned threads) {
  for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
}

DecodePool::~DecodePool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void DecodePool::Submit(Prefetch* p) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    p->done.store(false, std::memory_order_relaxed);
    queue_.push_back(p);
  }
  work_cv_.notify_one();
}

void DecodePool::Wait(Prefetch* p) {
  // A block takes a few hundred microseconds to decode: spin briefly
  // before sleeping, since a sleep and wake-up cost about as much.
  for (int i = 0; i < 4096 && !p->done.load(std::memory_order_acquire); ++i) {
    __builtin_ia32_pause();
  }
  if (p->done.load(std::memory_order_acquire)) return;
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [p] { return p->done.load(std::memory_order_relaxed); });
}

void DecodePool::Work() {
  format::BlockDecoder decoder;
  for (;;) {
    Prefetch* p;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      p = queue_.front();
      queue_.pop_front();
    }
    p->ok = p->reader->DecodeWith(&decoder, p->where, &p->data, &p->why);
    if (p->ok) SortOrder(p->data, &p->order);
    {
      std::lock_guard<std::mutex> lock(mu_);
      p->done.store(true, std::memory_order_release);
    }
    done_cv_.notify_all();
  }
}

}  // namespace dlprof::read
