// Reading a counters stream back (counters.h). Apart from counters.cc so
// that the runtime, which only writes records, links no stream library.
#include <algorithm>
#include <cstring>
#include <fstream>

#include "lib/format/counters.h"
#include "lib/format/crc32c.h"
#include "lib/format/varint.h"

namespace dlprof::format {
namespace {

// A bounds-checked varint reader: a damaged record fails, never overruns.
struct Cursor {
  const uint8_t* p;
  const uint8_t* end;
  bool bad = false;
  uint64_t U() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= end) {
        bad = true;
        return 0;
      }
      const uint8_t b = *p++;
      v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return v;
    }
    bad = true;
    return 0;
  }
  // A count of items of at least `min_bytes` each: no more than the bytes left allow.
  uint64_t Count(size_t min_bytes) {
    const uint64_t n = U();
    if (n > static_cast<uint64_t>(end - p) / min_bytes) bad = true;
    return bad ? 0 : n;
  }
  std::string Bytes(uint64_t n) {
    if (n > static_cast<uint64_t>(end - p)) {
      bad = true;
      return {};
    }
    std::string s(reinterpret_cast<const char*>(p), n);
    p += n;
    return s;
  }
};

void GetIo(Cursor& c, IoTotals* io) {
  for (uint64_t* v : {&io->reads, &io->read_bytes, &io->read_ns, &io->writes, &io->write_bytes,
                      &io->write_ns, &io->other_calls, &io->other_ns}) {
    *v = c.U();
  }
}

bool DecodeInterval(Cursor& c, IntervalRecord* r) {
  r->start_ns = c.U();
  r->end_ns = r->start_ns + c.U();
  r->rank = static_cast<int32_t>(UnZigZag(c.U()));
  r->events = c.U();
  for (IoTotals& io : r->classes) GetIo(c, &io);
  const uint64_t kinds = c.Count(5);
  for (uint64_t i = 0; i < kinds && !c.bad; ++i) {
    KindRow k;
    k.kind = static_cast<uint32_t>(c.U());
    k.calls = c.U();
    k.bytes = c.U();
    k.ns = c.U();
    k.errors = c.U();
    r->kinds.push_back(k);
  }
  const uint64_t files = c.Count(10);
  for (uint64_t i = 0; i < files && !c.bad; ++i) {
    FileRow f;
    f.file = static_cast<uint32_t>(c.U());
    f.cls = static_cast<uint8_t>(c.U());
    GetIo(c, &f.io);
    if (f.cls >= kCounterClasses) c.bad = true;
    r->files.push_back(f);
  }
  const uint64_t regions = c.Count(6);
  for (uint64_t i = 0; i < regions && !c.bad; ++i) {
    RegionRow g;
    g.name = static_cast<uint32_t>(c.U());
    g.count = c.U();
    g.ns = c.U();
    g.max_ns = c.U();
    g.first_start_ns = c.U();
    g.last_end_ns = g.first_start_ns + c.U();
    r->regions.push_back(g);
  }
  return !c.bad && c.p == c.end;
}

// A no-batch record's rows to `r`'s region rows of the same names (at
// most each row's count).
void AddNoBatch(const std::vector<std::pair<uint32_t, uint64_t>>& rows, IntervalRecord* r) {
  for (const auto& [name, n] : rows) {
    for (RegionRow& g : r->regions) {
      if (g.name == name) g.no_batch = std::min(g.count, n);
    }
  }
}

bool DecodeSaves(Cursor& c, SavesRecord* r) {
  r->start_ns = c.U();
  const uint64_t n = c.Count(6);
  for (uint64_t i = 0; i < n && !c.bad; ++i) {
    SaveSample s;
    s.start_ns = c.U();
    s.end_ns = s.start_ns + c.U();
    s.bytes = c.U();
    s.write_ns = c.U();
    s.file = static_cast<uint32_t>(c.U());
    s.thread = static_cast<uint32_t>(c.U());
    if (s.end_ns < s.start_ns) c.bad = true;
    r->saves.push_back(s);
  }
  const uint64_t loaded = c.Count(1);
  for (uint64_t i = 0; i < loaded && !c.bad; ++i) r->loaded.push_back(static_cast<uint32_t>(c.U()));
  r->unsampled = c.U();
  const uint64_t threads = c.Count(1);
  for (uint64_t i = 0; i < threads && !c.bad; ++i) {
    r->loop_threads.push_back(static_cast<uint32_t>(c.U()));
  }
  return !c.bad && c.p == c.end;
}

bool DecodeGpu(Cursor& c, GpuRecord* r) {
  r->start_ns = c.U();
  r->busy_ns = c.U();
  r->first_ns = c.U();
  r->last_ns = r->first_ns + c.U();
  r->spans = c.U();
  if (r->busy_ns > r->last_ns - r->first_ns) c.bad = true;
  return !c.bad && c.p == c.end;
}

bool DecodeDataStall(Cursor& c, DataStallRecord* r) {
  r->from_ns = c.U();
  const uint64_t length = c.U();
  r->to_ns = r->from_ns + length;
  r->io_ns = c.U();
  r->stall_ns = c.U();
  if (r->to_ns < r->from_ns || r->io_ns > length || r->stall_ns > r->io_ns) c.bad = true;
  return !c.bad && c.p == c.end;
}

bool DecodeSteps(Cursor& c, StepRecord* r) {
  r->start_ns = c.U();
  r->waits = c.U();
  r->wait_ns = c.U();
  r->loop_start_ns = c.U();
  return !c.bad && c.p == c.end;
}

bool DecodeBatches(Cursor& c, BatchRecord* r) {
  r->start_ns = c.U();
  const uint64_t level = c.U();
  if (level >= kBatchIndexBits) c.bad = true;
  r->level = static_cast<uint8_t>(level);
  for (OwnWaits* o : {&r->read, &r->idle, &r->iter}) {
    for (uint64_t* v : {&o->count, &o->ns, &o->reading_ns, &o->pin_ns}) *v = c.U();
  }
  r->flow_waits = c.U();
  r->flow_wait_ns = c.U();
  auto get_span = [&](uint64_t* prev_id, uint64_t* id, uint64_t* start, uint64_t* end) {
    *id = *prev_id + static_cast<uint64_t>(UnZigZag(c.U()));
    *prev_id = *id;
    *start = r->start_ns + static_cast<uint64_t>(UnZigZag(c.U()));
    *end = *start + c.U();
  };
  auto get_waits = [&](std::vector<WaitSample>* out) {
    uint64_t prev = 0;
    const uint64_t waits = c.Count(3);
    for (uint64_t i = 0; i < waits && !c.bad; ++i) {
      WaitSample w;
      get_span(&prev, &w.id, &w.start_ns, &w.end_ns);
      out->push_back(w);
    }
  };
  get_waits(&r->waits);
  uint64_t prev = 0;
  const uint64_t fetches = c.Count(4 + kFetchParts);
  for (uint64_t i = 0; i < fetches && !c.bad; ++i) {
    FetchSample f;
    get_span(&prev, &f.id, &f.start_ns, &f.end_ns);
    f.first = c.U() != 0;
    for (uint32_t& us : f.read_us) us = static_cast<uint32_t>(c.U());
    r->fetches.push_back(f);
  }
  // The longest waits (a writer from before them ends at the fetches).
  if (!c.bad && c.p < c.end) get_waits(&r->longest);
  return !c.bad && c.p == c.end;
}

// A file's first bytes, [0, size()), seen through a window of a few MiB:
// a record is at most kMaxCounterPayload, so any whole one fits in it.
class ByteWindow {
 public:
  bool Open(const std::string& path, uint64_t limit) {
    in_.open(path, std::ios::binary);
    in_.seekg(0, std::ios::end);
    const std::streamoff end = in_.tellg();
    if (!in_ || end < 0) return false;
    size_ = std::min<uint64_t>(static_cast<uint64_t>(end), limit);
    return true;
  }
  uint64_t size() const { return size_; }
  // Bytes [at, at + n), which must lie within size(); valid until the next call.
  const uint8_t* At(uint64_t at, size_t n) {
    if (at < base_ || at + n > base_ + buf_.size()) {
      const uint64_t want = std::min<uint64_t>(size_ - at, std::max<uint64_t>(n, kChunk));
      buf_.resize(want);
      in_.clear();
      in_.seekg(static_cast<std::streamoff>(at));
      in_.read(reinterpret_cast<char*>(buf_.data()), static_cast<std::streamsize>(want));
      buf_.resize(static_cast<size_t>(std::max<std::streamsize>(0, in_.gcount())));
      base_ = at;
      if (buf_.size() < n) {
        // Shorter than it was (a file cut while read): its bytes read as 0,
        // which no whole record has.
        buf_.resize(n, 0);
      }
    }
    return buf_.data() + (at - base_);
  }

 private:
  static constexpr uint64_t kChunk = uint64_t{4} << 20;
  std::ifstream in_;
  uint64_t size_ = 0, base_ = 0;
  std::vector<uint8_t> buf_;
};

// Whether a whole record begins at `at`: its magic, a payload that fits
// and whose checksum holds.
bool RecordAt(ByteWindow& bytes, uint64_t at) {
  CounterRecordHeader h;
  if (bytes.size() - at < sizeof(h)) return false;
  std::memcpy(&h, bytes.At(at, sizeof(h)), sizeof(h));
  return h.magic == kCounterMagic && h.payload_bytes <= kMaxCounterPayload &&
         bytes.size() - at - sizeof(h) >= h.payload_bytes &&
         Crc32c(bytes.At(at, sizeof(h) + h.payload_bytes) + sizeof(h), h.payload_bytes) ==
             h.payload_crc;
}

// Where reading goes on after damage at `at`: the next whole record, or
// the file's end.
uint64_t NextRecord(ByteWindow& bytes, uint64_t at) {
  for (uint64_t k = at + 1; k + sizeof(CounterRecordHeader) <= bytes.size(); ++k) {
    if (*bytes.At(k, 1) == static_cast<uint8_t>(kCounterMagic & 0xff) && RecordAt(bytes, k)) {
      return k;
    }
  }
  return bytes.size();
}

// Calls decode(type, cursor, offset) on each whole record of `bytes` from `at` (a
// decoder sets cursor.bad where the record does not say what its type
// does); notes in `out` a torn last record and the damage skipped.
template <typename Decode>
void ForEachRecord(ByteWindow& bytes, uint64_t at, CountersFile* out, Decode&& decode) {
  while (at < bytes.size()) {
    CounterRecordHeader h;
    if (bytes.size() - at < sizeof(h)) {
      out->torn = true;
      break;
    }
    std::memcpy(&h, bytes.At(at, sizeof(h)), sizeof(h));
    const bool framed = h.magic == kCounterMagic && h.payload_bytes <= kMaxCounterPayload;
    if (framed && bytes.size() - at - sizeof(h) < h.payload_bytes &&
        NextRecord(bytes, at) == bytes.size()) {
      out->torn = true;  // the last record, cut short (SIGKILL, a full disk)
      break;
    }
    if (!framed || !RecordAt(bytes, at)) {
      // Records are only ever written whole at the end (over the record so
      // far) or cut there: this is damage. Reading goes on at the next
      // whole record.
      const uint64_t next = NextRecord(bytes, at);
      ++out->damaged;
      out->damage.push_back({at, next - at});
      at = next;
      continue;
    }
    const uint8_t* p = bytes.At(at, sizeof(h) + h.payload_bytes) + sizeof(h);
    Cursor c{p, p + h.payload_bytes};
    decode(h.type, c, at);
    if (c.bad) {
      ++out->damaged;  // a record whole but for what it says: itself skipped
      out->damage.push_back({at, sizeof(h) + h.payload_bytes});
    }
    at += sizeof(h) + h.payload_bytes;
  }
}

// Collects every record (ReadCountersFile).
struct Collect : CountersVisitor {
  CountersFile* out;
  explicit Collect(CountersFile* out) : out(out) {}
  void Interval(IntervalRecord& r) override { out->intervals.push_back(std::move(r)); }
  void Keep(KeepRecord& r) override { out->keeps.push_back(std::move(r)); }
  void Batches(BatchRecord& r) override { out->batches.push_back(std::move(r)); }
  void Gpu(GpuRecord& r) override { out->gpu.push_back(r); }
  void Steps(StepRecord& r) override {
    // A step split or unseen record: its steps record's, read just before it.
    const bool part = r.waits == 0 && r.wait_ns == 0 && r.loop_start_ns == 0;
    if (part && !out->steps.empty() && out->steps.back().start_ns == r.start_ns) {
      StepRecord& steps = out->steps.back();
      steps.preprocessing_ns += r.preprocessing_ns;
      steps.unjoined_ns += r.unjoined_ns;
      steps.other_threads_io_ns += r.other_threads_io_ns;
      steps.map_live_ns += r.map_live_ns;
      steps.mapping_ns += r.mapping_ns;
      steps.map_copy_ns += r.map_copy_ns;
    } else {
      out->steps.push_back(r);
    }
  }
  void DataStall(DataStallRecord& r) override { out->stalls.push_back(r); }
  void Saves(SavesRecord& r) override { out->saves.push_back(std::move(r)); }
};

}  // namespace

bool VisitCountersFile(const std::string& path, CountersVisitor* visit, CountersFile* out,
                       std::string* error, uint64_t limit) {
  out->path = path;
  {
    // The header is the trace's: its checks and ProcessInfo are the trace reader's.
    TraceReader header;
    if (!header.Open(path, error)) return false;
    out->info = header.process();
  }
  ByteWindow bytes;
  uint32_t header_size = 0;
  if (bytes.Open(path, limit) && bytes.size() >= 16) {
    std::memcpy(&header_size, bytes.At(12, 4), 4);
  }
  if (header_size == 0 || header_size > bytes.size()) {
    *error = path + ": changed while it was read";
    return false;
  }
  // One of each, reused: a record's vectors keep their room.
  IntervalRecord interval;
  BatchRecord batch;
  // The record so far is handed over at the end, where it is the last.
  IntervalRecord so_far;
  bool held = false;
  // Where strings so far begin, the record before this one (else none):
  // the records kept end there where a record so far follows.
  uint64_t tail_at = UINT64_MAX;
  // The no-batch record right before an interval record (its start, its
  // rows' name and no_batch), for that record's rows.
  uint64_t no_batch_start = 0;
  std::vector<std::pair<uint32_t, uint64_t>> no_batch;
  ForEachRecord(bytes, header_size, out, [&](uint16_t type, Cursor& c, uint64_t at) {
    held = false;  // a record after it: a stale one (it is always written over)
    const uint64_t strings_so_far_at = tail_at;
    tail_at = type == kCounterStringsSoFar ? at : UINT64_MAX;
    std::vector<std::pair<uint32_t, uint64_t>> no_batch_before;
    no_batch_before.swap(no_batch);
    if (type == kCounterStrings || type == kCounterStringsSoFar) {
      // Strings so far name what the record so far after them names; stale
      // ones (a record kept after them) are still the process's own strings
      // by their ids, and cost nothing to hold.
      const uint64_t n = c.Count(2);
      for (uint64_t i = 0; i < n && !c.bad; ++i) {
        const uint32_t id = static_cast<uint32_t>(c.U());
        std::string s = c.Bytes(c.U());
        if (!c.bad) out->strings[id] = std::move(s);
      }
    } else if (type == kCounterNoBatch) {
      no_batch_start = c.U();
      const uint64_t n = c.Count(2);
      for (uint64_t i = 0; i < n && !c.bad; ++i) {
        const uint32_t name = static_cast<uint32_t>(c.U());
        no_batch.emplace_back(name, c.U());
      }
      if (c.bad || c.p != c.end) {
        c.bad = true;
        no_batch.clear();
      }
    } else if (type == kCounterInterval) {
      interval = IntervalRecord();
      if (DecodeInterval(c, &interval)) {
        if (interval.start_ns == no_batch_start) AddNoBatch(no_batch_before, &interval);
        visit->Interval(interval);
      } else {
        c.bad = true;
      }
    } else if (type == kCounterIntervalSoFar) {
      so_far = IntervalRecord();
      held = DecodeInterval(c, &so_far);
      out->so_far_at = std::min(at, strings_so_far_at);
      so_far.so_far = true;
      c.bad = !held;
    } else if (type == kCounterKeep) {
      KeepRecord k;
      k.at_ns = c.U();
      k.from_ns = c.U();
      k.to_ns = c.U();
      k.reason = c.Bytes(c.U());
      if (!c.bad) visit->Keep(k);
    } else if (type == kCounterBatches) {
      batch = BatchRecord();
      if (DecodeBatches(c, &batch)) visit->Batches(batch);
      else c.bad = true;
    } else if (type == kCounterGpu) {
      GpuRecord g;
      if (DecodeGpu(c, &g)) visit->Gpu(g);
      else c.bad = true;
    } else if (type == kCounterSteps) {
      StepRecord r;
      if (DecodeSteps(c, &r)) visit->Steps(r);
      else c.bad = true;
    } else if (type == kCounterStepSplit) {
      StepRecord r;  // its preprocessing alone: the steps record before it has the rest
      r.start_ns = c.U();
      r.preprocessing_ns = c.U();
      if (!c.bad && c.p == c.end) visit->Steps(r);
      else c.bad = true;
    } else if (type == kCounterStepUnseen) {
      StepRecord r;  // its unseen figures alone, as a split record's
      r.start_ns = c.U();
      r.unjoined_ns = c.U();
      r.other_threads_io_ns = c.U();
      r.map_live_ns = c.U();
      if (!c.bad && c.p == c.end) visit->Steps(r);
      else c.bad = true;
    } else if (type == kCounterStepParts) {
      StepRecord r;  // its parts alone, as a split record's
      r.start_ns = c.U();
      r.mapping_ns = c.U();
      r.map_copy_ns = c.U();
      if (!c.bad && c.p == c.end) visit->Steps(r);
      else c.bad = true;
    } else if (type == kCounterSaves) {
      SavesRecord r;
      if (DecodeSaves(c, &r)) visit->Saves(r);
      else c.bad = true;
    } else if (type == kCounterDataStall) {
      DataStallRecord r;
      if (DecodeDataStall(c, &r)) visit->DataStall(r);
      else c.bad = true;
    } else if (type == kCounterLost) {
      LostRecord r;
      r.from_ns = c.U();
      r.to_ns = r.from_ns + c.U();
      r.events = c.U();
      r.blocks = c.U();
      r.error = static_cast<uint32_t>(c.U());
      if (!c.bad) out->lost.push_back(r);
    }  // other types: a newer writer's, skipped
  });
  if (held) {
    out->so_far = true;
    visit->Interval(so_far);
  }
  out->bytes = bytes.size();
  return true;
}

bool ReadCountersFile(const std::string& path, CountersFile* out, std::string* error,
                      uint64_t limit) {
  Collect collect(out);
  return VisitCountersFile(path, &collect, out, error, limit);
}

}  // namespace dlprof::format
