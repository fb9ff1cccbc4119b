// The C ABI of include/dlprof/reader.h over lib/read and lib/analysis: the
// traces, their events and regions (the summaries: reader_summary_c_api.cc).
// Every entry point catches what C++ may throw (bad_alloc above all) and
// turns it into a status and a message: nothing but a status crosses the edge.
#include "dlprof/reader.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/capi/reader_handles.h"
#include "lib/format/event_rules.h"
#include "lib/format/trace_file.h"
#include "lib/read/cufile_compat.h"
#include "lib/read/job.h"
#include "lib/read/regions.h"
#include "lib/read/trace_catalog.h"
#include "lib/read/trace_set.h"

using dlprof::read::CatalogEntry;
using dlprof::capi::DecodeStatus;
using dlprof::capi::Fail;
using dlprof::capi::GiveText;
using dlprof::capi::Guarded;
using dlprof::capi::OpenTrace;

namespace dlprof::capi {
namespace {
thread_local std::string last_error;
}  // namespace

dlprof_status Fail(dlprof_status status, std::string message) {
  last_error = std::move(message);
  return status;
}

// What decoding a group found: the first trace that was not clean.
// A trace that did not open beside ones that did is input lost as a
// damaged block is: what was decoded is the rest (DAMAGED, the output set),
// not a failed call (Python's summary() raised for one empty trace in a
// run, where dlprof-dump summarised the rest). Only where none opened is it
// DLPROF_ERROR_INPUT. A segment deleted since it was listed is no loss.
dlprof_status DecodeStatus(const std::vector<dlprof::read::ProcessTrace>& decoded) {
  bool any_opened = false;
  for (const auto& p : decoded) any_opened |= p.opened;
  for (const auto& p : decoded) {
    if (!p.clean() && !p.vanished) {
      return Fail(p.opened || any_opened ? DLPROF_ERROR_DAMAGED : DLPROF_ERROR_INPUT,
                  p.messages.empty() ? p.path + ": damaged" : p.messages.front());
    }
  }
  return DLPROF_OK;
}

// `text` in a malloc'd buffer for the caller (dlprof_free).
dlprof_status GiveText(const std::string& text, char** out, size_t* length) {
  char* buffer = static_cast<char*>(std::malloc(text.size() + 1));
  if (buffer == nullptr) return Fail(DLPROF_ERROR_MEMORY, "out of memory");
  std::memcpy(buffer, text.c_str(), text.size() + 1);
  *out = buffer;
  if (length != nullptr) *length = text.size();
  return DLPROF_OK;
}

}  // namespace dlprof::capi

struct dlprof_regions {
  struct Row {
    uint32_t trace;
    int32_t tid;
    uint64_t start_ns, end_ns;
    uint32_t depth, name;
    bool nvtx, outermost;
  };
  std::vector<Row> rows;
  std::vector<std::string> names;  // by name id
};

namespace {

// The trace's reader and block list, opening it (and closing the least
// recently opened one) when needed; null with the error set if it is no trace.
OpenTrace* Open(dlprof_traces* t, size_t trace) {
  std::unique_ptr<OpenTrace>& slot = t->open[trace];
  if (slot) return slot.get();
  auto o = std::make_unique<OpenTrace>();
  o->reader = std::make_unique<dlprof::format::TraceReader>();
  std::string error;
  if (!o->reader->Open(t->catalog.traces[trace].path, &error)) {
    Fail(DLPROF_ERROR_INPUT, error);
    return nullptr;
  }
  dlprof::format::BlockList list = dlprof::format::ListBlocks(o->reader.get());
  o->blocks = std::move(list.blocks);
  list.damage.resize(std::min<size_t>(list.damage.size(), 16));  // the first say enough
  o->damage = std::move(list.damage);
  if (t->open_order.size() >= dlprof_traces::kMaxOpen) {
    t->open[t->open_order.front()].reset();
    t->open_order.erase(t->open_order.begin());
  }
  t->open_order.push_back(trace);
  slot = std::move(o);
  return slot.get();
}

// The trace opened, with blocks [first, first + count) in it.
dlprof_status OpenRange(dlprof_traces* t, size_t trace, size_t first, size_t count,
                        OpenTrace** out) {
  *out = Open(t, trace);
  if (*out == nullptr) return DLPROF_ERROR_INPUT;
  const size_t blocks = (*out)->blocks.size();
  if (first > blocks || count > blocks - first) {
    return Fail(DLPROF_ERROR_ARGUMENT, "block range past the trace's blocks");
  }
  return DLPROF_OK;
}

template <typename T>
void Put(T* column, size_t row, T value) {
  if (column != nullptr) column[row] = value;
}

// Bytes of strings kept per trace: a forged file cannot make a handle grow
// past this for each of its (at most kMaxOpen) open traces.
constexpr size_t kMaxStringBytes = size_t{64} << 20;

}  // namespace

extern "C" {

uint32_t dlprof_reader_version(void) {
  return (uint32_t{DLPROF_READER_VERSION_MAJOR} << 16) | DLPROF_READER_VERSION_MINOR;
}

const char* dlprof_last_error(void) { return dlprof::capi::last_error.c_str(); }

dlprof_status dlprof_traces_open(const char* const* paths, size_t count, const char* run,
                                 dlprof_traces** out) {
  if (out == nullptr || (paths == nullptr && count > 0)) {
    return Fail(DLPROF_ERROR_ARGUMENT, "null argument");
  }
  *out = nullptr;
  return Guarded([&] {
    auto t = std::make_unique<dlprof_traces>(std::vector<std::string>(paths, paths + count));
    std::string error;
    if (!t->job.KeepRun(run ? run : "", &error)) return Fail(DLPROF_ERROR_INPUT, error);
    std::vector<std::string> errors = t->job.input_errors();
    t->groups = dlprof::analysis::GroupTraces(t->catalog);
    t->facts = dlprof::analysis::TraceFactsOf(t->catalog);
    t->open.resize(t->catalog.traces.size());
    for (const CatalogEntry& e : t->catalog.traces) {
      if (!e.opened) errors.push_back(e.error);
    }
    *out = t.release();
    if (!errors.empty()) return Fail(DLPROF_ERROR_INPUT, errors.front());
    return DLPROF_OK;
  });
}

void dlprof_traces_free(dlprof_traces* traces) { delete traces; }

const char* dlprof_traces_note(const dlprof_traces* traces) {
  return traces ? traces->job.note().c_str() : "";
}

size_t dlprof_trace_count(const dlprof_traces* traces) {
  return traces ? traces->catalog.traces.size() : 0;
}

size_t dlprof_traces_clock_domains(const dlprof_traces* traces) {
  return traces ? std::max<size_t>(traces->clocks.domains.size(), 1) : 0;
}

uint64_t dlprof_traces_first_ns(const dlprof_traces* traces) {
  return traces ? traces->job.second_zero_ns() : 0;
}

dlprof_status dlprof_trace_info_get(dlprof_traces* traces, size_t trace, dlprof_trace_info* out) {
  if (traces == nullptr || out == nullptr || trace >= traces->catalog.traces.size()) {
    return Fail(DLPROF_ERROR_ARGUMENT, "no such trace");
  }
  const CatalogEntry& e = traces->catalog.traces[trace];
  *out = {};
  out->path = e.path.c_str();
  out->host = e.info.host.c_str();
  out->exe = e.info.exe.c_str();
  out->pid = e.info.pid;
  out->ppid = e.info.ppid;
  out->rank = e.info.rank;
  out->header_flags = e.info.flags;
  out->opened = e.opened ? 1 : 0;
  out->blocks = e.blocks;
  out->events = e.events;
  out->first_start_ns = e.first_start_ns;
  out->process_start_ns = e.info.process_start_ns;
  out->file_bytes = e.bytes;
  out->clock = e.info.clock.c_str();
  out->faults = e.info.faults.c_str();
  return DLPROF_OK;
}

dlprof_status dlprof_trace_process_get(dlprof_traces* traces, size_t trace, int count_dropped,
                                       dlprof_process_info* out) {
  if (traces == nullptr || out == nullptr || trace >= traces->catalog.traces.size()) {
    return Fail(DLPROF_ERROR_ARGUMENT, "no such trace");
  }
  *out = {};
  const CatalogEntry& e = traces->catalog.traces[trace];
  const dlprof_status made = Guarded([&] {
    if (traces->cmdlines.size() <= trace) traces->cmdlines.resize(traces->catalog.traces.size());
    std::unique_ptr<std::string>& line = traces->cmdlines[trace];
    if (!line) {
      line = std::make_unique<std::string>(e.info.cmdline);
      if (!line->empty()) line->push_back('\0');  // no argument at all stays empty
    }
    out->cmdline = line->c_str();
    out->cmdline_length = line->size();
    return DLPROF_OK;
  });
  if (made != DLPROF_OK) return made;
  out->run_id = e.info.run_id.c_str();
  out->dropped_events = UINT64_MAX;
  if (!e.opened) return Fail(DLPROF_ERROR_INPUT, e.error);
  return Guarded([&] {
    OpenTrace* o = Open(traces, trace);
    if (o == nullptr) return DLPROF_ERROR_INPUT;
    const dlprof::read::DomainMap* map =
        traces->clocks.identity() ? nullptr : &traces->clocks.of(trace);
    for (const auto& b : o->blocks) {
      if (b.last_end_ns > out->last_end_ns) out->last_end_ns = b.last_end_ns;
      if (b.flags & dlprof::kBlockFlagFinal) out->clean_exit = 1;
    }
    if (map != nullptr && out->last_end_ns != 0) out->last_end_ns = map->Map(out->last_end_ns);
    if (count_dropped) {
      out->dropped_events = 0;
      dlprof::format::DecodedBlock block;
      std::string error;
      for (const auto& b : o->blocks) {
        if (o->reader->DecodeAt(b, &block, &error)) {
          out->dropped_events += block.info.dropped_events;
        } else {
          ++out->damaged_blocks;
        }
      }
    }
    return DLPROF_OK;
  });
}

dlprof_status dlprof_block_events(dlprof_traces* traces, size_t trace, size_t first_block,
                                  size_t block_count, uint64_t* events) {
  if (traces == nullptr || events == nullptr || trace >= traces->open.size()) {
    return Fail(DLPROF_ERROR_ARGUMENT, "no such trace");
  }
  return Guarded([&] {
    OpenTrace* o = nullptr;
    const dlprof_status opened = OpenRange(traces, trace, first_block, block_count, &o);
    if (opened != DLPROF_OK) return opened;
    *events = 0;
    for (size_t b = first_block; b < first_block + block_count; ++b) {
      *events += o->blocks[b].event_count;
    }
    return DLPROF_OK;
  });
}

// cuFile's compatibility-mode reads on its own threads, flagged as the
// stream flags them (lib/read/cufile_compat.h): the range's blocks decoded
// again, only where it holds cuFile I/O. Rows are in block order.
static void FlagCompatReads(OpenTrace* o, size_t first_block, size_t end, uint16_t* flags) {
  std::vector<dlprof::Event> events;
  std::vector<int32_t> tids;
  dlprof::format::DecodedBlock block;
  for (size_t b = first_block; b < end; ++b) {
    std::string error;
    if (o->reader->DecodeAt(o->blocks[b], &block, &error)) {
      events.insert(events.end(), block.events.begin(), block.events.end());
      tids.insert(tids.end(), block.tids.begin(), block.tids.end());
    }
  }
  dlprof::read::CufileCompatReads::FlagRange(&events, tids, &o->strings);
  for (size_t r = 0; r < events.size(); ++r) flags[r] = events[r].flags;
}

dlprof_status dlprof_read_events(dlprof_traces* traces, size_t trace, size_t first_block,
                                 size_t block_count, const dlprof_columns* c, size_t* rows) {
  if (traces == nullptr || c == nullptr || rows == nullptr || trace >= traces->open.size()) {
    return Fail(DLPROF_ERROR_ARGUMENT, "no such trace");
  }
  *rows = 0;
  return Guarded([&] {
    OpenTrace* o = nullptr;
    const dlprof_status opened = OpenRange(traces, trace, first_block, block_count, &o);
    if (opened != DLPROF_OK) return opened;
    // The process's rank (the header's, or the one it gained: the catalog's)
    // for events of blocks written before it had one.
    const int32_t process_rank = traces->catalog.traces[trace].info.rank;
    // Times on the job's time base, as every other output has them.
    const dlprof::read::DomainMap* map =
        traces->clocks.identity() ? nullptr : &traces->clocks.of(trace);
    dlprof::format::DecodedBlock block;
    std::string damage;
    const size_t end = first_block + block_count;
    for (const auto& [at, message] : o->damage) {
      if (damage.empty() && at >= first_block && (at < end || end == o->blocks.size())) {
        damage = message;
      }
    }
    bool transfers = false;  // cuFile I/O (cufile_compat.h)
    for (size_t b = first_block; b < first_block + block_count; ++b) {
      std::string error;
      if (!o->reader->DecodeAt(o->blocks[b], &block, &error)) {
        if (damage.empty()) damage = error;
        continue;
      }
      if (block.events.size() > c->capacity - *rows) {
        return Fail(DLPROF_ERROR_ARGUMENT, "columns too small for the blocks' events");
      }
      for (const auto& s : block.strings) {
        if (o->string_bytes + s.text.size() > kMaxStringBytes) break;
        if (o->strings.emplace(s.id, s.text).second) o->string_bytes += s.text.size();
      }
      const int32_t rank = block.info.rank >= 0 ? block.info.rank : process_rank;
      for (size_t i = 0; i < block.events.size(); ++i) {
        const dlprof::Event& e = block.events[i];
        transfers |= dlprof::RulesFor(e.kind).gds_transfer;
        const size_t r = (*rows)++;
        Put(c->start_ns, r, map != nullptr ? map->Map(e.start_ns) : e.start_ns);
        Put(c->dur_ns, r, e.dur_ns);
        Put(c->kind, r, e.kind);
        Put(c->flags, r, e.flags);
        Put(c->tid, r, block.tids[i]);
        Put(c->rank, r, rank);
        Put(c->fd, r, e.fd);
        Put(c->file, r, e.file);
        Put(c->offset, r, e.offset);
        Put(c->size, r, e.size);
        Put(c->ret, r, e.ret);
        Put(c->err, r, e.err);
        Put(c->aux, r, e.aux);
      }
    }
    if (transfers && c->flags != nullptr) FlagCompatReads(o, first_block, end, c->flags);
    if (!damage.empty()) return Fail(DLPROF_ERROR_DAMAGED, damage);
    return DLPROF_OK;
  });
}

const char* dlprof_trace_string(dlprof_traces* traces, size_t trace, uint32_t id,
                                size_t* length) {
  if (traces == nullptr || trace >= traces->open.size() || !traces->open[trace]) return nullptr;
  const auto& strings = traces->open[trace]->strings;
  auto it = strings.find(id);
  if (it == strings.end()) return nullptr;
  if (length != nullptr) *length = it->second.size();
  return it->second.c_str();
}

dlprof_status dlprof_group_regions(dlprof_traces* traces, size_t group, dlprof_regions** out) {
  if (traces == nullptr || out == nullptr || group >= traces->groups.size()) {
    return Fail(DLPROF_ERROR_ARGUMENT, "no such group");
  }
  *out = nullptr;
  return Guarded([&] {
    const std::vector<size_t>& members = traces->groups[group];
    std::vector<std::string> files;
    for (size_t t : members) files.push_back(traces->catalog.traces[t].path);
    const dlprof::read::TraceSet set = dlprof::read::LoadTraceSet(files);
    const dlprof::read::RegionAssignment a = dlprof::read::AssignRegions(set);
    auto r = std::make_unique<dlprof_regions>();
    std::unordered_map<std::string, uint32_t> ids;
    r->rows.reserve(a.regions.size());
    for (const dlprof::read::RegionInstance& ri : a.regions) {
      const size_t trace = members[ri.ref.process];
      const auto [it, added] = ids.try_emplace(ri.name, static_cast<uint32_t>(r->names.size()));
      if (added) r->names.push_back(ri.name);
      // On the job's time base, as events are: the start mapped, the length kept.
      const uint64_t start = traces->clocks.identity() ? ri.start_ns
                                                       : traces->clocks.of(trace).Map(ri.start_ns);
      r->rows.push_back({static_cast<uint32_t>(trace), ri.tid, start,
                         start + (ri.end_ns - ri.start_ns), ri.depth, it->second, ri.nvtx,
                         ri.outermost});
    }
    *out = r.release();
    if (set.truncated) {
      return Fail(DLPROF_ERROR_DAMAGED, "group of " + files.front() + " and others: over " +
                                            std::to_string(dlprof::read::kMaxInMemoryEvents) +
                                            " events; regions of the first ones only");
    }
    return DecodeStatus(set.processes);
  });
}

size_t dlprof_region_count(const dlprof_regions* regions) {
  return regions ? regions->rows.size() : 0;
}

dlprof_status dlprof_region_read(const dlprof_regions* regions, const dlprof_region_columns* c) {
  if (regions == nullptr || c == nullptr) return Fail(DLPROF_ERROR_ARGUMENT, "null argument");
  if (c->capacity < regions->rows.size()) {
    return Fail(DLPROF_ERROR_ARGUMENT, "columns too small for the regions");
  }
  for (size_t i = 0; i < regions->rows.size(); ++i) {
    const dlprof_regions::Row& r = regions->rows[i];
    Put(c->trace, i, r.trace);
    Put(c->tid, i, r.tid);
    Put(c->start_ns, i, r.start_ns);
    Put(c->end_ns, i, r.end_ns);
    Put(c->depth, i, r.depth);
    Put(c->name, i, r.name);
    Put(c->nvtx, i, uint8_t{r.nvtx});
    Put(c->outermost, i, uint8_t{r.outermost});
  }
  return DLPROF_OK;
}

const char* dlprof_region_name(const dlprof_regions* regions, uint32_t id, size_t* length) {
  if (regions == nullptr || id >= regions->names.size()) return nullptr;
  if (length != nullptr) *length = regions->names[id].size();
  return regions->names[id].c_str();
}

void dlprof_regions_free(dlprof_regions* regions) { delete regions; }

size_t dlprof_group_count(const dlprof_traces* traces) {
  return traces ? traces->groups.size() : 0;
}

size_t dlprof_group_traces(const dlprof_traces* traces, size_t group, size_t* indices,
                           size_t capacity) {
  if (traces == nullptr || group >= traces->groups.size()) return 0;
  const std::vector<size_t>& g = traces->groups[group];
  for (size_t i = 0; i < g.size() && i < capacity && indices != nullptr; ++i) indices[i] = g[i];
  return g.size();
}

void dlprof_free(void* p) { std::free(p); }

}  // extern "C"

