// Parsing of the plugin's diagnostic settings (tuning.h).
#include "lib/cupti/tuning.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace dlprof::cupti {
namespace {

// A whole decimal number in [lo, hi].
bool ParseRange(const char* text, uint64_t lo, uint64_t hi, uint64_t* out) {
  if (text == nullptr || *text < '0' || *text > '9') return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

void Warn(PluginTuning* t, const char* what) {
  t->warning += (t->warning.empty() ? "" : "; ") + std::string(what);
}

}  // namespace

PluginTuning ParseTuning(const char* buffer_kb, const char* flush_ms, const char* translate) {
  PluginTuning t;
  uint64_t v = 0;
  if (buffer_kb != nullptr && *buffer_kb != '\0') {
    if (ParseRange(buffer_kb, 64, kPoolBytes >> 10, &v)) {
      t.buffer_bytes = static_cast<size_t>(v) << 10;
      t.max_buffers = kPoolBytes / t.buffer_bytes;
      if (t.max_buffers < 2) t.max_buffers = 2;  // one filling while one is translated
    } else {
      Warn(&t, "DLPROF_CUPTI_BUFFER_KB: not a size in KiB from 64 to 65536; using 2048");
    }
  }
  if (flush_ms != nullptr && *flush_ms != '\0') {
    if (ParseRange(flush_ms, 10, 60000, &v)) {
      t.flush_ms = static_cast<uint32_t>(v);
    } else {
      Warn(&t, "DLPROF_CUPTI_FLUSH_MS: not a period in ms from 10 to 60000; using 500");
    }
  }
  if (translate != nullptr && *translate != '\0') {
    if (std::strcmp(translate, "inline") == 0) {
      t.translate_thread = false;
    } else if (std::strcmp(translate, "thread") != 0) {
      Warn(&t, "DLPROF_CUPTI_TRANSLATE: expected 'thread' or 'inline'; using thread");
    }
  }
  return t;
}

}  // namespace dlprof::cupti
