// dlprof's command line: its help, the options of `dlprof run` and their
// checks. Every option is judged here, with a message naming the option,
// before anything is set or started.
#ifndef DLPROF_TOOLS_LAUNCHER_OPTIONS_H_
#define DLPROF_TOOLS_LAUNCHER_OPTIONS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dlprof::launcher {

struct Options {
  std::map<std::string, std::string> env;  // DLPROF_* to set
  std::vector<std::string> include, exclude;
  bool dir_given = false;
  bool quiet = false;       // --quiet
  bool summary = true;
  int64_t wait_ms = 10000;  // --wait
  std::string regions;      // --regions: passed to dlprof-dump; "" for its default
  std::string timeline;     // --timeline: the Perfetto file to write; "" for none
  std::vector<std::string> command;
};

// The help text (dlprof --help).
std::string Usage();

// The options of `dlprof run` (argv[2] on) and the command after them.
// False with `*error` set (the message, without "dlprof: ") on a usage
// error; `*help` set when --help was asked for.
bool ParseRun(int argc, char** argv, Options* o, bool* help, std::string* error);

// Whether `value` is good for the valued option `name` (--buffer-kb, ...);
// if not, `*error` is the message ("--buffer-kb: 'abc' is not a size in KiB
// (4..1048576)").
bool CheckOptionValue(const std::string& name, const std::string& value, std::string* error);

// What `dlprof WORD args...` answers when WORD is no command: for a word
// one letter from a command ("rn") that is no program, that command; else,
// for a program to run, how to run it under the tracer.
std::string UnknownCommand(int argc, char** argv);

}  // namespace dlprof::launcher

#endif  // DLPROF_TOOLS_LAUNCHER_OPTIONS_H_
