// MPI-IO and MPI_Init/MPI_Finalize.
//
// libdlprof.so has no link-time dependency on MPI: these definitions stand
// in for the application's MPI_ calls and forward to the PMPI_ entry points
// found at run time. MPI handles are passed through untouched as
// pointer-sized values, which is ABI-exact for Open MPI (pointer handles) and
// for the MPICH family (int handles travel in the same registers); the
// tracer only hands them back to PMPI_ functions, never looks inside.
#include <dlfcn.h>
#include <strings.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "lib/core/real_symbol.h"
#include "lib/intercept/describe.h"
#include "lib/intercept/mpi_clock.h"
#include "lib/intercept/mpi_files.h"
#include "lib/intercept/mpi_watch.h"
#include "lib/intercept/wrapper.h"

using dlprof::Event;
using dlprof::EventKind;
using namespace dlprof::intercept;

namespace {
using Handle = void*;  // MPI_Comm, MPI_File, MPI_Datatype, MPI_Info, MPI_Request
using Offset = long long;  // MPI_Offset in every implementation we know
using Status = void*;
using Count = long long;  // MPI_Count: the MPI-4 large-count calls' (_c)
using Aint = intptr_t;     // MPI_Aint: long in MPICH, ptrdiff_t in Open MPI
// MPI_Count is long in MPICH, long long in Open MPI: 64 bits in both.
}  // namespace

// clang-format off
DLPROF_REAL_AS(PMPI_Type_size, int (*)(Handle, int*), nullptr)
DLPROF_REAL_AS(PMPI_Type_get_extent, int (*)(Handle, Aint*, Aint*), nullptr)
DLPROF_REAL_AS(PMPI_Type_get_true_extent, int (*)(Handle, Aint*, Aint*), nullptr)
DLPROF_REAL_AS(PMPI_Type_get_envelope, int (*)(Handle, int*, int*, int*, int*), nullptr)
DLPROF_REAL_AS(PMPI_Get_elements_x, int (*)(Status, Handle, long long*), nullptr)
DLPROF_REAL_AS(PMPI_Comm_size, int (*)(Handle, int*), nullptr)
DLPROF_REAL_AS(PMPI_Comm_rank, int (*)(Handle, int*), nullptr)
DLPROF_REAL_AS(PMPI_File_get_position, int (*)(Handle, Offset*), nullptr)
DLPROF_REAL_AS(PMPI_File_get_byte_offset, int (*)(Handle, Offset, Offset*), nullptr)
// clang-format on

namespace {

// The same values in both families' mpi.h.
constexpr int kModeSequential = 256;  // MPI_MODE_SEQUENTIAL
constexpr int kSeekSet = 600;         // MPI_SEEK_SET

uintptr_t Key(Handle fh) { return reinterpret_cast<uintptr_t>(fh); }

// What the tracer asks MPI, it asks only where the answer cannot be an
// error: an error would go to the program's error handler (MPI_ERRORS_ARE_FATAL
// ends the job), which the program's own call would not have invoked. So
// file queries are made only on handles this process opened and has not
// closed, position queries never on MPI_MODE_SEQUENTIAL files (ROMIO fails
// them there), and datatype and status queries only after the program's call
// succeeded with them. None of them waits for another rank or does I/O; the
// only lock one may take is the library's own critical section (MPICH under
// MPI_THREAD_MULTIPLE), which the program's call takes as well. The shared
// file pointer is never asked for (mpi_watch.h says why and what replaces it).
bool TracedMpiFile(Handle fh, MpiFile* f) {
  return FindMpiFile(Key(fh), f) && FdTable::Named(f->file);
}
bool MayAskPosition(Handle fh) {
  MpiFile f;
  return TracedMpiFile(fh, &f) && (f.amode & kModeSequential) == 0;
}

// Marks the thread as in tracer code while it asks MPI something before the
// program's call, so that nothing MPI might do for it is recorded.
using AskingMpi = InTracerCode;

// `pos` (etypes, relative to the view) in bytes from the start of the file.
int64_t ViewToBytes(Handle fh, Offset pos) {
  Offset bytes = 0;
  if (pos < 0 || real_PMPI_File_get_byte_offset(fh, pos, &bytes) != 0) return -1;
  return bytes;
}

// The individual file pointer in bytes: asked before the call moves it (it
// is this process's own, so nothing else moves it in between).
int64_t IndividualOffset(Handle fh) {
  if (!dlprof::core::Tracing(dlprof::core::CurrentThread()) || !MayAskPosition(fh)) return -1;
  AskingMpi asking;
  Offset pos = 0;
  if (real_PMPI_File_get_position(fh, &pos) != 0) return -1;
  return ViewToBytes(fh, pos);
}

// An explicit offset in bytes, once the call has succeeded with it.
int64_t ExplicitOffset(Handle fh, Offset at, int rc) {
  return rc == 0 && MayAskPosition(fh) ? ViewToBytes(fh, at) : -1;
}

uint64_t TypeBytes(Count count, Handle type) {
  int size = 0;
  if (count <= 0 || real_PMPI_Type_size(type, &size) != 0 || size < 0) return 0;
  return static_cast<uint64_t>(count) * static_cast<uint64_t>(size);
}

// True when the byte at the buffer's address is the first byte of the
// call's data, whatever MPI does with the rest: a predefined datatype (the
// only kind whose envelope has no integers, addresses or datatypes; the
// combiner's value differs between families) with no gap before or in it.
// A derived type might list its bytes out of address order, and MPI may
// then move the byte at the buffer's address with a later piece of the data.
bool FirstByteAtBuffer(Handle type) {
  int size = 0, integers = -1, addresses = -1, types = -1, combiner = -1;
  Aint lb = -1, extent = -1, true_lb = -1, true_extent = -1;
  return real_PMPI_Type_get_envelope(type, &integers, &addresses, &types, &combiner) == 0 &&
         integers == 0 && addresses == 0 && types == 0 &&
         real_PMPI_Type_size(type, &size) == 0 && size > 0 &&
         real_PMPI_Type_get_extent(type, &lb, &extent) == 0 &&
         real_PMPI_Type_get_true_extent(type, &true_lb, &true_extent) == 0 && lb == 0 &&
         true_lb == 0 && extent == size && true_extent == size;
}

// A shared-pointer or ordered call: the watch of mpi_watch.h, armed for the
// call's duration (an MPI call nested in it keeps its own and gives this one
// back).
class SharedPointerCall {
 public:
  SharedPointerCall(Handle fh, const void* buf, Count count) {
    if (count <= 0 || buf == nullptr) return;
    if (!dlprof::core::Tracing(dlprof::core::CurrentThread())) return;
    MpiFile f;
    if (!TracedMpiFile(fh, &f)) return;
    saved_ = tls_mpi_watch;
    tls_mpi_watch = MpiWatch{f.file, buf, -1};
    armed_ = true;
  }
  ~SharedPointerCall() {
    if (armed_) tls_mpi_watch = saved_;
  }
  // Where the call's data starts, or -1: asked in the describer.
  int64_t Offset(int rc, Handle type) const {
    if (!armed_ || rc != 0 || tls_mpi_watch.offset < 0 || !FirstByteAtBuffer(type)) return -1;
    return tls_mpi_watch.offset;
  }

 private:
  bool armed_ = false;
  MpiWatch saved_{};
};

// MPI_STATUS_IGNORE is NULL in Open MPI and 1 in MPICH.
bool HasStatus(Status s) { return reinterpret_cast<uintptr_t>(s) > 1; }

// The status a blocking data call fills: the program's, or where it passed
// MPI_STATUS_IGNORE one of the tracer's own, so that what moved is known
// either way. The program sees nothing of it: its own status stays ignored.
class CallStatus {
 public:
  explicit CallStatus(Status given) : given_(given) {}
  Status Get() { return HasStatus(given_) ? given_ : static_cast<Status>(own_); }

 private:
  Status given_;
  // MPI_Status is 24 bytes in Open MPI 4 and 20 in MPICH 4; room to spare.
  alignas(16) unsigned char own_[64] = {};
};

// A predefined handle: the address of a symbol in Open MPI (found in the
// global scope, or among the loaded objects when mpi4py loaded MPI locally),
// a constant in the MPICH family.
Handle Predefined(const char* ompi_symbol, intptr_t mpich_value) {
  void* ompi = dlsym(RTLD_DEFAULT, ompi_symbol);
  if (ompi == nullptr) ompi = dlprof::core::FindLoadedSymbol(ompi_symbol);
  return ompi ? ompi : reinterpret_cast<Handle>(mpich_value);
}

// MPI_BYTE, found once MPI is there (MPI_Init*, MPI_File_open), so that a
// data call's describer never needs dlsym.
std::atomic<Handle> g_byte_type{nullptr};
Handle ByteType() {
  Handle t = g_byte_type.load(std::memory_order_acquire);
  if (t == nullptr) {
    t = Predefined("ompi_mpi_byte", 0x4c00010d);
    g_byte_type.store(t, std::memory_order_release);
  }
  return t;
}

// The bytes a successful blocking call moved: its status counted in
// MPI_BYTE, which is the bytes of the datatype's type signature that moved,
// for a derived datatype too, and also when they are not a whole number of
// the datatype (past the end of the file), where MPI_Get_count says
// MPI_UNDEFINED. Where even that fails, what was asked.
uint64_t BytesMoved(Status status, uint64_t asked) {
  long long moved = 0;
  if (real_PMPI_Get_elements_x(status, ByteType(), &moved) != 0 || moved < 0) return asked;
  return static_cast<uint64_t>(moved);
}

// Whether a call on `fh` is recorded: not on a file left out of the trace,
// nor on a handle never seen open; where an open found the table full, one
// not in it is recorded with no file (nor offset: MayAskPosition is false).
bool DescribeMpiFile(Event& e, Handle fh) {
  MpiFile f;
  if (!FindMpiFile(Key(fh), &f)) return MayBeUnlistedMpiFile(Key(fh));
  if (!FdTable::Named(f.file)) return NotNamed(f.file);
  e.file = f.file;
  e.fd = f.comm_size;
  return true;
}

// A data access: `asked` bytes at `offset`; what moved comes from the status
// of a blocking call (CallStatus), else it is taken to be what was asked
// (`status` nullptr: non-blocking calls complete later, split collectives
// count at _begin).
bool DescribeMpiIo(Event& e, Handle fh, int64_t offset, Count count, Handle type, Status status,
                   int rc, bool collective, bool data_moves) {
  if (!DescribeMpiFile(e, fh)) return false;
  if (collective) e.flags |= dlprof::kEventFlagCollective;
  // A failed call may have been given an invalid datatype or status: they
  // are not touched then, and nothing is counted as moved.
  if (rc != 0) return true;
  e.offset = offset;
  e.size = TypeBytes(count, type);
  if (!data_moves || count <= 0) {
    // Nothing asked: the datatype may be one MPI accepts only with count 0.
    e.aux = 0;
  } else if (status != nullptr) {
    e.aux = BytesMoved(status, e.size);
  } else {
    e.aux = e.size;
  }
  return true;
}

Handle CommWorld() { return Predefined("ompi_mpi_comm_world", 0x44000000); }

// The file a name given to MPI_File_open or MPI_File_delete is. ROMIO (the
// MPICH family's MPI-IO) takes a file system driver's prefix off it
// ("ufs:data.bin", "lustre:/scratch/x"); Open MPI's own ompio opens the name
// as it is ("ckpt-10:30.dat", "ufs:u.dat" are files of those names).
const char* MpiFileName(const char* path) {
  static const char* const kRomioDrivers[] = {
      "ufs",   "nfs", "lustre", "gpfs", "pvfs2", "daos", "testfs", "xfs",  "panfs",
      "ime",   "quobyte", "bg", "bgl",  "piofs", "pfs",  "hfs",    "sfs",  "beegfs"};
  const char* colon = path != nullptr ? strchr(path, ':') : nullptr;
  if (colon == nullptr) return path;
  const char* slash = strchr(path, '/');
  if (slash != nullptr && slash < colon) return path;
  if (CommWorld() != reinterpret_cast<Handle>(0x44000000)) return path;  // Open MPI
  const size_t n = static_cast<size_t>(colon - path);
  for (const char* driver : kRomioDrivers) {
    if (strlen(driver) == n && strncasecmp(path, driver, n) == 0) return colon + 1;
  }
  return path;
}

void AfterInit(Event& e, int rc) {
  int rank = -1, size = 0;
  if (rc == 0 && real_PMPI_Comm_rank(CommWorld(), &rank) == 0 &&
      real_PMPI_Comm_size(CommWorld(), &size) == 0) {
    Rt().SetRank(rank);
  }
  e.fd = size;
  e.aux = static_cast<uint64_t>(rank);
}

// After the program's MPI_Init: the clocks, outside the init's event (the
// measurement is the tracer's time, not the program's). Collective: every
// rank that loaded the tracer takes part, whether it records or not (tracing
// off in this process, or stepped aside), or the others would wait forever.
int AfterInitCall(int rc) {
  if (rc != 0) return rc;
  int rank = -1, size = 0;
  bool known;
  {
    AskingMpi asking;
    ByteType();
    known = real_PMPI_Comm_rank(CommWorld(), &rank) == 0 &&
            real_PMPI_Comm_size(CommWorld(), &size) == 0;
  }
  if (known) MeasureClocksAtInit(CommWorld(), rank, size);
  return rc;
}

}  // namespace

// --- init and finalize -------------------------------------------------------

DLPROF_REAL_AS(PMPI_Init, int (*)(int*, char***), nullptr)
extern "C" int MPI_Init(int* argc, char*** argv) {
  return AfterInitCall(Traced<int>(
      EventKind::MpiInit, [&] { return real_PMPI_Init(argc, argv); },
      [&](Event& e, int rc, int) {
        AfterInit(e, rc);
        return true;
      }));
}
DLPROF_REAL_AS(PMPI_Init_thread, int (*)(int*, char***, int, int*), nullptr)
extern "C" int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  return AfterInitCall(Traced<int>(
      EventKind::MpiInitThread,
      [&] { return real_PMPI_Init_thread(argc, argv, required, provided); },
      [&](Event& e, int rc, int) {
        AfterInit(e, rc);
        return true;
      }));
}
DLPROF_REAL_AS(PMPI_Finalize, int (*)(), nullptr)
extern "C" int MPI_Finalize() {
  MeasureClocksAtFinalize();
  // Everything reaches the disk before MPI (and maybe the job) goes away.
  Rt().FlushNow();
  return Traced<int>(
      EventKind::MpiFinalize, [&] { return real_PMPI_Finalize(); },
      [&](Event&, int, int) { return true; });
}

// --- open, close and metadata ----------------------------------------------------

DLPROF_REAL_AS(PMPI_File_open, int (*)(Handle, const char*, int, Handle, Handle*), nullptr)
extern "C" int MPI_File_open(Handle comm, const char* path, int amode, Handle info, Handle* fh) {
  return Traced<int>(
      EventKind::MpiFileOpen, [&] { return real_PMPI_File_open(comm, path, amode, info, fh); },
      [&](Event& e, int rc, int) {
        uint32_t file = dlprof::core::ResolvePath(Rt(), AT_FDCWD, MpiFileName(path));
        ByteType();  // (MPI_Init may not have been seen: a Fortran program's)
        int size = 0;
        // The communicator is known valid only once the open succeeded.
        if (rc == 0 && real_PMPI_Comm_size(comm, &size) != 0) size = 0;
        if (rc == 0 && fh != nullptr) RememberMpiFile(Key(*fh), MpiFile{file, size, amode});
        if (!FdTable::Named(file)) return NotNamed(file);
        e.file = file;
        e.fd = size;
        e.aux = static_cast<uint32_t>(amode);
        e.flags |= dlprof::kEventFlagCollective;
        return true;
      });
}

DLPROF_REAL_AS(PMPI_File_close, int (*)(Handle*), nullptr)
extern "C" int MPI_File_close(Handle* fh) {
  const Handle before = fh ? *fh : nullptr;
  Event described{};
  described.fd = -1;
  const bool traced = before && DescribeMpiFile(described, before);
  MpiFile was;
  const bool known = ForgetMpiFile(Key(before), &was);  // before MPI frees the handle
  const int rc = Traced<int>(
      EventKind::MpiFileClose, [&] { return real_PMPI_File_close(fh); },
      [&](Event& e, int, int) {
        e.file = described.file;
        e.fd = described.fd;
        e.flags |= dlprof::kEventFlagCollective;
        return traced;
      });
  if (rc != 0 && known) RememberMpiFile(Key(before), was);  // still open
  return rc;
}

DLPROF_REAL_AS(PMPI_File_delete, int (*)(const char*, Handle), nullptr)
extern "C" int MPI_File_delete(const char* path, Handle info) {
  return Traced<int>(
      EventKind::MpiFileDelete, [&] { return real_PMPI_File_delete(path, info); },
      [&](Event& e, int, int) { return DescribePath(e, AT_FDCWD, MpiFileName(path)); });
}

DLPROF_REAL_AS(PMPI_File_sync, int (*)(Handle), nullptr)
extern "C" int MPI_File_sync(Handle fh) {
  return Traced<int>(
      EventKind::MpiFileSync, [&] { return real_PMPI_File_sync(fh); },
      [&](Event& e, int, int) {
        e.flags |= dlprof::kEventFlagCollective;
        return DescribeMpiFile(e, fh);
      });
}

// set_size and preallocate are collective, get_size is not (MPI 4.0, 14.2.4-6).
#define DLPROF_MPI_SIZE_CALL(fn, kind, arg_type, size_expr, collective)          \
  DLPROF_REAL_AS(P##fn, int (*)(Handle, arg_type), nullptr)                      \
  extern "C" int fn(Handle fh, arg_type arg) {                                   \
    return Traced<int>(                                                          \
        EventKind::kind, [&] { return real_P##fn(fh, arg); },                    \
        [&](Event& e, int rc, int) {                                             \
          e.size = rc == 0 ? static_cast<uint64_t>(size_expr) : 0;               \
          if (collective) e.flags |= dlprof::kEventFlagCollective;               \
          return DescribeMpiFile(e, fh);                                         \
        });                                                                      \
  }
DLPROF_MPI_SIZE_CALL(MPI_File_set_size, MpiFileSetSize, Offset, arg, true)
DLPROF_MPI_SIZE_CALL(MPI_File_preallocate, MpiFilePreallocate, Offset, arg, true)
DLPROF_MPI_SIZE_CALL(MPI_File_get_size, MpiFileGetSize, Offset*, *arg, false)

DLPROF_REAL_AS(PMPI_File_set_view,
               int (*)(Handle, Offset, Handle, Handle, const char*, Handle), nullptr)
extern "C" int MPI_File_set_view(Handle fh, Offset disp, Handle etype, Handle filetype,
                                 const char* datarep, Handle info) {
  return Traced<int>(
      EventKind::MpiFileSetView,
      [&] { return real_PMPI_File_set_view(fh, disp, etype, filetype, datarep, info); },
      [&](Event& e, int rc, int) {
        if (rc == 0) e.offset = disp;  // (a view refused set nothing)
        e.flags |= dlprof::kEventFlagCollective;
        return DescribeMpiFile(e, fh);
      });
}

namespace {
// The position after a seek. The individual pointer is this process's own:
// asked after the call, it is where the seek put it. The shared pointer is
// never asked (mpi_watch.h); after MPI_SEEK_SET it is the offset given (all
// ranks give the same), after MPI_SEEK_CUR or MPI_SEEK_END it is unknown.
int64_t IndividualAfterSeek(Handle fh, Offset, int, int rc) {
  Offset pos = 0;
  if (rc != 0 || !MayAskPosition(fh) || real_PMPI_File_get_position(fh, &pos) != 0) return -1;
  return ViewToBytes(fh, pos);
}
int64_t SharedAfterSeek(Handle fh, Offset off, int whence, int rc) {
  return whence == kSeekSet ? ExplicitOffset(fh, off, rc) : -1;
}
}  // namespace
#define DLPROF_MPI_SEEK(fn, kind, after, collective)                                 \
  DLPROF_REAL_AS(P##fn, int (*)(Handle, Offset, int), nullptr)                       \
  extern "C" int fn(Handle fh, Offset off, int whence) {                             \
    return Traced<int>(                                                              \
        EventKind::kind, [&] { return real_P##fn(fh, off, whence); },                \
        [&](Event& e, int rc, int) {                                                 \
          if (!DescribeMpiFile(e, fh)) return false;                                 \
          if (collective) e.flags |= dlprof::kEventFlagCollective;                   \
          e.offset = after(fh, off, whence, rc);                                     \
          e.aux = static_cast<uint32_t>(whence);                                     \
          return true;                                                               \
        });                                                                          \
  }
DLPROF_MPI_SEEK(MPI_File_seek, MpiFileSeek, IndividualAfterSeek, false)
DLPROF_MPI_SEEK(MPI_File_seek_shared, MpiFileSeekShared, SharedAfterSeek, true)

// --- data access ---------------------------------------------------------------
// One macro per argument shape; `buf_type` is void* for reads, const void* for
// writes; `collective` and the pointer come from the function's name. Where
// the data starts: the individual pointer is asked before the call, an
// explicit offset converted after it, a shared-pointer or ordered call's
// found by SharedPointerCall.

namespace {
// Where an individual-pointer call starts (the pointer, asked before the call
// moves it); the same interface as SharedPointerCall.
class IndividualPointerCall {
 public:
  IndividualPointerCall(Handle fh, const void*, Count) : offset_(IndividualOffset(fh)) {}
  int64_t Offset(int rc, Handle) const { return rc == 0 ? offset_ : -1; }

 private:
  int64_t offset_;
};

}  // namespace

// fn(fh, buf, count, type, status)
#define DLPROF_MPI_RW(fn, kind, buf_type, count_t, Where, collective)                    \
  DLPROF_REAL_AS(P##fn, int (*)(Handle, buf_type, count_t, Handle, Status), nullptr)     \
  extern "C" int fn(Handle fh, buf_type buf, count_t count, Handle type, Status given) { \
    const Where where(fh, buf, count);                                                   \
    CallStatus st(given);                                                                \
    return Traced<int>(                                                                  \
        EventKind::kind, [&] { return real_P##fn(fh, buf, count, type, st.Get()); },     \
        [&](Event& e, int rc, int) {                                                     \
          return DescribeMpiIo(e, fh, where.Offset(rc, type), count, type, st.Get(), rc, \
                               collective, true);                                        \
        });                                                                              \
  }
// fn(fh, offset, buf, count, type, status)
#define DLPROF_MPI_RW_AT(fn, kind, buf_type, count_t, collective)                            \
  DLPROF_REAL_AS(P##fn, int (*)(Handle, Offset, buf_type, count_t, Handle, Status), nullptr) \
  extern "C" int fn(Handle fh, Offset at, buf_type buf, count_t count, Handle type,          \
                    Status given) {                                                          \
    CallStatus st(given);                                                                    \
    return Traced<int>(                                                                      \
        EventKind::kind, [&] { return real_P##fn(fh, at, buf, count, type, st.Get()); },     \
        [&](Event& e, int rc, int) {                                                         \
          return DescribeMpiIo(e, fh, ExplicitOffset(fh, at, rc), count, type, st.Get(), rc, \
                               collective, true);                                            \
        });                                                                                  \
  }
// Non-blocking: the last argument is an MPI_Request*, bytes count as asked.
#define DLPROF_MPI_IRW(fn, kind, buf_type, count_t, Where, collective)                  \
  DLPROF_REAL_AS(P##fn, int (*)(Handle, buf_type, count_t, Handle, Handle*), nullptr)   \
  extern "C" int fn(Handle fh, buf_type buf, count_t count, Handle type, Handle* req) { \
    const Where where(fh, buf, count);                                                  \
    return Traced<int>(                                                                 \
        EventKind::kind, [&] { return real_P##fn(fh, buf, count, type, req); },         \
        [&](Event& e, int rc, int) {                                                    \
          return DescribeMpiIo(e, fh, where.Offset(rc, type), count, type, nullptr, rc, \
                               collective, true);                                       \
        });                                                                             \
  }
#define DLPROF_MPI_IRW_AT(fn, kind, buf_type, count_t, collective)                                 \
  DLPROF_REAL_AS(P##fn, int (*)(Handle, Offset, buf_type, count_t, Handle, Handle*), nullptr)      \
  extern "C" int fn(Handle fh, Offset at, buf_type buf, count_t count, Handle type, Handle* req) { \
    return Traced<int>(                                                                            \
        EventKind::kind, [&] { return real_P##fn(fh, at, buf, count, type, req); },                \
        [&](Event& e, int rc, int) {                                                               \
          return DescribeMpiIo(e, fh, ExplicitOffset(fh, at, rc), count, type, nullptr, rc,        \
                               collective, true);                                                  \
        });                                                                                        \
  }
// Split collectives: _begin carries offset and bytes, _end the completion.
#define DLPROF_MPI_BEGIN(fn, kind, buf_type, count_t, Where)                                  \
  DLPROF_REAL_AS(P##fn, int (*)(Handle, buf_type, count_t, Handle), nullptr)                  \
  extern "C" int fn(Handle fh, buf_type buf, count_t count, Handle type) {                    \
    const Where where(fh, buf, count);                                                        \
    return Traced<int>(                                                                       \
        EventKind::kind, [&] { return real_P##fn(fh, buf, count, type); },                    \
        [&](Event& e, int rc, int) {                                                          \
          return DescribeMpiIo(e, fh, where.Offset(rc, type), count, type, nullptr, rc, true, \
                               true);                                                         \
        });                                                                                   \
  }
#define DLPROF_MPI_BEGIN_AT(fn, kind, buf_type, count_t)                                          \
  DLPROF_REAL_AS(P##fn, int (*)(Handle, Offset, buf_type, count_t, Handle), nullptr)              \
  extern "C" int fn(Handle fh, Offset at, buf_type buf, count_t count, Handle type) {             \
    return Traced<int>(                                                                           \
        EventKind::kind, [&] { return real_P##fn(fh, at, buf, count, type); },                    \
        [&](Event& e, int rc, int) {                                                              \
          return DescribeMpiIo(e, fh, ExplicitOffset(fh, at, rc), count, type, nullptr, rc, true, \
                               true);                                                             \
        });                                                                                       \
  }
#define DLPROF_MPI_END(fn, kind, buf_type)                          \
  DLPROF_REAL_AS(P##fn, int (*)(Handle, buf_type, Status), nullptr) \
  extern "C" int fn(Handle fh, buf_type buf, Status st) {           \
    return Traced<int>(                                             \
        EventKind::kind, [&] { return real_P##fn(fh, buf, st); },   \
        [&](Event& e, int, int) {                                   \
          e.flags |= dlprof::kEventFlagCollective;                  \
          return DescribeMpiFile(e, fh);                            \
        });                                                         \
  }

// Every data call of one direction, with `count_t` counts; `sfx` empty, or
// _c for MPI-4's large-count forms (MPI_Count counts; recorded as the same
// calls: what they do is the same). The _end calls take no count.
#define DLPROF_MPI_FAMILY(rw, Rw, buf_type, count_t, sfx)                                         \
  DLPROF_MPI_RW(MPI_File_##rw##sfx, MpiFile##Rw, buf_type, count_t, IndividualPointerCall, false) \
  DLPROF_MPI_RW(MPI_File_##rw##_all##sfx, MpiFile##Rw##All, buf_type, count_t,                    \
                IndividualPointerCall, true)                                                      \
  DLPROF_MPI_RW(MPI_File_##rw##_shared##sfx, MpiFile##Rw##Shared, buf_type, count_t,              \
                SharedPointerCall, false)                                                         \
  DLPROF_MPI_RW(MPI_File_##rw##_ordered##sfx, MpiFile##Rw##Ordered, buf_type, count_t,            \
                SharedPointerCall, true)                                                          \
  DLPROF_MPI_RW_AT(MPI_File_##rw##_at##sfx, MpiFile##Rw##At, buf_type, count_t, false)            \
  DLPROF_MPI_RW_AT(MPI_File_##rw##_at_all##sfx, MpiFile##Rw##AtAll, buf_type, count_t, true)      \
  DLPROF_MPI_IRW(MPI_File_i##rw##sfx, MpiFileI##rw, buf_type, count_t, IndividualPointerCall,     \
                 false)                                                                           \
  DLPROF_MPI_IRW(MPI_File_i##rw##_all##sfx, MpiFileI##rw##All, buf_type, count_t,                 \
                 IndividualPointerCall, true)                                                     \
  DLPROF_MPI_IRW(MPI_File_i##rw##_shared##sfx, MpiFileI##rw##Shared, buf_type, count_t,           \
                 SharedPointerCall, false)                                                        \
  DLPROF_MPI_IRW_AT(MPI_File_i##rw##_at##sfx, MpiFileI##rw##At, buf_type, count_t, false)         \
  DLPROF_MPI_IRW_AT(MPI_File_i##rw##_at_all##sfx, MpiFileI##rw##AtAll, buf_type, count_t, true)   \
  DLPROF_MPI_BEGIN(MPI_File_##rw##_all_begin##sfx, MpiFile##Rw##AllBegin, buf_type, count_t,      \
                   IndividualPointerCall)                                                         \
  DLPROF_MPI_BEGIN(MPI_File_##rw##_ordered_begin##sfx, MpiFile##Rw##OrderedBegin, buf_type,       \
                   count_t, SharedPointerCall)                                                    \
  DLPROF_MPI_BEGIN_AT(MPI_File_##rw##_at_all_begin##sfx, MpiFile##Rw##AtAllBegin, buf_type, count_t)

#define DLPROF_MPI_ENDS(rw, Rw, buf_type)                                        \
  DLPROF_MPI_END(MPI_File_##rw##_all_end, MpiFile##Rw##AllEnd, buf_type)         \
  DLPROF_MPI_END(MPI_File_##rw##_ordered_end, MpiFile##Rw##OrderedEnd, buf_type) \
  DLPROF_MPI_END(MPI_File_##rw##_at_all_end, MpiFile##Rw##AtAllEnd, buf_type)

DLPROF_MPI_FAMILY(read, Read, void*, int, )
DLPROF_MPI_FAMILY(write, Write, const void*, int, )
DLPROF_MPI_FAMILY(read, Read, void*, Count, _c)
DLPROF_MPI_FAMILY(write, Write, const void*, Count, _c)
DLPROF_MPI_ENDS(read, Read, void*)
DLPROF_MPI_ENDS(write, Write, const void*)
