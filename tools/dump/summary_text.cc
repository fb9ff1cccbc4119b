// --summary as text, for people: the figures of lib/analysis, formatted.
#include <algorithm>
#include <cinttypes>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lib/analysis/summary/file_classes.h"
#include "lib/analysis/findings/summary_figures.h"
#include "lib/text/text.h"
#include "tools/dump/summary_output.h"
#include "tools/dump/summary_ranks_text.h"

namespace dlprof::dump {
using namespace dlprof::analysis;
using namespace dlprof::text;
namespace {


// The last line of a list cut at --top: nothing is left out silently.
std::string More(size_t left_out) {
  return Fmt("  ... and %zu more (--top N)\n", left_out);
}

std::string Rate(uint64_t bytes, uint64_t ns) {
  if (ns == 0) return "-";
  return ByteText(
             static_cast<uint64_t>(static_cast<double>(bytes) * 1e9 / static_cast<double>(ns))) +
         "/s";
}

std::string Percent(uint64_t part, uint64_t whole) {
  return whole == 0
             ? "-"
             : Fmt("%.1f %%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

// `window_ns`: the row's I/O window, from its first call's start to its last
// call's end (not the run: an interpreter's start-up is no I/O time).
void TextAccess(std::string* out, const char* what, const AccessStats& a, uint64_t window_ns,
                const char* indent) {
  if (a.ops == 0) return;
  *out += Fmt("%s%-6s %s in %" PRIu64
              " ops, %s in calls; %s in calls, %s over its I/O window "
              "%s\n",
              indent, what, ByteText(a.bytes).c_str(), a.ops, SecondsText(a.time_ns).c_str(),
              Rate(a.bytes, a.time_ns).c_str(), Rate(a.bytes, window_ns).c_str(),
              SecondsText(window_ns).c_str());
  *out += Fmt("%s       sizes:", indent);
  for (int b = 0; b < kSizeBins; ++b) {
    if (a.histogram[b]) *out += Fmt(" %s:%" PRIu64, SizeBinName(b), a.histogram[b]);
  }
  *out += "; most common:";
  for (const auto& [size, n] : TopCounts(a.sizes, 4)) *out += Fmt(" %" PRIu64 "x%" PRIu64, size, n);
  *out += Fmt("\n%s       pattern: %" PRIu64 " consecutive, %" PRIu64 " sequential, %" PRIu64
              " random, %" PRIu64 " first; small (<64 KiB): %s; common strides:",
              indent, a.consecutive, a.sequential, a.random(), a.first,
              Percent(a.small_ops, a.ops - std::min(a.empty_ops, a.ops)).c_str());
  for (const auto& [stride, n] : TopCounts(a.strides, 4)) {
    *out += Fmt(" %" PRId64 "x%" PRIu64, stride, n);
  }
  *out += "\n";
}

void TextOps(std::string* out, const IoStats& s, const char* indent) {
  *out += indent;
  *out += "ops   ";
  for (int g = 0; g < kOpGroups; ++g) {
    *out += Fmt(" %s %" PRIu64, OpGroupName(static_cast<OpGroup>(g)), s.ops[g]);
  }
  *out += Fmt("; I/O time %s", SecondsText(s.io_time_ns()).c_str());
  if (s.errors) *out += Fmt("; %" PRIu64 " failed", s.errors);
  *out += "\n";
}

// Reading through memory maps: the page faults, beside the calls.
void TextMaps(std::string* out, const MapReads& m, const char* indent) {
  if (m.faults == 0 && m.waits == 0) return;
  // (A scan read ahead waits on minor faults, each a map_wait.)
  const std::string waits =
      m.waits == 0 ? "" : Fmt(" and %" PRIu64 " waits for pages read ahead", m.waits);
  *out += Fmt("%smapped %s read in %" PRIu64 " major faults%s, %s holding their threads; %"
              PRIu64 " sequential, %" PRIu64 " random, %" PRIu64 " first\n",
              indent, ByteText(m.bytes).c_str(), m.faults, waits.c_str(),
              SecondsText(m.time_ns).c_str(), m.sequential, m.random(), m.first);
}

void TextLevel(std::string* out, const std::string& title, const IoStats& s) {
  const uint64_t window = s.first_ns < s.last_ns ? s.last_ns - s.first_ns : 0;
  *out += "  " + title + "\n";
  TextOps(out, s, "    ");
  TextAccess(out, "read", s.read, window, "    ");
  TextMaps(out, s.maps, "    ");
  TextAccess(out, "write", s.write, window, "    ");
}

// What the files of each class moved (file_classes.h), and the data set's
// figures on their own: what "the data" means in a training job.
void TextFileClasses(const Summary& s, std::string* out) {
  if (s.files.empty()) return;
  const auto totals = TotalsByClass(s);
  const FileClassTotals& data = totals[static_cast<int>(FileClass::kData)];
  uint64_t files = 0;  // directories of other paths are no files
  for (const FileClassTotals& t : totals) files += t.files;
  TextLevel(out,
            Fmt("data set: %" PRIu64 " of %" PRIu64 " files (read, not code, outputs or system "
                "files; docs/ANALYSIS.md, File classes)",
                data.files, files),
            data.io);
  *out += "\nFiles by class (--path and --exclude-path pick files by name)\n";
  *out += Fmt("  %-8s %7s %7s %12s %12s %12s %12s\n", "class", "files", "dirs", "read",
              "via maps", "written", "I/O time");
  for (int c = 0; c < kFileClasses; ++c) {
    const FileClassTotals& t = totals[c];
    if (t.files + t.directories == 0) continue;
    *out += Fmt("  %-8s %7" PRIu64 " %7" PRIu64 " %12s %12s %12s %12s\n",
                FileClassName(static_cast<FileClass>(c)), t.files, t.directories,
                ByteText(t.io.read.bytes).c_str(), ByteText(t.io.maps.bytes).c_str(),
                ByteText(t.io.write.bytes).c_str(), SecondsText(t.io.io_time_ns()).c_str());
  }
}

// An error bound, in the unit that shows it: microseconds to seconds.
std::string Bound(uint64_t ns) {
  if (ns < 1000) return "< 1 us";
  if (ns < 1000 * 1000) return Fmt("%" PRIu64 " us", ns / 1000);
  if (ns < 1000 * 1000 * 1000) {
    return Fmt("%" PRIu64 ".%01" PRIu64 " ms", ns / 1000000, ns / 100000 % 10);
  }
  return SecondsText(ns);
}

// Each section of the text summary appends to `out_ptr`.
void TextClocks(const Summary& s, std::string* out) {
  if (s.clock_domains.empty()) return;
  const DomainMap& ref = s.clock_domains.front();
  const std::string method = ClockMethod(s.clock_domains);
  const bool wall = method != "mpi";
  *out += Fmt("  clocks: %zu clock domains (hosts, time namespaces) put on the clock of %s "
              "%s;\n  error bound per domain:",
              s.clock_domains.size(), ref.host.c_str(),
              method == "mpi"          ? "by offsets measured through MPI"
              : method == "wall clock" ? "through their wall clocks"
                                       : "by offsets measured through MPI where there are some, "
                                         "else through their wall clocks");
  for (size_t i = 1; i < s.clock_domains.size(); ++i) {
    const DomainMap& d = s.clock_domains[i];
    *out +=
        Fmt(" %s %s (%zu traces%s)%s", d.host.c_str(), Bound(d.error_ns).c_str(), d.traces,
            method == "mpi and wall clock" ? (d.method == "mpi" ? ", mpi" : ", wall clock") : "",
            i + 1 < s.clock_domains.size() ? "," : "");
  }
  if (wall) {
    *out += "\n  (how far the hosts' wall clocks themselves disagree is not known from the traces)";
  }
  *out += "\n";
}

// Whose a process row is: a forked worker names its parent, a process
// another traced one started (spawned, exec'd by a shell) its parent, and
// a rank's processes the rank ("pid 12 (python3) forked: worker of pid 10,
// rank 1"; "pid 14 (io): child of pid 13").
std::string WhoseProcess(const Summary& s, const std::string& key,
                         const std::set<std::pair<std::string, int32_t>>& traced) {
  auto it = s.process_ids.find(key);
  if (it == s.process_ids.end()) return "";
  const Summary::ProcessId& who = it->second;
  const std::string rank = who.rank >= 0 ? Fmt("rank %d", who.rank) : "";
  if (who.forked) {
    return Fmt(": worker of pid %d%s%s", who.ppid, rank.empty() ? "" : ", ", rank.c_str());
  }
  if (traced.count({who.host, who.ppid}) > 0) {
    return Fmt(": child of pid %d%s%s", who.ppid, rank.empty() ? "" : ", ", rank.c_str());
  }
  return rank.empty() ? "" : ": " + rank;
}

void TextLevels(const Summary& s, size_t max_rows, std::string* out_ptr) {
  std::string& out = *out_ptr;
  out += "\nI/O, all processes\n";
  TextLevel(&out, "run", s.run);
  TextFileClasses(s, &out);
  if (!s.ranks.empty()) {
    out += "\nPer rank\n";
    for (const auto& [rank, st] : s.ranks) TextLevel(&out, Fmt("rank %d", rank), st);
  }
  out += "\nPer process\n";
  size_t processes_left_out = 0;
  std::set<std::pair<std::string, int32_t>> traced;  // (host, pid) of each process
  for (const auto& [key, who] : s.process_ids) traced.insert({who.host, who.pid});
  for (const std::string* key : ListedProcesses(s, max_rows, false, &processes_left_out)) {
    TextLevel(&out, *key + WhoseProcess(s, *key, traced), s.processes_stats.at(*key));
  }
  if (processes_left_out > 0) out += More(processes_left_out);  // the top by I/O time and by bytes
  out += "\nPer file (by bytes moved)\n";
  size_t shown = 0;
  auto files = FilesByBytes(s);
  for (const auto& [path, st] : files) {
    if (shown++ == max_rows) {
      out += More(files.size() - max_rows);
      break;
    }
    TextLevel(&out, path, *st);
  }
}

void TextFileLists(const Summary& s, size_t max_rows, std::string* out_ptr) {
  std::string& out = *out_ptr;
  auto never = NeverReadByOpens(s);
  out += Fmt("\nFiles opened and never read: %zu (by opens)\n", never.size());
  for (size_t i = 0; i < never.size() && i < max_rows; ++i) {
    out += Fmt("  %6" PRIu64 " opens  %s\n", never[i].second, never[i].first.c_str());
  }
  if (never.size() > max_rows) out += More(never.size() - max_rows);
  auto rereads = Rereads(s);
  out += Fmt("Files read more than once (re-reads, e.g. epochs; most re-read first): %zu\n",
             rereads.size());
  for (size_t i = 0; i < rereads.size() && i < max_rows; ++i) {
    out += Fmt("  %.1fx  %s\n", rereads[i].second, rereads[i].first.c_str());
  }
  if (rereads.size() > max_rows) out += More(rereads.size() - max_rows);
}

void TextSlowestAndTimeline(const Summary& s, std::string* out_ptr) {
  std::string& out = *out_ptr;
  out += "\nSlowest operations\n";
  for (const SlowOp& op : s.slowest) {
    out += Fmt("  %s  %s %s @%" PRId64 " size %" PRIu64 "  pid %d/%d\n",
               SecondsText(op.dur_ns).c_str(), op.name.c_str(), op.path.c_str(), op.offset, op.size,
               op.pid, op.tid);
  }
  uint64_t calls = 0;  // every I/O call the summary counts
  for (uint64_t n : s.run.ops) calls += n;
  if (calls > s.slowest.size()) out += More(calls - s.slowest.size());
  if (!s.per_second.empty()) {
    size_t step = (s.per_second.size() + 29) / 30;  // at most 30 rows
    // Rows of several seconds show their mean: said, not hidden.
    out += step == 1 ? std::string("\nBytes per second (read / written)\n")
                     : Fmt("\nBytes per second (read / written; each row the mean of %zu s)\n",
                           step);
    for (size_t i = 0; i < s.per_second.size(); i += step) {
      uint64_t r = 0, w = 0;
      for (size_t k = i; k < i + step && k < s.per_second.size(); ++k) {
        r += s.per_second[k].first;
        w += s.per_second[k].second;
      }
      out +=
          Fmt("  %6zus  %12s  %12s\n", i, ByteText(r / step).c_str(), ByteText(w / step).c_str());
    }
  }
}

void TextMpiAndRegions(const Summary& s, std::string* out_ptr) {
  std::string& out = *out_ptr;
  if (s.run.mpi_collective_ops + s.run.mpi_independent_ops > 0) {
    const double imbalance = MpiImbalance(s).imbalance;
    out += Fmt("\nMPI-IO\n  collective: %" PRIu64 " ops, %s; independent: %" PRIu64 " ops, %s\n",
               s.run.mpi_collective_ops, ByteText(s.run.mpi_collective_bytes).c_str(),
               s.run.mpi_independent_ops, ByteText(s.run.mpi_independent_bytes).c_str());
    for (const auto& [rank, st] : s.ranks) {
      out += Fmt("  rank %d: %s\n", rank,
                 ByteText(st.mpi_collective_bytes + st.mpi_independent_bytes).c_str());
    }
    out += Fmt("  imbalance (max rank bytes / mean): %.2f\n", imbalance);
  }
  if (!s.regions.empty()) {
    out += Fmt("\nPer region (%s; I/O busy = union of the calls' time)\n",
               s.region_pick == RegionPick::kInnermost ? "innermost" : "outermost");
    out += Fmt("  %-28s %9s %12s %8s %12s %12s %12s %12s\n", "region", "instances", "time",
               "I/O ops", "I/O busy", "read", "written", "data stall");
    for (const RegionStats& r : s.regions) {
      out += Fmt("  %-28s %9" PRIu64 " %12s %8" PRIu64 " %12s %12s %12s %12s\n",
                 r.outside ? "(outside regions)" : r.name.c_str(), r.instances,
                 SecondsText(r.region_ns).c_str(), r.io_ops, SecondsText(r.io_busy_ns).c_str(),
                 ByteText(r.read_bytes).c_str(), ByteText(r.write_bytes).c_str(),
                 SecondsText(r.stall_ns).c_str());
    }
  }
}

void TextCallSites(const Summary& s, std::string* out_ptr) {
  std::string& out = *out_ptr;
  auto sites = [&](const char* title, const std::vector<CallSiteStats>& v, size_t all) {
    if (v.empty()) return;
    out += Fmt("\n%s\n", title);
    for (const CallSiteStats& c : v) {
      out += Fmt("  %12s %10s %8" PRIu64 " ops  %s\n", SecondsText(c.time_ns).c_str(),
                 ByteText(c.bytes).c_str(), c.ops, c.site.c_str());
    }
    if (all > v.size()) out += More(all - v.size());
  };
  sites("Top call sites by I/O time (time, bytes, ops, site)", s.sites_by_time, s.site_functions);
  sites("Top call sites by bytes", s.sites_by_bytes, s.site_functions);
  sites("Libraries that did the I/O, by bytes", s.sites_by_module, s.site_modules);

}

void TextGpu(const Summary& s, std::string* out_ptr) {
  std::string& out = *out_ptr;
  out += "\nGPU\n";
  if (s.gpus.empty()) {
    out += "  no GPU activity recorded\n";
    return;
  }
  const uint64_t window = s.gpu_last_ns - s.gpu_first_ns;
  bool several_hosts = false;
  for (const GpuDevice& d : s.gpus) several_hosts |= d.host != s.gpus.front().host;
  for (const GpuDevice& d : s.gpus) {
    out += several_hosts ? "  " + d.host + ":" : std::string();
    out +=
        Fmt("  device %d: busy %s of %s (%s), idle %s; %" PRIu64 " kernels, %" PRIu64
            " copies (%s), %" PRIu64 " memsets; data stall %s\n",
            d.device, SecondsText(d.busy_ns).c_str(), SecondsText(d.last_ns - d.first_ns).c_str(),
            Percent(d.busy_ns, d.last_ns - d.first_ns).c_str(), SecondsText(d.idle_ns()).c_str(),
            d.kernels, d.copies, ByteText(d.copy_bytes).c_str(), d.memsets,
            SecondsText(d.stall_ns).c_str());
  }
  out += Fmt("  data stall: %s (%s of the GPU window %s) with I/O outstanding and no GPU busy\n",
             SecondsText(s.data_stall_ns).c_str(), Percent(s.data_stall_ns, window).c_str(),
             SecondsText(window).c_str());
  out += "  stall by file:\n";
  for (const auto& sh : s.stall_by_file) {
    out += Fmt("    %s  %s\n", SecondsText(sh.stall_ns).c_str(), sh.what.c_str());
  }
  if (s.stall_files > s.stall_by_file.size()) out += More(s.stall_files - s.stall_by_file.size());
  out += "  stall by process:\n";
  for (const auto& sh : s.stall_by_process) {
    out += Fmt("    %s  %s\n", SecondsText(sh.stall_ns).c_str(), sh.what.c_str());
  }
  if (s.stall_processes > s.stall_by_process.size()) {
    out += More(s.stall_processes - s.stall_by_process.size());
  }
}

}  // namespace

std::string InputText(const Summary& s) {
  if (!s.input.incomplete()) return "";
  return "input: " + InputLossText(s.input) + ": figures are of what " +
         (s.input.any() ? "could be decoded" : "was recorded") + "\n";
}

std::string ClocksText(const Summary& s) {
  std::string out;
  TextClocks(s, &out);
  return out;
}

std::string SummaryText(const Summary& s, size_t max_rows) {
  const uint64_t wall = s.run_end_ns - s.run_start_ns;
  std::string out = Fmt("dlprof summary: %" PRIu64 " processes, %" PRIu64 " events, run %s\n",
                        s.processes, s.events, SecondsText(wall).c_str());
  if (s.nested_events) {
    out += Fmt("  (%" PRIu64 " calls made inside an I/O call on the same file, such as the read "
               "of an fread or the pread of an MPI_File_read, are shown in the event listing "
               "but not counted again here)\n", s.nested_events);
  }
  TextClocks(s, &out);
  TextRanks(s, max_rows, &out);  // the verdict per rank comes first
  TextLevels(s, max_rows, &out);
  TextFileLists(s, max_rows, &out);
  TextSlowestAndTimeline(s, &out);
  TextMpiAndRegions(s, &out);
  TextCallSites(s, &out);
  TextGpu(s, &out);
  return out;
}

}  // namespace dlprof::dump
