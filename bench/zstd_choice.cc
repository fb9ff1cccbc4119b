// zstd_choice: the flusher's compression settings chosen by measurement
// (issue 33).
//
//   zstd_choice TRACE.dlprof [REPEATS]
//
// Re-encodes the trace's events with the library's BlockEncoder in blocks as
// the runtime made them (each decoded block becomes one payload again), then
// compresses every payload with each candidate setting -- zstd level,
// strategy and table sizes -- REPEATS times (default 5), and prints per
// setting the bytes per event and the thread CPU ns per event of the best
// repeat. The same payloads also in blocks of 2x and 4x the events, for the
// block size's part. Nothing here depends on the machine's load but the ns.
// A third argument K runs setting K alone on the blocks as made (to count
// its instructions under callgrind).
#include <time.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_c_literalCompressionMode
#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "dlprof/format.h"
#include "lib/format/block_codec.h"
#include "lib/format/trace_file.h"
#include "lib/format/zstd_runs.h"

using dlprof::Event;
using dlprof::format::BlockEncoder;
using dlprof::format::DecodedBlock;
using dlprof::format::TraceReader;

namespace {

uint64_t CpuNs() {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

struct Setting {
  const char* name;
  int level;
  int strategy;  // 0: the level's
  int window_log, hash_log, chain_log, search_log, min_match;  // 0: the level's
  bool raw_literals = false;  // literals stored, not Huffman-coded
  bool runs = false;  // the runtime's way: PayloadCompressor::CompressRuns at `level` (zstd_runs.h)
};

// The encoder's blocks of `group` decoded blocks each.
std::vector<std::vector<uint8_t>> Payloads(const std::vector<DecodedBlock>& blocks, size_t group,
                                           uint64_t* encode_ns,
                                           std::vector<dlprof::format::PayloadCuts>* cuts) {
  std::vector<std::vector<uint8_t>> out;
  BlockEncoder enc;
  const uint64_t t0 = CpuNs();
  for (size_t i = 0; i < blocks.size(); i += group) {
    enc.Begin(blocks[i].info);
    for (size_t k = i; k < std::min(blocks.size(), i + group); ++k) {
      const DecodedBlock& b = blocks[k];
      // One thread's run at a time, as the flusher drains a ring.
      size_t at = 0;
      while (at < b.events.size()) {
        size_t end = at;
        while (end < b.events.size() && b.tids[end] == b.tids[at]) ++end;
        enc.AddEvents(b.tids[at], &b.events[at], end - at);
        at = end;
      }
    }
    out.emplace_back();
    enc.Finish(&out.back());
    cuts->push_back(enc.cuts());
  }
  *encode_ns = CpuNs() - t0;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: zstd_choice TRACE.dlprof [REPEATS]\n");
    return 2;
  }
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  TraceReader reader;
  std::string error;
  if (!reader.Open(argv[1], &error)) {
    std::fprintf(stderr, "zstd_choice: %s\n", error.c_str());
    return 1;
  }
  std::vector<DecodedBlock> blocks;
  uint64_t events = 0;
  for (;;) {
    DecodedBlock b;
    auto st = reader.Next(&b, &error);
    if (st == TraceReader::Status::kEnd) break;
    if (st != TraceReader::Status::kBlock) continue;
    if (b.events.empty()) continue;
    events += b.events.size();
    blocks.push_back(std::move(b));
  }
  if (events == 0) {
    std::fprintf(stderr, "zstd_choice: no events\n");
    return 1;
  }
  const Setting settings[] = {
      {"level 3 (dfast, the runtime's before)", 3, 0, 0, 0, 0, 0, 0},
      {"level 1 (fast)", 1, 0, 0, 0, 0, 0, 0},
      {"level 2", 2, 0, 0, 0, 0, 0, 0},
      {"level -1", -1, 0, 0, 0, 0, 0, 0},
      {"level -3", -3, 0, 0, 0, 0, 0, 0},
      {"level 1, window 17, hash 13", 1, 0, 17, 13, 0, 0, 0},
      {"level 1, window 17, hash 12", 1, 0, 17, 12, 0, 0, 0},
      {"level 1, window 17, hash 14, minmatch 4", 1, 0, 17, 14, 0, 0, 4},
      {"level 2, window 17, hash 13", 2, 0, 17, 13, 0, 0, 0},
      {"level 3, window 17, hash 14 chain 14", 3, 0, 17, 14, 14, 0, 0},
      {"level 3, window 17, hash 13 chain 13", 3, 0, 17, 13, 13, 0, 0},
      {"level 1, raw literals", 1, 0, 0, 0, 0, 0, 0, true},
      {"level 3, raw literals", 3, 0, 0, 0, 0, 0, 0, true},
      {"level 1, runs and literals (the runtime's)", 1, 0, 0, 0, 0, 0, 0, false, true},
      {"level 3, runs and literals", 3, 0, 0, 0, 0, 0, 0, false, true},
  };
  std::printf("%s: %zu blocks, %llu events\n", argv[1], blocks.size(),
              static_cast<unsigned long long>(events));
  const int only = argc > 3 ? std::atoi(argv[3]) : -1;  // one setting, blocks as made
  for (size_t group : {size_t{1}, size_t{2}, size_t{4}}) {
    if (only >= 0 && group > 1) break;
    uint64_t encode_ns = 0;
    std::vector<dlprof::format::PayloadCuts> cuts;
    std::vector<std::vector<uint8_t>> payloads = Payloads(blocks, group, &encode_ns, &cuts);
    uint64_t raw = 0;
    for (const auto& p : payloads) raw += p.size();
    std::printf("\nblocks of %zux the runtime's (%zu payloads, %.2f raw B/event, encoder %.1f "
                "ns/event):\n", group, payloads.size(), static_cast<double>(raw) / events,
                static_cast<double>(encode_ns) / events);
    std::printf("  %-42s %10s %12s\n", "setting", "B/event", "ns/event");
    for (const Setting& s : settings) {
      if (only >= 0 && &s != &settings[only]) continue;
      ZSTD_CCtx* cctx = ZSTD_createCCtx();
      ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, s.level);
      ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 0);
      if (s.strategy) ZSTD_CCtx_setParameter(cctx, ZSTD_c_strategy, s.strategy);
      if (s.window_log) ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, s.window_log);
      if (s.hash_log) ZSTD_CCtx_setParameter(cctx, ZSTD_c_hashLog, s.hash_log);
      if (s.chain_log) ZSTD_CCtx_setParameter(cctx, ZSTD_c_chainLog, s.chain_log);
      if (s.search_log) ZSTD_CCtx_setParameter(cctx, ZSTD_c_searchLog, s.search_log);
      if (s.min_match) ZSTD_CCtx_setParameter(cctx, ZSTD_c_minMatch, s.min_match);
      if (s.raw_literals) {
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_literalCompressionMode, ZSTD_ps_disable);
      }
      dlprof::format::PayloadCompressor run_compressor(s.level);
      std::vector<uint8_t> out;
      uint64_t best = ~uint64_t{0}, bytes = 0;
      for (int r = 0; r < repeats; ++r) {
        uint64_t total = 0;
        const uint64_t t0 = CpuNs();
        for (const auto& p : payloads) {
          out.resize(ZSTD_compressBound(p.size()));
          const size_t z =
              s.runs ? run_compressor.CompressRuns(p.data(), p.size(), cuts[&p - payloads.data()],
                                               out.data(), out.size())
                     : ZSTD_compress2(cctx, out.data(), out.size(), p.data(), p.size());
          total += ZSTD_isError(z) ? p.size() : z;
        }
        best = std::min(best, CpuNs() - t0);
        bytes = total + payloads.size() * sizeof(dlprof::BlockHeader);
      }
      ZSTD_freeCCtx(cctx);
      std::printf("  %-42s %10.3f %12.1f\n", s.name, static_cast<double>(bytes) / events,
                  static_cast<double>(best) / events);
    }
  }
  return 0;
}
