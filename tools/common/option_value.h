// The one rule dlprof and dlprof-dump share for an option's value given as
// the next argument ("--dir D"): an argument that reads as an option is no
// value. A forgotten value is then a usage error naming the option, rather
// than the next option swallowed ("dlprof run --dir --stacks" made a trace
// directory named "--stacks"). Header-only: the two tools share no library
// of their own, and neither may depend on the other.
#ifndef DLPROF_TOOLS_COMMON_OPTION_VALUE_H_
#define DLPROF_TOOLS_COMMON_OPTION_VALUE_H_

#include <string>

namespace dlprof::tools {

// Whether `arg`, where an option's value is due, is rather an option: "-"
// then a letter or "-" ("--stacks", "-q", "--" itself). "-", "-5" and ""
// are values.
inline bool LooksLikeOption(const std::string& arg) {
  if (arg.size() < 2 || arg[0] != '-') return false;
  const char c = arg[1];
  return c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// Why `option` took no value from `arg`, and how to give one that looks
// like an option: "the next argument, '--stacks', is an option; a value
// that begins with '-' goes as --dir=VALUE".
inline std::string RefusedValueNote(const std::string& option, const std::string& arg) {
  const std::string how = option.compare(0, 2, "--") == 0 ? option + "=VALUE" : option + "VALUE";
  return "the next argument, '" + arg + "', is an option; a value that begins with '-' goes as " +
         how;
}

}  // namespace dlprof::tools

#endif  // DLPROF_TOOLS_COMMON_OPTION_VALUE_H_
