// fuzz_replay: runs the fuzz target over files, without libFuzzer, so that
// every corpus input and every kept crash stays a regression test in the
// normal build (ctest unit.fuzz_replay).
//
//   fuzz_replay [--max-ms MS] [--max-rss-mb MB] FILE_OR_DIR...
//
// Fails when an input crashes (the test dies), takes longer than --max-ms
// (default 10000), or the process's peak memory passes --max-rss-mb (default
// 1024): the decoder's memory stays bounded whatever the input.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

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
    auto t0 = std::chrono::steady_clock::now();
    LLVMFuzzerTestOneInput(data.data(), data.size());
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (ms > slowest) {
      slowest = ms;
      slowest_file = f;
    }
    if (ms > max_ms) {
      fprintf(stderr, "fuzz_replay: %s took %.0f ms (limit %.0f)\n", f.c_str(), ms, max_ms);
      return 1;
    }
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  long rss_mb = ru.ru_maxrss / 1024;
  printf("fuzz_replay: %zu inputs (%llu bytes) decoded; slowest %.1f ms (%s); peak RSS %ld MiB\n",
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
