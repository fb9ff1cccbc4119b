// How dlprof-dump presents each event kind, derived from the catalogue.
#ifndef DLPROF_TOOLS_DUMP_KINDS_H_
#define DLPROF_TOOLS_DUMP_KINDS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dlprof/catalogue.h"

namespace dlprof::dump {

struct KindView {
  bool known = false;        // false: a code this build's catalogue lacks
  std::string name;          // "pread64"; "kind_<code>" when unknown
  std::string category;      // "posix"; "unknown" when unknown
  OpClass op_class = OpClass::Other;
  bool read_write = false;   // op class Read or Write: `size` always printed
  bool moves_bytes = false;  // POSIX read/write: `bytes` = ret when ret > 0
  bool rename = false;       // aux holds the string id of the second path
  bool open = false;         // aux holds the open(2) flags
  bool dup = false;          // ret is the new descriptor
  bool bytes_in_aux = false; // STDIO and MPI-IO read/write: `bytes` = aux
  bool named = false;        // CUDA and app: the event's name is the string of `file`
  bool gpu = false;          // CUDA: fd is the device, offset the stream, aux the correlation
  bool config = false;       // CUDA kernel/copy/memset: ret is the string id of its configuration
  int flow = 0;              // flow_start: 1, flow_finish: -1; aux is the flow's id
  std::string json;          // ,"cat":"...","name":"..." ready to append
  std::string json_cat;      // ,"cat":"...","kind":"..." for named kinds
};

// Traces may hold codes from newer writers, so every 16-bit code gets a view;
// views are built on first use. Not thread-safe: exporters run on one thread.
class KindTable {
 public:
  KindTable();
  const KindView& Get(uint16_t code) {
    const auto& v = views_[code];
    return v ? *v : Build(code);
  }

 private:
  const KindView& Build(uint16_t code);
  std::vector<std::unique_ptr<KindView>> views_;
};

// Why a cupti_clock event was written (its fd; docs/CUDA.md).
const char* ClockSyncReason(int32_t reason);

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_KINDS_H_
