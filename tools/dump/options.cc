// dlprof-dump's command line: the usage text and the parsing of its options
// into Options (options.h).
#include "tools/dump/options.h"

#include <cstdio>
#include <string>

#include "dlprof/format.h"
#include "tools/common/option_value.h"

namespace dlprof::dump {
using namespace dlprof::read;
namespace {

constexpr const char kUsage[] =
    "usage: dlprof-dump [--format text|jsonl|chrome|perfetto|json|html] [--summary [--details]]\n"
    "                   [-o OUT]\n"
    "                   [--run ID] [--from S] [--to S] [--host H] [--pid P] [--rank R]\n"
    "                   [--path GLOB] [--exclude-path GLOB] [--regions WHICH] [--top N]\n"
    "                   [--quiet] [--perfetto-compression deflate|zstd|none]\n"
    "                   [--batch-region NAME] [--threads N]\n"
    "                   TRACE_OR_DIR...\n"
    "       dlprof-dump --compare BEFORE AFTER [--format text|json|html] [-o OUT]\n"
    "                   [TRACE_OR_DIR...]\n"
    "\n"
    "Decodes dlprof traces and prints their events merged on one timeline,\n"
    "ordered by start time, pid and tid. A directory stands for every *.dlprof\n"
    "file below it.\n"
    "\n"
    "  --format text   one strace-like line per event, at seconds from the run's\n"
    "                  first event, as --from counts them (default)\n"
    "  --format jsonl  one JSON object per event\n"
    "  --format chrome Trace Event JSON for Perfetto UI / chrome://tracing\n"
    "  --format perfetto  Perfetto's native trace (protobuf, compressed) for\n"
    "                  ui.perfetto.dev: a fraction of the size, for whole jobs\n"
    "  --perfetto-compression deflate|zstd|none  how --format perfetto compresses\n"
    "                  (default deflate; zstd is smaller, and needs\n"
    "                  Perfetto v58 or later: older ones show an empty trace)\n"
    "  --summary       the analysis: first the verdict (is the job held back by\n"
    "                  data, by how much, what to try), then compact tables\n"
    "                  (with --format json: every figure, as one JSON object,\n"
    "                  its lists cut at --top, \"left_out\" counting the rest)\n"
    "  --details       with --summary: the verdict, then the full listing per run,\n"
    "                  rank, process and file: every row (in the text, --top N\n"
    "                  cuts each list at N; --format json and html list all)\n"
    "  --top N         with --summary: rows of each list (files, slowest calls,\n"
    "                  stall shares, call sites); a cut list ends with the count\n"
    "                  left out (default: 20 files of each class, 10 of the others)\n"
    "  --format html   the analysis as one self-contained HTML report (plots and\n"
    "                  tables of the --summary figures; loads nothing when opened),\n"
    "                  e.g. --format html -o report.html DIR\n"
    "  --from S, --to S  keep events starting in this window, seconds from the\n"
    "                  first event (decimals allowed)\n"
    "  --host H, --pid P, --rank R\n"
    "                  keep events of this host / process / rank (repeatable)\n"
    "  --path GLOB     keep I/O on files matching GLOB (fnmatch; '*' matches '/'\n"
    "                  too; a directory keeps everything below it); repeatable\n"
    "  --exclude-path GLOB\n"
    "                  leave out I/O on files matching GLOB; repeatable. Events\n"
    "                  that name no file (GPU work, regions) stay\n"
    "  --regions WHICH a call's region is the innermost or the outermost region\n"
    "                  holding it (default: outermost)\n"
    "  --batch-region NAME  with --summary: the region (annotation or NVTX range)\n"
    "                  whose instances are a rank's batch waits (default: load_batch)\n"
    "  --run ID        the run (job) to read when the input holds several, or\n"
    "                  its batch job id alone (101 for slurm-101); by default the\n"
    "                  latest job (of the runs overlapping the one started last,\n"
    "                  the most events), the others named on stderr\n"
    "  --compare BEFORE AFTER  two runs side by side: the verdict's figures\n"
    "                  (time per step, batch wait and its causes, data stall, GPU\n"
    "                  busy), per rank and host, the data set's I/O, and the\n"
    "                  findings that appeared or went away, with after - before;\n"
    "                  BEFORE and AFTER are two trace directories, or, with\n"
    "                  TRACE_OR_DIR given, two run ids of it (as --run takes them)\n"
    "  -o, --output OUT  write to OUT instead of standard output\n"
    "  -q, --quiet     no progress line (shown on a terminal when the work takes\n"
    "                  more than a second: traces and bytes done, rate, time left)\n"
    "  --threads N     threads that decode ahead of the merge (default: one fewer\n"
    "                  than the processors; 0: decode on the main thread)\n"
    "  -h, --help      show this help\n"
    "  --version       show the version\n"
    "\n"
    "An option's value follows it (--top 5) or an '=' (--top=5); a value that\n"
    "begins with '-' and a letter or '-' only the latter (--path=-x, -o-x).\n"
    "\n"
    "Exit status: 0 if all input decoded cleanly, 1 if some input was missing or\n"
    "damaged (what could be decoded is still printed), 2 for a usage error.\n";

// "1.5" seconds -> 1500000000 ns, without going through a double.
bool ParseSeconds(const std::string& s, uint64_t* ns) {
  size_t dot = s.find('.');
  std::string whole = s.substr(0, dot);
  std::string frac = dot == std::string::npos ? "" : s.substr(dot + 1);
  if (whole.empty() && frac.empty()) return false;
  if (whole.find_first_not_of("0123456789") != std::string::npos ||
      frac.find_first_not_of("0123456789") != std::string::npos || whole.size() > 9) {
    return false;
  }
  frac.resize(9, '0');
  *ns = (whole.empty() ? 0 : std::stoull(whole)) * 1000000000ull + std::stoull(frac.substr(0, 9));
  return true;
}

bool ParseId(const std::string& s, int32_t* v) {
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  *v = std::stoi(s);
  return true;
}

// Why Args::Value last refused the next argument as a value ("" when it
// did not): the usage error then says why the option had no value.
std::string refused_value;

int UsageError(const std::string& why) {
  std::string said = why;
  if (!refused_value.empty()) {
    said += " (" + refused_value + ")";
    refused_value.clear();
  }
  fprintf(stderr, "dlprof-dump: %s\nTry 'dlprof-dump --help'.\n", said.c_str());
  return 2;
}

// What ParseOption and ParseSelection return for an option that is not
// theirs, and for one they took.
constexpr int kNotMine = -2;
constexpr int kTaken = -1;

// The arguments, read one at a time; an option with a value takes it as
// "--opt=V" or "--opt V", where V is no option (tools/common/option_value.h:
// "--batch-region --summary" is a forgotten value, not a region named
// "--summary").
struct Args {
  int argc;
  char** argv;
  int i = 1;

  // Whether `a` is option `name`, with or without "=V".
  static bool Is(const std::string& a, const std::string& name) {
    return a == name || a.compare(0, name.size() + 1, name + "=") == 0;
  }
  // The value of option `name` given as `a`; false when it has none.
  bool Value(const std::string& a, const std::string& name, std::string* v) {
    if (a.compare(0, name.size() + 1, name + "=") == 0) {
      *v = a.substr(name.size() + 1);
      return true;
    }
    if (a == name) {
      if (i + 1 >= argc) return false;
      if (IsOption(argv[i + 1])) {
        refused_value = tools::RefusedValueNote(name, argv[i + 1]);
        return false;
      }
      *v = argv[++i];
      return true;
    }
    return false;
  }
  static bool IsOption(const char* next) { return tools::LooksLikeOption(next); }
};

// The options that choose events (EventSelection): --host, --path,
// --exclude-path, --from, --to, --pid, --rank.
int ParseSelection(const std::string& a, Args* args, EventSelection* s) {
  if (Args::Is(a, "--host")) {
    std::string v;
    if (!args->Value(a, "--host", &v) || v.empty()) {
      return UsageError("option --host needs a host name");
    }
    s->hosts.push_back(v);
  } else if (Args::Is(a, "--path") || Args::Is(a, "--exclude-path")) {
    const bool exclude = a.compare(0, 9, "--exclude") == 0;
    const char* name = exclude ? "--exclude-path" : "--path";
    std::string v;
    if (!args->Value(a, name, &v) || v.empty()) {
      return UsageError(std::string("option ") + name + " needs a glob, e.g. '/data/*.npz'");
    }
    (exclude ? s->exclude_paths : s->paths).push_back(v);
  } else if (Args::Is(a, "--from") || Args::Is(a, "--to")) {
    const bool from = a.compare(0, 6, "--from") == 0;
    std::string v;
    if (!args->Value(a, from ? "--from" : "--to", &v) ||
        !ParseSeconds(v, from ? &s->from_ns : &s->to_ns)) {
      return UsageError(std::string("option ") + (from ? "--from" : "--to") +
                        " needs seconds, e.g. 1.5");
    }
    (from ? s->has_from : s->has_to) = true;
  } else if (Args::Is(a, "--pid") || Args::Is(a, "--rank")) {
    const bool pid = a.compare(0, 5, "--pid") == 0;
    std::string v;
    int32_t id = 0;
    if (!args->Value(a, pid ? "--pid" : "--rank", &v) || !ParseId(v, &id)) {
      return UsageError(std::string("option ") + (pid ? "--pid" : "--rank") + " needs a number");
    }
    (pid ? s->pids : s->ranks).push_back(id);
  } else {
    return kNotMine;
  }
  return kTaken;
}

// The options that choose what is written and how: all but the selection's.
int ParseOption(const std::string& a, Args* args, Options* o) {
  std::string v;
  int32_t n = 0;
  if (Args::Is(a, "--format")) {
    if (!args->Value(a, "--format", &o->format)) return UsageError("option --format needs a value");
  } else if (Args::Is(a, "--output")) {
    if (!args->Value(a, "--output", &o->output)) return UsageError("option --output needs a value");
  } else if (Args::Is(a, "--run")) {
    if (!args->Value(a, "--run", &o->run) || o->run.empty()) {
      return UsageError("option --run needs a run id");
    }
  } else if (a == "--compare") {  // two values: BEFORE AFTER
    if (args->i + 2 >= args->argc) return UsageError("option --compare needs BEFORE and AFTER");
    // An option there is misplaced, not a run: "--compare --format json A B"
    // compared a run "--format" with one "json".
    for (int k = 1; k <= 2; ++k) {
      const std::string next = args->argv[args->i + k];
      if (tools::LooksLikeOption(next)) {
        return UsageError("option --compare needs BEFORE and AFTER right after it, but '" +
                          next + "' is an option: give it before --compare or after the two "
                          "runs (--format json --compare BEFORE AFTER)");
      }
    }
    o->compare = true;
    o->before = args->argv[++args->i];
    o->after = args->argv[++args->i];
  } else if (a == "--details") {
    o->details = true;
  } else if (a == "--summary") {
    o->summary = true;
  } else if (a == "--quiet" || a == "-q") {
    o->quiet = true;
  } else if (Args::Is(a, "--top")) {
    if (!args->Value(a, "--top", &v) || !ParseId(v, &n) || n < 1) {
      return UsageError("option --top needs a number of rows, 1 or more");
    }
    o->top = static_cast<size_t>(n);
  } else if (Args::Is(a, "--regions")) {
    if (!args->Value(a, "--regions", &v) || (v != "innermost" && v != "outermost")) {
      return UsageError("option --regions needs innermost or outermost");
    }
    o->region_pick = v == "innermost" ? RegionPick::kInnermost : RegionPick::kOutermost;
  } else if (Args::Is(a, "--batch-region")) {
    if (!args->Value(a, "--batch-region", &o->batch_region) || o->batch_region.empty()) {
      return UsageError("option --batch-region needs a region name, e.g. load_batch");
    }
  } else if (Args::Is(a, "--threads")) {
    if (!args->Value(a, "--threads", &v) || !ParseId(v, &n) || n > 256) {
      return UsageError("option --threads needs a number from 0 to 256");
    }
    o->threads = static_cast<unsigned>(n);
  } else if (Args::Is(a, "--perfetto-compression")) {
    if (!args->Value(a, "--perfetto-compression", &v) ||
        !ParsePerfettoCompression(v, &o->compression)) {
      return UsageError("option --perfetto-compression needs deflate, zstd or none");
    }
    o->compression_given = true;
  } else if (a.compare(0, 2, "-o") == 0) {
    if (a.size() > 2) {
      o->output = a.substr(2);
    } else if (args->i + 1 < args->argc && Args::IsOption(args->argv[args->i + 1])) {
      refused_value = tools::RefusedValueNote("-o", args->argv[args->i + 1]);
      return UsageError("option -o needs a value");
    } else if (args->i + 1 < args->argc) {
      o->output = args->argv[++args->i];
    } else {
      return UsageError("option -o needs a value");
    }
  } else {
    return kNotMine;
  }
  return kTaken;
}

// Whether the formats asked for go together; the exit status when not.
int CheckFormat(Options* o) {
  if (o->compare) {
    if (o->format != "text" && o->format != "json" && o->format != "html") {
      return UsageError("--compare prints text, json or html, not '" + o->format + "'");
    }
    if (!o->run.empty()) return UsageError("--compare names its two runs itself: no --run");
    return -1;
  }
  if (o->format == "html") o->summary = true;  // the report renders the summary
  if (o->summary && o->format != "text" && o->format != "json" && o->format != "html") {
    return UsageError("--summary prints text or json, not '" + o->format + "'");
  }
  if (!o->summary && o->format != "text" && o->format != "jsonl" && o->format != "chrome" &&
      o->format != "perfetto") {
    return UsageError("unknown format '" + o->format +
                      "' (known: text, jsonl, chrome, perfetto, html; json with --summary)");
  }
  if (o->inputs.empty()) return UsageError("no trace file or directory given");
  // Options of the summary alone do nothing without it: said, not an error.
  const bool summary_options =
      o->details || o->top > 0 || o->batch_region != kDefaultBatchRegion;
  if (!o->summary && summary_options) {
    fprintf(stderr, "dlprof-dump: note: --details, --top and --batch-region go with --summary: "
                    "without it they change nothing\n");
  }
  if (o->compression_given && o->format != "perfetto") {
    fprintf(stderr, "dlprof-dump: note: --perfetto-compression goes with --format perfetto: "
                    "without it it changes nothing\n");
  }
  return -1;
}

}  // namespace

// Returns -1 when the program should go on, else the exit status.
int ParseArgs(int argc, char** argv, Options* o) {
  bool options_done = false;
  for (Args args{argc, argv}; args.i < argc; ++args.i) {
    std::string a = argv[args.i];
    if (options_done || a.empty() || a[0] != '-' || a == "-") {
      o->inputs.push_back(a);
      continue;
    }
    if (a == "--") {
      options_done = true;
    } else if (a == "-h" || a == "--help") {
      fputs(kUsage, stdout);
      return 0;
    } else if (a == "--version") {
      printf("dlprof-dump %s (trace format %u)\n", DLPROF_VERSION, kFormatVersion);
      return 0;
    } else {
      int status = ParseSelection(a, &args, &o->selection);
      if (status == kNotMine) status = ParseOption(a, &args, o);
      if (status == kNotMine) return UsageError("unknown option '" + a + "'");
      if (status != kTaken) return status;
    }
  }
  return CheckFormat(o);
}

}  // namespace dlprof::dump
