// The activity buffers handed to CUPTI: a bounded, recycling pool.
//
// CUPTI asks for buffers on its own threads and on the threads that flush,
// and hands them back full of records. The pool caps the memory CUPTI can
// hold through us; when every buffer is out, Acquire says no and CUPTI drops
// records and counts them (cuptiActivityGetNumDroppedRecords), which we
// write into the trace. The lock covers only a pointer push or pop, never
// allocation or translation, so a buffer request never waits on a
// completed buffer being translated.
#ifndef DLPROF_LIB_CUPTI_BUFFER_POOL_H_
#define DLPROF_LIB_CUPTI_BUFFER_POOL_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace dlprof::cupti {

class BufferPool {
 public:
  // CUPTI needs 8-byte aligned buffers; a cache line keeps them apart.
  static constexpr size_t kAlignment = 64;

  BufferPool(size_t buffer_bytes, size_t max_buffers);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of buffer_bytes(), or nullptr when max_buffers are out or
  // memory is short.
  uint8_t* Acquire();
  // Gives back a buffer from Acquire (nullptr is ignored). It is kept for
  // reuse: a training loop asks for buffers at a steady rate.
  void Release(uint8_t* buffer);

  size_t buffer_bytes() const { return buffer_bytes_; }
  size_t max_buffers() const { return max_buffers_; }
  size_t outstanding() const;
  uint64_t refused() const;

 private:
  const size_t buffer_bytes_;
  const size_t max_buffers_;
  mutable std::mutex mu_;
  std::vector<uint8_t*> free_;  // reserved to max_buffers_: no allocation under mu_
  size_t allocated_ = 0;        // buffers in existence (free or out)
  size_t outstanding_ = 0;
  uint64_t refused_ = 0;
};

}  // namespace dlprof::cupti

#endif  // DLPROF_LIB_CUPTI_BUFFER_POOL_H_
