#include "lib/format/zstd_runs.h"

#include <algorithm>
#include <cstring>

#include <zstd_errors.h>

namespace dlprof::format {
namespace {

inline uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// A run this long or longer is a match: a shorter one costs more as a
// sequence (its codes) than as literals. zstd's shortest match is 3, and the
// run's first byte stays a literal.
constexpr size_t kMinRun = 4;

// Appends the sequences of one zstd block, src[begin, end), to `out`.
void BlockSequences(const uint8_t* p, size_t begin, size_t end, bool literals_only,
                    std::vector<ZSTD_Sequence>* out) {
  if (literals_only) {
    out->push_back({0, static_cast<unsigned>(end - begin), 0, 0});
    return;
  }
  constexpr uint64_t kLow7 = 0x7f7f7f7f7f7f7f7fULL, kHigh = 0x8080808080808080ULL;
  size_t literals_from = begin;
  size_t i = begin + 1;  // p[i] is compared with p[i - 1]
  while (i < end) {
    size_t run;  // where a run of kMinRun or more begins
    if (i + 8 <= end) {
      // Byte k of `same` is zero where p[i + k] equals the byte before it;
      // `zero` has the top bit of each such byte (exact, no borrow between
      // bytes), and `three` marks k where three in a row are: a run of four
      // from p[i + k - 1]. None: step 6, so that a three found at byte 6 or
      // 7 is looked at again whole.
      const uint64_t same = Load64(p + i) ^ Load64(p + i - 1);
      const uint64_t zero = ~(((same & kLow7) + kLow7) | same) & kHigh;
      const uint64_t three = zero & (zero >> 8) & (zero >> 16);
      if (three == 0) {
        i += 6;
        continue;
      }
      run = i + static_cast<size_t>(__builtin_ctzll(three) >> 3) - 1;
    } else if (i + 3 <= end && p[i - 1] == p[i] && p[i] == p[i + 1] && p[i + 1] == p[i + 2]) {
      run = i - 1;
    } else {
      ++i;
      continue;
    }
    const uint8_t b = p[run];
    const uint64_t splat = 0x0101010101010101ULL * b;
    size_t run_end = run + kMinRun;
    while (run_end + 8 <= end && Load64(p + run_end) == splat) run_end += 8;
    while (run_end < end && p[run_end] == b) ++run_end;
    // p[run] is a literal; the match copies it forward, offset 1.
    out->push_back({1, static_cast<unsigned>(run + 1 - literals_from),
                    static_cast<unsigned>(run_end - run - 1), 0});
    literals_from = run_end;
    i = run_end + 1;
  }
  out->push_back({0, static_cast<unsigned>(end - literals_from), 0, 0});  // the delimiter
}

}  // namespace

void RunSequences(const uint8_t* src, size_t n, const PayloadCuts& cuts,
                  std::vector<ZSTD_Sequence>* out) {
  out->clear();
  size_t begin = 0;
  for (int c = 0; c <= cuts.count; ++c) {
    const size_t cut = c < cuts.count ? std::min<size_t>(cuts.at[c], n) : n;
    while (begin < cut) {
      const size_t end = std::min(cut, begin + kRunBlockMaxBytes);
      BlockSequences(src, begin, end, (cuts.literal_segments >> c) & 1, out);
      begin = end;
    }
  }
}

PayloadCompressor::PayloadCompressor(int level) : cctx_(ZSTD_createCCtx()) {
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, 0);  // the block header has a CRC
  // Read by ZSTD_compressSequences alone.
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_blockDelimiters, ZSTD_sf_explicitBlockDelimiters);
}

PayloadCompressor::~PayloadCompressor() { ZSTD_freeCCtx(cctx_); }

// The parameters of each way, set before each call (a few stores): the
// context's workspace is sized by the larger and kept.
size_t PayloadCompressor::CompressRuns(const uint8_t* src, size_t n, const PayloadCuts& cuts,
                                       void* dst, size_t capacity) {
  if (cctx_ == nullptr) return static_cast<size_t>(-ZSTD_error_memory_allocation);
  RunSequences(src, n, cuts, &sequences_);
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_minMatch, 3);  // at most the shortest match made
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_windowLog, kRunWindowLog);
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_hashLog, 6);  // no match finder: its table's least
  // src and dst are whole: no copies of them in zstd's buffers (ZSTD_compress2
  // does the same for itself).
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_stableInBuffer, 1);
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_stableOutBuffer, 1);
  return ZSTD_compressSequences(cctx_, dst, capacity, sequences_.data(), sequences_.size(), src,
                                n);
}

size_t PayloadCompressor::CompressMatched(const uint8_t* src, size_t n, void* dst,
                                          size_t capacity) {
  if (cctx_ == nullptr) return static_cast<size_t>(-ZSTD_error_memory_allocation);
  for (ZSTD_cParameter p : {ZSTD_c_minMatch, ZSTD_c_windowLog, ZSTD_c_hashLog,
                            ZSTD_c_stableInBuffer, ZSTD_c_stableOutBuffer}) {
    ZSTD_CCtx_setParameter(cctx_, p, 0);  // the level's, or zstd's default
  }
  return ZSTD_compress2(cctx_, dst, capacity, src, n);
}

}  // namespace dlprof::format
