// counters_stretch: a bounded trace's counters file made as long as a run of
// days or weeks, from a real one of seconds, to measure what reading a
// month-long run costs (bench/month_reader.sh, issue 53).
//
//   counters_stretch IN.dlcount OUT.dlcount COPIES [SPAN_NS]
//
// OUT holds IN's header and strings, then IN's records COPIES times (each
// interval record followed by its batches, steps and GPU records), each
// copy shifted in time by SPAN_NS (default: IN's span, its first interval's
// start to its last one's end; a loader worker's file takes its loop's) and
// its batch flows' ids by a pass (a copy is a pass of its
// own: its first batches sampled always, as a real pass's). Nothing else
// changes: a copy's records are what the flusher wrote.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lib/format/counters.h"

namespace {

using namespace dlprof::format;

bool ReadBytes(const char* path, std::vector<uint8_t>* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

// A copy's batch flow id: the pass field (bits 24 and up, below the pid)
// moved on by `copy`.
uint64_t Shifted(uint64_t id, uint64_t copy) { return id + (copy << kBatchIndexBits); }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: counters_stretch IN.dlcount OUT.dlcount COPIES [SPAN_NS]\n");
    return 2;
  }
  const uint64_t copies = std::strtoull(argv[3], nullptr, 10);
  CountersFile in;
  std::string error;
  std::vector<uint8_t> bytes;
  if (!ReadCountersFile(argv[1], &in, &error) || !ReadBytes(argv[1], &bytes)) {
    std::fprintf(stderr, "counters_stretch: %s\n", error.empty() ? argv[1] : error.c_str());
    return 1;
  }
  if (in.intervals.empty() || copies == 0) {
    std::fprintf(stderr, "counters_stretch: %s has no interval\n", argv[1]);
    return 1;
  }
  uint32_t header_size = 0;
  std::memcpy(&header_size, bytes.data() + 12, 4);
  const uint64_t first = in.intervals.front().start_ns, last = in.intervals.back().end_ns;
  const uint64_t span =
      argc == 5 ? std::strtoull(argv[4], nullptr, 10) : last > first ? last - first : 1;

  std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), header_size);
  std::vector<uint8_t> buf;
  AppendStringsRecord({in.strings.begin(), in.strings.end()}, &buf);
  // Each interval's batches, steps and GPU records after it, as the flusher
  // writes them.
  std::multimap<uint64_t, const BatchRecord*> batches;
  std::multimap<uint64_t, const StepRecord*> steps;
  std::multimap<uint64_t, const GpuRecord*> gpu;
  for (const BatchRecord& r : in.batches) batches.emplace(r.start_ns, &r);
  for (const StepRecord& r : in.steps) steps.emplace(r.start_ns, &r);
  for (const GpuRecord& r : in.gpu) gpu.emplace(r.start_ns, &r);
  for (uint64_t k = 0; k < copies; ++k) {
    const uint64_t shift = k * span;
    for (IntervalRecord r : in.intervals) {
      const uint64_t start = r.start_ns;
      r.start_ns += shift;
      r.end_ns += shift;
      for (RegionRow& g : r.regions) {
        if (g.first_start_ns != 0) g.first_start_ns += shift;
        if (g.last_end_ns != 0) g.last_end_ns += shift;
      }
      AppendIntervalRecord(r, &buf);
      for (auto [at, end] = batches.equal_range(start); at != end; ++at) {
        BatchRecord b = *at->second;
        b.start_ns += shift;
        for (std::vector<WaitSample>* waits : {&b.waits, &b.longest}) {
          for (WaitSample& w : *waits) {
            w.id = Shifted(w.id, k);
            w.start_ns += shift;
            w.end_ns += shift;
          }
        }
        for (FetchSample& f : b.fetches) {
          f.id = Shifted(f.id, k);
          f.start_ns += shift;
          f.end_ns += shift;
        }
        AppendBatchRecord(b, &buf);
      }
      for (auto [at, end] = steps.equal_range(start); at != end; ++at) {
        StepRecord sr = *at->second;
        sr.start_ns += shift;
        if (k > 0) sr.loop_start_ns = 0;  // the loop starts once
        AppendStepRecord(sr, &buf);
      }
      for (auto [at, end] = gpu.equal_range(start); at != end; ++at) {
        GpuRecord g = *at->second;
        g.start_ns += shift;
        g.first_ns += shift;
        g.last_ns += shift;
        AppendGpuRecord(g, &buf);
      }
    }
    out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(buf.size()));
    buf.clear();
  }
  for (const KeepRecord& r : in.keeps) AppendKeepRecord(r, &buf);
  out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(buf.size()));
  if (!out) {
    std::fprintf(stderr, "counters_stretch: cannot write %s\n", argv[2]);
    return 1;
  }
  std::printf("%s: %llu intervals, %.1f h\n", argv[2],
              static_cast<unsigned long long>(in.intervals.size() * copies),
              static_cast<double>(span) * copies / 3.6e12);
  return 0;
}
