// The event catalogue's part of the C ABI (include/dlprof/reader.h): what
// each kind code is called and what it is to a reader (its event rules,
// lib/format/event_rules.h), so that a binding need not restate either.
#include "dlprof/catalogue.h"
#include "dlprof/reader.h"
#include "lib/format/event_rules.h"

// The C values are the rules' own.
static_assert(DLPROF_BYTES_NONE == static_cast<int>(dlprof::BytesAt::kNone) &&
              DLPROF_BYTES_RET == static_cast<int>(dlprof::BytesAt::kRet) &&
              DLPROF_BYTES_AUX == static_cast<int>(dlprof::BytesAt::kAux) &&
              DLPROF_BYTES_SIZE == static_cast<int>(dlprof::BytesAt::kSize));
static_assert(DLPROF_THREAD_RECORD == static_cast<int>(dlprof::ThreadOf::kRecord) &&
              DLPROF_THREAD_CALLER == static_cast<int>(dlprof::ThreadOf::kCaller) &&
              DLPROF_THREAD_STREAM == static_cast<int>(dlprof::ThreadOf::kStream));

extern "C" {

const char* dlprof_kind_name(uint16_t kind) {
  const dlprof::EventKindInfo* k = dlprof::LookupKind(kind);
  return k != nullptr ? k->name : nullptr;
}

const char* dlprof_kind_category(uint16_t kind) {
  const dlprof::EventKindInfo* k = dlprof::LookupKind(kind);
  return k != nullptr ? dlprof::CategoryName(k->category) : nullptr;
}

const char* dlprof_kind_class(uint16_t kind) {
  const dlprof::EventKindInfo* k = dlprof::LookupKind(kind);
  return k != nullptr ? dlprof::OpClassName(k->op_class) : nullptr;
}

uint32_t dlprof_kind_traits(uint16_t kind) {
  const dlprof::EventRules& r = dlprof::RulesFor(kind);
  return (r.io ? DLPROF_KIND_IO : 0u) | (r.data ? DLPROF_KIND_DATA : 0u) |
         (r.bandwidth ? DLPROF_KIND_BANDWIDTH : 0u) | (r.gpu_work ? DLPROF_KIND_GPU_WORK : 0u) |
         (r.gpu_api ? DLPROF_KIND_GPU_API : 0u) | (r.gpu_clock ? DLPROF_KIND_GPU_CLOCK : 0u) |
         (r.named ? DLPROF_KIND_NAMED : 0u) | (r.config ? DLPROF_KIND_CONFIG : 0u) |
         (r.flow > 0 ? DLPROF_KIND_FLOW_START : 0u) | (r.flow < 0 ? DLPROF_KIND_FLOW_FINISH : 0u) |
         (r.context ? DLPROF_KIND_CONTEXT : 0u) | (r.traced_call ? DLPROF_KIND_TRACED_CALL : 0u) |
         (r.map_read ? DLPROF_KIND_MAP_READ : 0u) | (r.async ? DLPROF_KIND_ASYNC : 0u);
}

int dlprof_kind_bytes(uint16_t kind) { return static_cast<int>(dlprof::RulesFor(kind).bytes_at); }

int dlprof_kind_thread(uint16_t kind) { return static_cast<int>(dlprof::RulesFor(kind).thread); }

}  // extern "C"
