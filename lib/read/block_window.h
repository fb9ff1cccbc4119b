// The decoded blocks of one trace file that the merge has reached and not yet
// drained (file_stream.h): which of them holds the file's next event, until
// when it keeps it, and the memory of drained blocks kept for the next ones.
// Part of FileStream; its methods on the merge's per-event path are inline.
#ifndef DLPROF_LIB_READ_BLOCK_WINDOW_H_
#define DLPROF_LIB_READ_BLOCK_WINDOW_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <tuple>
#include <vector>

#include "lib/format/trace_file.h"

namespace dlprof::read {

// Events of one thread come out of the ring in the order they ended, and
// most blocks hold one busy thread, so a block is often in order already.
// When not, it is nearly so: a region or an outer call is recorded when it
// ends, after the calls it holds. The events that keep the order are taken
// as they are, the few late ones sorted and merged in. The sort runs on
// compact keys, not through 64-byte events. Leaves `order` empty when the
// block is in order as stored.
void SortOrder(const format::DecodedBlock& block, std::vector<uint32_t>* order);

// A decoded block and how far the merge has drained it.
struct OpenBlock {
  format::DecodedBlock data;
  std::vector<uint32_t> order;  // positions by (start, tid, position); empty: as stored
  size_t pos = 0;
  int32_t rank = -1;
  uint32_t seq = 0;  // its place in the file

  size_t at(size_t k) const { return order.empty() ? k : order[k]; }
  const Event& head() const { return data.events[at(pos)]; }
  int32_t head_tid() const { return data.tids[at(pos)]; }
  bool done() const { return pos == data.events.size(); }
};

class BlockWindow {
 public:
  BlockWindow() = default;
  BlockWindow(const BlockWindow&) = delete;
  BlockWindow& operator=(const BlockWindow&) = delete;
  // Hands its drained blocks' memory to the next window (SpareBlocks).
  ~BlockWindow();

  // Makes head() the open block whose next event is due first (null when
  // every open block is drained), and clear_until() the start of the next
  // event of any other open block.
  void FindHead() {
    head_ = nullptr;
    for (const auto& b : open_) {
      if (!b->done() && (head_ == nullptr || Before(*b, *head_))) head_ = b.get();
    }
    // Until an event starts at `clear_until_`, the head's block keeps the
    // head: nothing else open starts that early (Bound() adds what is due).
    clear_until_ = UINT64_MAX;
    for (const auto& b : open_) {
      if (b.get() != head_ && !b->done()) clear_until_ = std::min(clear_until_, b->head().start_ns);
    }
  }
  // Lowers clear_until() to `t`: a block not yet decoded may start there.
  void Bound(uint64_t t) { clear_until_ = std::min(clear_until_, t); }

  OpenBlock* head() const { return head_; }
  uint64_t clear_until() const { return clear_until_; }
  // Events in the open blocks, drained or not; the most there were at once.
  size_t events() const { return open_events_; }
  size_t peak_events() const { return peak_events_; }

  // An empty block to decode into, with the memory of a drained one if any:
  // this window's, else one a closed window left (a job's traces are read
  // a group at a time, each group in a stream of its own).
  std::unique_ptr<OpenBlock> TakeRecycled();
  // Opens a decoded block that holds events.
  void Add(std::unique_ptr<OpenBlock> b);
  // Closes a drained block; its memory is recycled on the next ReleaseSpent().
  void Retire(OpenBlock* b);
  // Frees the blocks drained before the events last handed out were used.
  // Their memory is kept for the next blocks: a decoded block is hundreds of
  // KB, and fresh memory costs page faults every time.
  void ReleaseSpent();
  // The file has no blocks left: its drained blocks go to the next windows
  // (as at destruction), or are freed. Call where ReleaseSpent() is.
  void Close();

 private:
  static bool Before(const OpenBlock& a, const OpenBlock& b) {
    return std::make_tuple(a.head().start_ns, a.head_tid(), a.seq) <
           std::make_tuple(b.head().start_ns, b.head_tid(), b.seq);
  }

  std::vector<std::unique_ptr<OpenBlock>> open_;
  std::vector<std::unique_ptr<OpenBlock>> spent_;  // drained; recycled on the next Next()
  std::vector<std::unique_ptr<OpenBlock>> recycled_;
  size_t open_events_ = 0;
  size_t peak_events_ = 0;
  OpenBlock* head_ = nullptr;
  uint64_t clear_until_ = 0;
};

}  // namespace dlprof::read

#endif  // DLPROF_LIB_READ_BLOCK_WINDOW_H_
