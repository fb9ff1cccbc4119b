// What the summary does with each event kind (summary_builder.cc), worked
// out once per kind code from the event rules: one table lookup an event.
#ifndef DLPROF_LIB_ANALYSIS_METERS_KIND_ROLES_H_
#define DLPROF_LIB_ANALYSIS_METERS_KIND_ROLES_H_

#include <cstdint>

#include "lib/analysis/summary/summary.h"
#include "lib/format/event_rules.h"

namespace dlprof::analysis::summary_kinds {

inline OpGroup GroupOf(OpClass c) {
  switch (c) {
    case OpClass::Open: return OpGroup::Open;
    case OpClass::Read: return OpGroup::Read;
    case OpClass::Write: return OpGroup::Write;
    case OpClass::Seek: return OpGroup::Seek;
    case OpClass::Close:
    case OpClass::Meta:
    case OpClass::Dup: return OpGroup::Meta;
    case OpClass::Sync: return OpGroup::Sync;
    case OpClass::Mmap: return OpGroup::Mmap;
    default: return OpGroup::Other;
  }
}

// What the summary does with an event, worked out once per kind code from
// the event rules (lib/format/event_rules.h: every test of what a kind is
// lives there), so an event costs one table lookup, not a chain of tests.
// Only the summary's own grouping of operation classes is added here.
enum class Role : uint8_t {
  kNotEvent,  // call-stack and module-map records: context, not events
  kCountOnly, // counted in the run's span and nothing else
  kGpuWork,   // a kernel, copy or memset: GPU busy time
  kIo,        // an I/O call: the statistics and the stall meter
  kMapRead,   // a major fault on a mapped file: its file's map figures, the stall
  kProcessEnd,  // exit, signal: how its process ended; counted, no part of the run's span
};
struct KindRole {
  Role role = Role::kCountOnly;
  OpGroup group = OpGroup::Other;
  OpClass op_class = OpClass::Other;
  BytesAt bytes_at = BytesAt::kNone;  // where a read's or write's bytes are
  bool mpiio_data = false;    // an MPI-IO read or write: collective or not
  bool may_enclose = false;   // a traced call (POSIX, STDIO, MPI; no asynchronous request):
                              // others may nest in it
  bool copies = false;        // an in-kernel copy: it also writes its bytes to `aux`'s file
};
struct KindRoleTable {
  KindRole of[kEventKindLimit];
  KindRoleTable() {
    for (int code = 0; code < kEventKindLimit; ++code) {
      KindRole& r = of[code];
      const EventRules& rules = kEventRules.of[code];
      if (rules.context) {
        r.role = Role::kNotEvent;
        continue;
      }
      if (!rules.known) continue;
      if (rules.process_end) {
        r.role = Role::kProcessEnd;
        continue;
      }
      const EventKindInfo& k = kEventKinds.info[code];
      r.op_class = k.op_class;
      r.group = GroupOf(k.op_class);
      r.may_enclose = rules.traced_call;
      if (rules.gpu_work) {
        r.role = Role::kGpuWork;
      } else if (rules.map_read) {
        r.role = Role::kMapRead;
        r.bytes_at = rules.bytes_at;
      } else if (rules.io) {
        r.role = Role::kIo;
        r.bytes_at = rules.bytes_at;
        r.mpiio_data = rules.mpiio_data;
        r.copies = rules.copy;
      }
    }
  }
  // Codes past the table are unknown kinds: counted only.
  const KindRole& operator[](uint16_t code) const {
    static const KindRole kUnknown;
    return code < kEventKindLimit ? of[code] : kUnknown;
  }
};

}  // namespace dlprof::analysis::summary_kinds

#endif  // DLPROF_LIB_ANALYSIS_METERS_KIND_ROLES_H_
