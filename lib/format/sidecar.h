// The rings sidecar: where a process keeps the events it has recorded but not
// yet written into its trace, so that they outlive a SIGKILL or the OOM
// killer (docs/FORMAT.md, "The rings sidecar").
//
// The runtime maps the file MAP_SHARED and records into it directly: its
// per-thread rings (lib/core/ring.h, thread_registry.h) and a log of the
// strings it interns. When the process dies, whatever it stored is in the
// page cache and so in the file; the decoder takes from each ring the events
// between the position the trace file holds and the producer's committed
// position. The file is a memory image of one host (little-endian, 64-bit,
// the layout of include/dlprof/format.h's Event); its offsets are fixed
// here and checked against the runtime's structures at compile time.
#ifndef DLPROF_LIB_FORMAT_SIDECAR_H_
#define DLPROF_LIB_FORMAT_SIDECAR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "lib/format/block_codec.h"
#include "lib/format/tick_scale.h"

namespace dlprof::format {

// Beside the trace: "<trace>.dlprof" has "<trace>.dlprof.rings".
inline constexpr char kSidecarSuffix[] = ".rings";
inline constexpr char kSidecarMagic[8] = {'D', 'L', 'P', 'R', 'I', 'N', 'G', 'S'};
inline constexpr uint32_t kSidecarVersion = 1;
inline constexpr uint32_t kSidecarHeaderBytes = 4096;
inline constexpr uint64_t kStringLogBytes = 1u << 20;

// The first page of the file.
struct SidecarHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_bytes;         // where the string log starts
  uint32_t event_bytes;          // sizeof(Event): 64
  uint32_t region_header_bytes;  // where a region's slots start
  uint64_t ring_capacity;        // events per ring, a power of two
  uint64_t region_bytes;         // one ring region: header, slots, padding to a page
  uint64_t string_log_bytes;     // the string log, right after this header
  uint64_t first_region;         // offset of ring region 0; region k is k regions further
  // The trace file's size once the events block being written is complete;
  // 0 when no events block is being written. Tells which of a region's
  // `written` and `pending` is the trace's position.
  std::atomic<uint64_t> inflight_end;
  std::atomic<uint64_t> string_log_pos;  // bytes ever taken in the log
  std::atomic<int32_t> rank;             // the process's rank, -1 unknown
  int32_t pid;
  // Where the TSC is the events' clock, the scale of the last block written
  // (tick_scale.h), for the ring events that still hold ticks: two slots,
  // the writer fills the one not in use and then names it, so a process
  // killed in between leaves the other whole. 0 when no scale is set.
  std::atomic<uint32_t> tick_scale_slot;  // 1 + the slot in use; 0: none
  uint32_t reserved;
  TickScale tick_scales[2];
};
static_assert(sizeof(SidecarHeader) <= kSidecarHeaderBytes, "header fits its page");
// The offsets docs/FORMAT.md gives.
static_assert(offsetof(SidecarHeader, ring_capacity) == 24 &&
              offsetof(SidecarHeader, first_region) == 48 &&
              offsetof(SidecarHeader, inflight_end) == 56 &&
              offsetof(SidecarHeader, string_log_pos) == 64 &&
              offsetof(SidecarHeader, rank) == 72 && offsetof(SidecarHeader, pid) == 76 &&
              offsetof(SidecarHeader, tick_scale_slot) == 80 &&
              offsetof(SidecarHeader, tick_scales) == 88 && sizeof(TickScale) == 24,
              "the documented layout");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "atomics are plain words");

// A ring region starts with the runtime's ThreadBuffer; these are the
// offsets of the fields the decoder reads (u64 unless said otherwise).
inline constexpr size_t kRegionHeadAt = 0;      // producer's committed count
inline constexpr size_t kRegionTailAt = 64;     // consumer's count (drained)
inline constexpr size_t kRegionMagicAt = 192;   // u32 kRegionMagic once set up
inline constexpr size_t kRegionTidAt = 196;     // i32 the owning thread
inline constexpr size_t kRegionWrittenAt = 200; // events [0, written) are in the trace
inline constexpr size_t kRegionPendingAt =
    208;  // ... and [written, pending) in the block being written
inline constexpr uint32_t kRegionMagic = 0x474E5244;  // "DRNG"

// A string log record, at an 8-byte aligned offset of the log: u32 tag, u32
// id, u32 length, u32 CRC-32C of (id, length, bytes), the bytes, zero
// padding to 8. The writer stores the tag last; a record torn or partly
// overwritten fails its CRC.
inline constexpr uint32_t kStringRecordTag = 0x53504C44;  // "DLPS"
inline constexpr size_t kStringRecordHeader = 16;

// What recovery found.
struct Recovery {
  bool found = false;        // a sidecar was there and its header is sound
  uint64_t events = 0;       // events recovered
  uint64_t lost = 0;         // events a ring no longer held (overwritten)
  std::string path;
};

// Reads the sidecar of the trace at `trace_path` (whose file is
// `trace_size` bytes long) and fills `out` with the events it holds that the
// trace does not, with the strings they need and the events in
// (start_ns, tid) order. False when there is no sidecar or it is not one;
// `why` says so for a damaged one.
bool RecoverFromSidecar(const std::string& trace_path, uint64_t trace_size, DecodedBlock* out,
                        Recovery* recovery, std::string* why);

}  // namespace dlprof::format

#endif  // DLPROF_LIB_FORMAT_SIDECAR_H_
