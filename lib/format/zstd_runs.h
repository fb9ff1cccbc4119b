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
// sequentially and 7 % fewer randomly (bench/README.md, "Session 16").
//
// The output is an ordinary zstd frame: no reader changes.
//
// Only for payloads of kRunCompressorMinBytes or more. Each zstd block carries
// its own tables, and in a small payload they cost more than they save:
// blocks of 128 events came out 4-14 % larger and took twice the time of
// zstd's own level 1; from about 512 events (6 KiB) on, this way is as small
// and faster (bench/README.md, "Session 16").
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

// The sequences that code `src[0, n)` as runs and literals: a zstd block per
// segment between `cuts`, none over ZSTD_BLOCKSIZE_MAX, each ended by its
// delimiter (ZSTD_sf_explicitBlockDelimiters). Replaces `out`'s contents.
// Runs of 4 or more of one byte are matches; the first byte of each is a
// literal, so every match has its offset's byte before it.
void RunSequences(const uint8_t* src, size_t n, const PayloadCuts& cuts,
                  std::vector<ZSTD_Sequence>* out);

// A zstd context set up for RunSequences' output at `level` (the entropy
// coder's effort). Compress returns ZSTD_compressSequences' result: the
// frame's size, or a zstd error code.
class RunCompressor {
 public:
  explicit RunCompressor(int level);
  ~RunCompressor();
  RunCompressor(const RunCompressor&) = delete;
  RunCompressor& operator=(const RunCompressor&) = delete;

  size_t Compress(const uint8_t* src, size_t n, const PayloadCuts& cuts, void* dst,
                  size_t capacity);

 private:
  ZSTD_CCtx* cctx_;
  std::vector<ZSTD_Sequence> sequences_;  // reused, grown to the largest block
};

}  // namespace dlprof::format

#endif  // DLPROF_LIB_FORMAT_ZSTD_RUNS_H_
