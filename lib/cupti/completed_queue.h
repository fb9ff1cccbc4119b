// Completed CUPTI activity buffers waiting to be translated.
//
// CUPTI hands a full buffer to the plugin on whichever thread completes it:
// its worker thread, the plugin's flusher, or an application thread that
// flushes (context destroy). Translating it there keeps that thread for as
// long as a buffer of records takes (bench/cupti_bench.cc: ~0.25 ms for a
// 2 MiB buffer of kernels), and CUPTI's worker also moves profiling data
// between host and device for the application. So the completion callback
// only queues the buffer here and the plugin's translate thread does the
// rest (docs/CUDA.md, "Buffers and flushing").
//
// Bounded and preallocated: Push never allocates and fails only when the
// queue is full, which cannot happen while it holds as many entries as the
// buffer pool can lend (the caller then translates in place). The lock
// covers a few stores.
#ifndef DLPROF_LIB_CUPTI_COMPLETED_QUEUE_H_
#define DLPROF_LIB_CUPTI_COMPLETED_QUEUE_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace dlprof::cupti {

struct CompletedBuffer {
  uint8_t* data = nullptr;
  size_t valid = 0;      // bytes of records
  uint64_t dropped = 0;  // CUPTI's count of records it had no room for
};

class CompletedQueue {
 public:
  explicit CompletedQueue(size_t capacity) : slots_(capacity > 0 ? capacity : 1) {}
  CompletedQueue(const CompletedQueue&) = delete;
  CompletedQueue& operator=(const CompletedQueue&) = delete;

  // False when full or closed: the caller keeps the buffer.
  bool Push(const CompletedBuffer& b) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closed_ || count_ == slots_.size()) return false;
      slots_[(head_ + count_) % slots_.size()] = b;
      ++count_;
    }
    ready_.notify_one();
    return true;
  }

  // The oldest buffer, without waiting; false when there is none.
  bool Pop(CompletedBuffer* b) {
    std::lock_guard<std::mutex> lock(mu_);
    if (count_ == 0) return false;
    *b = slots_[head_];
    head_ = (head_ + 1) % slots_.size();
    --count_;
    return true;
  }

  // Waits until a buffer is queued (true) or the queue is closed and empty
  // (false). Does not take the buffer: the consumer pops it while holding
  // its own lock, so that a drain on another thread knows, once it holds
  // that lock, that no popped buffer is still being translated.
  bool WaitForWork() {
    std::unique_lock<std::mutex> lock(mu_);
    ready_.wait(lock, [this] { return count_ > 0 || closed_; });
    return count_ > 0;
  }

  // No more pushes; wakes the consumer, which drains what is left.
  void Close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
    }
    ready_.notify_all();
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return count_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable ready_;
  std::vector<CompletedBuffer> slots_;  // sized once: Push never allocates
  size_t head_ = 0;
  size_t count_ = 0;
  bool closed_ = false;
};

}  // namespace dlprof::cupti

#endif  // DLPROF_LIB_CUPTI_COMPLETED_QUEUE_H_
