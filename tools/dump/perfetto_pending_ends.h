// The slice ENDs the Perfetto exporter (perfetto_output.cc) has not written
// yet. A slice's BEGIN is written when the stream reaches its start, its END
// only once the stream has passed its end, so that the packet sequence's
// times never go back: the ENDs wait here, earliest first.
#ifndef DLPROF_TOOLS_DUMP_PERFETTO_PENDING_ENDS_H_
#define DLPROF_TOOLS_DUMP_PERFETTO_PENDING_ENDS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <queue>
#include <tuple>
#include <vector>

namespace dlprof::dump {

// A slice's END, due when the stream passes it.
struct PendingEnd {
  uint64_t end_ns, start_ns, order, track;
  bool operator>(const PendingEnd& o) const {
    // Inner slices (later start, later begun) end first at equal times.
    return std::tie(end_ns, o.start_ns, o.order) > std::tie(o.end_ns, start_ns, order);
  }
};
// The ENDs not written yet, earliest first. Mostly few are pending (calls
// made one after another, a kernel or two in flight): those are kept in a
// small array sorted latest first, the next END at its back, which is
// cheaper than a heap's push and pop; past kSmall (many slices open at
// once: a job's epochs), in a heap. While the heap holds any, the array
// is empty.
class PendingEnds {
 public:
  bool empty() const { return small_count_ == 0 && heap_.empty(); }
  const PendingEnd& top() const {
    return small_count_ > 0 ? small_[small_count_ - 1] : heap_.top();
  }
  void push(const PendingEnd& end) {
    if (heap_.empty() && small_count_ < kSmall) {
      size_t at = small_count_;
      while (at > 0 && end > small_[at - 1]) {  // later than that one
        small_[at] = small_[at - 1];
        --at;
      }
      small_[at] = end;
      ++small_count_;
      return;
    }
    for (size_t i = 0; i < small_count_; ++i) heap_.push(small_[i]);
    small_count_ = 0;
    heap_.push(end);
  }
  void pop() {
    if (small_count_ > 0) {
      --small_count_;
    } else {
      heap_.pop();
    }
  }

 private:
  static constexpr size_t kSmall = 8;
  PendingEnd small_[kSmall];
  size_t small_count_ = 0;
  std::priority_queue<PendingEnd, std::vector<PendingEnd>, std::greater<PendingEnd>> heap_;
};

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_PERFETTO_PENDING_ENDS_H_
