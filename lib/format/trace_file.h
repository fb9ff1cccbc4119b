// File-level framing: the header and the checksummed zstd blocks around the
// payloads of block_codec.h. The runtime writes with these helpers and
// dlprof-dump reads with TraceReader, so both ends share one definition.
#ifndef DLPROF_LIB_FORMAT_TRACE_FILE_H_
#define DLPROF_LIB_FORMAT_TRACE_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dlprof/format.h"
#include "lib/format/block_codec.h"
#include "lib/format/sidecar.h"

struct ZSTD_CCtx_s;
struct ZSTD_DCtx_s;

namespace dlprof::format {

// What the file header says about the traced process.
struct ProcessInfo {
  uint64_t clock_mono_ns = 0;
  uint64_t clock_real_ns = 0;
  int32_t pid = 0;
  int32_t ppid = 0;
  int32_t rank = -1;
  uint32_t flags = 0;
  uint64_t process_start_ns = 0;
  std::string host;
  std::string exe;
  std::string cmdline;  // arguments separated by NUL
  // Added after the first three strings (an older trace has them empty):
  std::string run_id;   // the job this process belongs to (docs/FORMAT.md)
  std::string boot_id;  // /proc/sys/kernel/random/boot_id of its host
  std::string time_ns;  // its time namespace's offsets (/proc/self/timens_offsets)
  // The process's start as the kernel counts it (/proc/self/stat field 22,
  // clock ticks since boot, in decimal): the same before and after exec, so
  // (boot id, time namespace, pid, kernel_start) names one process across
  // the images it runs.
  std::string kernel_start;
  // The run of the traced ancestor (a launcher such as mpirun) whose id a
  // job id overrode in this process (lib/core/run_id.h); empty otherwise.
  std::string parent_run_id;
  // The CPUs the process may run on when it started (its affinity mask's
  // count, in decimal; empty from older writers): what its loader workers
  // can use (docs/ANALYSIS_LOADER.md, "Loader workers: what more would give").
  std::string cpus;
  // The clock traced calls read (lib/core/tsc_clock.h): "tsc; calibration
  // error N ns", or "clock_gettime: " and why not the TSC. Empty from older
  // writers. The trace holds CLOCK_MONOTONIC_RAW ns either way.
  std::string clock;
  // How the process's page faults on mapped files are recorded
  // (lib/core/map_faults.h): "events; ..." (perf_event_open: a major_fault
  // event each), "counts; " and why (each region's major faults and time
  // off the CPU only: perf_event_open refused, or DLPROF_MAP_FAULTS), or
  // "off; ...". Empty from older writers, which recorded no faults.
  std::string faults;
  // Its pid namespace (/proc/self/ns/pid: "pid:[4026531836]"; empty from
  // older writers): two ranks in containers of their own on one host may
  // both be pid 1, started in the same clock tick.
  std::string pid_ns;
};

std::vector<uint8_t> EncodeFileHeader(const ProcessInfo& info);

class PayloadCompressor;  // zstd_runs.h

// Compresses payloads into framed blocks. Owns one zstd context.
class BlockFramer {
 public:
  explicit BlockFramer(int zstd_level);
  ~BlockFramer();
  BlockFramer(const BlockFramer&) = delete;
  BlockFramer& operator=(const BlockFramer&) = delete;
  // Replaces `out` with header + compressed `raw`. `span` comes from the
  // encoder that made `raw`; its content flags join `flags`. With the
  // encoder's `cuts`, a payload of kRunCompressorMinBytes or more has zstd
  // code its runs and literals as RunSequences finds them (zstd_runs.h);
  // others, or if that fails, zstd's own match finder. False if zstd fails.
  bool Frame(const std::vector<uint8_t>& raw, uint32_t event_count, uint32_t flags,
             const BlockSpan& span, std::vector<uint8_t>* out,
             const PayloadCuts* cuts = nullptr);

 private:
  std::unique_ptr<PayloadCompressor> compressor_;
  // zstd's output, sized for the worst case and never shrunk: compressing
  // straight into `out` grew it to the bound each block, zero-filling about
  // the raw payload's size (12 instructions an event) for the ~2 bytes an
  // event compresses to.
  std::vector<uint8_t> compressed_;
};

// Where one block lies and what its header says, read without decoding it.
struct BlockLocation {
  uint64_t offset = 0;  // of its header
  uint32_t event_count = 0;
  uint32_t flags = 0;
  uint64_t first_start_ns = 0;
  uint64_t last_end_ns = 0;
  uint32_t clock_error_ns = 0;  // of the block's clock pair; 0: unknown (older writers)
};

// Reads, checks and decodes block payloads. Owns a zstd context and scratch
// memory: one per thread that decodes.
class BlockDecoder {
 public:
  BlockDecoder();
  ~BlockDecoder();
  BlockDecoder(const BlockDecoder&) = delete;
  BlockDecoder& operator=(const BlockDecoder&) = delete;

  // Decodes the payload of the block at `offset` of `fd`, a file of format
  // `version`, whose header `h` was checked already. False with the reason
  // in `why` when its bytes are damaged or its events lie outside the span
  // the header states.
  bool Decode(int fd, uint64_t offset, const BlockHeader& h, uint32_t version,
              DecodedBlock* out, std::string* why);
  // Gives its memory back (scratch, zstd's context) until the next Decode:
  // for a file the merge is done with, of thousands open.
  void Release();

 private:
  // Scratch memory, not zeroed when it grows (a hostile file alternating
  // 8-byte and 64 MiB claims would otherwise pay for zeroing 64 MiB each
  // time), and given back after a block over kKeepBytes: dlprof-dump keeps
  // one reader per input file open.
  class Scratch {
   public:
    static constexpr size_t kKeepBytes = 4u << 20;
    uint8_t* Get(size_t n) {
      if (n > size_) {
        data_.reset(new uint8_t[n]);
        size_ = n;
      }
      return data_.get();
    }
    void Trim() {
      if (size_ > kKeepBytes) Free();
    }
    void Free() {
      data_.reset();
      size_ = 0;
    }

   private:
    std::unique_ptr<uint8_t[]> data_;
    size_t size_ = 0;
  };
  Scratch compressed_, raw_;
  ZSTD_DCtx_s* dctx_;
};

// Reads one trace file block by block. Memory stays bounded by the largest
// block the format allows, whatever the file holds.
//
// Two ways to walk it: Next() decodes the blocks in file order; or
// NextLocation() lists the blocks from their headers alone (cheap: no
// payload is read) and DecodeAt() decodes any of them later, in any order.
class TraceReader {
 public:
  TraceReader();
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  // Opens `path` and checks its header. On failure `error` says why (and
  // the file is closed again).
  bool Open(const std::string& path, std::string* error);
  // Closes the file, keeping what was read of it (its header, its size,
  // where its blocks are): a stream of thousands of traces holds open only
  // the files whose blocks it is decoding (lib/read/file_stream.h).
  void CloseFile();
  // Opens the file again after CloseFile() (true at once while open), for
  // the blocks listed before. False, with `error` saying why, when the path
  // holds that file no longer: `*gone` when nothing is there (a bounded
  // trace's sweep deleted it), else another file (another header, or fewer
  // bytes than were listed).
  bool Reopen(std::string* error, bool* gone);
  const ProcessInfo& process() const { return process_; }
  const std::string& path() const { return path_; }

  enum class Status { kBlock, kEnd, kDamaged };
  // kBlock fills `out`. kDamaged: `error` names the byte offset and problem;
  // the reader has skipped to the next intact block (or the end), so callers
  // just keep reading. kEnd: no more blocks.
  Status Next(DecodedBlock* out, std::string* error);

  // Like Next, but reads only the header: kBlock fills `where`. Damage found
  // in a header is reported and skipped as by Next; damage in a payload is
  // found by DecodeAt.
  Status NextLocation(BlockLocation* where, std::string* error);
  // Decodes the block NextLocation found at `where`. False with the reason in
  // `error` (which names the byte offset) when its payload is damaged, or its
  // events lie outside the time span its header states; the block counts as
  // damaged.
  bool DecodeAt(const BlockLocation& where, DecodedBlock* out, std::string* error);

  // DecodeAt in two halves, for decoding on other threads: DecodeWith only
  // reads the file (safe to call from any thread, each with its own
  // decoder); Account then counts the outcome on the reader's thread and
  // returns `decoded`, with `error` set as DecodeAt would.
  bool DecodeWith(BlockDecoder* decoder, const BlockLocation& where, DecodedBlock* out,
                  std::string* why) const;
  bool Account(const BlockLocation& where, bool decoded, const std::string& why,
               std::string* error);

  // Gives back the memory that decoding holds (CloseFile() closes the file):
  // for a file read to its end, of thousands in one stream.
  void Release();

  uint64_t damaged_blocks() const { return damaged_blocks_; }
  // Of the damaged blocks: the events lost, as the headers of those whose
  // header held count them; and how many had no sound header (a bad or
  // torn block header, a damaged sidecar), whose events nobody can count.
  uint64_t lost_events() const { return lost_events_; }
  uint64_t uncounted_damage() const { return uncounted_damage_; }
  // The trace's last block is an end marker, and it decoded. An end marker
  // with blocks after it (a failed exec's, runtime.cc FlushForExec) is not
  // the end: the process went on writing.
  bool saw_final_block() const {
    return end_marker_at_ != kNoBlock && end_marker_decoded_at_ == end_marker_at_;
  }
  // A trace without a final block whose process left a rings sidecar
  // (sidecar.h): after the file's blocks, the reader hands out one more,
  // at offset file_size(), of the events recovered from it. What it found:
  const Recovery& recovery() const { return recovery_; }
  uint64_t file_size() const { return file_size_; }
  // Bytes after the final block that hold no block header (the file read
  // to its end): ignored, not damage; 0 when there are none. Where they
  // begin: trailing_at().
  uint64_t trailing_bytes() const {
    return trailing_at_ == kNoBlock ? 0 : file_size_ - trailing_at_;
  }
  uint64_t trailing_at() const { return trailing_at_; }

 private:
  bool OpenChecked(const std::string& path, std::string* error);
  bool ReadAt(uint64_t offset, void* buf, size_t n) const;
  // Whether the header's checksum (byte 60, over its header_size bytes)
  // matches them.
  bool HeaderChecksumMatches(const FileHeader& h) const;
  bool HeaderAt(uint64_t offset, BlockHeader* h) const;
  // Checks the header at offset_; on success fills `h` and moves offset_ past
  // the block. On damage resyncs and returns false with `error` set.
  bool NextHeader(BlockHeader* h, uint64_t* at, std::string* error);
  // Scans forward from `from` for the next valid block header.
  uint64_t Resync(uint64_t from);

  int fd_ = -1;
  std::string path_;
  uint32_t version_ = kFormatVersion;  // the file's format version
  FileHeader header_{};  // its fixed part, as read: what Reopen() compares
  ProcessInfo process_;
  uint64_t offset_ = 0;
  uint64_t file_size_ = 0;
  uint64_t damaged_blocks_ = 0;
  uint64_t lost_events_ = 0;
  uint64_t uncounted_damage_ = 0;
  static constexpr uint64_t kNoBlock = ~uint64_t{0};
  // Where the last block header read so far is, if it is an end marker
  // (kNoBlock otherwise, or after damage); where an end marker decoded.
  uint64_t end_marker_at_ = kNoBlock;
  uint64_t end_marker_decoded_at_ = kNoBlock;
  uint64_t trailing_at_ = kNoBlock;  // trailing_bytes()
  bool recovery_tried_ = false;  // the sidecar was looked for
  Recovery recovery_;
  DecodedBlock recovered_;       // its events, handed out as the last block
  // At the end of the file's blocks: the recovered block, if there is one.
  bool NextRecovered(BlockLocation* where, std::string* error);
  BlockDecoder decoder_;
  std::vector<uint8_t> resync_buf_;
};

// Every block left in `reader`, from NextLocation until the end, and the
// damage found in block headers on the way: (index of the block after it,
// message). The one way readers list a trace's blocks.
struct BlockList {
  std::vector<BlockLocation> blocks;
  std::vector<std::pair<size_t, std::string>> damage;
};
BlockList ListBlocks(TraceReader* reader);

}  // namespace dlprof::format

#endif  // DLPROF_LIB_FORMAT_TRACE_FILE_H_
