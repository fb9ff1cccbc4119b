// Recovery of the events a killed process left in its rings sidecar
// (sidecar.h; docs/FORMAT.md, "The rings sidecar"). The file is untrusted
// input like a trace: every size is checked against the file before it is
// read, and what is recovered is bounded (kMaxRecoveredEvents).
#include "lib/format/sidecar.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "lib/format/crc32c.h"

namespace dlprof::format {
namespace {

// 2 Mi events (128 MiB, held about three times over while they are sorted
// and handed out): what one recovered block may hold, the order of a block
// the writer makes; more is cut to each ring's newest events, the rest
// counted as lost.
constexpr uint64_t kMaxRecoveredEvents = uint64_t{2} << 20;
constexpr uint64_t kMaxRingCapacity = uint64_t{1} << 26;  // 4 GiB of slots

class File {
 public:
  // O_NONBLOCK: a FIFO at the path must not hold the open up; it is then
  // no regular file, and not read.
  explicit File(const std::string& path)
      : fd_(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)) {
    struct stat st;
    if (fd_ >= 0 && (fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode))) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~File() {
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  uint64_t size() const {
    struct stat st;
    return fstat(fd_, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  }
  bool Read(uint64_t at, void* buf, size_t n) const {
    auto* p = static_cast<uint8_t*>(buf);
    while (n > 0) {
      ssize_t r = pread(fd_, p, n, static_cast<off_t>(at));
      if (r <= 0) return false;
      p += r;
      at += static_cast<uint64_t>(r);
      n -= static_cast<size_t>(r);
    }
    return true;
  }

 private:
  int fd_;
};

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

bool Sound(const SidecarHeader& h, uint64_t file_size, std::string* why) {
  auto bad = [why](const char* what) {
    *why = what;
    return false;
  };
  if (h.version != kSidecarVersion) return bad("unknown rings sidecar version");
  if (h.header_bytes != kSidecarHeaderBytes || h.event_bytes != sizeof(Event)) {
    return bad("rings sidecar of another layout");
  }
  const uint64_t cap = h.ring_capacity;
  if (cap == 0 || (cap & (cap - 1)) != 0 || cap > kMaxRingCapacity) {
    return bad("rings sidecar's ring capacity is not a power of two in range");
  }
  if (h.region_header_bytes < kRegionPendingAt + 8 || h.region_header_bytes > 4096 ||
      h.region_header_bytes % 64 != 0 ||
      h.region_bytes < h.region_header_bytes + cap * sizeof(Event) ||
      h.region_bytes > h.region_header_bytes + cap * sizeof(Event) + 4096) {
    return bad("rings sidecar's region size is inconsistent");
  }
  if (h.string_log_bytes > (uint64_t{64} << 20) ||
      h.first_region < h.header_bytes + h.string_log_bytes || h.first_region > file_size) {
    return bad("rings sidecar's layout runs past the file");
  }
  return true;
}

void ReadStrings(const File& f, const SidecarHeader& h, uint64_t file_size,
                 std::vector<StringEntry>* out) {
  const uint64_t n = std::min<uint64_t>(h.string_log_bytes, file_size - h.header_bytes);
  std::vector<uint8_t> log(n);
  if (n == 0 || !f.Read(h.header_bytes, log.data(), n)) return;
  size_t at = 0;
  while (at + kStringRecordHeader <= n) {
    const uint32_t tag = Load<uint32_t>(&log[at]);
    const uint32_t id = Load<uint32_t>(&log[at + 4]);
    const uint32_t len = Load<uint32_t>(&log[at + 8]);
    const uint32_t crc = Load<uint32_t>(&log[at + 12]);
    if (tag == kStringRecordTag && id != 0 && len <= n - at - kStringRecordHeader &&
        Crc32c(&log[at + kStringRecordHeader], len, Crc32c(&log[at + 4], 8)) == crc) {
      out->push_back({id, std::string(reinterpret_cast<const char*>(&log[at + 16]), len)});
      at += (kStringRecordHeader + len + 7) & ~size_t{7};
    } else {
      at += 8;
    }
  }
}

// Sorts by (start_ns, tid), keeping each thread's order, and notes what a
// decoded block notes (block_codec.cc's EventFinisher).
void Finish(DecodedBlock* out) {
  std::vector<uint32_t> order(out->events.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [out](uint32_t a, uint32_t b) {
    const Event& x = out->events[a];
    const Event& y = out->events[b];
    if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
    return out->tids[a] < out->tids[b];
  });
  std::vector<Event> events(order.size());
  std::vector<int32_t> tids(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    events[i] = out->events[order[i]];
    tids[i] = out->tids[order[i]];
  }
  out->events.swap(events);
  out->tids.swap(tids);
  out->in_start_order = true;
  out->file_runs.clear();
  out->min_start_ns = out->events.empty() ? 0 : out->events.front().start_ns;
  out->max_end_ns = 0;
  out->end_wraps = false;
  for (size_t i = 0; i < out->events.size(); ++i) {
    const Event& e = out->events[i];
    const uint64_t end = e.start_ns + e.dur_ns;
    out->max_end_ns = std::max(out->max_end_ns, end);
    out->end_wraps |= end < e.start_ns;
    if (i == 0 || e.file != out->events[i - 1].file) {
      out->file_runs.push_back({e.file, static_cast<uint32_t>(i)});
    }
  }
}

}  // namespace

bool RecoverFromSidecar(const std::string& trace_path, uint64_t trace_size, DecodedBlock* out,
                        Recovery* recovery, std::string* why) {
  *out = DecodedBlock();
  *recovery = Recovery();
  recovery->path = trace_path + kSidecarSuffix;
  File f(recovery->path);
  if (!f.ok()) return false;
  const uint64_t file_size = f.size();
  SidecarHeader h;
  if (file_size < kSidecarHeaderBytes || !f.Read(0, &h, sizeof(h)) ||
      std::memcmp(h.magic, kSidecarMagic, sizeof(h.magic)) != 0) {
    *why = "not a rings sidecar";
    return false;
  }
  if (!Sound(h, file_size, why)) return false;
  recovery->found = true;
  out->info.rank = h.rank.load(std::memory_order_relaxed);

  // The events block being written when the process died is in the trace
  // if the trace reaches its end.
  const uint64_t inflight = h.inflight_end.load(std::memory_order_relaxed);
  const bool use_pending = inflight != 0 && trace_size >= inflight;
  const uint64_t cap = h.ring_capacity;
  std::vector<uint8_t> head(h.region_header_bytes);
  for (uint64_t at = h.first_region; at + h.region_bytes <= file_size && at >= h.first_region;
       at += h.region_bytes) {
    if (!f.Read(at, head.data(), head.size()) ||
        Load<uint32_t>(&head[kRegionMagicAt]) != kRegionMagic) {
      continue;  // never set up (a thread that died at once) or not ours
    }
    const uint64_t committed = Load<uint64_t>(&head[kRegionHeadAt]);
    uint64_t from = Load<uint64_t>(&head[use_pending ? kRegionPendingAt : kRegionWrittenAt]);
    const int32_t tid = Load<int32_t>(&head[kRegionTidAt]);
    if (from > committed) continue;  // inconsistent: nothing to trust
    // The producer may have been storing event `committed` into the slot of
    // event committed - cap: that one is not whole any more.
    uint64_t n = committed - from;
    if (n > cap - 1) {
      recovery->lost += n - (cap - 1);
      from = committed - (cap - 1);
      n = cap - 1;
    }
    const uint64_t room = kMaxRecoveredEvents - out->events.size();
    if (n > room) {
      recovery->lost += n - room;
      from = committed - room;
      n = room;
    }
    if (n == 0) continue;
    const size_t base = out->events.size();
    out->events.resize(base + n);
    const uint64_t slots = at + h.region_header_bytes;
    const uint64_t first = from & (cap - 1);
    const uint64_t piece = std::min(n, cap - first);
    if (!f.Read(slots + first * sizeof(Event), &out->events[base], piece * sizeof(Event)) ||
        (piece < n && !f.Read(slots, &out->events[base + piece], (n - piece) * sizeof(Event)))) {
      out->events.resize(base);
      continue;
    }
    out->tids.resize(base + n, tid);
  }
  // Events still in TSC ticks: the last scale the writer set. One without
  // a scale (none set yet) cannot be placed in time and is counted lost.
  const uint32_t slot = h.tick_scale_slot.load(std::memory_order_relaxed);
  const TickScale* scale = slot == 1 || slot == 2 ? &h.tick_scales[slot - 1] : nullptr;
  size_t kept = 0;
  for (size_t i = 0; i < out->events.size(); ++i) {
    Event& e = out->events[i];
    if (e.flags & kEventFlagTicks) {
      if (scale == nullptr || scale->mult == 0) {
        ++recovery->lost;
        continue;
      }
      scale->Convert(e);
    }
    out->events[kept] = e;
    out->tids[kept++] = out->tids[i];
  }
  out->events.resize(kept);
  out->tids.resize(kept);
  ReadStrings(f, h, file_size, &out->strings);
  Finish(out);
  recovery->events = out->events.size();
  return true;
}

}  // namespace dlprof::format
