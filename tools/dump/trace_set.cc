#include "tools/dump/trace_set.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <queue>
#include <set>
#include <thread>
#include <tuple>
#include <utility>

namespace dlprof::dump {
namespace fs = std::filesystem;
namespace {

bool EndsWith(const std::string& s, const char* suffix) {
  size_t n = std::char_traits<char>::length(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

void FindTraces(const std::string& dir, std::vector<std::string>* found,
                std::vector<std::string>* errors) {
  std::error_code ec;
  std::vector<std::string> files;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_regular_file(type_ec) && EndsWith(it->path().filename().string(), ".dlprof")) {
      files.push_back(it->path().string());
    }
  }
  if (ec) errors->push_back("error: " + dir + ": cannot list directory: " + ec.message());
  if (files.empty() && !ec) errors->push_back("error: " + dir + ": no .dlprof files found");
  std::sort(files.begin(), files.end());
  found->insert(found->end(), files.begin(), files.end());
}

// Events of one thread come out of the ring in order, and most processes
// have one busy thread, so the input is often sorted already. Otherwise the
// sort runs on compact keys rather than through indices into 64-byte events.
void SortProcess(ProcessTrace* p) {
  const size_t n = p->events.size();
  p->order.resize(n);
  bool sorted = true;
  for (size_t i = 0; i < n; ++i) {
    p->order[i] = static_cast<uint32_t>(i);
    if (i > 0 && sorted) {
      const uint64_t a = p->events[i - 1].start_ns, b = p->events[i].start_ns;
      sorted = a < b || (a == b && p->tids[i - 1] <= p->tids[i]);
    }
  }
  if (sorted) return;
  struct Key {
    uint64_t start;
    uint64_t tid_index;  // tid (sign bit flipped, so it sorts as signed), then file order
    bool operator<(const Key& o) const {
      return start < o.start || (start == o.start && tid_index < o.tid_index);
    }
  };
  std::vector<Key> keys(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t tid = static_cast<uint32_t>(p->tids[i]) ^ 0x80000000u;
    keys[i] = {p->events[i].start_ns, tid << 32 | i};
  }
  std::sort(keys.begin(), keys.end());
  for (size_t i = 0; i < n; ++i) p->order[i] = static_cast<uint32_t>(keys[i].tid_index);
}

// K-way merge of the per-process orders. Ties between processes go by pid,
// tid and then input order, so the output is the same on every run.
std::vector<EventRef> Merge(const std::vector<ProcessTrace>& procs) {
  struct Head {
    uint64_t start;
    int32_t pid;
    int32_t tid;
    uint32_t process;
    uint32_t pos;  // position in that process's order
    bool operator>(const Head& o) const {
      return std::tie(start, pid, tid, process) > std::tie(o.start, o.pid, o.tid, o.process);
    }
  };
  auto head = [&procs](uint32_t proc, uint32_t pos) {
    const ProcessTrace& p = procs[proc];
    uint32_t i = p.order[pos];
    return Head{p.events[i].start_ns, p.info.pid, p.tids[i], proc, pos};
  };
  size_t total = 0;
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heap;
  for (uint32_t k = 0; k < procs.size(); ++k) {
    total += procs[k].order.size();
    if (!procs[k].order.empty()) heap.push(head(k, 0));
  }
  std::vector<EventRef> merged;
  merged.reserve(total);
  while (!heap.empty()) {
    Head h = heap.top();
    heap.pop();
    const auto& order = procs[h.process].order;
    // Emit from this process for as long as it stays ahead of all others.
    for (;;) {
      merged.push_back({h.process, order[h.pos]});
      if (h.pos + 1 == order.size()) break;
      h = head(h.process, h.pos + 1);
      if (!heap.empty() && h > heap.top()) {
        heap.push(h);
        break;
      }
    }
  }
  return merged;
}

}  // namespace

bool TraceSet::clean() const {
  if (!input_errors.empty()) return false;
  for (const auto& p : processes) {
    if (!p.clean()) return false;
  }
  return true;
}

std::vector<std::string> ExpandInputs(const std::vector<std::string>& inputs,
                                      std::vector<std::string>* errors) {
  std::vector<std::string> expanded;
  for (const auto& in : inputs) {
    struct stat st;
    if (stat(in.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      FindTraces(in, &expanded, errors);
    } else {
      expanded.push_back(in);
    }
  }
  // A directory and a file inside it may both be named.
  std::set<std::pair<dev_t, ino_t>> seen;
  std::vector<std::string> files;
  for (auto& f : expanded) {
    struct stat st;
    if (stat(f.c_str(), &st) == 0 && !seen.insert({st.st_dev, st.st_ino}).second) continue;
    files.push_back(std::move(f));
  }
  return files;
}

void LoadProcess(ProcessTrace* p) {
  format::TraceReader reader;
  std::string error;
  if (!reader.Open(p->path, &error)) {
    p->messages.push_back("error: " + error);
    return;
  }
  p->opened = true;
  p->info = reader.process();
  format::DecodedBlock block;
  for (;;) {
    format::TraceReader::Status status = reader.Next(&block, &error);
    if (status == format::TraceReader::Status::kEnd) break;
    if (status == format::TraceReader::Status::kDamaged) {
      p->messages.push_back("error: " + error);
      continue;
    }
    ++p->blocks;
    p->dropped_events += block.info.dropped_events;
    for (auto& s : block.strings) p->strings[s.id] = std::move(s.text);
    const int32_t rank = block.info.rank >= 0 ? block.info.rank : p->info.rank;
    p->ranks.insert(p->ranks.end(), block.events.size(), rank);
    if (p->events.empty()) {  // saves a copy for one-block traces
      p->events.swap(block.events);
      p->tids.swap(block.tids);
    } else {
      p->events.insert(p->events.end(), block.events.begin(), block.events.end());
      p->tids.insert(p->tids.end(), block.tids.begin(), block.tids.end());
    }
  }
  p->damaged_blocks = reader.damaged_blocks();
  p->saw_final = reader.saw_final_block();

  uint64_t undefined = 0;
  for (const Event& e : p->events) {
    if (e.file != 0 && p->strings.find(e.file) == p->strings.end()) ++undefined;
  }
  if (undefined > 0) {
    p->messages.push_back("warning: " + p->path + ": " + std::to_string(undefined) +
                          " events name a path whose string is missing");
  }
  if (p->dropped_events > 0) {
    p->messages.push_back("warning: " + p->path + ": " + std::to_string(p->dropped_events) +
                          " events were dropped (full buffers with DLPROF_ON_FULL=drop, or GPU "
                          "records CUPTI lost)");
  }
  if (!p->saw_final) {
    p->messages.push_back("note: " + p->path + ": no end marker; process " +
                          std::to_string(p->info.pid) +
                          " was killed or is still running; decoded " +
                          std::to_string(p->blocks) + " blocks");
  }
}

TraceSet LoadTraceSet(const std::vector<std::string>& files, unsigned threads) {
  TraceSet set;
  set.processes.resize(files.size());
  for (size_t i = 0; i < files.size(); ++i) set.processes[i].path = files[i];

  std::atomic<size_t> next{0};
  auto work = [&set, &next] {
    for (size_t i; (i = next.fetch_add(1)) < set.processes.size();) {
      LoadProcess(&set.processes[i]);
      SortProcess(&set.processes[i]);
    }
  };
  threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(files.size())));
  if (threads == 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(work);
    for (auto& t : pool) t.join();
  }
  set.merged = Merge(set.processes);
  return set;
}

}  // namespace dlprof::dump
