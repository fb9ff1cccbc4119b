// --format text: strace-like lines, for reading a trace by eye.
//
//   # pid 1234 ppid 1 rank 0 host "node1" exe "/usr/bin/python3" cmdline python3 train.py
//     trace "..." clock "tsc; calibration error 18 ns"            (one line)
//        0.000000000 pid 1234/1234 openat("/data/a.bin", O_RDONLY|O_CLOEXEC) = 3 <0.000004100>
//        0.000012345 pid 1234/1235 pread64(3</data/a.bin>, 4096, @8192) = 4096 <0.000012000>
//        0.000020000 pid 1234/1236 io_uring_read(3</data/a.bin>, 4096, @0) = 4096 <0.000030000>
//                                                      [submitted by 1235, reaped +2 us]  (one
//                                                      line)
//
// When the processes come from several hosts (whose pids collide), each line
// names the host before the pid: "0.000012345 node1 pid 1234/1235 ...". A
// later process of one host with an earlier one's pid (a pid reused, pid
// namespaces) is numbered as in the summary: "pid 1#2/1", "# pid 1#2 ppid 0".
#include <fcntl.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "lib/read/trace_catalog.h"
#include "lib/text/text.h"
#include "tools/dump/kinds.h"
#include "tools/dump/output.h"

namespace dlprof::dump {
using namespace dlprof::text;
namespace {

// Open flags as the program would have written them.
void AppendOpenFlags(std::string* s, uint64_t flags) {
  static const struct {
    uint64_t bit;
    const char* name;
  } kFlags[] = {
      {O_CREAT, "O_CREAT"},
      {O_EXCL, "O_EXCL"},
      {O_NOCTTY, "O_NOCTTY"},
      {O_TRUNC, "O_TRUNC"},
      {O_APPEND, "O_APPEND"},
      {O_NONBLOCK, "O_NONBLOCK"},
      {O_DIRECT, "O_DIRECT"},
      {O_DIRECTORY, "O_DIRECTORY"},
      {O_NOFOLLOW, "O_NOFOLLOW"},
      {O_NOATIME, "O_NOATIME"},
      {O_CLOEXEC, "O_CLOEXEC"},
      {O_PATH, "O_PATH"},
      // O_SYNC contains O_DSYNC's bit, so it is tested first.
      {O_SYNC, "O_SYNC"},
      {O_DSYNC, "O_DSYNC"},
      {O_TMPFILE & ~O_DIRECTORY, "__O_TMPFILE"},
  };
  switch (flags & O_ACCMODE) {
    case O_RDONLY: *s += "O_RDONLY"; break;
    case O_WRONLY: *s += "O_WRONLY"; break;
    case O_RDWR: *s += "O_RDWR"; break;
    default: *s += "O_ACCMODE"; break;
  }
  uint64_t rest = flags & ~static_cast<uint64_t>(O_ACCMODE);
  for (const auto& f : kFlags) {
    if (f.bit != 0 && (rest & f.bit) == f.bit) {
      *s += '|';
      *s += f.name;
      rest &= ~f.bit;
    }
  }
  if (rest != 0) {
    char hex[24];
    snprintf(hex, sizeof(hex), "|0x%llx", static_cast<unsigned long long>(rest));
    *s += hex;
  }
}

// An MPI_File_open's access mode as the program would have written it (the
// MPI_MODE_* values Open MPI and MPICH both give).
void AppendMpiAmode(std::string* s, uint64_t amode) {
  static const struct {
    uint64_t bit;
    const char* name;
  } kModes[] = {
      {1, "MPI_MODE_CREATE"},        {2, "MPI_MODE_RDONLY"},      {4, "MPI_MODE_WRONLY"},
      {8, "MPI_MODE_RDWR"},          {16, "MPI_MODE_DELETE_ON_CLOSE"},
      {32, "MPI_MODE_UNIQUE_OPEN"},  {64, "MPI_MODE_EXCL"},       {128, "MPI_MODE_APPEND"},
      {256, "MPI_MODE_SEQUENTIAL"}};
  const size_t start = s->size();
  for (const auto& m : kModes) {
    if ((amode & m.bit) == 0) continue;
    if (s->size() > start) *s += '|';
    *s += m.name;
    amode &= ~m.bit;
  }
  if (amode != 0 || s->size() == start) {
    char hex[24];
    snprintf(hex, sizeof(hex), "%s0x%llx", s->size() > start ? "|" : "",
             static_cast<unsigned long long>(amode));
    *s += hex;
  }
}

// Shell-like: words with nothing special stay bare, the rest are quoted.
void AppendCommandLine(std::string* s, const std::string& cmdline) {
  if (cmdline.empty()) return;
  size_t start = 0;
  bool first = true;
  // The arguments are separated by NULs: a NUL at the end is before an
  // empty last argument.
  while (start <= cmdline.size()) {
    size_t end = cmdline.find('\0', start);
    if (end == std::string::npos) end = cmdline.size();
    std::string_view arg(cmdline.data() + start, end - start);
    if (!first) *s += ' ';
    first = false;
    bool bare = !arg.empty() &&
                arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                      "0123456789_-+=./:,@%") == std::string_view::npos;
    if (bare) {
      s->append(arg);
    } else {
      AppendQuoted(s, arg);
    }
    start = end + 1;
  }
}

std::string ProcessLine(const ProcessTrace& p, const std::string& pid) {
  std::string s = "# pid " + pid + " ppid " + std::to_string(p.info.ppid);
  if (p.info.rank >= 0) s += " rank " + std::to_string(p.info.rank);
  s += " host ";
  AppendQuoted(&s, p.info.host);
  s += " exe ";
  AppendQuoted(&s, p.info.exe);
  s += " cmdline ";
  AppendCommandLine(&s, p.info.cmdline);
  s += " trace ";
  AppendQuoted(&s, p.path);
  // How its page faults on mapped files were recorded (older traces: none).
  if (!p.info.faults.empty()) {
    s += " faults ";
    AppendQuoted(&s, p.info.faults);
  }
  // The events' clock (the TSC or clock_gettime, and why; older traces: none).
  if (!p.info.clock.empty()) {
    s += " clock ";
    AppendQuoted(&s, p.info.clock);
  }
  s += '\n';
  return s;
}

// ", 42", or for a double ", 0.1" in the fewest digits that read back to it
// (", 1.0": a float; ", nan", ", -inf").
void AppendCounterText(std::string* s, const Event& e) {
  *s += ", ";
  if (!CounterIsDouble(e)) {
    *s += std::to_string(static_cast<int64_t>(e.aux));
    return;
  }
  const double v = CounterDouble(e);
  if (std::isnan(v)) {
    *s += "nan";
    return;
  }
  char buf[32];
  char* end = std::to_chars(buf, buf + sizeof(buf), v).ptr;
  s->append(buf, end);
  const bool integral =
      std::find_if(buf, end, [](char c) { return c == '.' || c == 'e'; }) == end;
  if (std::isfinite(v) && integral) *s += ".0";
}

// Builds "name(args)" for one event. Arguments shown are those the event
// carries, in the order the C call takes them.
void AppendNamedCall(std::string* s, const Event& e, const KindView& k, QuotedStrings& names) {
  *s += k.name;
  *s += '(';
  if (e.file != 0) *s += names.Get(e.file);
  if (k.rules.gpu_clock) {
    // cupti_clock (docs/CUDA.md): fd is the reason, offset the clock offset.
    *s += ", offset " + std::to_string(e.offset) + " ns, +/-" + std::to_string(e.dur_ns / 2) +
          " ns, " + ClockSyncReason(e.fd) + ", CUPTI " +
          std::to_string(e.aux);
  } else if (k.rules.gpu_api) {
    *s += ", correlation " + std::to_string(e.aux);  // the caller is the tid shown
  } else if (k.gpu) {
    *s += ", device " + std::to_string(e.fd) + ", stream " + std::to_string(e.offset) +
          ", correlation " + std::to_string(e.aux);
    if (e.size > 0) *s += ", " + std::to_string(e.size) + " bytes";
    if (k.config && e.ret > 0) *s += ", " + names.Get(static_cast<uint64_t>(e.ret));
  } else if (k.region_faults) {
    *s += ", " + std::to_string(e.size) + " major faults, off the CPU " + std::to_string(e.ret) +
          " ns, on it " + std::to_string(e.aux) + " ns" + (e.fd == 1 ? ", each an event" : "");
  } else if (k.op_class == OpClass::Counter) {
    AppendCounterText(s, e);
  } else if (k.op_class == OpClass::Region) {
    *s += ", depth " + std::to_string(e.aux);
  } else if (k.flow != 0) {
    *s += ", flow " + std::to_string(e.aux);
  }
  *s += ')';
}

void AppendCall(std::string* s, const Event& e, const KindView& k, QuotedStrings& paths) {
  if (k.named) return AppendNamedCall(s, e, k, paths);
  *s += k.name;
  *s += '(';
  const size_t open = s->size();
  auto sep = [s, open] {
    if (s->size() > open) *s += ", ";
  };
  // An open's descriptor is its result, shown after '='. An MPI-IO call's
  // fd is its file's communicator's size.
  if (k.mpi) {
    if (e.file != 0) *s += paths.Get(e.file);
    if (e.fd > 0) {
      sep();
      *s += "comm " + std::to_string(e.fd);
    }
  } else if (e.fd >= 0 && !k.open) {
    // A copy whose source was not traced names only its destination.
    if (k.rules.copy && e.aux != 0 && e.aux == e.file) *s += "to ";
    *s += std::to_string(e.fd);
    if (e.file != 0) {
      // strace -y style: the path in angle brackets after the descriptor.
      const std::string& q = paths.Get(e.file);
      *s += '<';
      s->append(q, 1, q.size() - 2);
      *s += '>';
    }
  } else if (e.file != 0) {
    *s += paths.Get(e.file);
  }
  if (k.rename && e.aux != 0) {
    sep();
    *s += paths.Get(e.aux);
  }
  if (k.rules.copy && e.aux != 0 && e.aux != e.file) {
    sep();
    *s += "to " + paths.Get(e.aux);
  }
  if (k.open) {
    sep();
    if (k.mpi) {
      AppendMpiAmode(s, e.aux);
    } else {
      AppendOpenFlags(s, e.aux);
    }
  }
  if (k.read_write || e.size > 0) {
    sep();
    *s += std::to_string(e.size);
  }
  if (k.bytes_in_aux) {
    sep();
    *s += "moved " + std::to_string(e.aux);
  }
  if (e.offset >= 0) {
    sep();
    *s += '@';
    *s += std::to_string(e.offset);
  }
  if (k.aux_key != nullptr && e.aux != 0) {  // a cuFile buffer, ..., a signal's sender
    sep();
    char hex[24];
    snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(e.aux));
    *s += k.aux_key;
    *s += '=';
    *s += e.kind == static_cast<uint16_t>(EventKind::Signal) ? std::to_string(e.aux)  // a pid
                                                              : std::string(hex);
  } else if (k.opcode) {
    sep();
    *s += "opcode " + std::to_string(UnpackAsyncAux(e.aux).opcode);
  } else if (!k.async &&
             (!k.known || (k.op_class == OpClass::Other && !k.bytes_in_aux)) && e.aux != 0) {
    sep();
    *s += "aux=";
    *s += std::to_string(e.aux);
  }
  *s += ')';
}

// An asynchronous request: who submitted it, when it was reaped (after its
// completion as the tracer saw it), and how.
void AppendAsyncNote(std::string* s, const Event& e) {
  const AsyncAux a = UnpackAsyncAux(e.aux);
  *s += " [submitted by " + std::to_string(a.submit_tid);
  if (e.flags & kEventFlagUnreaped) {
    *s += ", not reaped";
  } else {
    *s += ", reaped +" + std::to_string(a.reaped_after_us) + " us";
  }
  if (e.flags & kEventFlagFixedFile) *s += ", fixed file";
  if (e.flags & kEventFlagFixedBuffer) *s += ", fixed buffer";
  if (e.flags & kEventFlagLinked) *s += ", linked";
  *s += ']';
}

void AppendErrno(std::string* s, int32_t err) {
  *s += " errno=";
  const char* name = err > 0 ? strerrorname_np(err) : nullptr;
  *s += name ? name : std::to_string(err);
}

}  // namespace

std::string PidName(int32_t pid, int earlier_same_pid) {
  std::string s = std::to_string(pid);
  if (earlier_same_pid > 0) s += "#" + std::to_string(earlier_same_pid + 1);
  return s;
}

void WriteText(EventSource& source, OutBuffer* out, const EventContext& context) {
  const std::vector<ProcessTrace>& processes = source.processes();
  std::vector<const format::ProcessInfo*> infos;
  for (const ProcessTrace& p : processes) infos.push_back(p.opened ? &p.info : nullptr);
  const std::vector<int> earlier = EarlierSamePids(infos, FirstImages(infos));
  std::vector<std::string> pids;
  for (size_t i = 0; i < processes.size(); ++i) {
    pids.push_back(PidName(processes[i].info.pid, earlier[i]));
  }
  for (size_t i = 0; i < processes.size(); ++i) {
    if (processes[i].opened) out->Append(ProcessLine(processes[i], pids[i]));
  }
  KindTable kinds;
  std::vector<QuotedStrings> paths;
  paths.reserve(processes.size());
  for (const auto& p : processes) paths.emplace_back(p, AppendQuoted);

  bool several_hosts = false;
  for (const auto& p : processes) several_hosts |= p.info.host != processes.front().info.host;
  std::string call;
  char time[32];
  bool first = true;
  uint64_t base = 0;  // times are printed from second 0, or the first event
  ForEachEvent(source, [&](const StreamEvent& r) {
    const ProcessTrace& p = processes[r.process];
    const Event& e = *r.event;
    if (first) {
      first = false;
      base = std::min(context.time_zero_ns, e.start_ns);
    }
    const KindView& k = kinds.Get(e.kind);
    if (IsStackRecord(e.kind)) return;  // printed under its event
    const uint64_t rel = e.start_ns - base;
    int n = snprintf(time, sizeof(time), "%15llu.%09llu",
                     static_cast<unsigned long long>(rel / 1000000000),
                     static_cast<unsigned long long>(rel % 1000000000));
    // The integer part is padded to 15 so the column lines up; keep 5 of
    // that padding unless the number itself is wider.
    const char* t = time;
    while (t < time + 10 && *t == ' ') ++t;
    out->Append(std::string_view(t, static_cast<size_t>(time + n - t)));
    if (several_hosts) {
      out->Append(' ');
      out->Append(p.info.host);
    }
    out->Append(" pid ");
    out->Append(pids[r.process]);
    out->Append('/');
    // CUDA API records are delivered on CUPTI's thread; offset is the caller.
    const bool caller = k.rules.thread == ThreadOf::kCaller && e.offset > 0;
    out->AppendInt(caller ? e.offset : int64_t{r.tid});
    out->Append(' ');
    call.clear();
    AppendCall(&call, e, k, paths[r.process]);
    out->Append(call);
    out->Append(" = ");
    out->AppendInt(e.ret);
    out->Append(" <");
    out->AppendSeconds(e.dur_ns);
    out->Append('>');
    if (e.err != 0) {
      call.clear();
      AppendErrno(&call, e.err);
      out->Append(call);
    }
    if (e.flags & kEventFlagNested) out->Append(" [nested]");
    if (k.async) {
      call.clear();
      AppendAsyncNote(&call, e);
      out->Append(call);
    }
    if (!k.named) {
      if (const std::string* region = context.RegionOf(r)) {
        call.clear();
        AppendQuoted(&call, *region);
        out->Append(" region=");
        out->Append(call);
      }
    }
    out->Append('\n');
    if (const Stack* st = context.StackOf(r)) {
      for (size_t i = 0; i < st->frames.size(); ++i) {
        out->Append("        #");
        out->AppendInt(i);
        out->Append(' ');
        out->Append(st->frames[i].Format());
        out->Append('\n');
      }
    }
  });
}

}  // namespace dlprof::dump
