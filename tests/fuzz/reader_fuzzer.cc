// libFuzzer target for the directory reader and the reader's C ABI
// (include/dlprof/reader.h): a directory of hostile traces, as a stranger's
// job might leave it.
//
// The input is cut into up to 8 files at each occurrence of the separator
// "\n--8<--\n" (a seed is a few real or forged traces joined by it). The
// files are written into a scratch directory (under /dev/shm when it exists),
// which goes through everything a binding does: open the directory (catalog
// of headers, run groups), each trace's info, every block range's events
// into columns and the strings they name, each group's partial summary,
// their merge and its JSON. Nothing may crash, hang, or allocate without
// bound whatever the files claim.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dlprof/reader.h"

namespace {

constexpr char kSeparator[] = "\n--8<--\n";
constexpr size_t kMaxFiles = 8;

// The scratch directory, made once per process.
const std::string& ScratchDir() {
  static const std::string dir = [] {
    std::string base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    std::string tmpl = base + "/dlprof-reader-fuzz.XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    const char* made = mkdtemp(buf.data());
    if (made == nullptr) return base;
    // Each input's files are unlinked after it; the directory goes at exit
    // (libFuzzer's and the replay driver's), not left in /dev/shm. Its name
    // is copied: the handler runs after this string is destroyed.
    static char made_dir[64];
    snprintf(made_dir, sizeof(made_dir), "%s", made);
    std::atexit([] { rmdir(made_dir); });
    return std::string(made);
  }();
  return dir;
}

void WriteFile(const std::string& path, const uint8_t* data, size_t size) {
  FILE* f = fopen(path.c_str(), "wb");
  if (f == nullptr) return;
  if (size > 0) fwrite(data, 1, size, f);
  fclose(f);
}

// Every block of every trace, a few blocks at a time, into columns.
void ReadAllEvents(dlprof_traces* t) {
  for (size_t i = 0; i < dlprof_trace_count(t); ++i) {
    dlprof_trace_info info;
    if (dlprof_trace_info_get(t, i, &info) != DLPROF_OK || !info.opened) continue;
    for (uint64_t b = 0; b < info.blocks; b += 2) {
      const size_t count = info.blocks - b < 2 ? 1 : 2;
      uint64_t n = 0;
      if (dlprof_block_events(t, i, b, count, &n) != DLPROF_OK) break;
      // Blocks hold at most the format's event limit; more than a million
      // rows here would be a reader that believed a forged count.
      if (n > (uint64_t{1} << 20)) abort();
      std::vector<uint64_t> start(n), size(n);
      std::vector<uint32_t> file(n);
      dlprof_columns c{};
      c.capacity = n;
      c.start_ns = start.data();
      c.size = size.data();
      c.file = file.data();
      size_t rows = 0;
      dlprof_read_events(t, i, b, count, &c, &rows);
      if (rows > n) abort();
      for (size_t r = 0; r < rows; ++r) {
        size_t len = 0;
        const char* s = dlprof_trace_string(t, i, file[r], &len);
        if (s != nullptr && len > 0 && s[len] != '\0') abort();
      }
    }
  }
}

void SummariseGroups(dlprof_traces* t) {
  dlprof_summary* total = nullptr;
  for (size_t g = 0; g < dlprof_group_count(t); ++g) {
    dlprof_summary* s = nullptr;
    dlprof_summarize_group(t, g, &s);
    if (s == nullptr) continue;
    if (total == nullptr) {
      total = s;
    } else {
      dlprof_summary_merge(total, s);
    }
  }
  if (total == nullptr) return;
  char* json = nullptr;
  size_t len = 0;
  if (dlprof_summary_json(total, &json, &len) == DLPROF_OK && (json == nullptr || len == 0)) {
    abort();
  }
  dlprof_free(json);
  dlprof_summary_free(total);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& dir = ScratchDir();
  // Cut the input into files.
  std::vector<std::string> paths;
  size_t at = 0;
  const size_t sep = sizeof(kSeparator) - 1;
  while (at <= size && paths.size() < kMaxFiles) {
    const uint8_t* hit = static_cast<const uint8_t*>(
        memmem(data + at, size - at, kSeparator, sep));
    const size_t end = hit ? static_cast<size_t>(hit - data) : size;
    paths.push_back(dir + "/t" + std::to_string(paths.size()) + ".dlprof");
    WriteFile(paths.back(), data + at, end - at);
    if (hit == nullptr) break;
    at = end + sep;
  }
  const char* inputs[] = {dir.c_str()};
  dlprof_traces* t = nullptr;
  dlprof_traces_open(inputs, 1, nullptr, &t);
  if (t != nullptr) {
    ReadAllEvents(t);
    SummariseGroups(t);
    dlprof_traces_free(t);
  }
  for (const std::string& p : paths) unlink(p.c_str());
  return 0;
}
