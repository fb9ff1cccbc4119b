// Quoting of trace strings (paths, host names), which are arbitrary bytes, and
// printf into a std::string, for the renderers.
#ifndef DLPROF_LIB_TEXT_TEXT_H_
#define DLPROF_LIB_TEXT_TEXT_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace dlprof::text {

// Length of the well-formed UTF-8 sequence starting at `p` (at most `n`
// bytes available), or 0 when the bytes there are not valid UTF-8 (stray
// continuation bytes, overlong forms, surrogates, code points > U+10FFFF).
size_t Utf8SequenceLength(const unsigned char* p, size_t n);

// Appends `s` as a JSON string literal, quotes included. Valid UTF-8 passes
// through; control characters, '"' and '\' are escaped; each byte that is not
// part of valid UTF-8 becomes \u00XX, so the output is always valid JSON.
void AppendJsonString(std::string* out, std::string_view s);
// The same, as a string of its own.
std::string JsonString(std::string_view s);

// Appends `s` in double quotes the way strace shows strings: printable text
// and valid UTF-8 as is, '"' and '\' escaped, other bytes as \n, \t or \xNN.
void AppendQuoted(std::string* out, std::string_view s);

// printf's formatting into a std::string (up to 511 characters).
std::string Fmt(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// Numbers as the text outputs show them: "12 B", "8.0 MiB" (binary units
// to TiB); "0.012345 s" (seconds to the nanosecond's microsecond: the full
// listing); "2.35 s", "41.2 ms", "730 us" (the verdict); "23.4 %" (of a
// share in per mille).
std::string ByteText(uint64_t bytes);
std::string SecondsText(uint64_t ns);
std::string DurationText(uint64_t ns);
std::string PerMilleText(uint64_t per_mille);

}  // namespace dlprof::text

#endif  // DLPROF_LIB_TEXT_TEXT_H_
