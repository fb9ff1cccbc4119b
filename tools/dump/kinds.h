// How dlprof-dump presents each event kind, derived from the catalogue and
// its event rules (lib/format/event_rules.h); and where the timelines (Chrome,
// Perfetto) draw an event.
#ifndef DLPROF_TOOLS_DUMP_KINDS_H_
#define DLPROF_TOOLS_DUMP_KINDS_H_

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dlprof/catalogue.h"
#include "lib/format/event_rules.h"

namespace dlprof::dump {

struct KindView {
  bool known = false;        // false: a code this build's catalogue lacks
  std::string name;          // "pread64"; "kind_<code>" when unknown
  std::string category;      // "posix"; "unknown" when unknown
  OpClass op_class = OpClass::Other;
  EventRules rules;          // what the kind is (GPU work, API call, ...) and where its fields are
  // The rules as the renderers ask them:
  bool read_write = false;   // op class Read or Write: `size` always printed
  bool moves_bytes = false;  // POSIX read/write: `bytes` = ret when ret > 0
  bool rename = false;       // aux holds the string id of the second path
  bool open = false;         // aux holds the open(2) flags
  bool dup = false;          // ret is the new descriptor
  bool bytes_in_aux = false; // STDIO and MPI-IO read/write: `bytes` = aux
  bool named = false;        // CUDA and app: the event's name is the string of `file`
  bool gpu = false;          // CUDA: fd is the device, offset the stream, aux the correlation
  bool config = false;       // CUDA kernel/copy/memset: ret is the string id of its configuration
  int flow = 0;              // flow_start: 1, flow_finish: -1; aux is the flow's id
  const char* aux_key = nullptr;  // what aux is ("buffer", "handle", "stream", "batch",
                                  // "address", "sender")
  bool cufile_stream = false;  // cuFile stream I/O: drawn on its stream's track (aux)
  bool async = false;        // an asynchronous request: aux packs its submitter and reaping
  bool opcode = false;       // io_uring_op, linux_aio_op: the opcode (in aux) says what it was
  bool region_faults = false;  // a region's faults: size, ret, aux, fd (catalogue.h)
  bool mpi = false;          // MPI-IO: fd is the communicator's size; an open's aux the amode
  std::string json;          // ,"cat":"...","name":"..." ready to append
  std::string json_cat;      // ,"cat":"...","kind":"..." for named kinds
};

// Traces may hold codes from newer writers, so every 16-bit code gets a view;
// views are built on first use. Not thread-safe: exporters run on one thread.
class KindTable {
 public:
  KindTable();
  const KindView& Get(uint16_t code) {
    const auto& v = views_[code];
    return v ? *v : Build(code);
  }

 private:
  const KindView& Build(uint16_t code);
  std::vector<std::unique_ptr<KindView>> views_;
};

// A GPU stream's track among its process's threads (Chrome's tid, Perfetto's
// track): a synthetic thread id that cannot collide with a real tid (which
// are < 2^22 on Linux).
constexpr int64_t GpuStreamTrack(int32_t device, int64_t stream) {
  return (int64_t{1} << 40) + (int64_t{device} << 24) + (stream & 0xffffff);
}

// A thread's overlap lane: a slice that cuts across another of its thread's
// (events of two clocks a few microseconds apart: a page fault's and a
// region's) is drawn on a lane of the thread's own, as viewers draw a
// thread's slices as a stack. Past the real tids, below the GPU streams'.
constexpr int64_t kOverlapTrack = int64_t{1} << 30;
constexpr int64_t kOverlapLanes = 64;
constexpr int64_t OverlapTrack(int64_t tid, int64_t lane) {
  return kOverlapTrack + tid * kOverlapLanes + lane;
}

// A CUstream's track among its process's threads, for the cuFile I/O queued
// on it (cufile_async_read/write: aux is the stream): past the GPU streams'
// tracks, the stream's handle in the low 47 bits (user-space addresses; the
// whole stays exact in a JSON number, a double).
constexpr int64_t kCufileStreamTrack = int64_t{1} << 47;
constexpr int64_t CufileStreamTrack(uint64_t stream) {
  return kCufileStreamTrack + static_cast<int64_t>(stream & ((uint64_t{1} << 47) - 1));
}
// "cuFile stream 0x7f3a2c000b70" (the default stream: 0x0).
std::string CufileStreamName(int64_t track);

// An asynchronous request's track among its process's threads: its file's,
// where the timelines draw each request from its submission to its
// completion (the threads that submitted and reaped it are in its
// arguments); past the GPU streams' tracks, below the cuFile streams'. An
// exporter that lays requests in flight together on lanes of their own
// adds the lane (< kAsyncLanes) to it.
constexpr int64_t kAsyncFileTrack = int64_t{1} << 45;
constexpr int64_t kAsyncLanes = 1024;
constexpr int64_t AsyncFileTrack(uint32_t file) {
  return kAsyncFileTrack + int64_t{file} * kAsyncLanes;
}
constexpr bool IsAsyncFileTrack(int64_t track) {
  return track >= kAsyncFileTrack && track < kCufileStreamTrack;
}
// "async I/O /data/a" (lane 0), "async I/O /data/a (overlap 3)".
std::string AsyncFileTrackName(const std::string& path, int64_t lane);

// The timeline thread an event is drawn on, `tid` being the thread that wrote
// it: work on a GPU stream on its stream's track; a CUDA API call on the
// thread that made it (CUPTI delivers it on its own thread), where known;
// cuFile stream I/O on its CUstream's track (its submission stays on the
// thread that called); an asynchronous request on its file's track.
inline int64_t TimelineThread(const KindView& k, const Event& e, int64_t tid) {
  if (k.cufile_stream) return CufileStreamTrack(e.aux);
  if (k.async) return AsyncFileTrack(e.file);
  switch (k.rules.thread) {
    case ThreadOf::kStream: return GpuStreamTrack(e.fd, e.offset);
    case ThreadOf::kCaller: return e.offset > 0 ? e.offset : tid;
    case ThreadOf::kRecord: break;
  }
  return tid;
}

// An app counter's sample (kind `counter`, dlprof_counter and
// dlprof_counter_double): ret 1 says aux holds the bits of an IEEE-754
// double, else aux is an int64 (docs/ANNOTATIONS.md).
inline bool CounterIsDouble(const Event& e) { return e.ret == 1; }
inline double CounterDouble(const Event& e) {
  double v;
  std::memcpy(&v, &e.aux, sizeof(v));
  return v;
}

// Why a cupti_clock event was written (its fd; docs/CUDA.md).
const char* ClockSyncReason(int32_t reason);

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_KINDS_H_
