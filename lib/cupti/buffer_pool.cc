#include "lib/cupti/buffer_pool.h"

#include <cstdlib>

namespace dlprof::cupti {

BufferPool::BufferPool(size_t buffer_bytes, size_t max_buffers)
    : buffer_bytes_((buffer_bytes + kAlignment - 1) / kAlignment * kAlignment),
      max_buffers_(max_buffers) {
  free_.reserve(max_buffers_);
}

BufferPool::~BufferPool() {
  for (uint8_t* b : free_) std::free(b);
}

uint8_t* BufferPool::Acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      uint8_t* b = free_.back();
      free_.pop_back();
      ++outstanding_;
      return b;
    }
    if (allocated_ >= max_buffers_) {
      ++refused_;
      return nullptr;
    }
    ++allocated_;  // reserve the slot, allocate outside the lock
    ++outstanding_;
  }
  auto* b = static_cast<uint8_t*>(std::aligned_alloc(kAlignment, buffer_bytes_));
  if (b == nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    --allocated_;
    --outstanding_;
    ++refused_;
  }
  return b;
}

void BufferPool::Release(uint8_t* buffer) {
  if (buffer == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(buffer);  // within the reserved capacity: allocated_ <= max_buffers_
  --outstanding_;
}

size_t BufferPool::outstanding() const {
  std::lock_guard<std::mutex> lock(mu_);
  return outstanding_;
}

uint64_t BufferPool::refused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refused_;
}

}  // namespace dlprof::cupti
