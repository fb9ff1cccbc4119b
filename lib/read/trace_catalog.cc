// A set of traces read from their headers alone.
#include "lib/read/trace_catalog.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <unordered_map>
#include <vector>

namespace dlprof::read {

bool CatalogEntry::MayHoldGpu() const {
  return opened && ((block_flags & kBlockFlagGpu) != 0 || (info.flags & kHeaderFlagGpuMarked) == 0);
}

void TraceCatalog::Add(CatalogEntry entry) {
  first_start_ns = std::min(first_start_ns, entry.first_start_ns);
  block_flags |= entry.block_flags;
  events += entry.events;
  bytes += entry.bytes;
  traces.push_back(std::move(entry));
}

namespace {

// How many blocks from the end a trace without a rank in its header has
// decoded for one: the last with a sound payload says the rank the process
// ended with (blocks say -1 until MPI gives one, and keep it after).
constexpr size_t kRankBlocksTried = 3;

int32_t GainedRank(format::TraceReader* reader, const std::vector<format::BlockLocation>& blocks) {
  format::DecodedBlock block;
  std::string error;
  for (size_t tried = 0; tried < kRankBlocksTried && tried < blocks.size(); ++tried) {
    if (reader->DecodeAt(blocks[blocks.size() - 1 - tried], &block, &error)) return block.info.rank;
  }
  return -1;
}

}  // namespace

TraceCatalog CatalogTraces(const std::vector<std::string>& files,
                           const std::vector<bool>& listed) {
  TraceCatalog catalog;
  catalog.traces.reserve(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string& path = files[i];
    CatalogEntry entry;
    entry.path = path;
    format::TraceReader reader;
    if (!reader.Open(path, &entry.error)) {
      // Reported by the decoder when it reads; kept for callers that only
      // plan. A live bounded run's sweep may delete a segment between the
      // listing and here: the stream's note, as for one deleted later.
      struct stat st;
      entry.vanished = i < listed.size() && listed[i] && stat(path.c_str(), &st) != 0 &&
                       errno == ENOENT;
    } else {
      entry.opened = true;
      entry.info = reader.process();
      entry.bytes = reader.file_size();
      const format::BlockList list = format::ListBlocks(&reader);
      for (const format::BlockLocation& where : list.blocks) {
        entry.block_flags |= where.flags;
        ++entry.blocks;
        entry.events += where.event_count;
        if (where.event_count > 0) {
          entry.first_start_ns = std::min(entry.first_start_ns, where.first_start_ns);
          entry.last_end_ns = std::max(entry.last_end_ns, where.last_end_ns);
        }
      }
      if (entry.info.rank < 0) {
        entry.info.rank = GainedRank(&reader, list.blocks);
        entry.rank_gained = entry.info.rank >= 0;
      }
    }
    catalog.Add(std::move(entry));
  }
  return catalog;
}

bool SameProcess(const format::ProcessInfo& a, const format::ProcessInfo& b) {
  return a.pid == b.pid && !a.kernel_start.empty() && a.kernel_start == b.kernel_start &&
         a.host == b.host && a.boot_id == b.boot_id && a.time_ns == b.time_ns &&
         a.pid_ns == b.pid_ns;
}

namespace {

// What SameProcess compares, as one key: equal keys, same process (a
// hash map of these keeps a job of 10,240 traces linear, where comparing
// every pair took seconds).
std::string ProcessKeyOf(const format::ProcessInfo& p) {
  std::string key = std::to_string(p.pid);
  for (const std::string* part : {&p.kernel_start, &p.host, &p.boot_id, &p.time_ns, &p.pid_ns}) {
    key += '\0';
    key += *part;
  }
  return key;
}

}  // namespace

std::vector<size_t> FirstImages(const std::vector<const format::ProcessInfo*>& infos) {
  // The image that ran first (its runtime's start; the input's order
  // between equals), not the first in the input's (file names') order.
  std::vector<size_t> first(infos.size());
  std::unordered_map<std::string, size_t> seen;
  for (size_t i = 0; i < infos.size(); ++i) {
    if (infos[i] == nullptr || infos[i]->kernel_start.empty()) continue;
    auto [it, added] = seen.try_emplace(ProcessKeyOf(*infos[i]), i);
    if (!added && infos[i]->process_start_ns < infos[it->second]->process_start_ns) it->second = i;
  }
  for (size_t i = 0; i < infos.size(); ++i) {
    first[i] = i;
    if (infos[i] != nullptr && !infos[i]->kernel_start.empty()) {
      first[i] = seen[ProcessKeyOf(*infos[i])];
    }
  }
  return first;
}

namespace {

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::vector<ProcessImage> ProcessImages(const TraceCatalog& catalog) {
  std::vector<ProcessImage> out(catalog.traces.size());
  std::vector<size_t> first_image(catalog.traces.size());
  for (size_t i = 0; i < first_image.size(); ++i) first_image[i] = i;
  // The traces of each process, in catalog order.
  std::unordered_map<std::string, std::vector<size_t>> by_process;
  for (size_t i = 0; i < catalog.traces.size(); ++i) {
    const CatalogEntry& t = catalog.traces[i];
    if (t.opened && !t.info.kernel_start.empty()) by_process[ProcessKeyOf(t.info)].push_back(i);
  }
  for (auto& [key, images] : by_process) {
    if (images.size() < 2) continue;
    // The images in the order they ran (their runtimes' starts; one clock:
    // one domain), the catalog's order between equals.
    std::stable_sort(images.begin(), images.end(), [&](size_t a, size_t b) {
      return catalog.traces[a].info.process_start_ns < catalog.traces[b].info.process_start_ns;
    });
    ProcessImage image;
    image.forked = (catalog.traces[images.front()].info.flags & kHeaderFlagForked) != 0;
    uint64_t last_start = 0;
    bool any = false;
    for (size_t i : images) {
      // The segments of a bounded trace (kHeaderFlagSegment) are one image:
      // the same start, not an exec.
      const format::ProcessInfo& info = catalog.traces[i].info;
      if (any && (info.flags & kHeaderFlagSegment) && info.process_start_ns == last_start) {
        continue;
      }
      any = true;
      last_start = info.process_start_ns;
      if (!image.exe_chain.empty()) image.exe_chain += " -> ";
      image.exe_chain += BaseName(info.exe);
    }
    if (image.exe_chain.find(" -> ") == std::string::npos) image.exe_chain.clear();
    for (size_t i : images) {
      out[i] = image;
      out[i].later_image = i != images.front();
      first_image[i] = images.front();
    }
  }
  // A segment deleted before its header was read names no process: not
  // another one (its process, if any of it is left, has its row from the
  // traces that are).
  for (size_t i = 0; i < out.size(); ++i) out[i].later_image |= catalog.traces[i].vanished;
  std::vector<const format::ProcessInfo*> infos;
  for (const CatalogEntry& t : catalog.traces) infos.push_back(t.opened ? &t.info : nullptr);
  const std::vector<int> earlier = EarlierSamePids(infos, first_image);
  for (size_t i = 0; i < out.size(); ++i) out[i].earlier_same_pid = earlier[i];
  return out;
}

std::vector<int> EarlierSamePids(const std::vector<const format::ProcessInfo*>& infos,
                                 const std::vector<size_t>& first_image) {
  // Processes of one host and pid, numbered in input order; a later image
  // is its process's.
  std::vector<int> out(infos.size(), 0);
  std::unordered_map<std::string, int> pids_seen;
  for (size_t i = 0; i < infos.size(); ++i) {
    if (infos[i] == nullptr || first_image[i] != i) continue;
    out[i] = pids_seen[infos[i]->host + '\0' + std::to_string(infos[i]->pid)]++;
  }
  for (size_t i = 0; i < out.size(); ++i) out[i] = out[first_image[i]];
  return out;
}

std::vector<int32_t> ProcessRanks(const std::vector<int32_t>& ranks,
                                  const std::vector<size_t>& first_image) {
  std::vector<int32_t> by_first(ranks.size(), -1);
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (by_first[first_image[i]] < 0) by_first[first_image[i]] = ranks[i];
  }
  std::vector<int32_t> out = ranks;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (by_first[first_image[i]] >= 0) out[i] = by_first[first_image[i]];
  }
  return out;
}

bool SeveralHosts(const TraceCatalog& catalog) {
  const std::string* first = nullptr;
  for (const CatalogEntry& t : catalog.traces) {
    if (!t.opened) continue;
    if (first != nullptr && t.info.host != *first) return true;
    first = &t.info.host;
  }
  return false;
}

}  // namespace dlprof::read
