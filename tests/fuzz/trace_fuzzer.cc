// libFuzzer target for the decoder of untrusted traces.
//
// An input that starts with the file magic is a trace file: it goes through
// TraceReader (header, block framing, checksums, zstd, payload decoding) and,
// when the header opens, through everything dlprof-dump does with a trace
// (the streaming merge, the analysis, the text, jsonl, chrome and summary
// writers, into /dev/null; and the in-memory set with region assignment). Any other input is a block payload: its
// first 4 bytes are the event count the block header would claim, the rest
// goes straight to DecodeBlockPayload.
//
// Built as fuzzers only with clang (-DDLPROF_FUZZ=ON, scripts/fuzz.sh):
// dlprof_dump_fuzzer runs all of the above, dlprof_trace_fuzzer
// (DLPROF_FUZZ_READER_ONLY) only the reader and the payload decoder, about
// ten times faster. The full function is linked into fuzz_replay, which the
// normal build runs over tests/fuzz/corpus and tests/fuzz/crashes (ctest
// label unit).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "dlprof/format.h"
#include "lib/format/block_codec.h"
#include "lib/format/trace_file.h"
#include "lib/analysis/summary/summary.h"
#include "lib/analysis/meters/call_site_meter.h"
#include "lib/analysis/meters/region_meter.h"
#include "lib/read/event_labels.h"
#include "lib/read/file_stream.h"
#include "lib/read/trace_set.h"
#include "tests/fuzz/fuzz_util.h"
#include "tools/dump/output.h"
#include "tools/dump/summary_output.h"
#include "tests/helpers/summary_in_memory.h"

namespace {

using dlprof::fuzz::MemFile;

void FuzzTraceFile(const uint8_t* data, size_t size) {
  MemFile file(data, size);
  if (!file.ok()) return;
  {
    dlprof::format::TraceReader reader;
    std::string error;
    if (!reader.Open(file.path(), &error)) return;
    dlprof::format::DecodedBlock block;
    // Each call moves forward at least one byte, so this ends; the bound is
    // a guard against a reader that would not.
    for (uint64_t i = 0; i <= size + 1; ++i) {
      auto status = reader.Next(&block, &error);
      if (status == dlprof::format::TraceReader::Status::kEnd) break;
    }
  }
#ifndef DLPROF_FUZZ_READER_ONLY
  // What dlprof-dump does with it.
  namespace dump = dlprof::dump;
  namespace read = dlprof::read;
  namespace analysis = dlprof::analysis;
  static int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  dump::OutBuffer out(null_fd);
  for (auto write : {dump::WriteText, dump::WriteJsonl, dump::WriteChrome}) {
    read::FileStream stream({file.path()}, /*threads=*/0);
    write(stream, &out, {});
  }
  {
    // The exporters as dlprof-dump runs them on a trace with regions.
    read::FileStream stream({file.path()}, /*threads=*/0);
    read::RegionOptions options;
    options.source = read::ChooseRegionSource({file.path()});
    read::SymbolizeOptions no_symbols;
    no_symbols.use_addr2line = false;
    no_symbols.sysroot = "/nonexistent-dlprof-fuzz-root";
    const read::StackTable stacks = read::BuildStackTable(stream.processes(), no_symbols);
    read::EventLabels labelled(&stream, &options, &stacks);
    dump::WriteJsonl(labelled, &out, {});
  }
  {
    // The summary as dlprof-dump streams it, regions and call sites too.
    // Symbols are looked up under a root that does not exist: module paths
    // come from the input, and a fuzzer must not read /dev/stdin or fork.
    read::FileStream stream({file.path()}, /*threads=*/0);
    analysis::RegionMeter regions(stream.processes());
    read::SymbolizeOptions no_addr2line;
    no_addr2line.use_addr2line = false;
    no_addr2line.sysroot = "/nonexistent-dlprof-fuzz-root";
    analysis::CallSiteMeter sites(stream.processes(), no_addr2line);
    struct Tee : read::EventSource {
      read::EventSource* inner;
      std::vector<read::EventObserver*> observers;
      const std::vector<read::ProcessTrace>& processes() const override {
        return inner->processes();
      }
      size_t Next(read::StreamEvent* out, size_t max) override {
        const size_t n = inner->Next(out, max);
        for (auto* o : observers) {
          for (size_t i = 0; i < n; ++i) o->Add(out[i], i % 3 != 0);  // as if filtered
        }
        return n;
      }
    } tee;
    tee.inner = &stream;
    tee.observers = {&regions, &sites};
    analysis::Summary summary = analysis::Analyze(tee);
    analysis::SetRegionRows(regions.Finish(), &summary);
    summary.sites_by_bytes = sites.Top(analysis::CallSiteKey::kFunction, true, 10);
    summary.sites_by_module = sites.Top(analysis::CallSiteKey::kModule, true, 10);
    out.Append(dump::SummaryText(summary));
    out.Append(analysis::SummaryJson(summary));
  }
  read::TraceSet set = read::LoadTraceSet({file.path()}, read::kMaxInMemoryEvents, 0);
  read::RegionAssignment regions = read::AssignRegions(set);
  analysis::Summary summary = analysis::Analyze(set, nullptr, &regions);
  out.Append(dump::SummaryText(summary));
  out.Flush();
#endif
}

void FuzzPayload(const uint8_t* data, size_t size) {
  if (size < 4) return;
  uint32_t events;
  std::memcpy(&events, data, 4);
  // The top bit picks the oldest format version, whose timings differ.
  const uint32_t version = events >> 31 ? dlprof::kOldestFormatVersion : dlprof::kFormatVersion;
  events &= 0x7fffffffu;
  dlprof::format::DecodedBlock block;
  std::string error;
  dlprof::format::DecodeBlockPayload(data + 4, size - 4, events, version, &block, &error);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size >= sizeof(dlprof::kFileMagic) &&
      std::memcmp(data, dlprof::kFileMagic, sizeof(dlprof::kFileMagic)) == 0) {
    FuzzTraceFile(data, size);
  } else {
    FuzzPayload(data, size);
  }
  return 0;
}
