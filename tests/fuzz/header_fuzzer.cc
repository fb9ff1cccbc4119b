// libFuzzer target: the trace file header (TraceReader::Open), the first
// thing the decoder reads of a stranger's file.
//
// The input is a whole file. Random bytes almost never carry a right
// CRC-32C, and a wrong one stops Open before the string fields are parsed,
// so the target writes the right checksum over the header_size bytes the
// header claims -- unless bit 0 of the header's reserved word (offset 56,
// which the reader ignores) is set: then the input's own checksum is kept
// and the mismatch path runs too.
//
// Invariants (a crash when broken): an opened header lies inside the file
// and inside the format's limit, its strings fit in it, and a header
// that EncodeFileHeader writes from the fields Open read opens to the same
// fields.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "dlprof/format.h"
#include "lib/format/crc32c.h"
#include "lib/format/trace_file.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using dlprof::format::ProcessInfo;
using dlprof::format::TraceReader;

bool SameInfo(const ProcessInfo& a, const ProcessInfo& b) {
  return a.clock_mono_ns == b.clock_mono_ns && a.clock_real_ns == b.clock_real_ns &&
         a.pid == b.pid && a.ppid == b.ppid && a.rank == b.rank && a.flags == b.flags &&
         a.process_start_ns == b.process_start_ns && a.host == b.host && a.exe == b.exe &&
         a.cmdline == b.cmdline;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> file(data, data + size);
  if (file.size() >= sizeof(dlprof::FileHeader)) {
    dlprof::FileHeader h;
    std::memcpy(&h, file.data(), sizeof(h));
    if ((h.reserved & 1) == 0 && h.header_size >= sizeof(h) && h.header_size <= file.size()) {
      h.header_crc = 0;
      std::memcpy(file.data(), &h, sizeof(h));
      h.header_crc = dlprof::format::Crc32c(file.data(), h.header_size);
      std::memcpy(file.data(), &h, sizeof(h));
    }
  }
  dlprof::fuzz::MemFile mem(file.data(), file.size());
  if (!mem.ok()) return 0;
  TraceReader reader;
  std::string error;
  if (!reader.Open(mem.path(), &error)) {
    FUZZ_CHECK(!error.empty());
    return 0;
  }
  dlprof::FileHeader h;
  std::memcpy(&h, file.data(), sizeof(h));
  FUZZ_CHECK(h.header_size <= file.size() && h.header_size <= dlprof::kMaxHeaderBytes);
  const ProcessInfo& info = reader.process();
  FUZZ_CHECK(sizeof(h) + info.host.size() + info.exe.size() + info.cmdline.size() <=
             h.header_size);
  FUZZ_CHECK(info.pid == h.pid && info.ppid == h.ppid && info.rank == h.rank &&
             info.flags == h.flags && info.clock_mono_ns == h.clock_mono_ns);
  FUZZ_CHECK(reader.file_size() == file.size());

  // What the writer makes of these fields opens to the same fields (the
  // writer clips strings to 16 KiB; a longer one cannot round-trip).
  if (info.host.size() <= 16 * 1024 && info.exe.size() <= 16 * 1024 &&
      info.cmdline.size() <= 16 * 1024) {
    const std::vector<uint8_t> again = dlprof::format::EncodeFileHeader(info);
    dlprof::fuzz::MemFile mem2(again.data(), again.size());
    TraceReader reader2;
    FUZZ_CHECK(mem2.ok() && reader2.Open(mem2.path(), &error));
    FUZZ_CHECK(SameInfo(reader2.process(), info));
    dlprof::format::BlockLocation where;
    FUZZ_CHECK(reader2.NextLocation(&where, &error) == TraceReader::Status::kEnd);
  }
  return 0;
}
