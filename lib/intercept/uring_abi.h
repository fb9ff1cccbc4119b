// The io_uring ABI as the tracer reads it: the kernel's structures and
// constants (include/uapi/linux/io_uring.h, written out here so that the
// build needs no particular kernel headers and knows features newer than
// them), and liburing's struct io_uring, whose layout is liburing's ABI
// (liburing.so.2: its inline functions read these fields in the program).
#ifndef DLPROF_LIB_INTERCEPT_URING_ABI_H_
#define DLPROF_LIB_INTERCEPT_URING_ABI_H_

#include <cstddef>
#include <cstdint>

namespace dlprof::intercept::uring {

// ---- the kernel's ----------------------------------------------------------

struct SqringOffsets {
  uint32_t head, tail, ring_mask, ring_entries, flags, dropped, array, resv1;
  uint64_t user_addr;
};
struct CqringOffsets {
  uint32_t head, tail, ring_mask, ring_entries, overflow, cqes, flags, resv1;
  uint64_t user_addr;
};
struct Params {
  uint32_t sq_entries, cq_entries, flags, sq_thread_cpu, sq_thread_idle, features, wq_fd;
  uint32_t resv[3];
  SqringOffsets sq_off;
  CqringOffsets cq_off;
};
static_assert(sizeof(Params) == 120, "struct io_uring_params");

// The fields of a submission queue entry the tracer reads (64 bytes; 128
// with IORING_SETUP_SQE128, the rest being the command's).
struct Sqe {
  uint8_t opcode;
  uint8_t flags;  // IOSQE_*
  uint16_t ioprio;
  int32_t fd;
  uint64_t off;   // also addr2 (openat2: struct open_how*, statx: its buffer)
  uint64_t addr;  // buffer, iovec array or path
  uint32_t len;   // bytes, iovecs, or openat's mode, statx's mask
  uint32_t op_flags;  // rw_flags, fsync_flags, open_flags, statx_flags...
  uint64_t user_data;
  uint16_t buf_index;
  uint16_t personality;
  uint32_t file_index;  // openat and close: a fixed-file slot + 1 (0: none)
  uint64_t addr3;
  uint64_t pad2;
};
static_assert(sizeof(Sqe) == 64 && offsetof(Sqe, user_data) == 32 &&
                  offsetof(Sqe, file_index) == 44,
              "struct io_uring_sqe");

struct Cqe {
  uint64_t user_data;
  int32_t res;
  uint32_t flags;  // IORING_CQE_F_*
};
static_assert(sizeof(Cqe) == 16, "struct io_uring_cqe");

struct OpenHow {
  uint64_t flags, mode, resolve;
};

enum Opcode : uint8_t {
  kOpNop = 0,
  kOpReadv = 1,
  kOpWritev = 2,
  kOpFsync = 3,
  kOpReadFixed = 4,
  kOpWriteFixed = 5,
  kOpOpenat = 18,
  kOpClose = 19,
  kOpFilesUpdate = 20,
  kOpStatx = 21,
  kOpRead = 22,
  kOpWrite = 23,
  kOpOpenat2 = 28,
};

// IORING_SETUP_*: the flags the tracer knows. A ring set up with any other
// may lay its memory out in a way the tracer cannot read: not followed.
constexpr uint32_t kSetupSqpoll = 1u << 1;
constexpr uint32_t kSetupSqe128 = 1u << 10;
constexpr uint32_t kSetupCqe32 = 1u << 11;
constexpr uint32_t kSetupNoMmap = 1u << 14;          // the rings are the program's memory
constexpr uint32_t kSetupRegisteredFdOnly = 1u << 15;  // no fd: only a registered index
constexpr uint32_t kSetupNoSqArray = 1u << 16;       // SQ positions index the SQEs directly
constexpr uint32_t kSetupKnown = (1u << 18) - 1;      // up to IORING_SETUP_HYBRID_IOPOLL

constexpr uint32_t kFeatSingleMmap = 1u << 0;

constexpr uint8_t kSqeFixedFile = 1u << 0;
constexpr uint8_t kSqeIoLink = 1u << 2;
constexpr uint8_t kSqeIoHardlink = 1u << 3;
constexpr uint8_t kSqeCqeSkipSuccess = 1u << 6;

constexpr uint32_t kCqeFlagMore = 1u << 1;  // a multishot request goes on

constexpr uint32_t kEnterGetEvents = 1u << 0;
constexpr uint32_t kEnterRegisteredRing = 1u << 4;

constexpr uint64_t kOffSqRing = 0;
constexpr uint64_t kOffCqRing = 0x8000000ull;
constexpr uint64_t kOffSqes = 0x10000000ull;

constexpr uint32_t kFsyncDatasync = 1u << 0;
constexpr uint32_t kFileIndexAlloc = ~0u;  // openat: the kernel picks the slot (returned)

enum RegisterOp : unsigned {
  kRegisterFiles = 2,
  kUnregisterFiles = 3,
  kRegisterFilesUpdate = 6,
  kRegisterFiles2 = 13,
  kRegisterFilesUpdate2 = 14,
};
constexpr int kRegisterFilesSkip = -2;  // an update that leaves its slot as it is

struct FilesUpdate {  // IORING_REGISTER_FILES_UPDATE
  uint32_t offset, resv;
  uint64_t fds;  // int*
};
struct RsrcRegister {  // IORING_REGISTER_FILES2
  uint32_t nr, flags;
  uint64_t resv2, data, tags;
};
struct RsrcUpdate2 {  // IORING_REGISTER_FILES_UPDATE2
  uint32_t offset, resv;
  uint64_t data, tags;
  uint32_t nr, resv2;
};

// ---- liburing's ------------------------------------------------------------

struct LiburingSq {
  unsigned *khead, *ktail, *kring_mask, *kring_entries, *kflags, *kdropped, *array;
  void* sqes;
  unsigned sqe_head, sqe_tail;  // SQEs handed out: [sqe_head, sqe_tail) not yet flushed
  size_t ring_sz;
  void* ring_ptr;
  unsigned ring_mask, ring_entries;
  unsigned pad[2];
};
struct LiburingCq {
  unsigned *khead, *ktail, *kring_mask, *kring_entries, *kflags, *koverflow;
  void* cqes;
  size_t ring_sz;
  void* ring_ptr;
  unsigned ring_mask, ring_entries;
  unsigned pad[2];
};
struct LiburingRing {
  LiburingSq sq;
  LiburingCq cq;
  unsigned flags;
  int ring_fd;
  unsigned features;
  int enter_ring_fd;
  uint8_t int_flags;
  uint8_t pad[3];
  unsigned pad2;
};
static_assert(sizeof(LiburingRing) == 216 && offsetof(LiburingRing, ring_fd) == 196,
              "liburing's struct io_uring");

}  // namespace dlprof::intercept::uring

#endif  // DLPROF_LIB_INTERCEPT_URING_ABI_H_
