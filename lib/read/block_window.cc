// The per-file block window of FileStream (block_window.h): the sort of a
// block's events into merge order, and opening, retiring and recycling blocks.
#include "lib/read/block_window.h"

#include <mutex>
#include <utility>

namespace dlprof::read {
namespace {

// Drained blocks that closed windows left, for the next windows to decode
// into: a directory of ten thousand traces is ten thousand streams of a
// window each, and each new window's blocks would otherwise be fresh memory
// (zeroed, page-faulted, moved as it grew): 40 % of a summary of 128 ranked
// traces. A few, so that memory stays bounded; any thread's.
class SpareBlocks {
 public:
  static constexpr size_t kMax = 4;
  std::unique_ptr<OpenBlock> Take() {
    std::lock_guard<std::mutex> hold(mu_);
    if (spares_.empty()) return nullptr;
    std::unique_ptr<OpenBlock> b = std::move(spares_.back());
    spares_.pop_back();
    return b;
  }
  void Give(std::unique_ptr<OpenBlock> b) {
    std::lock_guard<std::mutex> hold(mu_);
    if (spares_.size() < kMax) spares_.push_back(std::move(b));
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<OpenBlock>> spares_;
};

SpareBlocks& Spares() {
  static SpareBlocks* spares = new SpareBlocks();  // never destroyed: used until exit
  return *spares;
}

}  // namespace

void SortOrder(const format::DecodedBlock& block, std::vector<uint32_t>* order) {
  order->clear();
  if (block.in_start_order) return;  // the decoder checked
  const auto& ev = block.events;
  const auto& tids = block.tids;
  const size_t n = ev.size();
  struct Key {
    uint64_t start;
    uint64_t tid_index;  // tid (sign bit flipped to sort as signed), then position
    bool operator<(const Key& o) const {
      return start < o.start || (start == o.start && tid_index < o.tid_index);
    }
  };
  std::vector<Key> in_order, late;
  in_order.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t tid = static_cast<uint32_t>(tids[i]) ^ 0x80000000u;
    const Key k{ev[i].start_ns, tid << 32 | i};
    if (in_order.empty() || !(k < in_order.back())) {
      in_order.push_back(k);
    } else {
      late.push_back(k);
    }
  }
  std::sort(late.begin(), late.end());
  order->resize(n);
  auto out = order->begin();
  auto a = in_order.begin(), b = late.begin();
  while (a != in_order.end() || b != late.end()) {
    const bool take_late = a == in_order.end() || (b != late.end() && *b < *a);
    *out++ = static_cast<uint32_t>((take_late ? *b++ : *a++).tid_index);
  }
}

BlockWindow::~BlockWindow() { Close(); }

void BlockWindow::Close() {
  for (auto* list : {&recycled_, &spent_, &open_}) {
    for (auto& b : *list) Spares().Give(std::move(b));
    list->clear();
  }
  open_events_ = 0;
  head_ = nullptr;
}

std::unique_ptr<OpenBlock> BlockWindow::TakeRecycled() {
  std::unique_ptr<OpenBlock> b;
  if (!recycled_.empty()) {
    b = std::move(recycled_.back());
    recycled_.pop_back();
  } else if ((b = Spares().Take()) == nullptr) {
    return std::make_unique<OpenBlock>();
  }
  b->pos = 0;
  b->order.clear();
  return b;
}

void BlockWindow::Add(std::unique_ptr<OpenBlock> b) {
  open_events_ += b->data.events.size();
  peak_events_ = std::max(peak_events_, open_events_);
  open_.push_back(std::move(b));
}

void BlockWindow::Retire(OpenBlock* b) {
  open_events_ -= b->data.events.size();
  for (auto& slot : open_) {
    if (slot.get() == b) {
      spent_.push_back(std::move(slot));
      slot = std::move(open_.back());
      open_.pop_back();
      return;
    }
  }
}

void BlockWindow::ReleaseSpent() {
  for (auto& b : spent_) {
    if (recycled_.size() < 2) recycled_.push_back(std::move(b));
  }
  spent_.clear();
}

}  // namespace dlprof::read
