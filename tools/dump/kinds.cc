// How dlprof-dump names and prints each event kind.
#include "tools/dump/kinds.h"

#include <cstdio>

#include "lib/text/text.h"

namespace dlprof::dump {
using namespace dlprof::text;

namespace {
// What a cuFile event's, a fault's or a signal record's aux holds
// (include/dlprof/catalogue.h).
const char* AuxKeyOf(EventKind kind) {
  switch (kind) {
    case EventKind::CufileHandleRegister:
    case EventKind::CufileHandleDeregister: return "handle";
    case EventKind::CufileAsyncRead:
    case EventKind::CufileAsyncWrite: return "stream";
    case EventKind::CufileBatchSetUp:
    case EventKind::CufileBatchSubmit:
    case EventKind::CufileBatchGetStatus:
    case EventKind::CufileBatchCancel:
    case EventKind::CufileBatchDestroy: return "batch";
    case EventKind::CufileBufRegister:
    case EventKind::CufileBufDeregister:
    case EventKind::CufileRead:
    case EventKind::CufileWrite:
    case EventKind::CufileReadAsync:
    case EventKind::CufileWriteAsync:
    case EventKind::CufileBatchRead:
    case EventKind::CufileBatchWrite: return "buffer";
    case EventKind::MajorFault:
    case EventKind::MapWait: return "address";  // the faulting address
    case EventKind::Signal: return "sender";       // the pid that sent it
    default: return nullptr;
  }
}
}  // namespace

std::string CufileStreamName(int64_t track) {
  char hex[32];
  snprintf(hex, sizeof(hex), "0x%llx", static_cast<unsigned long long>(track - kCufileStreamTrack));
  return std::string("cuFile stream ") + hex;
}

std::string AsyncFileTrackName(const std::string& path, int64_t lane) {
  std::string name = "async I/O " + path;
  if (lane > 0) name += " (overlap " + std::to_string(lane) + ")";  // as Perfetto's lanes
  return name;
}

KindTable::KindTable() : views_(1u << 16) {}

const KindView& KindTable::Build(uint16_t code) {
  auto v = std::make_unique<KindView>();
  if (const EventKindInfo* info = LookupKind(code)) {
    v->known = true;
    v->name = info->name;
    v->category = CategoryName(info->category);
    v->op_class = info->op_class;
    const EventRules& r = RulesFor(code);
    v->rules = r;
    v->read_write = r.data;
    v->moves_bytes = r.bytes_at == BytesAt::kRet;
    v->rename = v->name.compare(0, 6, "rename") == 0;
    v->async = r.async;
    // (An io_uring openat's aux is a request's, not open(2)'s flags.)
    v->open = info->op_class == OpClass::Open && !r.async;
    v->opcode = code == static_cast<uint16_t>(EventKind::UringOp) ||
                code == static_cast<uint16_t>(EventKind::LinuxAioOp);
    v->dup = info->op_class == OpClass::Dup;
    v->bytes_in_aux = r.bytes_at == BytesAt::kAux;
    v->gpu = info->category == Category::Cuda;
    v->named = r.named;
    v->flow = r.flow;
    v->config = r.config;
    v->aux_key = AuxKeyOf(static_cast<EventKind>(code));
    v->region_faults = code == static_cast<uint16_t>(EventKind::RegionFaults);
    v->mpi = info->category == Category::Mpiio;
    v->cufile_stream = code == static_cast<uint16_t>(EventKind::CufileAsyncRead) ||
                       code == static_cast<uint16_t>(EventKind::CufileAsyncWrite);
  } else {
    v->name = "kind_" + std::to_string(code);
    v->category = "unknown";
  }
  v->json = ",\"cat\":";
  AppendJsonString(&v->json, v->category);
  v->json_cat = v->json + ",\"kind\":";
  AppendJsonString(&v->json_cat, v->name);
  v->json += ",\"name\":";
  AppendJsonString(&v->json, v->name);
  views_[code] = std::move(v);
  return *views_[code];
}

const char* ClockSyncReason(int32_t reason) {
  static const char* const kReasons[] = {"start", "refresh", "zero_timestamps", "forced"};
  return reason >= 0 && reason < 4 ? kReasons[reason] : "unknown";
}

}  // namespace dlprof::dump
