// The counters stream's records, written and read (counters.h).
#include "lib/format/counters.h"

#include <cstring>
#include <initializer_list>

#include "lib/format/crc32c.h"
#include "lib/format/trace_layout.h"
#include "lib/format/varint.h"

namespace dlprof::format {
namespace {

void Frame(uint16_t type, const std::vector<uint8_t>& payload, std::vector<uint8_t>* out) {
  CounterRecordHeader h{kCounterMagic, type, 0, static_cast<uint32_t>(payload.size()),
                        Crc32c(payload.data(), payload.size())};
  const auto* p = reinterpret_cast<const uint8_t*>(&h);
  out->insert(out->end(), p, p + sizeof(h));
  out->insert(out->end(), payload.begin(), payload.end());
}

void PutIo(std::vector<uint8_t>& b, const IoTotals& io) {
  for (uint64_t v : {io.reads, io.read_bytes, io.read_ns, io.writes, io.write_bytes, io.write_ns,
                     io.other_calls, io.other_ns}) {
    PutVarint(b, v);
  }
}

}  // namespace

void IoTotals::Add(const IoTotals& o) {
  reads += o.reads;
  read_bytes += o.read_bytes;
  read_ns += o.read_ns;
  writes += o.writes;
  write_bytes += o.write_bytes;
  write_ns += o.write_ns;
  other_calls += o.other_calls;
  other_ns += o.other_ns;
}

void AppendStringsRecord(const std::vector<std::pair<uint32_t, std::string>>& strings,
                         std::vector<uint8_t>* out, uint16_t type) {
  std::vector<uint8_t> b;
  PutVarint(b, strings.size());
  for (const auto& [id, text] : strings) {
    PutVarint(b, id);
    PutVarint(b, text.size());
    b.insert(b.end(), text.begin(), text.end());
  }
  Frame(type, b, out);
}

void AppendIntervalRecord(const IntervalRecord& r, std::vector<uint8_t>* out) {
  std::vector<uint8_t> b;
  PutVarint(b, r.start_ns);
  PutVarint(b, r.end_ns - r.start_ns);
  PutVarint(b, ZigZag(r.rank));
  PutVarint(b, r.events);
  for (const IoTotals& io : r.classes) PutIo(b, io);
  PutVarint(b, r.kinds.size());
  for (const KindRow& k : r.kinds) {
    for (uint64_t v : {uint64_t{k.kind}, k.calls, k.bytes, k.ns, k.errors}) PutVarint(b, v);
  }
  PutVarint(b, r.files.size());
  for (const FileRow& f : r.files) {
    PutVarint(b, f.file);
    PutVarint(b, f.cls);
    PutIo(b, f.io);
  }
  PutVarint(b, r.regions.size());
  for (const RegionRow& g : r.regions) {
    for (uint64_t v : {uint64_t{g.name}, g.count, g.ns, g.max_ns, g.first_start_ns,
                       g.last_end_ns - g.first_start_ns}) {
      PutVarint(b, v);
    }
  }
  Frame(r.so_far ? kCounterIntervalSoFar : kCounterInterval, b, out);
}

void AppendNoBatchRecord(const IntervalRecord& r, std::vector<uint8_t>* out) {
  std::vector<uint8_t> b;
  size_t n = 0;
  for (const RegionRow& g : r.regions) n += g.no_batch > 0;
  if (n == 0) return;
  PutVarint(b, r.start_ns);
  PutVarint(b, n);
  for (const RegionRow& g : r.regions) {
    if (g.no_batch == 0) continue;
    PutVarint(b, g.name);
    PutVarint(b, g.no_batch);
  }
  Frame(kCounterNoBatch, b, out);
}

void AppendKeepRecord(const KeepRecord& r, std::vector<uint8_t>* out) {
  std::vector<uint8_t> b;
  PutVarint(b, r.at_ns);
  PutVarint(b, r.from_ns);
  PutVarint(b, r.to_ns);
  PutVarint(b, r.reason.size());
  b.insert(b.end(), r.reason.begin(), r.reason.end());
  Frame(kCounterKeep, b, out);
}

void AppendGpuRecord(const GpuRecord& r, std::vector<uint8_t>* out) {
  std::vector<uint8_t> b;
  PutVarint(b, r.start_ns);
  PutVarint(b, r.busy_ns);
  PutVarint(b, r.first_ns);
  PutVarint(b, r.last_ns - r.first_ns);
  PutVarint(b, r.spans);
  Frame(kCounterGpu, b, out);
}

// A record of varints `values`, framed as `type`.
static void AppendVarints(uint16_t type, std::initializer_list<uint64_t> values,
                   std::vector<uint8_t>* out) {
  std::vector<uint8_t> b;
  for (const uint64_t v : values) PutVarint(b, v);
  Frame(type, b, out);
}

void AppendStepRecord(const StepRecord& r, std::vector<uint8_t>* out) {
  AppendVarints(kCounterSteps, {r.start_ns, r.waits, r.wait_ns, r.loop_start_ns}, out);
  // Apart, so that a reader from before them skips them (docs/FORMAT_BOUNDED.md).
  if (r.preprocessing_ns > 0) {
    AppendVarints(kCounterStepSplit, {r.start_ns, r.preprocessing_ns}, out);
  }
  if (r.any_unseen()) {
    AppendVarints(kCounterStepUnseen,
                  {r.start_ns, r.unjoined_ns, r.other_threads_io_ns, r.map_live_ns}, out);
  }
  if (r.mapping_ns + r.map_copy_ns > 0) {
    AppendVarints(kCounterStepParts, {r.start_ns, r.mapping_ns, r.map_copy_ns}, out);
  }
}

void AppendDataStallRecord(const DataStallRecord& r, std::vector<uint8_t>* out) {
  std::vector<uint8_t> b;
  PutVarint(b, r.from_ns);
  PutVarint(b, r.to_ns - r.from_ns);
  PutVarint(b, r.io_ns);
  PutVarint(b, r.stall_ns);
  Frame(kCounterDataStall, b, out);
}

void AppendSavesRecord(const SavesRecord& r, std::vector<uint8_t>* out) {
  std::vector<uint8_t> b;
  PutVarint(b, r.start_ns);
  PutVarint(b, r.saves.size());
  for (const SaveSample& s : r.saves) {
    for (uint64_t v : {s.start_ns, s.end_ns - s.start_ns, s.bytes, s.write_ns, uint64_t{s.file},
                       uint64_t{s.thread}}) {
      PutVarint(b, v);
    }
  }
  PutVarint(b, r.loaded.size());
  for (uint32_t f : r.loaded) PutVarint(b, f);
  PutVarint(b, r.unsampled);
  PutVarint(b, r.loop_threads.size());
  for (uint32_t t : r.loop_threads) PutVarint(b, t);
  Frame(kCounterSaves, b, out);
}

void AppendLostRecord(const LostRecord& r, std::vector<uint8_t>* out) {
  std::vector<uint8_t> b;
  PutVarint(b, r.from_ns);
  PutVarint(b, r.to_ns - r.from_ns);
  PutVarint(b, r.events);
  PutVarint(b, r.blocks);
  PutVarint(b, r.error);
  Frame(kCounterLost, b, out);
}

void AppendBatchRecord(const BatchRecord& r, std::vector<uint8_t>* out) {
  std::vector<uint8_t> b;
  PutVarint(b, r.start_ns);
  PutVarint(b, r.level);
  for (const OwnWaits* o : {&r.read, &r.idle, &r.iter}) {
    for (uint64_t v : {o->count, o->ns, o->reading_ns, o->pin_ns}) PutVarint(b, v);
  }
  PutVarint(b, r.flow_waits);
  PutVarint(b, r.flow_wait_ns);
  // Ids as differences from the previous one (samples of a pass are a few
  // apart), times from the interval's start (a region drained in this
  // interval may have begun in the last: signed).
  auto put_span = [&](uint64_t* prev_id, uint64_t id, uint64_t start, uint64_t end) {
    PutVarint(b, ZigZag(static_cast<int64_t>(id - *prev_id)));
    *prev_id = id;
    PutVarint(b, ZigZag(static_cast<int64_t>(start - r.start_ns)));
    PutVarint(b, end - start);
  };
  uint64_t prev = 0;
  PutVarint(b, r.waits.size());
  for (const WaitSample& w : r.waits) put_span(&prev, w.id, w.start_ns, w.end_ns);
  prev = 0;
  PutVarint(b, r.fetches.size());
  for (const FetchSample& f : r.fetches) {
    put_span(&prev, f.id, f.start_ns, f.end_ns);
    PutVarint(b, f.first ? 1 : 0);
    for (uint32_t us : f.read_us) PutVarint(b, us);
  }
  // Last: a reader from before it stops at the fetches.
  prev = 0;
  PutVarint(b, r.longest.size());
  for (const WaitSample& w : r.longest) put_span(&prev, w.id, w.start_ns, w.end_ns);
  Frame(kCounterBatches, b, out);
}

std::string CountersPathOf(const std::string& trace_path) {
  return TraceStemOf(trace_path) + kCountersSuffix;
}

}  // namespace dlprof::format
