// dlprof-dump's command line: the usage text, the options it sets, and
// their parsing. Every refusal is one line on stderr naming the option and
// what it needs, and exit status 2 (main.cc says what the statuses mean).
#ifndef DLPROF_TOOLS_DUMP_OPTIONS_H_
#define DLPROF_TOOLS_DUMP_OPTIONS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "lib/read/event_filter.h"
#include "lib/read/regions.h"
#include "lib/read/trace_set.h"
#include "tools/dump/perfetto_compress.h"

namespace dlprof::dump {

struct Options {
  std::string format = "text";
  std::string output;  // empty: standard output
  std::vector<std::string> inputs;
  bool summary = false;
  bool details = false;  // --details: the full listing after the verdict
  read::EventSelection selection;  // --from, --to (from the first event), --pid, --rank
  std::string run;           // --run: "" for the latest
  read::RegionPick region_pick = read::RegionPick::kOutermost;  // --regions
  size_t top = 0;  // --top: every list's length; 0 for each list's default
  bool quiet = false;  // --quiet: no progress line
  std::string batch_region = read::kDefaultBatchRegion;  // --batch-region
  unsigned threads = read::DefaultDecodeThreads();
  PerfettoCompression compression = PerfettoCompression::kDeflate;  // --perfetto-compression
  bool compression_given = false;  // (said to do nothing without --format perfetto)
  bool compare = false;  // --compare BEFORE AFTER
  std::string before, after;
};

// Reads the command line into `o`. Returns -1 when the program should go on,
// else the exit status: 0 after --help or --version, 2 for a usage error.
int ParseArgs(int argc, char** argv, Options* o);

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_OPTIONS_H_
