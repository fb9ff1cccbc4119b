#include "lib/read/file_stream.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>

#include "lib/format/trace_file.h"

namespace dlprof::dump {

namespace {

constexpr uint32_t kNoBlock = UINT32_MAX;
// Events one file may have decoding ahead of the merge beyond one block.
constexpr uint64_t kPrefetchEvents = 64 * 1024;

// Events of one thread come out of the ring in the order they ended, and
// most blocks hold one busy thread, so a block is often in order already.
// When not, it is nearly so: a region or an outer call is recorded when it
// ends, after the calls it holds. The events that keep the order are taken
// as they are, the few late ones sorted and merged in. The sort runs on
// compact keys, not through 64-byte events. Leaves `order` empty when the
// block is in order as stored.
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

// A block one file will need next, decoded and sorted on a worker thread.
struct Prefetch {
  uint32_t block = kNoBlock;  // kNoBlock: idle
  format::BlockLocation where;
  const format::TraceReader* reader = nullptr;
  std::atomic<bool> done{false};  // set under the pool's mutex; the rest belongs
  bool ok = false;                // to the worker until done, then to the file
  std::string why;
  format::DecodedBlock data;
  std::vector<uint32_t> order;
};

}  // namespace

// Worker threads that decode blocks ahead of the merge: while the merge and
// the analysis run on the main thread, each file's next block is already
// being decompressed, decoded and sorted. Many files decode in parallel.
class FileStream::DecodePool {
 public:
  explicit DecodePool(unsigned threads) {
    for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
  }
  ~DecodePool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void Submit(Prefetch* p) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      p->done.store(false, std::memory_order_relaxed);
      queue_.push_back(p);
    }
    work_cv_.notify_one();
  }
  void Wait(Prefetch* p) {
    // A block takes a few hundred microseconds to decode: spin briefly
    // before sleeping, since a sleep and wake-up cost about as much.
    for (int i = 0; i < 4096 && !p->done.load(std::memory_order_acquire); ++i) {
      __builtin_ia32_pause();
    }
    if (p->done.load(std::memory_order_acquire)) return;
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [p] { return p->done.load(std::memory_order_relaxed); });
  }

 private:
  void Work() {
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

  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Prefetch*> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

// One file: the blocks decoded so far, merged. See file_stream.h.
class FileStream::FileMerge {
 public:
  FileMerge(ProcessTrace* p, size_t window_events, DecodePool* pool)
      : p_(p), window_events_(window_events), pool_(pool) {}

  // Opens the file and lists its blocks. Returns the OR of their flags.
  uint32_t Open(uint64_t* announced) {
    std::string error;
    if (!reader_.Open(p_->path, &error)) {
      p_->messages.push_back("error: " + error);
      finished_ = true;
      return 0;
    }
    p_->opened = true;
    p_->info = reader_.process();
    uint32_t flags = 0;
    for (format::BlockLocation where;;) {
      auto status = reader_.NextLocation(&where, &error);
      if (status == format::TraceReader::Status::kEnd) break;
      if (status == format::TraceReader::Status::kDamaged) {
        p_->messages.push_back("error: " + error);
        continue;
      }
      blocks_.push_back(where);
      flags |= where.flags;
      *announced += where.event_count;
    }
    // Blocks come due in order of their first event. One without events
    // (the final marker, a block of strings or drop counts) is due last:
    // nothing waits for it.
    auto due = [this](uint32_t k) {
      const format::BlockLocation& b = blocks_[k];
      return b.event_count == 0 ? UINT64_MAX : b.first_start_ns;
    };
    by_due_.resize(blocks_.size());
    for (uint32_t k = 0; k < by_due_.size(); ++k) by_due_[k] = k;
    std::stable_sort(by_due_.begin(), by_due_.end(),
                     [&due](uint32_t a, uint32_t b) { return due(a) < due(b); });
    decoded_.assign(blocks_.size(), false);
    return flags;
  }

  // Makes head() the event due next, decoding the blocks that may hold an
  // earlier one. False when the file has no events left.
  bool Settle() {
    for (;;) {
      head_ = nullptr;
      for (const auto& b : open_) {
        if (!b->done() && (head_ == nullptr || Before(*b, *head_))) head_ = b.get();
      }
      // Until an event starts at `clear_until_`, the head's block keeps the
      // head: nothing else open or due starts that early.
      clear_until_ = UINT64_MAX;
      for (const auto& b : open_) {
        if (b.get() != head_ && !b->done()) clear_until_ = std::min(clear_until_, b->head().start_ns);
      }
      while (next_due_ < by_due_.size() && decoded_[by_due_[next_due_]]) ++next_due_;
      if (next_due_ < by_due_.size()) {
        const uint32_t k = by_due_[next_due_];
        const bool due = head_ == nullptr || blocks_[k].event_count == 0 ||
                         blocks_[k].first_start_ns <= head_->head().start_ns;
        if (due && (head_ == nullptr || open_events_ < window_events_)) {
          Decode(k);
          continue;
        }
        if (blocks_[k].event_count != 0) {
          clear_until_ = std::min(clear_until_, blocks_[k].first_start_ns);
        }
        if (due && !window_warned_) {
          window_warned_ = true;
          p_->messages.push_back("warning: " + p_->path + ": more than " +
                                 std::to_string(window_events_) +
                                 " events overlap in time; they are merged out of order");
        }
      }
      if (head_ == nullptr) {
        Finish();
        return false;
      }
      return true;
    }
  }

  const Event& head() const { return head_->head(); }
  int32_t head_tid() const { return head_->head_tid(); }

  // Hands out head(), then the events after it in its block for as long as
  // they start before `limit` (and no other block of the file holds an
  // earlier one), up to `max` in all. `*more`: false when the file has no
  // events left; otherwise head() is the next one. Returns how many.
  size_t Pop(StreamEvent* out, size_t max, uint32_t process, uint64_t limit, bool* more) {
    OpenBlock& b = *head_;
    const uint64_t stop = std::min(limit, clear_until_);
    size_t n = 0;
    if (b.order.empty()) {
      // Stored in order (the usual block): a stretch of the arrays.
      const Event* ev = b.data.events.data();
      const int32_t* tids = b.data.tids.data();
      const size_t last = std::min(b.data.events.size(), b.pos + max);
      size_t i = b.pos;
      do {
        out[n++] = {&ev[i], tids[i], b.rank, process, ordinal_++};
      } while (++i < last && ev[i].start_ns < stop);
      b.pos = i;
    } else {
      do {
        const size_t i = b.order[b.pos++];
        out[n++] = {&b.data.events[i], b.data.tids[i], b.rank, process, ordinal_++};
      } while (n < max && !b.done() && b.head().start_ns < stop);
    }
    if (b.done()) {
      Retire(&b);
      *more = Settle();
    } else {
      // Fast path: the same block still holds the earliest event.
      *more = b.head().start_ns < clear_until_ || Settle();
    }
    return n;
  }

  // Frees the blocks drained before the events last handed out were used.
  // Their memory is kept for the next blocks: a decoded block is hundreds of
  // KB, and fresh memory costs page faults every time.
  void ReleaseSpent() {
    for (auto& b : spent_) {
      if (recycled_.size() < 2) recycled_.push_back(std::move(b));
    }
    spent_.clear();
  }
  size_t peak_events() const { return peak_events_; }

 private:
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

  static bool Before(const OpenBlock& a, const OpenBlock& b) {
    return std::make_tuple(a.head().start_ns, a.head_tid(), a.seq) <
           std::make_tuple(b.head().start_ns, b.head_tid(), b.seq);
  }

  void Decode(uint32_t k) {
    decoded_[k] = true;
    // A string is written in the block of the first event that uses it or
    // before; blocks decoded out of file order first lend their strings.
    for (; strings_through_ < k; ++strings_through_) {
      if (decoded_[strings_through_]) continue;
      std::string error;
      if (reader_.DecodeAt(blocks_[strings_through_], &scratch_, &error)) {
        AddStrings(&scratch_);  // its events are decoded again when due
      } else {
        decoded_[strings_through_] = true;  // damaged: reported once, here
        p_->messages.push_back("error: " + error);
      }
    }
    if (strings_through_ == k) ++strings_through_;

    std::unique_ptr<OpenBlock> b = TakeRecycled();
    bool decoded;
    std::string why, error;
    Prefetch* ready = nullptr;
    for (Prefetch& slot : prefetch_) {
      if (slot.block == k) ready = &slot;
    }
    if (ready != nullptr) {
      pool_->Wait(ready);
      ready->block = kNoBlock;
      decoded = ready->ok;
      why = std::move(ready->why);
      std::swap(b->data, ready->data);
      std::swap(b->order, ready->order);
    } else {
      decoded = reader_.DecodeWith(&decoder_, blocks_[k], &b->data, &why);
      if (decoded) SortOrder(b->data, &b->order);
    }
    PrefetchNext(k);
    if (!reader_.Account(blocks_[k], decoded, why, &error)) {
      p_->messages.push_back("error: " + error);
      return;
    }
    ++p_->blocks;
    p_->dropped_events += b->data.info.dropped_events;
    AddStrings(&b->data);
    const auto& runs = b->data.file_runs;
    for (size_t r = 0; r < runs.size(); ++r) {
      const uint32_t file = runs[r].file;
      if (file == 0 || file == last_known_file_) continue;
      if (p_->strings.count(file)) {
        last_known_file_ = file;
      } else {
        const size_t end = r + 1 < runs.size() ? runs[r + 1].first : b->data.events.size();
        undefined_strings_ += end - runs[r].first;
      }
    }
    if (b->data.events.empty()) return;
    b->rank = b->data.info.rank >= 0 ? b->data.info.rank : p_->info.rank;
    b->seq = k;
    open_events_ += b->data.events.size();
    peak_events_ = std::max(peak_events_, open_events_);
    open_.push_back(std::move(b));
  }

  std::unique_ptr<OpenBlock> TakeRecycled() {
    if (recycled_.empty()) return std::make_unique<OpenBlock>();
    std::unique_ptr<OpenBlock> b = std::move(recycled_.back());
    recycled_.pop_back();
    b->pos = 0;
    b->order.clear();
    return b;
  }

  // Keeps the workers decoding the blocks due after `k`, a few ahead (up to
  // kPrefetchEvents events beyond the first), so that the merge rarely waits.
  void PrefetchNext(uint32_t k) {
    if (pool_ == nullptr) return;
    uint64_t in_flight = 0;
    for (const Prefetch& slot : prefetch_) {
      if (slot.block != kNoBlock) in_flight += slot.where.event_count;
    }
    size_t i = next_due_;
    for (Prefetch& slot : prefetch_) {
      if (slot.block != kNoBlock) continue;
      for (; i < by_due_.size(); ++i) {
        const uint32_t j = by_due_[i];
        if (j != k && !decoded_[j] && !Prefetching(j)) break;
      }
      if (i == by_due_.size()) return;
      const uint32_t events = blocks_[by_due_[i]].event_count;
      if (in_flight > 0 && in_flight + events > kPrefetchEvents) return;
      in_flight += events;
      slot.block = by_due_[i];
      slot.where = blocks_[slot.block];
      slot.reader = &reader_;
      pool_->Submit(&slot);
    }
  }

  bool Prefetching(uint32_t block) const {
    for (const Prefetch& slot : prefetch_) {
      if (slot.block == block) return true;
    }
    return false;
  }

  void AddStrings(format::DecodedBlock* block) {
    for (auto& s : block->strings) {
      if (string_bytes_ + s.text.size() > kMaxStringBytesPerFile) {
        if (!strings_warned_) {
          strings_warned_ = true;
          p_->messages.push_back("warning: " + p_->path + ": strings past " +
                                 std::to_string(kMaxStringBytesPerFile >> 20) +
                                 " MiB are ignored");
        }
        continue;
      }
      if (p_->strings.try_emplace(s.id, std::move(s.text)).second) {
        string_bytes_ += p_->strings[s.id].size();
      }
    }
  }

  void Retire(OpenBlock* b) {
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

  void Finish() {
    if (finished_) return;
    finished_ = true;
    p_->damaged_blocks = reader_.damaged_blocks();
    p_->saw_final = reader_.saw_final_block();
    if (undefined_strings_ > 0) {
      p_->messages.push_back("warning: " + p_->path + ": " + std::to_string(undefined_strings_) +
                             " events name a path whose string is missing");
    }
    if (p_->dropped_events > 0) {
      p_->messages.push_back("warning: " + p_->path + ": " + std::to_string(p_->dropped_events) +
                             " events were dropped (full buffers with DLPROF_ON_FULL=drop, or GPU "
                             "records CUPTI lost)");
    }
    if (!p_->saw_final) {
      p_->messages.push_back("note: " + p_->path + ": no end marker; process " +
                             std::to_string(p_->info.pid) +
                             " was killed or is still running; decoded " +
                             std::to_string(p_->blocks) + " blocks");
    }
  }

  ProcessTrace* p_;
  const size_t window_events_;
  DecodePool* const pool_;  // null: decode on this thread only
  std::array<Prefetch, 4> prefetch_;
  format::TraceReader reader_;
  format::BlockDecoder decoder_;  // this thread's
  std::vector<format::BlockLocation> blocks_;  // in file order
  std::vector<uint32_t> by_due_;               // block indices, earliest first event first
  size_t next_due_ = 0;
  std::vector<bool> decoded_;
  uint32_t strings_through_ = 0;  // strings of blocks [0, this) are known
  std::vector<std::unique_ptr<OpenBlock>> open_;
  std::vector<std::unique_ptr<OpenBlock>> spent_;  // drained; recycled on the next Next()
  std::vector<std::unique_ptr<OpenBlock>> recycled_;
  size_t open_events_ = 0;
  size_t peak_events_ = 0;
  OpenBlock* head_ = nullptr;
  uint64_t clear_until_ = 0;
  uint32_t ordinal_ = 0;
  bool finished_ = false;
  bool window_warned_ = false;
  size_t string_bytes_ = 0;
  bool strings_warned_ = false;
  uint64_t undefined_strings_ = 0;
  uint32_t last_known_file_ = 0;
  format::DecodedBlock scratch_;
};

unsigned DefaultDecodeThreads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n > 1 ? std::min(n - 1, 16u) : 0;
}

bool FileStream::Head::operator>(const Head& o) const {
  return std::tie(start, pid, tid, process) > std::tie(o.start, o.pid, o.tid, o.process);
}

FileStream::FileStream(const std::vector<std::string>& files, unsigned threads,
                       size_t window_events) {
  if (threads > 0) pool_ = std::make_unique<DecodePool>(threads);
  processes_.resize(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    processes_[i].path = files[i];
    files_.push_back(std::make_unique<FileMerge>(&processes_[i], window_events, pool_.get()));
    block_flags_ |= files_.back()->Open(&announced_events_);
  }
}

FileStream::~FileStream() {
  // Workers may be decoding into the files' prefetch slots: stop them first.
  pool_.reset();
}

size_t FileStream::peak_window_events() const {
  size_t peak = 0;
  for (const auto& f : files_) peak = std::max(peak, f->peak_events());
  return peak;
}

FileStream::Head FileStream::HeadOf(uint32_t process) const {
  const FileMerge& f = *files_[process];
  return {f.head().start_ns, processes_[process].info.pid, f.head_tid(), process};
}

void FileStream::SiftDown() {
  // heap_[0] got a later key: move it down to its place.
  const size_t size = heap_.size();
  size_t i = 0;
  const Head moving = heap_[0];
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= size) break;
    if (child + 1 < size && heap_[child] > heap_[child + 1]) ++child;
    if (!(moving > heap_[child])) break;
    heap_[i] = heap_[child];
    i = child;
  }
  heap_[i] = moving;
}

size_t FileStream::Next(StreamEvent* out, size_t max) {
  const auto later = std::greater<Head>();
  if (!started_) {
    started_ = true;
    for (uint32_t i = 0; i < files_.size(); ++i) {
      if (files_[i]->Settle()) heap_.push_back(HeadOf(i));
    }
    std::make_heap(heap_.begin(), heap_.end(), later);
  }
  for (auto& f : files_) f->ReleaseSpent();
  size_t n = 0;
  while (n < max && !heap_.empty()) {
    // The file on top hands out its events for as long as it stays ahead of
    // every other: the earlier of the top's two children.
    const uint32_t process = heap_[0].process;
    FileMerge& f = *files_[process];
    const Head* rival = heap_.size() < 2 ? nullptr
                        : heap_.size() < 3 || heap_[2] > heap_[1] ? &heap_[1]
                                                                    : &heap_[2];
    // Events strictly earlier than the rival's have no tie to break.
    const uint64_t limit = rival == nullptr ? UINT64_MAX : rival->start;
    for (;;) {
      bool more;
      n += f.Pop(&out[n], max - n, process, limit, &more);
      if (!more) {
        std::pop_heap(heap_.begin(), heap_.end(), later);
        heap_.pop_back();
        break;
      }
      if (n < max && f.head().start_ns < limit) continue;
      const Head next = HeadOf(process);
      if (n == max || (rival != nullptr && next > *rival)) {
        heap_[0] = next;
        SiftDown();
        break;
      }
    }
  }
  return n;
}

}  // namespace dlprof::dump
