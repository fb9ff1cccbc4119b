// Quoting of trace strings for text and JSON, printf into std::string, and
// numbers as the text outputs show them.
#include "lib/text/text.h"

#include <cinttypes>
#include <cstdarg>
#include <cstdio>

namespace dlprof::text {
namespace {

const char kHex[] = "0123456789abcdef";

void AppendHexByte(std::string* out, const char* prefix, unsigned char b) {
  out->append(prefix);
  out->push_back(kHex[b >> 4]);
  out->push_back(kHex[b & 15]);
}

// The short escapes JSON and C share; 0 when a byte has none.
char ShortEscape(unsigned char c) {
  switch (c) {
    case '"': return '"';
    case '\\': return '\\';
    case '\n': return 'n';
    case '\t': return 't';
    case '\r': return 'r';
    case '\b': return 'b';
    case '\f': return 'f';
    default: return 0;
  }
}

}  // namespace

size_t Utf8SequenceLength(const unsigned char* p, size_t n) {
  unsigned char b = p[0];
  if (b < 0x80) return 1;
  size_t len;
  unsigned char lo = 0x80, hi = 0xbf;  // allowed range of the second byte
  if (b >= 0xc2 && b <= 0xdf) {
    len = 2;
  } else if (b >= 0xe0 && b <= 0xef) {
    len = 3;
    if (b == 0xe0) lo = 0xa0;  // overlong
    if (b == 0xed) hi = 0x9f;  // UTF-16 surrogates
  } else if (b >= 0xf0 && b <= 0xf4) {
    len = 4;
    if (b == 0xf0) lo = 0x90;  // overlong
    if (b == 0xf4) hi = 0x8f;  // beyond U+10FFFF
  } else {
    return 0;
  }
  if (n < len || p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < len; ++i) {
    if ((p[i] & 0xc0) != 0x80) return 0;
  }
  return len;
}

namespace {

// The one quoting loop: bytes below `plain_end` that need no escape go as
// they are, then the short escapes, valid UTF-8 sequences as they are, and
// every other byte as `hex_prefix` and two hex digits.
void AppendEscaped(std::string* out, std::string_view s, unsigned char plain_end,
                   const char* hex_prefix) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  out->push_back('"');
  for (size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    if (c >= 0x20 && c < plain_end && c != '"' && c != '\\') {
      out->push_back(static_cast<char>(c));
      ++i;
    } else if (char e = ShortEscape(c)) {
      out->push_back('\\');
      out->push_back(e);
      ++i;
    } else if (size_t len = c >= 0x80 ? Utf8SequenceLength(p + i, n - i) : 0) {
      out->append(reinterpret_cast<const char*>(p + i), len);
      i += len;
    } else {
      // In JSON lossy but unambiguous enough: JSON cannot carry raw bytes.
      AppendHexByte(out, hex_prefix, c);
      ++i;
    }
  }
  out->push_back('"');
}

}  // namespace

void AppendJsonString(std::string* out, std::string_view s) {
  AppendEscaped(out, s, 0x80, "\\u00");
}

std::string JsonString(std::string_view s) {
  std::string out;
  AppendJsonString(&out, s);
  return out;
}

void AppendQuoted(std::string* out, std::string_view s) {
  AppendEscaped(out, s, 0x7f, "\\x");
}

std::string Fmt(const char* fmt, ...) {
  char buf[512];
  va_list ap, again;
  va_start(ap, fmt);
  va_copy(again, ap);
  const int n = vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  std::string out;
  if (n >= 0 && static_cast<size_t>(n) >= sizeof(buf)) {
    // Longer than the buffer (a finding's text with its advice): the whole
    // of it, never a cut that leaves broken JSON.
    out.resize(static_cast<size_t>(n) + 1);
    vsnprintf(out.data(), out.size(), fmt, again);
    out.resize(static_cast<size_t>(n));
  } else {
    out = buf;
  }
  va_end(again);
  return out;
}

std::string ByteText(uint64_t b) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? Fmt("%" PRIu64 " B", b) : Fmt("%.1f %s", v, kUnits[u]);
}

std::string SecondsText(uint64_t ns) { return Fmt("%.6f s", static_cast<double>(ns) / 1e9); }

std::string DurationText(uint64_t ns) {
  if (ns >= 1000000000) return Fmt("%.2f s", static_cast<double>(ns) / 1e9);
  if (ns >= 1000000) return Fmt("%.1f ms", static_cast<double>(ns) / 1e6);
  return Fmt("%" PRIu64 " us", ns / 1000);
}

std::string PerMilleText(uint64_t per_mille) {
  return Fmt("%" PRIu64 ".%" PRIu64 " %%", per_mille / 10, per_mille % 10);
}

}  // namespace dlprof::text
