// fuzz_replay: runs the fuzz target over files, without libFuzzer, so that
// every corpus input and every kept crash stays a regression test in the
// normal build (ctest unit.fuzz_replay).
//
//   fuzz_replay [--max-ms MS] [--max-rss-mb MB] FILE_OR_DIR...
//
// Fails when an input crashes (the test dies), takes more than --max-ms
// (default 10000) of the process's CPU time, or the process's peak memory
// passes --max-rss-mb (default 1024): the decoder's time and memory stay
// bounded whatever the input. CPU time, not wall time: the bound is on the
// decoder's work, which a busy machine does not change, where wall time it
// stretches (the 64 MiB zstd bomb took 0.5 s alone and crossed 10 s with
// every core busy; issue 51).
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// The process's CPU time (every thread's: dlprof-dump decodes on workers).
double CpuMs() {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  double max_ms = 10000;
  long max_rss_mb = 1024;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--max-ms" && i + 1 < argc) {
      max_ms = std::atof(argv[++i]);
    } else if (a == "--max-rss-mb" && i + 1 < argc) {
      max_rss_mb = std::atol(argv[++i]);
    } else if (fs::is_directory(a)) {
      for (const auto& e : fs::recursive_directory_iterator(a)) {
        const std::string name = e.path().filename().string();
        if (e.is_regular_file() && !name.empty() && name[0] != '.' && name != "README.md") {
          files.push_back(e.path().string());
        }
      }
    } else {
      files.push_back(a);
    }
  }
  std::sort(files.begin(), files.end());
  double slowest = 0;
  std::string slowest_file;
  uint64_t bytes = 0;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    bytes += data.size();
    const double t0 = CpuMs();
    LLVMFuzzerTestOneInput(data.data(), data.size());
    const double ms = CpuMs() - t0;
    if (ms > slowest) {
      slowest = ms;
      slowest_file = f;
    }
    if (ms > max_ms) {
      fprintf(stderr, "fuzz_replay: %s took %.0f ms of CPU time (limit %.0f)\n", f.c_str(), ms,
              max_ms);
      return 1;
    }
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  long rss_mb = ru.ru_maxrss / 1024;
  printf("fuzz_replay: %zu inputs (%llu bytes) decoded; slowest %.1f ms of CPU time (%s); "
         "peak RSS %ld MiB\n",
         files.size(), static_cast<unsigned long long>(bytes), slowest, slowest_file.c_str(),
         rss_mb);
  if (files.empty()) {
    fprintf(stderr, "fuzz_replay: no input files\n");
    return 1;
  }
  if (rss_mb > max_rss_mb) {
    fprintf(stderr, "fuzz_replay: peak RSS %ld MiB over the limit of %ld MiB\n", rss_mb,
            max_rss_mb);
    return 1;
  }
  return 0;
}
