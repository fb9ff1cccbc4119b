// File-level framing: the header and the checksummed zstd blocks around the
// payloads of block_codec.h. The runtime writes with these helpers and
// dlprof-dump reads with TraceReader, so both ends share one definition.
#ifndef DLPROF_LIB_FORMAT_TRACE_FILE_H_
#define DLPROF_LIB_FORMAT_TRACE_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "dlprof/format.h"
#include "lib/format/block_codec.h"

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
};

std::vector<uint8_t> EncodeFileHeader(const ProcessInfo& info);

// Compresses payloads into framed blocks. Owns one zstd context.
class BlockFramer {
 public:
  explicit BlockFramer(int zstd_level);
  ~BlockFramer();
  BlockFramer(const BlockFramer&) = delete;
  BlockFramer& operator=(const BlockFramer&) = delete;
  // Replaces `out` with header + compressed `raw`. `span` comes from the
  // encoder that made `raw`; its content flags join `flags`. False if zstd
  // fails.
  bool Frame(const std::vector<uint8_t>& raw, uint32_t event_count, uint32_t flags,
             const BlockSpan& span, std::vector<uint8_t>* out);

 private:
  ZSTD_CCtx_s* cctx_;
};

// Where one block lies and what its header says, read without decoding it.
struct BlockLocation {
  uint64_t offset = 0;  // of its header
  uint32_t event_count = 0;
  uint32_t flags = 0;
  uint64_t first_start_ns = 0;
  uint64_t last_end_ns = 0;
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

  // Opens `path` and checks its header. On failure `error` says why.
  bool Open(const std::string& path, std::string* error);
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

  uint64_t damaged_blocks() const { return damaged_blocks_; }
  bool saw_final_block() const { return saw_final_; }
  uint64_t file_size() const { return file_size_; }

 private:
  bool ReadAt(uint64_t offset, void* buf, size_t n);
  bool HeaderAt(uint64_t offset, BlockHeader* h);
  // Checks the header at offset_; on success fills `h` and moves offset_ past
  // the block. On damage resyncs and returns false with `error` set.
  bool NextHeader(BlockHeader* h, uint64_t* at, std::string* error);
  // Reads, checks and decodes the payload of the block whose header is `h`.
  bool DecodePayload(uint64_t at, const BlockHeader& h, DecodedBlock* out, std::string* why);
  // Scans forward from `from` for the next valid block header.
  uint64_t Resync(uint64_t from);

  int fd_ = -1;
  std::string path_;
  ProcessInfo process_;
  uint64_t offset_ = 0;
  uint64_t file_size_ = 0;
  uint64_t damaged_blocks_ = 0;
  bool saw_final_ = false;
  std::vector<uint8_t> compressed_;  // grow-only, like raw_ and resync_buf_
  std::vector<uint8_t> raw_;
  std::vector<uint8_t> resync_buf_;
  ZSTD_DCtx_s* dctx_;
};

}  // namespace dlprof::format

#endif  // DLPROF_LIB_FORMAT_TRACE_FILE_H_
