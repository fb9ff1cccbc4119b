// The slice sequence of one machine of a Perfetto export (perfetto_sequence.h).
#include "tools/dump/perfetto_sequence.h"

namespace dlprof::dump {
namespace {

namespace pf = perfetto_fields;

const char* const kArgNames[] = {"ret",    "errno",  "path",        "fd",
                                 "offset", "size",   "config",      "device",
                                 "stream", "correlation", "region", "offset_ns",
                                 "uncertainty_ns", "reason", "samples", "cupti_version",
                                 "flow", "bytes", "submit_tid", "reaped_by", "reaped",
                                 "opcode", "fixed_file", "fixed_buffer", "linked", "unreaped",
                                 "dest_path"};
static_assert(sizeof(kArgNames) / sizeof(kArgNames[0]) == kArgCount - 1, "a name per arg");

}  // namespace

void SliceSequence::Begin(ProtoWriter* out) {
  if (begun) return;
  begun = true;
  size_t packet = out->BeginNested(pf::kTracePacket);
  out->Varint(pf::kPacketSequenceId, SliceSequenceId(machine));
  out->Varint(pf::kPacketSequenceFlags, pf::kSeqIncrementalStateCleared);
  if (machine != 0) out->Varint(pf::kPacketMachineId, machine);
  size_t defaults = out->BeginNested(pf::kPacketDefaults);
  out->Varint(pf::kDefaultsClockId, pf::kDeltaClock);
  out->EndNested(defaults);
  size_t interned = out->BeginNested(pf::kPacketInternedData);
  for (uint64_t a = kRet; a < kArgCount; ++a) {
    size_t entry = out->BeginNested(pf::kInternedAnnotationNames);
    out->Varint(pf::kInternedIid, a);
    out->Bytes(pf::kInternedName, kArgNames[a - 1]);
    out->EndNested(entry);
  }
  out->EndNested(interned);
  out->EndNested(packet);
}

// The incremental clock starts at the sequence's first slice (or END), on
// the job's time base.
void SliceSequence::StartClock(ProtoWriter* out, uint64_t at_ns) {
  if (started) return;
  started = true;
  last_ns = at_ns;
  size_t packet = out->BeginNested(pf::kTracePacket);
  out->Varint(pf::kPacketSequenceId, SliceSequenceId(machine));
  if (machine != 0) out->Varint(pf::kPacketMachineId, machine);
  size_t snapshot = out->BeginNested(pf::kPacketClockSnapshot);
  size_t delta = out->BeginNested(pf::kSnapshotClocks);
  out->Varint(pf::kClockId, pf::kDeltaClock);
  out->Varint(pf::kClockTimestamp, at_ns);
  out->Varint(pf::kClockIncremental, 1);
  out->EndNested(delta);
  size_t boottime = out->BeginNested(pf::kSnapshotClocks);
  out->Varint(pf::kClockId, pf::kClockBoottime);
  out->Varint(pf::kClockTimestamp, at_ns);
  out->EndNested(boottime);
  out->EndNested(snapshot);
  out->EndNested(packet);
}

uint64_t SliceSequence::Intern(std::unordered_map<std::string, uint64_t>* table,
                               ProtoWriter* interned, uint32_t field, const std::string& s) {
  auto [it, added] = table->try_emplace(s, table->size() + 1);
  if (added) {
    size_t entry = interned->BeginNested(field);
    interned->Varint(pf::kInternedIid, it->second);
    interned->Bytes(pf::kInternedName, s);
    interned->EndNested(entry);
  }
  return it->second;
}

void SliceSequence::AddCategory(ProtoWriter* interned, size_t category, const std::string& name) {
  if (category >= categories.size()) categories.resize(category + 1, false);
  categories[category] = true;
  size_t entry = interned->BeginNested(pf::kInternedCategories);
  interned->Varint(pf::kInternedIid, category + 1);
  interned->Bytes(pf::kInternedName, name);
  interned->EndNested(entry);
}

}  // namespace dlprof::dump
