// Figures derived from a finished summary.
#include "lib/analysis/summary_figures.h"

#include "lib/analysis/file_classes.h"

namespace dlprof::dump {
namespace {

bool OpenedAndUnused(const std::string& path, const IoStats& st) {
  return st.opens > 0 && st.read.ops == 0 && st.write.ops == 0 &&
         ClassOfPath(path) == FileClass::kOther;
}

}  // namespace

std::vector<std::pair<std::string, const IoStats*>> FilesByBytes(const Summary& s) {
  std::vector<std::pair<std::string, const IoStats*>> v;
  for (const auto& [path, st] : s.files) v.emplace_back(path, &st);
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    uint64_t x = a.second->read.bytes + a.second->write.bytes;
    uint64_t y = b.second->read.bytes + b.second->write.bytes;
    return x != y ? x > y : a.first < b.first;
  });
  return v;
}

std::vector<std::pair<std::string, double>> Rereads(const Summary& s) {
  std::vector<std::pair<std::string, double>> v;
  for (const auto& [path, st] : s.files) {
    if (st.read_extent > 0 && st.read.bytes >= 2 * st.read_extent &&
        ClassifyFile(path, st) == FileClass::kData) {
      v.emplace_back(path, static_cast<double>(st.read.bytes) / static_cast<double>(st.read_extent));
    }
  }
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return v;
}

std::vector<std::string> NeverReadFiles(const Summary& s) {
  std::vector<std::string> v;
  for (const auto& [path, st] : s.files) {
    if (OpenedAndUnused(path, st)) v.push_back(path);
  }
  return v;
}

std::vector<std::pair<std::string, uint64_t>> NeverReadByOpens(const Summary& s) {
  std::vector<std::pair<std::string, uint64_t>> v;
  for (const auto& [path, st] : s.files) {
    if (OpenedAndUnused(path, st)) v.emplace_back(path, st.opens);
  }
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return v;
}

MpiBalance MpiImbalance(const Summary& s) {
  uint64_t max = 0, total = 0;
  for (const auto& [rank, st] : s.ranks) {
    uint64_t b = st.mpi_collective_bytes + st.mpi_independent_bytes;
    max = std::max(max, b);
    total += b;
  }
  double mean = s.ranks.empty() ? 0 : static_cast<double>(total) / s.ranks.size();
  return {max, mean > 0 ? static_cast<double>(max) / mean : 0};
}

}  // namespace dlprof::dump
