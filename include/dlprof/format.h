// Trace file format constants and fixed-width structures.
//
// docs/FORMAT.md is the specification; this header is its C++ mirror. All
// multi-byte fields are little-endian (the only byte order dlprof runs on is
// checked below). Structures here are written to disk byte for byte, so each
// has its size pinned with a static_assert.
//
//   file   := FileHeader HeaderStrings Block*
//   Block  := BlockHeader zstd-frame(BlockPayload)
//
#ifndef DLPROF_FORMAT_H_
#define DLPROF_FORMAT_H_

#include <cstddef>
#include <cstdint>

#include "dlprof/catalogue.h"

namespace dlprof {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the trace format is little-endian and so is every host we support");

constexpr char kFileMagic[8] = {'D', 'L', 'P', 'R', 'O', 'F', '\r', '\n'};
// 2: block headers carry the events' time span; 3: the Start and Dur columns
// are predicted from the last event of the same kind (docs/FORMAT.md).
constexpr uint32_t kFormatVersion = 3;
constexpr uint32_t kOldestFormatVersion = 2;  // the oldest a reader still decodes
constexpr uint32_t kFormatVersionKindTimings = 3;  // Start, Dur predicted per kind from here
constexpr uint32_t kBlockMagic = 0x42504c44;  // "DLPB"

// Limits the decoder enforces on untrusted input; the writer stays far below.
constexpr uint32_t kMaxHeaderBytes = 64 * 1024;
constexpr uint32_t kMaxBlockRawBytes = 64u << 20;
// A block's raw bytes at most this many times its compressed ones (a
// reader's bound against damage: 64 KiB of it read at most 256 MiB).
constexpr uint64_t kMaxBlockRatio = 4096;
constexpr uint32_t kMaxBlockCompressedBytes = 64u << 20;
constexpr uint32_t kMaxStringBytes = 1u << 20;

// File header, fixed part. Followed by three strings (host, executable,
// command line with NUL between arguments), each a u32 length and the bytes.
//
//   0       8        12       16               24               32
//   +-------+--------+--------+----------------+----------------+
//   | magic |version |hdr_size| clock_mono_ns  | clock_real_ns  |
//   +---+---+---+----+--------+----------------+----------------+
//   32  36  40  44   48       56               64
//   |pid|ppid|rank|flags| run_start_ns      |reserved|hdr_crc|
struct FileHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_size;     // fixed part + strings: where block 0 starts
  uint64_t clock_mono_ns;   // CLOCK_MONOTONIC_RAW and CLOCK_REALTIME read
  uint64_t clock_real_ns;   //   back to back when the trace was opened
  int32_t pid;
  int32_t ppid;
  int32_t rank;             // -1 when no rank is known
  uint32_t flags;           // kHeaderFlag*
  uint64_t process_start_ns;  // monotonic time the process (image) started tracing
  uint32_t reserved;
  uint32_t header_crc;      // CRC-32C of header_size bytes, this field as 0
};
static_assert(sizeof(FileHeader) == 64, "FileHeader is on disk");
static_assert(offsetof(FileHeader, header_crc) == 60, "FileHeader is on disk");

constexpr uint32_t kHeaderFlagForked = 1u << 0;    // child of a traced fork
constexpr uint32_t kHeaderFlagAfterExec = 1u << 1;  // image started by exec of a traced one
// The writer marks blocks that hold GPU work with kBlockFlagGpu. A trace
// without this flag comes from an older writer: any of its blocks may hold
// GPU work, and a reader must assume they do.
constexpr uint32_t kHeaderFlagGpuMarked = 1u << 2;
// One segment of a bounded trace (DLPROF_KEEP, docs/FORMAT.md "Bounded
// traces"): the process's other segments have the same header but this
// flag's neighbours, and are the same image, not images after an exec.
constexpr uint32_t kHeaderFlagSegment = 1u << 3;

// Block header. The payload that follows is one zstd frame.
//
//   0       4       8        12         16       20         24
//   +-------+-------+--------+----------+--------+----------+
//   | magic | flags | zsize  | raw_size | events | clk_err  |
//   +-------+-------+--------+----------+--------+----------+
//   24                 32                 40      44      48
//   +------------------+------------------+-------+-------+
//   | first_start_ns   | last_end_ns      | zcrc  | hcrc  |
//   +------------------+------------------+-------+-------+
//
// Like a CTF packet context, the header states the time span of its events
// (earliest start, latest end), so a reader can plan a time-ordered merge of
// many blocks from the headers alone and decode each block only when the
// merge reaches it. The decoder checks the events against the span.
struct BlockHeader {
  uint32_t magic;
  uint32_t flags;            // kBlockFlag*
  uint32_t compressed_size;  // bytes of the zstd frame after this header
  uint32_t raw_size;         // bytes of the payload once decompressed
  uint32_t event_count;
  uint32_t clock_error_ns;   // error bound of the payload's clock pair (0: unknown)
  uint64_t first_start_ns;   // smallest start_ns of the events (0 if none)
  uint64_t last_end_ns;      // largest start_ns + dur_ns (0 if none)
  uint32_t payload_crc;      // CRC-32C of the compressed bytes
  uint32_t header_crc;       // CRC-32C of bytes [0, 44) of this header
};
static_assert(sizeof(BlockHeader) == 48, "BlockHeader is on disk");
static_assert(offsetof(BlockHeader, header_crc) == 44, "BlockHeader is on disk");

constexpr uint32_t kBlockFlagFinal = 1u << 0;    // last block of a clean shutdown
// What the block holds beyond plain calls, so that a reader can tell from the
// headers alone whether it needs its region or call-stack machinery.
constexpr uint32_t kBlockFlagRegions = 1u << 1;  // annotation regions, marks, NVTX ranges
constexpr uint32_t kBlockFlagStacks = 1u << 2;   // call stacks or module maps
constexpr uint32_t kBlockFlagGpu = 1u << 3;      // kernels, copies or memsets
constexpr uint32_t kBlockFlagClockOffset = 1u << 4;  // clock offsets measured through MPI
// The last block of a segment of a bounded trace: the writer went on in the
// next segment (a reader takes the segment as whole, not as a killed
// process's trace).
constexpr uint32_t kBlockFlagSegmentEnd = 1u << 5;

// One traced call. This is both the ring slot the runtime fills and the record
// the decoder hands out, one cache line each.
//
// Field meaning by category (docs/FORMAT.md has the full table):
//   file    string id of the path (0: none / unknown)
//   fd      file descriptor, -1 if none
//   offset  file position the call worked at, -1 if not applicable
//   size    bytes asked for
//   ret     what the call returned (pointers: 0 success, -1 failure; dup:
//           the new fd)
//   aux     kind-specific: second path id (rename), flags (open), bytes
//           moved (STDIO, MPI-IO), correlation id (CUDA)
struct Event {
  uint16_t kind;
  uint16_t flags;   // kEventFlag*
  int32_t err;      // errno after the call, 0 on success
  uint64_t start_ns;
  uint64_t dur_ns;
  int64_t ret;
  int64_t offset;
  uint64_t size;
  uint32_t file;
  int32_t fd;
  uint64_t aux;
};
static_assert(sizeof(Event) == 64, "Event is one cache line");

// Issued while another traced call of the same thread was in progress, e.g.
// the pread that an MPI_File_read_at does its work with.
constexpr uint16_t kEventFlagNested = 1u << 0;
// A collective MPI-IO call (every rank of the file's communicator takes part).
constexpr uint16_t kEventFlagCollective = 1u << 1;
// Asynchronous requests (category aio): the request named a registered
// ("fixed") file; moved its data through a registered buffer; was linked to
// the request submitted after it (the kernel runs them in order); had
// completed but the program had not reaped it when the tracer last looked
// (its ring closed or the process ended).
constexpr uint16_t kEventFlagFixedFile = 1u << 2;
constexpr uint16_t kEventFlagFixedBuffer = 1u << 3;
constexpr uint16_t kEventFlagLinked = 1u << 4;
constexpr uint16_t kEventFlagUnreaped = 1u << 5;
// Never on disk: set by the reader, with kEventFlagNested, on a POSIX read or
// write that cuFile's compatibility mode made on its own thread for a cuFile
// I/O in progress; its bytes are that I/O's (lib/read/cufile_compat.h).
constexpr uint16_t kEventFlagServesTransfer = 1u << 14;
// Never on disk: in a ring (and so in a rings sidecar) start_ns and dur_ns
// are TSC ticks, which the writer converts to nanoseconds before encoding
// (lib/format/tick_scale.h).
constexpr uint16_t kEventFlagTicks = 1u << 15;

// An asynchronous request's aux (docs/FORMAT_EVENTS.md, "Asynchronous requests"):
// bits 0-31 how long after its completion (as the tracer saw it) the program
// had reaped it, in microseconds (saturating); bits 32-39 its opcode (the
// io_uring or iocb opcode; for POSIX AIO 1 when lio_listio submitted it);
// bits 40-61 the thread that submitted it (Linux tids are below 2^22).
struct AsyncAux {
  uint32_t reaped_after_us;
  uint8_t opcode;
  int32_t submit_tid;
};
constexpr uint64_t PackAsyncAux(uint64_t reaped_after_ns, uint8_t opcode, int32_t submit_tid) {
  const uint64_t us = reaped_after_ns / 1000;
  return (us > 0xffffffffu ? 0xffffffffu : us) | uint64_t{opcode} << 32 |
         (static_cast<uint64_t>(static_cast<uint32_t>(submit_tid)) & 0x3fffff) << 40;
}
constexpr AsyncAux UnpackAsyncAux(uint64_t aux) {
  return {static_cast<uint32_t>(aux), static_cast<uint8_t>(aux >> 32),
          static_cast<int32_t>((aux >> 40) & 0x3fffff)};
}

// Columns of a block payload, in this order.
enum class Column : uint8_t {
  Kind, Flags, Start, Dur, File, Fd, Offset, Size, Ret, Err, Aux, Count
};
constexpr int kColumnCount = static_cast<int>(Column::Count);

}  // namespace dlprof

#endif  // DLPROF_FORMAT_H_
