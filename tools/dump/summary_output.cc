// --summary as text (for people) and as JSON (for scripts).
#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

#include "lib/analysis/analysis.h"
#include "lib/read/escape.h"
#include "tools/dump/summary_output.h"

namespace dlprof::dump {
namespace {

std::string Fmt(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string Fmt(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return buf;
}

std::string Bytes(uint64_t b) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? Fmt("%" PRIu64 " B", b) : Fmt("%.1f %s", v, kUnits[u]);
}

std::string Seconds(uint64_t ns) { return Fmt("%.6f s", static_cast<double>(ns) / 1e9); }

std::string Rate(uint64_t bytes, uint64_t ns) {
  if (ns == 0) return "-";
  return Bytes(static_cast<uint64_t>(static_cast<double>(bytes) * 1e9 / static_cast<double>(ns))) + "/s";
}

std::string Percent(uint64_t part, uint64_t whole) {
  return whole == 0 ? "-" : Fmt("%.1f %%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

template <typename Map>
std::vector<std::pair<typename Map::key_type, uint64_t>> Top(const Map& m, size_t n) {
  std::vector<std::pair<typename Map::key_type, uint64_t>> v(m.begin(), m.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (v.size() > n) v.resize(n);
  return v;
}

void TextAccess(std::string* out, const char* what, const AccessStats& a, uint64_t wall_ns,
                const char* indent) {
  if (a.ops == 0) return;
  *out += Fmt("%s%-6s %s in %" PRIu64 " ops, %s in calls; %s in calls, %s over the run\n", indent,
              what, Bytes(a.bytes).c_str(), a.ops, Seconds(a.time_ns).c_str(),
              Rate(a.bytes, a.time_ns).c_str(), Rate(a.bytes, wall_ns).c_str());
  *out += Fmt("%s       sizes:", indent);
  for (int b = 0; b < kSizeBins; ++b) {
    if (a.histogram[b]) *out += Fmt(" %s:%" PRIu64, SizeBinName(b), a.histogram[b]);
  }
  *out += "; most common:";
  for (const auto& [size, n] : Top(a.sizes, 4)) *out += Fmt(" %" PRIu64 "x%" PRIu64, size, n);
  *out += Fmt("\n%s       pattern: %" PRIu64 " consecutive, %" PRIu64 " sequential, %" PRIu64
              " random, %" PRIu64 " first; small (<64 KiB): %s; common strides:",
              indent, a.consecutive, a.sequential, a.random(), a.first,
              Percent(a.small_ops, a.ops).c_str());
  for (const auto& [stride, n] : Top(a.strides, 4)) *out += Fmt(" %" PRId64 "x%" PRIu64, stride, n);
  *out += "\n";
}

void TextOps(std::string* out, const IoStats& s, const char* indent) {
  *out += indent;
  *out += "ops   ";
  for (int g = 0; g < kOpGroups; ++g) {
    *out += Fmt(" %s %" PRIu64, OpGroupName(static_cast<OpGroup>(g)), s.ops[g]);
  }
  *out += Fmt("; I/O time %s", Seconds(s.io_time_ns()).c_str());
  if (s.errors) *out += Fmt("; %" PRIu64 " failed", s.errors);
  *out += "\n";
}

void TextLevel(std::string* out, const std::string& title, const IoStats& s, uint64_t wall_ns) {
  *out += "  " + title + "\n";
  TextOps(out, s, "    ");
  TextAccess(out, "read", s.read, wall_ns, "    ");
  TextAccess(out, "write", s.write, wall_ns, "    ");
}

// --- JSON ----------------------------------------------------------------------

std::string Quote(const std::string& s) {
  std::string q;
  AppendJsonString(&q, s);
  return q;
}

std::string JsonAccess(const AccessStats& a) {
  std::string j = Fmt("{\"ops\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"time_ns\":%" PRIu64
                      ",\"small_ops\":%" PRIu64 ",\"consecutive\":%" PRIu64
                      ",\"sequential\":%" PRIu64 ",\"random\":%" PRIu64 ",\"first\":%" PRIu64
                      ",\"histogram\":{",
                      a.ops, a.bytes, a.time_ns, a.small_ops, a.consecutive, a.sequential,
                      a.random(), a.first);
  for (int b = 0; b < kSizeBins; ++b) {
    j += Fmt("%s\"%s\":%" PRIu64, b ? "," : "", SizeBinName(b), a.histogram[b]);
  }
  j += "},\"common_sizes\":[";
  bool first = true;
  for (const auto& [size, n] : Top(a.sizes, 4)) {
    j += Fmt("%s[%" PRIu64 ",%" PRIu64 "]", first ? "" : ",", size, n);
    first = false;
  }
  j += "],\"common_strides\":[";
  first = true;
  for (const auto& [stride, n] : Top(a.strides, 4)) {
    j += Fmt("%s[%" PRId64 ",%" PRIu64 "]", first ? "" : ",", stride, n);
    first = false;
  }
  return j + "]}";
}

std::string JsonLevel(const IoStats& s) {
  std::string j = "{\"ops\":{";
  for (int g = 0; g < kOpGroups; ++g) {
    j += Fmt("%s\"%s\":%" PRIu64, g ? "," : "", OpGroupName(static_cast<OpGroup>(g)), s.ops[g]);
  }
  j += "},\"time_ns\":{";
  for (int g = 0; g < kOpGroups; ++g) {
    j += Fmt("%s\"%s\":%" PRIu64, g ? "," : "", OpGroupName(static_cast<OpGroup>(g)), s.time_ns[g]);
  }
  j += "},\"read\":" + JsonAccess(s.read) + ",\"write\":" + JsonAccess(s.write);
  j += Fmt(",\"first_ns\":%" PRIu64 ",\"last_ns\":%" PRIu64 ",\"errors\":%" PRIu64
           ",\"mpi\":{\"collective_ops\":%" PRIu64 ",\"collective_bytes\":%" PRIu64
           ",\"independent_ops\":%" PRIu64 ",\"independent_bytes\":%" PRIu64 "}}",
           s.first_ns == UINT64_MAX ? 0 : s.first_ns, s.last_ns, s.errors, s.mpi_collective_ops,
           s.mpi_collective_bytes, s.mpi_independent_ops, s.mpi_independent_bytes);
  return j;
}

template <typename Map, typename KeyFn>
std::string JsonMap(const Map& m, KeyFn key) {
  std::string j = "{";
  bool first = true;
  for (const auto& [k, v] : m) {
    j += (first ? "" : ",") + key(k) + ":" + JsonLevel(v);
    first = false;
  }
  return j + "}";
}

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

// Files a run read again and again (epochs): bytes read over the extent.
std::vector<std::pair<std::string, double>> Rereads(const Summary& s) {
  std::vector<std::pair<std::string, double>> v;
  for (const auto& [path, st] : s.files) {
    if (st.read_extent > 0 && st.read.bytes >= 2 * st.read_extent) {
      v.emplace_back(path, static_cast<double>(st.read.bytes) / static_cast<double>(st.read_extent));
    }
  }
  return v;
}


// MPI: bytes per rank and the imbalance (max over mean).
std::pair<uint64_t, double> MpiImbalance(const Summary& s) {
  uint64_t max = 0, total = 0;
  for (const auto& [rank, st] : s.ranks) {
    uint64_t b = st.mpi_collective_bytes + st.mpi_independent_bytes;
    max = std::max(max, b);
    total += b;
  }
  double mean = s.ranks.empty() ? 0 : static_cast<double>(total) / s.ranks.size();
  return {max, mean > 0 ? static_cast<double>(max) / mean : 0};
}

}  // namespace

std::string SummaryText(const Summary& s, size_t max_rows) {
  const uint64_t wall = s.run_end_ns - s.run_start_ns;
  std::string out = Fmt("dlprof summary: %" PRIu64 " processes, %" PRIu64 " events, run %s\n",
                        s.processes, s.events, Seconds(wall).c_str());
  if (s.nested_events) {
    out += Fmt("  (%" PRIu64 " nested calls made inside other traced calls are shown in the "
               "event listing but not counted again here)\n", s.nested_events);
  }
  out += "\nI/O, all processes\n";
  TextLevel(&out, "run", s.run, wall);
  if (!s.ranks.empty()) {
    out += "\nPer rank\n";
    for (const auto& [rank, st] : s.ranks) TextLevel(&out, Fmt("rank %d", rank), st, wall);
  }
  out += "\nPer process\n";
  for (const auto& [key, st] : s.processes_stats) TextLevel(&out, key, st, wall);
  out += "\nPer file (by bytes moved)\n";
  size_t shown = 0;
  auto files = FilesByBytes(s);
  for (const auto& [path, st] : files) {
    if (shown++ == max_rows) {
      out += Fmt("  ... %zu more files (--format json lists all)\n", files.size() - max_rows);
      break;
    }
    TextLevel(&out, path, *st, wall);
  }
  auto never = NeverReadFiles(s);
  out += Fmt("\nFiles opened and never read: %zu\n", never.size());
  for (size_t i = 0; i < never.size() && i < max_rows; ++i) out += "  " + never[i] + "\n";
  auto rereads = Rereads(s);
  out += Fmt("Files read more than once (re-reads, e.g. epochs): %zu\n", rereads.size());
  for (size_t i = 0; i < rereads.size() && i < max_rows; ++i) {
    out += Fmt("  %.1fx  %s\n", rereads[i].second, rereads[i].first.c_str());
  }
  out += "\nSlowest operations\n";
  for (const SlowOp& op : s.slowest) {
    out += Fmt("  %s  %s %s @%" PRId64 " size %" PRIu64 "  pid %d/%d\n", Seconds(op.dur_ns).c_str(),
               op.name.c_str(), op.path.c_str(), op.offset, op.size, op.pid, op.tid);
  }
  if (!s.per_second.empty()) {
    out += "\nBytes per second (read / written)\n";
    size_t step = (s.per_second.size() + 29) / 30;  // at most 30 rows
    for (size_t i = 0; i < s.per_second.size(); i += step) {
      uint64_t r = 0, w = 0;
      for (size_t k = i; k < i + step && k < s.per_second.size(); ++k) {
        r += s.per_second[k].first;
        w += s.per_second[k].second;
      }
      out += Fmt("  %6zus  %12s  %12s\n", i, Bytes(r / step).c_str(), Bytes(w / step).c_str());
    }
  }
  if (s.run.mpi_collective_ops + s.run.mpi_independent_ops > 0) {
    auto [max, imbalance] = MpiImbalance(s);
    out += Fmt("\nMPI-IO\n  collective: %" PRIu64 " ops, %s; independent: %" PRIu64 " ops, %s\n",
               s.run.mpi_collective_ops, Bytes(s.run.mpi_collective_bytes).c_str(),
               s.run.mpi_independent_ops, Bytes(s.run.mpi_independent_bytes).c_str());
    for (const auto& [rank, st] : s.ranks) {
      out += Fmt("  rank %d: %s\n", rank,
                 Bytes(st.mpi_collective_bytes + st.mpi_independent_bytes).c_str());
    }
    out += Fmt("  imbalance (max rank bytes / mean): %.2f\n", imbalance);
  }
  if (!s.regions.empty()) {
    out += "\nPer region (outermost; I/O busy = union of the calls' time)\n";
    out += Fmt("  %-28s %9s %12s %8s %12s %12s %12s %12s\n", "region", "instances", "time",
               "I/O ops", "I/O busy", "read", "written", "data stall");
    for (const RegionStats& r : s.regions) {
      out += Fmt("  %-28s %9" PRIu64 " %12s %8" PRIu64 " %12s %12s %12s %12s\n",
                 r.outside ? "(outside regions)" : r.name.c_str(), r.instances,
                 Seconds(r.region_ns).c_str(), r.io_ops, Seconds(r.io_busy_ns).c_str(),
                 Bytes(r.read_bytes).c_str(), Bytes(r.write_bytes).c_str(),
                 Seconds(r.stall_ns).c_str());
    }
  }
  auto sites = [&](const char* title, const std::vector<CallSiteStats>& v) {
    if (v.empty()) return;
    out += Fmt("\n%s\n", title);
    for (const CallSiteStats& c : v) {
      out += Fmt("  %12s %10s %8" PRIu64 " ops  %s\n", Seconds(c.time_ns).c_str(),
                 Bytes(c.bytes).c_str(), c.ops, c.site.c_str());
    }
  };
  sites("Top call sites by I/O time (time, bytes, ops, site)", s.sites_by_time);
  sites("Top call sites by bytes", s.sites_by_bytes);
  sites("Libraries that did the I/O, by bytes", s.sites_by_module);

  out += "\nGPU\n";
  if (s.gpus.empty()) {
    out += "  no GPU activity recorded\n";
    return out;
  }
  const uint64_t window = s.gpu_last_ns - s.gpu_first_ns;
  for (const GpuDevice& d : s.gpus) {
    out += Fmt("  device %d: busy %s of %s (%s), idle %s; %" PRIu64 " kernels, %" PRIu64
               " copies (%s), %" PRIu64 " memsets; data stall %s\n",
               d.device, Seconds(d.busy_ns).c_str(), Seconds(d.last_ns - d.first_ns).c_str(),
               Percent(d.busy_ns, d.last_ns - d.first_ns).c_str(), Seconds(d.idle_ns()).c_str(),
               d.kernels, d.copies, Bytes(d.copy_bytes).c_str(), d.memsets,
               Seconds(d.stall_ns).c_str());
  }
  out += Fmt("  data stall: %s (%s of the GPU window %s) with I/O outstanding and no GPU busy\n",
             Seconds(s.data_stall_ns).c_str(), Percent(s.data_stall_ns, window).c_str(),
             Seconds(window).c_str());
  out += "  stall by file:\n";
  for (const auto& sh : s.stall_by_file) {
    out += Fmt("    %s  %s\n", Seconds(sh.stall_ns).c_str(), sh.what.c_str());
  }
  out += "  stall by process:\n";
  for (const auto& sh : s.stall_by_process) {
    out += Fmt("    %s  %s\n", Seconds(sh.stall_ns).c_str(), sh.what.c_str());
  }
  return out;
}

std::string SummaryJson(const Summary& s) {
  std::string j = Fmt("{\"processes\":%" PRIu64 ",\"events\":%" PRIu64 ",\"nested_events\":%" PRIu64
                      ",\"run_start_ns\":%" PRIu64 ",\"run_end_ns\":%" PRIu64 ",\"run\":",
                      s.processes, s.events, s.nested_events, s.run_start_ns, s.run_end_ns);
  j += JsonLevel(s.run);
  j += ",\"ranks\":" + JsonMap(s.ranks, [](int32_t r) { return "\"" + std::to_string(r) + "\""; });
  j += ",\"processes_stats\":" + JsonMap(s.processes_stats, Quote);
  j += ",\"files\":" + JsonMap(s.files, Quote);
  j += ",\"never_read\":[";
  bool first = true;
  for (const auto& path : NeverReadFiles(s)) {
    j += (first ? "" : ",") + Quote(path);
    first = false;
  }
  j += "],\"rereads\":[";
  first = true;
  for (const auto& [path, factor] : Rereads(s)) {
    j += Fmt("%s[%s,%.3f]", first ? "" : ",", Quote(path).c_str(), factor);
    first = false;
  }
  j += "],\"slowest\":[";
  first = true;
  for (const SlowOp& op : s.slowest) {
    j += Fmt("%s{\"dur_ns\":%" PRIu64 ",\"ts\":%" PRIu64 ",\"name\":%s,\"path\":%s,\"offset\":%" PRId64
             ",\"size\":%" PRIu64 ",\"pid\":%d,\"tid\":%d}",
             first ? "" : ",", op.dur_ns, op.start_ns, Quote(op.name).c_str(), Quote(op.path).c_str(),
             op.offset, op.size, op.pid, op.tid);
    first = false;
  }
  j += "],\"per_second\":[";
  for (size_t i = 0; i < s.per_second.size(); ++i) {
    j += Fmt("%s[%" PRIu64 ",%" PRIu64 "]", i ? "," : "", s.per_second[i].first, s.per_second[i].second);
  }
  auto [max, imbalance] = MpiImbalance(s);
  j += "],\"regions\":[";
  for (size_t i = 0; i < s.regions.size(); ++i) {
    const RegionStats& r = s.regions[i];
    j += Fmt("%s{\"name\":%s,\"outside\":%s,\"instances\":%" PRIu64 ",\"region_ns\":%" PRIu64
             ",\"io_ops\":%" PRIu64 ",\"io_ns\":%" PRIu64 ",\"read_ops\":%" PRIu64
             ",\"write_ops\":%" PRIu64 ",\"read_bytes\":%" PRIu64 ",\"write_bytes\":%" PRIu64
             ",\"io_busy_ns\":%" PRIu64 ",\"stall_ns\":%" PRIu64 "}",
             i ? "," : "", Quote(r.name).c_str(), r.outside ? "true" : "false", r.instances,
             r.region_ns, r.io_ops, r.io_ns, r.read_ops, r.write_ops, r.read_bytes, r.write_bytes,
             r.io_busy_ns, r.stall_ns);
  }
  auto site_list = [&](const std::vector<CallSiteStats>& v) {
    std::string a = "[";
    for (size_t i = 0; i < v.size(); ++i) {
      a += Fmt("%s{\"site\":%s,\"ops\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"time_ns\":%" PRIu64
               ",\"read_bytes\":%" PRIu64 ",\"write_bytes\":%" PRIu64 "}",
               i ? "," : "", Quote(v[i].site).c_str(), v[i].ops, v[i].bytes, v[i].time_ns,
               v[i].read_bytes, v[i].write_bytes);
    }
    return a + "]";
  };
  j += "],\"call_sites\":{\"by_time\":" + site_list(s.sites_by_time) +
       ",\"by_bytes\":" + site_list(s.sites_by_bytes) +
       ",\"by_module\":" + site_list(s.sites_by_module) + "}";
  j += Fmt(",\"mpi_imbalance\":%.4f,\"gpu\":", imbalance);
  if (s.gpus.empty()) return j + "null}";
  j += Fmt("{\"first_ns\":%" PRIu64 ",\"last_ns\":%" PRIu64 ",\"busy_ns\":%" PRIu64
           ",\"io_outstanding_ns\":%" PRIu64 ",\"data_stall_ns\":%" PRIu64 ",\"devices\":[",
           s.gpu_first_ns, s.gpu_last_ns, s.gpu_busy_ns, s.io_outstanding_ns, s.data_stall_ns);
  first = true;
  for (const GpuDevice& d : s.gpus) {
    j += Fmt("%s{\"device\":%d,\"busy_ns\":%" PRIu64 ",\"idle_ns\":%" PRIu64 ",\"stall_ns\":%" PRIu64
             ",\"kernels\":%" PRIu64 ",\"copies\":%" PRIu64 ",\"copy_bytes\":%" PRIu64
             ",\"memsets\":%" PRIu64 "}",
             first ? "" : ",", d.device, d.busy_ns, d.idle_ns(), d.stall_ns, d.kernels, d.copies,
             d.copy_bytes, d.memsets);
    first = false;
  }
  auto shares = [](const std::vector<StallShare>& v) {
    std::string a = "[";
    for (size_t i = 0; i < v.size(); ++i) {
      a += (i ? "," : "") + Fmt("[%s,%" PRIu64 "]", Quote(v[i].what).c_str(), v[i].stall_ns);
    }
    return a + "]";
  };
  j += "],\"stall_by_file\":" + shares(s.stall_by_file) +
       ",\"stall_by_process\":" + shares(s.stall_by_process) + "}}";
  return j;
}

}  // namespace dlprof::dump
