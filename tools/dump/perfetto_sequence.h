// The slice sequence of one machine of a Perfetto export (perfetto_output.cc).
//
// Perfetto's trace processor reads the packets of each machine
// (TracePacket.machine_id, one per host: perfetto_tracks.h) with a reader of
// its own: sequences, their interned entries and incremental clocks, and
// track uuids are per machine. So each host's slices go on a sequence of
// their own, which interns its own names and strings and keeps its own
// clock; a job on one host has one, machine 0, whose packets carry no
// machine_id (as before machines were written).
#ifndef DLPROF_TOOLS_DUMP_PERFETTO_SEQUENCE_H_
#define DLPROF_TOOLS_DUMP_PERFETTO_SEQUENCE_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "tools/dump/perfetto_fields.h"
#include "tools/dump/perfetto_wire.h"

namespace dlprof::dump {

// The debug annotation names, interned once at a sequence's start (iid =
// value).
enum PerfettoArg : uint64_t {
  kRet = 1, kErrno, kPath, kFd, kOffset, kSize, kConfig, kDevice, kStream, kCorrelation,
  kRegion, kOffsetNs, kUncertaintyNs, kReason, kSamples, kCuptiVersion, kFlow, kBytes,
  kSubmitTid, kReapedBy, kReaped, kOpcode, kFixedFile, kFixedBuffer, kLinked, kUnreaped,
  kDestPath, kArgCount
};

// The sequences of machine `machine`: slices, counters, data stall (machine
// 0 keeps the ids 1, 2, 3 of a single-host export).
inline uint32_t SliceSequenceId(uint32_t machine) { return 1 + 3 * machine; }
inline uint32_t CounterSequenceId(uint32_t machine) { return 2 + 3 * machine; }
inline uint32_t StallSequenceId(uint32_t machine) { return 3 + 3 * machine; }

// A packet's machine_id, at `p` (a packet's body); none for machine 0.
inline char* PutMachine(char* p, uint32_t machine) {
  return machine == 0 ? p : ProtoWriter::PutField(p, perfetto_fields::kPacketMachineId, machine);
}

struct SliceSequence {
  uint32_t machine = 0;
  bool begun = false;    // its first packet (state cleared, defaults) written
  bool started = false;  // its clock defined
  uint64_t last_ns = 0;  // the time of its last packet (the incremental clock)
  // Interned entries: iids count from 1 per kind of entry.
  std::unordered_map<std::string, uint64_t> strings, names;
  std::vector<bool> categories;  // by category number: interned yet (iid: number + 1)
  std::unordered_map<const std::string*, uint64_t> regions;  // a region's string iid

  // Writes its first packet into `out` unless written: the sequence starts
  // clean, with its defaults (the incremental clock) and the annotation
  // names.
  void Begin(ProtoWriter* out);
  // Defines its incremental clock at `at_ns` (the job's time base, as
  // BOOTTIME) unless defined.
  void StartClock(ProtoWriter* out, uint64_t at_ns);
  // The fields every slice packet begins with, at `p` (a packet's body):
  // its time (a delta from the last packet's), sequence and machine.
  char* PutSlicePacket(char* p, uint64_t at_ns) {
    namespace pf = perfetto_fields;
    p = ProtoWriter::PutField(p, pf::kPacketTimestamp, at_ns - last_ns);
    last_ns = at_ns;
    p = ProtoWriter::PutField(p, pf::kPacketSequenceId, SliceSequenceId(machine));
    p = ProtoWriter::PutField(p, pf::kPacketSequenceFlags, pf::kSeqNeedsIncrementalState);
    return PutMachine(p, machine);
  }
  // The iid of an entry of `table`, added to `interned` (the packet's
  // InternedData, field `field`) when new.
  static uint64_t Intern(std::unordered_map<std::string, uint64_t>* table, ProtoWriter* interned,
                         uint32_t field, const std::string& s);
  uint64_t StringIid(ProtoWriter* interned, const std::string& s) {
    return Intern(&strings, interned, perfetto_fields::kInternedStrings, s);
  }
  uint64_t NameIid(ProtoWriter* interned, const std::string& s) {
    return Intern(&names, interned, perfetto_fields::kInternedEventNames, s);
  }
  // Category number `category` (named `name`; numbered by the writer).
  uint64_t CategoryIid(ProtoWriter* interned, size_t category, const std::string& name) {
    if (category >= categories.size() || !categories[category]) {
      AddCategory(interned, category, name);
    }
    return category + 1;
  }

 private:
  void AddCategory(ProtoWriter* interned, size_t category, const std::string& name);
};

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_PERFETTO_SEQUENCE_H_
