// The parts of --format chrome's document written beside the events
// (chrome_parts.h).
#include "tools/dump/chrome_parts.h"

#include "lib/text/text.h"

namespace dlprof::dump {
using dlprof::text::AppendJsonString;

void AppendMicros(OutBuffer* out, uint64_t ns) {
  out->AppendInt(ns / 1000);
  out->Append('.');
  out->AppendPadded(ns % 1000, 3);
}

// A metadata ("M") event; `what` is process_name or thread_name (args
// {"name": name}), or process_sort_index (args {"sort_index": sort_index}).
void Metadata(OutBuffer* out, const char* what, int32_t pid, int64_t tid, const std::string& name,
              bool* first, int64_t sort_index) {
  out->Append(*first ? "\n" : ",\n");
  *first = false;
  out->Append("{\"ph\":\"M\",\"name\":\"");
  out->Append(what);
  out->Append("\",\"pid\":");
  out->AppendInt(pid);
  out->Append(",\"tid\":");
  out->AppendInt(tid);
  if (sort_index >= 0) {
    out->Append(",\"args\":{\"sort_index\":");
    out->AppendInt(sort_index);
    out->Append("}}");
    return;
  }
  out->Append(",\"args\":{\"name\":");
  std::string q;
  AppendJsonString(&q, name);
  out->Append(q);
  out->Append("}}");
}

// One end of a flow arrow: 's' where it starts, 'f' where it finishes (bound
// to the slice enclosing it); `name` is already quoted.
void FlowEvent(OutBuffer* out, char ph, std::string_view cat, std::string_view name,
               std::string_view id, int32_t pid, int64_t tid, uint64_t at_ns) {
  out->Append(",\n{\"ph\":\"");
  out->Append(std::string_view(&ph, 1));
  out->Append("\",\"cat\":\"");
  out->Append(cat);
  out->Append("\",\"name\":");
  out->Append(name);
  out->Append(",\"id\":\"");
  out->Append(id);
  out->Append("\",\"pid\":");
  out->AppendInt(pid);
  out->Append(",\"tid\":");
  out->AppendInt(tid);
  out->Append(",\"ts\":");
  AppendMicros(out, at_ns);
  if (ph == 'f') out->Append(",\"bp\":\"e\"");
  out->Append("}");
}

}  // namespace dlprof::dump
