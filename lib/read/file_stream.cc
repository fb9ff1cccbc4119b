// FileStream (file_stream.h): each trace file merged from its decoded blocks
// (FileMerge), and the files merged into one stream by a heap of their heads.
#include "lib/read/file_stream.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "lib/format/trace_file.h"
#include "lib/read/block_window.h"
#include "lib/read/cufile_compat.h"
#include "lib/read/decode_pool.h"
#include "lib/read/file_strings.h"

namespace dlprof::read {

namespace {

// Events one file may have decoding ahead of the merge beyond one block.
// (with one file; a stream of many shares kPrefetchEvents * 16 among them).
constexpr uint64_t kPrefetchEvents = 64 * 1024;

// A file listed, then gone when read: a bounded trace's sweep deleted it.
std::string DeletedNote(const std::string& path) {
  return "note: " + path +
         ": deleted after it was listed (a bounded trace drops old segments as the job runs)";
}

// One file's blocks in the order they come due, and which are decoded.
class BlockSchedule {
 public:
  // Blocks come due in order of their first event. One without events
  // (the final marker, a block of strings or drop counts) is due last:
  // nothing waits for it.
  void Plan(std::vector<format::BlockLocation> blocks) {
    blocks_ = std::move(blocks);
    auto due = [this](uint32_t k) {
      const format::BlockLocation& b = blocks_[k];
      return b.event_count == 0 ? UINT64_MAX : b.first_start_ns;
    };
    by_due_.resize(blocks_.size());
    for (uint32_t k = 0; k < by_due_.size(); ++k) by_due_[k] = k;
    std::stable_sort(by_due_.begin(), by_due_.end(),
                     [&due](uint32_t a, uint32_t b) { return due(a) < due(b); });
    decoded_.assign(blocks_.size(), false);
  }

  // The first block in due order not yet decoded; kNoBlock when none is left.
  uint32_t NextDue() {
    while (next_due_ < by_due_.size() && decoded_[by_due_[next_due_]]) ++next_due_;
    return next_due_ < by_due_.size() ? by_due_[next_due_] : kNoBlock;
  }
  // The blocks in due order from the first not yet decoded, for prefetching.
  size_t next_due() const { return next_due_; }
  size_t size() const { return by_due_.size(); }
  uint32_t due(size_t i) const { return by_due_[i]; }

  const format::BlockLocation& block(uint32_t k) const { return blocks_[k]; }
  bool decoded(uint32_t k) const { return decoded_[k]; }
  void MarkDecoded(uint32_t k) { decoded_[k] = true; }

 private:
  std::vector<format::BlockLocation> blocks_;  // in file order
  std::vector<uint32_t> by_due_;               // block indices, earliest first event first
  size_t next_due_ = 0;
  std::vector<bool> decoded_;
};

}  // namespace

// One file: the blocks decoded so far, merged. See file_stream.h.
class FileStream::FileMerge {
 public:
  FileMerge(ProcessTrace* p, size_t window_events, uint64_t prefetch_events,
            size_t string_bytes, DecodePool* pool, const DomainMap* map)
      : p_(p),
        window_events_(window_events),
        prefetch_events_(prefetch_events),
        pool_(pool),
        map_(map),
        strings_(p, string_bytes),
        compat_(&p->strings) {}

  // Opens the file and lists its blocks, then closes it until the merge
  // reaches them (Reopened()). Returns the OR of their flags.
  uint32_t Open(uint64_t* announced, bool read_before) {
    std::string error;
    if (!reader_.Open(p_->path, &error)) {
      struct stat st;
      p_->vanished = read_before && stat(p_->path.c_str(), &st) != 0 && errno == ENOENT;
      p_->messages.push_back(p_->vanished ? DeletedNote(p_->path) : "error: " + error);
      finished_ = true;
      return 0;
    }
    p_->opened = true;
    p_->info = reader_.process();
    uint32_t flags = 0;
    format::BlockList list = format::ListBlocks(&reader_);
    // Damage between blocks j-1 and j sorts after block j-1's own.
    for (const auto& [j, message] : list.damage) {
      Damage(j == 0 ? 0 : list.blocks[j - 1].offset + 1, message);
    }
    if (reader_.trailing_bytes() > 0) {
      p_->messages.push_back("warning: " + p_->path + ": at byte " +
                             std::to_string(reader_.trailing_at()) + ": " +
                             std::to_string(reader_.trailing_bytes()) +
                             " trailing bytes after the end marker, no block in them; "
                             "ignored (the process ended cleanly before them)");
    }
    for (const format::BlockLocation& where : list.blocks) {
      flags |= where.flags;
      *announced += where.event_count;
    }
    schedule_.Plan(std::move(list.blocks));
    // A job of thousands of processes would otherwise hold a descriptor
    // for each until the stream ends, and fail at the limit (1,024).
    reader_.CloseFile();
    return flags;
  }

  // Makes head() the event due next, decoding the blocks that may hold an
  // earlier one. False when the file has no events left.
  bool Settle() {
    do {
      window_.FindHead();
    } while (DecodeDue());
    if (window_.head() == nullptr) {
      Finish();
      return false;
    }
    return true;
  }

  const Event& head() const { return window_.head()->head(); }
  int32_t head_tid() const { return window_.head()->head_tid(); }

  // The earliest start of the block due first, before any is decoded (on
  // the stream's time base); false when the file holds no events.
  bool FirstStart(uint64_t* start) {
    if (finished_) return false;
    const uint32_t k = schedule_.NextDue();
    if (k == kNoBlock || schedule_.block(k).event_count == 0) return false;
    *start = Mapped(schedule_.block(k).first_start_ns);
    return true;
  }

  // Hands out head(), then the events after it in its block for as long as
  // they start before `limit` (and no other block of the file holds an
  // earlier one), up to `max` in all. `*more`: false when the file has no
  // events left; otherwise head() is the next one. Returns how many.
  size_t Pop(StreamEvent* out, size_t max, uint32_t process, uint64_t limit, bool* more) {
    OpenBlock& b = *window_.head();
    const uint64_t stop = std::min(limit, window_.clear_until());
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
    // The events are this merge's own (b's), handed out as const.
    for (size_t k = 0; k < n; ++k) compat_.See(const_cast<Event&>(*out[k].event), out[k].tid);
    if (b.done()) {
      window_.Retire(&b);
      *more = Settle();
    } else {
      // Fast path: the same block still holds the earliest event.
      *more = b.head().start_ns < window_.clear_until() || Settle();
    }
    return n;
  }

  // Whether it holds decoded blocks (or their memory): from its first
  // decoded block until its memory is released.
  bool holds_blocks() const { return decoded_any_ && !released_; }
  bool released() const { return released_; }
  // Frees the blocks drained before the events last handed out were used;
  // all of the file's memory once it has no events left.
  void ReleaseSpent() {
    if (!finished_) {
      window_.ReleaseSpent();
    } else if (!released_) {
      released_ = true;
      window_.Close();
      for (Prefetch& slot : prefetch_) {
        slot.data = {};  // (Finish() waited for the workers)
        slot.order = {};
      }
      decoder_.Release();
      reader_.Release();
      scratch_ = {};
    }
  }
  size_t peak_events() const { return window_.peak_events(); }

 private:
  // Decodes the next block due if it may hold an event before the head and
  // the window has room (true: the head must be found again). Otherwise
  // bounds the head's run by that block's start, warning once when the
  // window is full.
  bool DecodeDue() {
    const uint32_t k = schedule_.NextDue();
    if (k == kNoBlock) return false;
    const format::BlockLocation& next = schedule_.block(k);
    const OpenBlock* head = window_.head();
    const uint64_t next_start = Mapped(next.first_start_ns);
    const bool due =
        head == nullptr || next.event_count == 0 || next_start <= head->head().start_ns;
    if (due && (head == nullptr || window_.events() < window_events_)) {
      if (!Reopened()) return false;
      Decode(k);
      return true;
    }
    if (next.event_count != 0) window_.Bound(next_start);
    if (due && !window_warned_) {
      window_warned_ = true;
      p_->messages.push_back("warning: " + p_->path + ": more than " +
                             std::to_string(window_events_) +
                             " events overlap in time; they are merged out of order");
    }
    return false;
  }

  // The file open again for its blocks, from the first decoded until
  // Finish(): so the files open are those whose blocks overlap the merge's
  // position. False when it is gone or another by now: it is not read (no
  // block of it was yet), as if listed a moment later.
  bool Reopened() {
    if (unread_) return false;
    std::string error;
    bool gone = false;
    if (reader_.Reopen(&error, &gone)) return true;
    unread_ = true;
    p_->opened = false;
    p_->vanished = gone;
    p_->messages.push_back(gone ? DeletedNote(p_->path) : "error: " + error);
    return false;
  }

  void Decode(uint32_t k) {
    decoded_any_ = true;
    schedule_.MarkDecoded(k);
    LendStringsBefore(k);
    std::unique_ptr<OpenBlock> b = window_.TakeRecycled();
    std::string why, error;
    const bool decoded = DecodeInto(k, b.get(), &why);
    PrefetchNext(k);
    if (!reader_.Account(schedule_.block(k), decoded, why, &error)) {
      Damage(schedule_.block(k).offset, error);
      return;
    }
    ++p_->blocks;
    p_->dropped_events += b->data.info.dropped_events;
    strings_.Add(&b->data);
    strings_.CountUndefined(b->data, k);
    if (b->data.events.empty()) return;
    CountFaultGaps(b->data.events);
    if (map_ != nullptr) {
      // Onto the job's time base: monotonic, so the block's order holds.
      for (Event& e : b->data.events) e.start_ns = map_->Map(e.start_ns);
    }
    b->rank = b->data.info.rank >= 0 ? b->data.info.rank : p_->info.rank;
    b->seq = k;
    window_.Add(std::move(b));
  }

  // The records of faults the runtime could not watch (catalogue.h).
  void CountFaultGaps(const std::vector<Event>& events) {
    for (const Event& e : events) {
      if (e.kind == static_cast<uint16_t>(EventKind::MapsUntracked)) {
        p_->maps_untracked += static_cast<uint64_t>(e.ret);
      } else if (e.kind == static_cast<uint16_t>(EventKind::FaultsUnwatched)) {
        const uint64_t threads = e.aux != 0 ? e.aux : 1;  // (aux: a count past the list)
        (e.size != 0 ? p_->unwatched_readers : p_->unwatched_others) += threads;
      } else if (e.kind == static_cast<uint16_t>(EventKind::MapWaitsLost) && e.ret > 0) {
        p_->map_waits_lost += static_cast<uint64_t>(e.ret);
      }
    }
  }

  // A string is written in the block of the first event that uses it or
  // before; blocks decoded out of file order first lend their strings.
  void LendStringsBefore(uint32_t k) {
    for (; strings_through_ < k; ++strings_through_) {
      if (schedule_.decoded(strings_through_)) continue;
      std::string error;
      if (reader_.DecodeAt(schedule_.block(strings_through_), &scratch_, &error)) {
        strings_.Add(&scratch_);  // its events are decoded again when due
      } else {
        schedule_.MarkDecoded(strings_through_);  // damaged: reported once, here
        Damage(schedule_.block(strings_through_).offset, error);
      }
    }
    if (strings_through_ == k) ++strings_through_;
  }

  // Block `k` decoded and sorted into `b`: by a worker if it has it, else here.
  bool DecodeInto(uint32_t k, OpenBlock* b, std::string* why) {
    Prefetch* ready = prefetch_.Find(k);
    if (ready == nullptr) {
      const bool decoded = reader_.DecodeWith(&decoder_, schedule_.block(k), &b->data, why);
      if (decoded) SortOrder(b->data, &b->order);
      return decoded;
    }
    pool_->Wait(ready);
    ready->block = kNoBlock;
    *why = std::move(ready->why);
    std::swap(b->data, ready->data);
    std::swap(b->order, ready->order);
    return ready->ok;
  }

  // Keeps the workers decoding the blocks due after `k`, a few ahead (up to
  // kPrefetchEvents events beyond the first), so that the merge rarely waits.
  void PrefetchNext(uint32_t k) {
    if (pool_ == nullptr) return;
    uint64_t in_flight = prefetch_.InFlightEvents();
    size_t i = schedule_.next_due();
    for (Prefetch& slot : prefetch_) {
      if (slot.block != kNoBlock) continue;
      for (; i < schedule_.size(); ++i) {
        const uint32_t j = schedule_.due(i);
        if (j != k && !schedule_.decoded(j) && !prefetch_.Holds(j)) break;
      }
      if (i == schedule_.size()) return;
      const uint32_t events = schedule_.block(schedule_.due(i)).event_count;
      if (in_flight > 0 && in_flight + events > prefetch_events_) return;
      in_flight += events;
      slot.block = schedule_.due(i);
      slot.where = schedule_.block(slot.block);
      slot.reader = &reader_;
      pool_->Submit(&slot);
    }
  }

  void Finish() {
    if (finished_) return;
    finished_ = true;
    if (unread_) return;  // said by Reopened()
    // A worker may still be reading a block no longer wanted (damaged when
    // it lent its strings): the descriptor is its until it is done.
    for (Prefetch& slot : prefetch_) {
      if (slot.block == kNoBlock) continue;
      pool_->Wait(&slot);
      slot.block = kNoBlock;
    }
    reader_.CloseFile();
    p_->damaged_blocks = reader_.damaged_blocks();
    p_->lost_events = reader_.lost_events();
    p_->uncounted_damage = reader_.uncounted_damage();
    p_->saw_final = reader_.saw_final_block();
    SortDamage();
    if (strings_.undefined() > 0) {
      p_->messages.push_back("warning: " + p_->path + ": " + std::to_string(strings_.undefined()) +
                             " events name a path whose string is missing" +
                             strings_.DescribeUndefined(schedule_.size()));
    }
    if (p_->dropped_events > 0) {
      p_->messages.push_back("warning: " + p_->path + ": " + std::to_string(p_->dropped_events) +
                             " events were dropped (full buffers with DLPROF_ON_FULL=drop, GPU "
                             "records CUPTI lost, page-fault records the kernel's buffers "
                             "could not hold, or calls on files first seen after the tracer's "
                             "table of paths was full: its stderr said which)");
    }
    if (p_->maps_untracked > 0) {
      p_->messages.push_back("warning: " + p_->path + ": " + std::to_string(p_->maps_untracked) +
                             " mappings of traced files found no room in the tracer's map "
                             "table: page faults on them are not major_fault events, and "
                             "the figures of reading through maps are short");
    }
    if (p_->unwatched_readers > 0 || p_->unwatched_others > 0) {
      p_->messages.push_back(
          "warning: " + p_->path + ": the kernel refused page-fault buffers (locked memory "
          "spent: kernel.perf_event_mlock_kb, or RLIMIT_MEMLOCK without CAP_IPC_LOCK): " +
          std::to_string(p_->unwatched_readers) + " threads reading through maps and " +
          std::to_string(p_->unwatched_others) + " others had none, and their page faults, "
          "if any, are not major_fault events (faults_unwatched records name them)");
    }
    if (p_->map_waits_lost > 0) {
      p_->messages.push_back(
          "warning: " + p_->path + ": " + std::to_string(p_->map_waits_lost) +
          " minor-fault records did not fit the kernel's buffers (a thread touched fresh "
          "memory faster than the tracer read them): waits for pages being read ahead among "
          "them are not map_wait events (map_waits_lost records name the threads)");
    }
    if (!p_->saw_final) {
      // The last block may be the events recovered from the rings sidecar
      // (lib/format/sidecar.h): say how many, and how many it had lost.
      const format::Recovery& r = reader_.recovery();
      const bool recovered = r.events > 0;
      std::string note = "note: " + p_->path + ": no end marker; process " +
                         std::to_string(p_->info.pid) +
                         " was killed or is still running; decoded " +
                         std::to_string(p_->blocks - (recovered ? 1 : 0)) + " blocks";
      if (recovered) {
        note += "; recovered " + std::to_string(r.events) + " events from " + r.path;
      }
      if (r.lost > 0) note += "; " + std::to_string(r.lost) + " events were overwritten there";
      p_->messages.push_back(note);
    }
  }

  // A block start on the stream's time base.
  uint64_t Mapped(uint64_t t) const { return map_ == nullptr ? t : map_->Map(t); }

  // An error about the file's bytes near `key` (an order key: a block's
  // offset, or one past it for damage after that block).
  void Damage(uint64_t key, const std::string& message) {
    damage_.emplace_back(key, p_->messages.size());
    p_->messages.push_back("error: " + message);
  }

  // Damage in block headers is found when the file is listed, damage in
  // payloads as the blocks are decoded (in time order): the errors are put
  // in file order, in the places they hold among the file's messages.
  void SortDamage() {
    std::vector<std::pair<uint64_t, std::string>> sorted;
    for (const auto& [key, i] : damage_) sorted.emplace_back(key, std::move(p_->messages[i]));
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<size_t> slots;
    for (const auto& d : damage_) slots.push_back(d.second);
    std::sort(slots.begin(), slots.end());
    for (size_t n = 0; n < slots.size(); ++n) p_->messages[slots[n]] = std::move(sorted[n].second);
    damage_.clear();
  }

  ProcessTrace* p_;
  const size_t window_events_;
  const uint64_t prefetch_events_;
  DecodePool* const pool_;  // null: decode on this thread only
  const DomainMap* const map_;  // null: times as recorded
  PrefetchSlots prefetch_;
  format::TraceReader reader_;
  format::BlockDecoder decoder_;  // this thread's
  BlockSchedule schedule_;
  uint32_t strings_through_ = 0;  // strings of blocks [0, this) are known
  BlockWindow window_;
  uint32_t ordinal_ = 0;
  bool finished_ = false;
  bool unread_ = false;  // gone or replaced when the merge reached it
  bool decoded_any_ = false;
  bool released_ = false;  // its memory, once finished (ReleaseSpent)
  bool window_warned_ = false;
  std::vector<std::pair<uint64_t, size_t>> damage_;  // order key, index into messages
  FileStrings strings_;
  CufileCompatReads compat_;  // after strings_: reads p_->strings
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
                       size_t window_events, std::vector<const DomainMap*> maps,
                       const std::vector<int32_t>& ranks,
                       const std::vector<bool>& read_before) {
  if (threads > 0) pool_ = std::make_unique<DecodePool>(threads);
  processes_.resize(files.size());
  // The window and the read-ahead are the stream's, shared out among its
  // files: a directory of a thousand (forged) traces does not multiply them.
  const size_t n = std::max<size_t>(files.size(), 1);
  const size_t window = std::max(std::min(kMinWindowEvents, window_events), window_events / n);
  const uint64_t prefetch =
      std::max<uint64_t>(1, std::min<uint64_t>(kPrefetchEvents, kPrefetchEvents * 16 / n));
  const size_t strings = std::max(kMinStringBytesPerFile, kMaxStringBytesPerFile / n);
  maps.resize(files.size(), nullptr);
  for (size_t i = 0; i < files.size(); ++i) {
    processes_[i].path = files[i];
    files_.push_back(
        std::make_unique<FileMerge>(&processes_[i], window, prefetch, strings, pool_.get(),
                                    maps[i]));
    block_flags_ |=
        files_.back()->Open(&announced_events_, i < read_before.size() && read_before[i]);
    if (processes_[i].info.rank < 0 && i < ranks.size()) processes_[i].info.rank = ranks[i];
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
  return {f.head().start_ns, processes_[process].info.pid, f.head_tid(), process, true};
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
      uint64_t start;
      if (files_[i]->FirstStart(&start)) {
        heap_.push_back({start, processes_[i].info.pid, INT32_MIN, i, false});
      } else {
        files_[i]->Settle();  // no events: it ends here, with its messages
        entered_.push_back(i);
      }
    }
    std::make_heap(heap_.begin(), heap_.end(), later);
  }
  // Only the files the merge has entered and not yet released hold blocks
  // (a few of ten thousand): visiting every file each batch would cost more
  // than the batch's events.
  size_t holding = 0;
  for (size_t k = 0; k < entered_.size();) {
    FileMerge& f = *files_[entered_[k]];
    holding += f.holds_blocks();
    f.ReleaseSpent();
    if (f.released()) {
      entered_[k] = entered_.back();
      entered_.pop_back();
    } else {
      ++k;
    }
  }
  peak_files_decoded_ = std::max(peak_files_decoded_, holding);
  size_t n = 0;
  while (n < max && !heap_.empty()) {
    const uint32_t process = heap_[0].process;
    FileMerge& f = *files_[process];
    if (!heap_[0].settled) {
      // The merge has reached the file's bound: its first block is due.
      entered_.push_back(process);
      if (f.Settle()) {
        heap_[0] = HeadOf(process);  // no earlier than the bound: moves down
        SiftDown();
      } else {
        std::pop_heap(heap_.begin(), heap_.end(), later);
        heap_.pop_back();
      }
      continue;
    }
    // The file on top hands out its events for as long as it stays ahead of
    // every other: the earlier of the top's two children.
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

}  // namespace dlprof::read
