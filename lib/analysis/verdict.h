// The verdict: the answer to "is my training held back by data, by how much,
// and what should I change?", from a finished Summary.
//
// It is the first thing --summary prints (tools/dump/verdict_text.cc) and a
// part of --format json ("verdict"): the share of the run the training loop
// spent waiting for batches and the share of GPU time lost to data stall,
// where the I/O time went by role (main processes, loader workers, the
// launcher, other processes), and the findings that matter most. Each
// finding is a rule with a documented threshold (docs/ANALYSIS.md,
// "Verdict"), a number, and what to try; they are ordered by the time they
// stand for. Nothing here is measured anew: every number comes from the
// summary's own figures.
#ifndef DLPROF_LIB_ANALYSIS_VERDICT_H_
#define DLPROF_LIB_ANALYSIS_VERDICT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "lib/analysis/analysis.h"
#include "lib/read/escape.h"  // DurationText, ByteText, PerMilleText

namespace dlprof::dump {

struct Finding {
  std::string rule;    // the rule's name: "batch_wait", "small_reads", ...
  std::string what;    // what was found, with its number
  std::string advice;  // what to try
  uint64_t cost_ns = 0;  // the time it stands for (the order of the findings)
};

// Processes of one role and their I/O.
struct RoleShare {
  std::string role;  // "main", "loader workers", "launcher", "other"
  uint64_t processes = 0;
  uint64_t io_ns = 0;       // time in I/O calls, summed
  uint64_t read_bytes = 0;
};

struct Verdict {
  uint64_t run_ns = 0;
  // Batch wait: the training loop waiting for a batch (annotations: the
  // batch region), summed over the ranks (or the main processes), against
  // the loop's time: the run's length times the waiting processes.
  bool has_batch_wait = false;
  uint64_t batch_wait_ns = 0, loop_ns = 0, steps = 0;
  // Data stall against the GPU's active window, summed over ranks.
  bool has_gpu = false;
  uint64_t data_stall_ns = 0, gpu_window_ns = 0;
  std::vector<RoleShare> roles;    // the four roles, in that order
  std::vector<Finding> findings;   // most costly first, at most kMaxFindings
};

constexpr size_t kMaxFindings = 5;

// The role of a process row of the summary (its key and who it is).
std::string ProcessRole(const Summary& s, const std::string& key);

Verdict ComputeVerdict(const Summary& s);

// The "verdict" object of the summary's JSON (verdict_json.cc).
std::string VerdictJson(const Verdict& v);

// Shares as whole per mille, so that renderers print the same numbers.
inline uint64_t PerMille(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0 : static_cast<uint64_t>(static_cast<unsigned __int128>(part) * 1000 / whole);
}

}  // namespace dlprof::dump

#endif  // DLPROF_LIB_ANALYSIS_VERDICT_H_
