// The event rules: what each kind of the catalogue (dlprof/catalogue.h) is to
// everything that reads a trace, worked out once, at compile time, from the
// catalogue's category and operation class.
//
// Every meter of lib/analysis, every exporter of dlprof-dump and, through the
// reader's C ABI (dlprof_kind_traits, dlprof_kind_bytes, dlprof_kind_thread),
// the Python package ask this table, so that a rule ("a memset is GPU work",
// "fread's bytes are in aux") is written here and nowhere else. A new kind
// gets its rules from its line in the catalogue; a kind whose rules differ
// from its category's and class's is an exception written below, by name.
#ifndef DLPROF_LIB_FORMAT_EVENT_RULES_H_
#define DLPROF_LIB_FORMAT_EVENT_RULES_H_

#include <fcntl.h>

#include <cstdint>

#include "dlprof/catalogue.h"
#include "dlprof/format.h"

namespace dlprof {

// Where the bytes a call moved are (the C ABI's DLPROF_BYTES_*: same values).
enum class BytesAt : uint8_t {
  kNone = 0,  // it moves no bytes (or none that a figure counts)
  kRet = 1,   // POSIX reads and writes return them (a failure, -1: none)
  kAux = 2,   // STDIO and MPI-IO reads and writes carry them in aux (fread
              // returns items, MPI an error code)
  kSize = 3,  // GPU copies and memsets: the bytes asked for are the bytes moved
};

// Whose thread a record belongs to (the C ABI's DLPROF_THREAD_*: same values).
enum class ThreadOf : uint8_t {
  kRecord = 0,  // the thread that wrote it
  kCaller = 1,  // CUDA API calls: CUPTI delivers them on its own thread; the
                // caller's tid is in offset
  kStream = 2,  // work on a GPU stream (kernels, copies, memsets, syncs): fd
                // is the device, offset the stream
};

struct EventRules {
  bool known = false;        // in this build's catalogue (a newer writer's code is not)
  bool context = false;      // call stacks and module maps: context of other events, no event
  bool process_end = false;  // exit, signal: how the process ended (ret), at its end; no
                             // part of its run's span (process_end.h)
  bool traced_call =
      false;  // a POSIX, STDIO, MPI or cuFile call: other traced calls may nest in it
  bool io = false;           // an I/O call: POSIX, STDIO, MPI-IO (not MPI_Init/Finalize), GDS
  bool data = false;         // a read or a write (op class)
  bool bandwidth = false;    // counts toward read/write bandwidth (unless nested)
  bool gds_transfer = false; // a cuFile read or write (synchronous, on a stream or batched)
  bool posix_data = false;   // a POSIX read or write: what cuFile's compatibility mode
                             // serves a transfer with (lib/read/cufile_compat.h)
  bool map_read = false;     // a major fault on a mapped file: reading through a map,
                             // no call (its bytes are reads, beside the calls')
  bool mpiio_data = false;   // an MPI-IO read or write, collective or not: the
                             // summary's MPI-IO figures
  bool async = false;        // an asynchronous request (io_uring, Linux or POSIX AIO): from
                             // submission to completion, written by the thread that saw it
                             // reaped; not a call of that thread, so no call nests in it,
                             // and aux packs its submitter and reaping (AsyncAux below)
  bool gpu_work = false;     // a kernel, copy or memset: GPU busy time
  bool gpu_api = false;      // a CUDA runtime or driver API call
  bool gpu_clock = false;    // cupti_clock: the GPU clock's calibration
  bool named = false;        // CUDA and app: the event's name is the string of `file`
  bool config = false;       // GPU work: ret is the string id of its configuration
  int8_t flow = 0;           // a flow annotation's start (1) or finish (-1); aux its id
  bool copy = false;         // an in-kernel copy (sendfile, copy_file_range): file is the
                             // source, aux the destination's string id (equal to file when
                             // only the destination was traced; 0 when it was not)
  BytesAt bytes_at = BytesAt::kNone;
  ThreadOf thread = ThreadOf::kRecord;
};

// The rules of one catalogue entry.
constexpr EventRules RulesOf(int code, Category cat, OpClass op) {
  EventRules r;
  r.known = true;
  r.context = code == static_cast<int>(EventKind::CallStack) ||
              code == static_cast<int>(EventKind::ModuleMap);
  r.process_end = code == static_cast<int>(EventKind::ProcessExit) ||
                  code == static_cast<int>(EventKind::Signal);
  const bool cuda = cat == Category::Cuda;
  // A page fault is no call: nothing nests in it, and its bytes are
  // counted apart from the calls' (map_read). io_uring_enter is the one
  // call among the asynchronous kinds, and io_uring_ring (a ring not
  // followed, over its life) no I/O at all; the rest are requests, which
  // are I/O but no call of the thread that wrote them.
  r.map_read = op == OpClass::Fault;
  const bool ring_record = code == static_cast<int>(EventKind::UringRing);
  r.async = cat == Category::Aio && code != static_cast<int>(EventKind::UringEnter) && !ring_record;
  r.traced_call = ((cat == Category::Posix || cat == Category::Stdio ||
                    cat == Category::Mpiio || cat == Category::Gds) && !r.map_read) ||
                  (cat == Category::Aio && !r.async && !ring_record);
  // MPI_Init and MPI_Finalize are traced calls, but no I/O. Every cuFile
  // call is I/O (a submission or a batch's status too): the compatibility
  // mode's preads nested in it repeat its I/O and are left out.
  r.io = (r.traced_call || r.async) && !(cat == Category::Mpiio && op == OpClass::Other);
  r.data = op == OpClass::Read || op == OpClass::Write;
  r.bandwidth = r.io && r.data;
  r.gds_transfer = cat == Category::Gds && r.data;
  r.posix_data = cat == Category::Posix && r.data;
  r.mpiio_data = cat == Category::Mpiio && r.data;
  r.gpu_work = cuda && (op == OpClass::Kernel || op == OpClass::Memcpy || op == OpClass::Memset);
  r.gpu_api = cuda && op == OpClass::Api;
  r.gpu_clock = cuda && op == OpClass::Other;
  // region_faults names the region it closes (lib/api/regions.h).
  r.named = cuda || cat == Category::App || code == static_cast<int>(EventKind::RegionFaults);
  // (docs/CUDA.md: memset's configuration is "mem=device ctx=C".)
  r.config = r.gpu_work;
  r.flow = op == OpClass::FlowStart ? 1 : op == OpClass::FlowFinish ? -1 : 0;
  r.copy = code == static_cast<int>(EventKind::Sendfile) ||
           code == static_cast<int>(EventKind::Sendfile64) ||
           code == static_cast<int>(EventKind::CopyFileRange);
  if (r.io && r.data) {
    // cuFileRead/Write return the bytes, as pread does; the asynchronous
    // and batched I/Os carry them in ret as well, as do the asynchronous
    // requests (their result).
    r.bytes_at = cat == Category::Posix || cat == Category::Gds || cat == Category::Aio
                     ? BytesAt::kRet
                     : BytesAt::kAux;
  } else if (r.map_read) {
    r.bytes_at = BytesAt::kRet;  // the bytes brought in for the fault
  } else if (cuda && (op == OpClass::Memcpy || op == OpClass::Memset)) {
    r.bytes_at = BytesAt::kSize;
  }
  // A synchronization runs on a stream too, though it keeps no GPU busy.
  r.thread = r.gpu_api                 ? ThreadOf::kCaller
             : cuda && !r.gpu_clock    ? ThreadOf::kStream
                                       : ThreadOf::kRecord;
  return r;
}

// Dense table indexed by kind code; codes past it or not in the catalogue
// have the rules of an unknown kind (all false).
struct EventRulesTable {
  EventRules of[kEventKindLimit];
  constexpr EventRulesTable() : of{} {
#define DLPROF_X(code, ident, name, cat, op) of[code] = RulesOf(code, Category::cat, OpClass::op);
    DLPROF_EVENT_CATALOGUE(DLPROF_X)
#undef DLPROF_X
  }
};
inline constexpr EventRulesTable kEventRules{};

inline const EventRules& RulesFor(uint32_t code) {
  static constexpr EventRules kUnknown{};
  return code < kEventKindLimit ? kEventRules.of[code] : kUnknown;
}

// The bytes a call moved, where its kind's rules say they are.
// (Tests in the order of their frequency, not a switch: this is on the
// summary's and the exporters' path of every read and write.)
inline uint64_t BytesMoved(const Event& e, BytesAt at) {
  if (at == BytesAt::kRet) return e.ret > 0 ? static_cast<uint64_t>(e.ret) : 0;
  if (at == BytesAt::kAux) return e.aux;
  return at == BytesAt::kSize ? e.size : 0;
}
inline uint64_t BytesMoved(const Event& e) { return BytesMoved(e, RulesFor(e.kind).bytes_at); }

// An I/O call that the figures count: not nested in another traced call
// (whose figures hold its bytes already: the pread of an MPI_File_read_at).
inline bool CountsAsIo(const Event& e) {
  return RulesFor(e.kind).io && !(e.flags & kEventFlagNested);
}

// An open that makes an output, not the reading of one: for writing only, or
// truncating what it opens (open(path, "wb"): a checkpoint's next save over
// the last). Its `aux` holds the call's O_* flags (docs/FORMAT.md), but for
// MPI_File_open's amode, whose bits are MPI's. A read-write open that keeps
// its file (LMDB's data.mdb) may be reading.
inline bool OpensForOutput(const Event& e) {
  const EventKindInfo* k = LookupKind(e.kind);
  if (k == nullptr || k->op_class != OpClass::Open ||
      e.kind == static_cast<uint16_t>(EventKind::MpiFileOpen)) {
    return false;
  }
  const uint64_t access = e.aux & O_ACCMODE;
  return access == O_WRONLY || (access == O_RDWR && (e.aux & O_TRUNC) != 0);
}

// rename, renameat, renameat2: `file` the old path (aux the new one).
inline bool IsRename(uint16_t kind) {
  return kind == static_cast<uint16_t>(EventKind::Rename) ||
         kind == static_cast<uint16_t>(EventKind::Renameat) ||
         kind == static_cast<uint16_t>(EventKind::Renameat2);
}

// The rules checked against the catalogue, one kind of each sort.
namespace event_rules_check {
constexpr const EventRules& R(EventKind k) { return kEventRules.of[static_cast<int>(k)]; }
static_assert(R(EventKind::Pread64).io && R(EventKind::Pread64).bytes_at == BytesAt::kRet);
static_assert(R(EventKind::Open).io && R(EventKind::Open).bytes_at == BytesAt::kNone);
static_assert(R(EventKind::Fread).bandwidth && R(EventKind::Fread).bytes_at == BytesAt::kAux);
static_assert(R(EventKind::MpiFileReadAtAll).bytes_at == BytesAt::kAux);
static_assert(R(EventKind::MpiInit).traced_call && !R(EventKind::MpiInit).io);
static_assert(R(EventKind::MpiFileReadAtAll).mpiio_data && !R(EventKind::MpiFileOpen).mpiio_data &&
              !R(EventKind::Fread).mpiio_data);
static_assert(R(EventKind::CufileRead).bandwidth && R(EventKind::CufileRead).traced_call &&
              R(EventKind::CufileRead).bytes_at == BytesAt::kRet &&
              R(EventKind::CufileRead).thread == ThreadOf::kRecord &&
              !R(EventKind::CufileRead).named);
static_assert(R(EventKind::CufileBatchRead).bandwidth && R(EventKind::CufileAsyncWrite).bandwidth);
static_assert(R(EventKind::CufileBatchRead).gds_transfer &&
              !R(EventKind::CufileBatchSubmit).gds_transfer && R(EventKind::Pwrite64).posix_data &&
              !R(EventKind::Fread).posix_data);
static_assert(R(EventKind::CufileBatchSubmit).io && !R(EventKind::CufileBatchSubmit).data &&
              R(EventKind::CufileReadAsync).bytes_at == BytesAt::kNone);
static_assert(R(EventKind::CudaKernel).gpu_work && R(EventKind::CudaKernel).config &&
              R(EventKind::CudaKernel).bytes_at == BytesAt::kNone);
static_assert(R(EventKind::CudaMemcpyP2P).gpu_work &&
              R(EventKind::CudaMemcpyP2P).bytes_at == BytesAt::kSize);
static_assert(!R(EventKind::CudaSync).gpu_work &&
              R(EventKind::CudaSync).thread == ThreadOf::kStream);
static_assert(R(EventKind::CudaDriverApi).gpu_api &&
              R(EventKind::CudaDriverApi).thread == ThreadOf::kCaller);
static_assert(R(EventKind::CudaClockSync).gpu_clock &&
              R(EventKind::CudaClockSync).thread == ThreadOf::kRecord);
static_assert(R(EventKind::NvtxRange).named && !R(EventKind::NvtxRange).io);
static_assert(R(EventKind::AppFlowStart).flow == 1 && R(EventKind::AppFlowFinish).flow == -1);
static_assert(R(EventKind::CallStack).context && R(EventKind::ModuleMap).context &&
              !R(EventKind::ClockOffset).context);
static_assert(R(EventKind::ProcessExit).process_end && R(EventKind::Signal).process_end &&
              !R(EventKind::ProcessExit).context && !R(EventKind::ProcessExec).process_end);
static_assert(R(EventKind::MajorFault).map_read && !R(EventKind::MajorFault).io &&
              !R(EventKind::MajorFault).traced_call &&
              R(EventKind::MajorFault).bytes_at == BytesAt::kRet && !R(EventKind::Pread).map_read);
static_assert(R(EventKind::Mremap).io && !R(EventKind::RegionFaults).io &&
              R(EventKind::RegionFaults).named && !R(EventKind::MajorFault).named &&
              !R(EventKind::RegionFaults).context);
static_assert(R(EventKind::UringRead).async && R(EventKind::UringRead).bandwidth &&
              R(EventKind::UringRead).bytes_at == BytesAt::kRet &&
              !R(EventKind::UringRead).posix_data &&
              R(EventKind::UringRead).thread == ThreadOf::kRecord);
static_assert(R(EventKind::AioWrite).async && R(EventKind::LinuxAioFsync).io &&
              !R(EventKind::LinuxAioFsync).data && R(EventKind::UringOp).async);
static_assert(!R(EventKind::UringEnter).async && R(EventKind::UringEnter).io &&
              R(EventKind::UringEnter).traced_call && !R(EventKind::UringRead).traced_call &&
              !R(EventKind::Pread64).async);
static_assert(R(EventKind::UringRing).known && !R(EventKind::UringRing).io &&
              !R(EventKind::UringRing).async && !R(EventKind::UringRing).traced_call);
static_assert(!kEventRules.of[0].known && !kEventRules.of[255].known &&
              !kEventRules.of[kEventKindLimit - 1].known);
}  // namespace event_rules_check

}  // namespace dlprof

#endif  // DLPROF_LIB_FORMAT_EVENT_RULES_H_
