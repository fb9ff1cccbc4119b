// Opening a job for reading (job.h).
#include "lib/read/job.h"

#include <numeric>

#include "lib/read/runs.h"
#include "lib/read/trace_set.h"

namespace dlprof::read {

Job::Job(const std::vector<std::string>& inputs) {
  std::vector<bool> listed;
  const std::vector<std::string> files = ExpandInputs(inputs, &input_errors_, &listed);
  catalog_ = CatalogTraces(files, listed);
}

bool Job::KeepRun(const std::string& run, std::string* error) {
  if (!SelectRun(&catalog_, run, &note_, error)) return false;
  // Every clock domain onto one time base (nothing to do for one host).
  clocks_ = AlignClocks(catalog_);
  MapCatalog(clocks_, &catalog_);
  return true;
}

bool Job::AnyReadable() const {
  for (const CatalogEntry& t : catalog_.traces) {
    if (t.opened) return true;
  }
  return false;
}

EventSelection Job::Select(EventSelection selection) const {
  selection.base_ns = second_zero_ns();
  return selection;
}

std::unique_ptr<FileStream> Job::Stream(const std::vector<size_t>& traces,
                                        unsigned threads) const {
  return OpenStream(catalog_, &clocks_, traces, threads);
}

std::unique_ptr<FileStream> Job::StreamAll(unsigned threads) const {
  std::vector<size_t> all(catalog_.traces.size());
  std::iota(all.begin(), all.end(), size_t{0});
  return Stream(all, threads);
}

std::unique_ptr<FileStream> OpenStream(const TraceCatalog& catalog,
                                       const ClockAlignment* clocks,
                                       const std::vector<size_t>& traces, unsigned threads) {
  std::vector<std::string> files;
  std::vector<const DomainMap*> maps;
  std::vector<int32_t> ranks;
  std::vector<bool> read_before;
  const bool mapped = clocks != nullptr && !clocks->identity();
  for (size_t i : traces) {
    files.push_back(catalog.traces[i].path);
    maps.push_back(mapped ? &clocks->of(i) : nullptr);
    ranks.push_back(catalog.traces[i].info.rank);
    // Read, or listed and gone since: one missing now is a note.
    read_before.push_back(catalog.traces[i].opened || catalog.traces[i].vanished);
  }
  return std::make_unique<FileStream>(files, threads, kMaxWindowEvents, std::move(maps), ranks,
                                      read_before);
}

}  // namespace dlprof::read
