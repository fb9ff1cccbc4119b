// Compresses a block payload with zstd without zstd's match finder.
//
// A payload is columns (block_codec.h). Most of them repeat one byte (a
// loop's kind and flags, its zero deltas); a few hold each event's
// high-entropy bytes (the start's gap, the duration, a random offset), where
// zstd's fast match finder spent about 100 instructions an event looking for
// matches worth nothing. Here runs of one byte, found a word at a time,
// become matches at offset 1, everything else is literals, and the payload is
// cut into zstd blocks where its columns change character, so the timings'
// literals get a Huffman table of their own. That took the compressor from
// 159 to 112 instructions an event on a loop of reads, for 1 % more bytes
// sequentially and 7 % fewer randomly (bench/RESULTS_TSC.md, "Session 16").
//
// The output is an ordinary zstd frame: no reader changes.
//
// Only for payloads of kRunCompressorMinBytes or more. Each zstd block carries
// its own tables, and in a small payload they cost more than they save:
// blocks of 128 events came out 4-14 % larger and took twice the time of
// zstd's own level 1; from about 512 events (6 KiB) on, this way is as small
// and faster (bench/RESULTS_TSC.md, "Session 16").
#ifndef DLPROF_LIB_FORMAT_ZSTD_RUNS_H_
#define DLPROF_LIB_FORMAT_ZSTD_RUNS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_Sequence, ZSTD_compressSequences
#include <zstd.h>

#include "lib/format/block_codec.h"

namespace dlprof::format {

constexpr size_t kRunCompressorMinBytes = 8192;

// The window, and so the largest zstd block and the buffers zstd sizes by
// it. The matches reach back one byte, and a column's block of 32 KiB pays
// for its tables once per 32 KiB. With zstd's 128 KiB blocks its context took
// 0.57 MB, against 0.29 for ZSTD_compress2 at level 1 (0.31 now).
constexpr int kRunWindowLog = 15;
constexpr size_t kRunBlockMaxBytes = size_t{1} << kRunWindowLog;

// The sequences that code `src[0, n)` as runs and literals: a zstd block per
// segment between `cuts`, none over kRunBlockMaxBytes, each ended by its
// delimiter (ZSTD_sf_explicitBlockDelimiters). Replaces `out`'s contents.
// Runs of 4 or more of one byte are matches; the first byte of each is a
// literal, so every match has its offset's byte before it.
void RunSequences(const uint8_t* src, size_t n, const PayloadCuts& cuts,
                  std::vector<ZSTD_Sequence>* out);

// One zstd context at `level`, for both ways of compressing a payload (one
// context: two would hold two workspaces, 0.7-1.5 MiB more per process).
// CompressRuns codes RunSequences' output (ZSTD_compressSequences);
// CompressMatched has zstd's own match finder look for matches
// (ZSTD_compress2). Each returns the frame's size or a zstd error code.
class PayloadCompressor {
 public:
  explicit PayloadCompressor(int level);
  ~PayloadCompressor();
  PayloadCompressor(const PayloadCompressor&) = delete;
  PayloadCompressor& operator=(const PayloadCompressor&) = delete;

  size_t CompressRuns(const uint8_t* src, size_t n, const PayloadCuts& cuts, void* dst,
                      size_t capacity);
  size_t CompressMatched(const uint8_t* src, size_t n, void* dst, size_t capacity);

 private:
  ZSTD_CCtx* cctx_;
  std::vector<ZSTD_Sequence> sequences_;  // reused, grown to the largest block
};

}  // namespace dlprof::format

#endif  // DLPROF_LIB_FORMAT_ZSTD_RUNS_H_
