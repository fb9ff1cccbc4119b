// The event catalogue's part of the C ABI (include/dlprof/reader.h): what
// each kind code is called, so that a binding need not restate the catalogue.
#include "dlprof/catalogue.h"
#include "dlprof/reader.h"

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

}  // extern "C"
