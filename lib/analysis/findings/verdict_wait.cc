// The verdict's parts about where the batch wait went (verdict.h;
// docs/ANALYSIS.md, "Where the wait goes"): the causes' names, the
// batch_wait finding that names the cause and advises for it, and which
// findings explain a cause.
#include <algorithm>
#include <cinttypes>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "lib/analysis/findings/verdict.h"
#include "lib/text/text.h"

namespace dlprof::analysis {
using namespace dlprof::text;
namespace {

// The workers' start-up, and batches held up behind a slow one, as findings
// of their own: a tenth of the batch wait.
constexpr uint64_t kWorkerStartupPerMille = 100;
constexpr uint64_t kHeadOfLinePerMille = 100;
// A part of the late batches' fetches, or a late batch's slowest sample,
// the head_of_line finding names: a tenth of the head-of-line time.
constexpr uint64_t kHeldByPerMille = 100;
// The late batches' samples a finding names.
constexpr size_t kNamedSamples = 3;

// "sample 1234 of loader 1 (150.0 ms, /data/slow.bin; slow in every pass)"
// (the loader where known: the wait by loader's number).
std::string SampleText(const SlowSample& s) {
  std::string text = s.index >= 0 ? "sample " + std::to_string(s.index) : std::string("a sample");
  if (s.loader >= 0) text += " of loader " + std::to_string(s.loader);
  text += " (" + DurationText(s.ns);
  for (const std::string& f : s.files) text += ", " + f;
  if (s.slow_passes > 1) {
    text += "; among the slowest in " + std::to_string(s.slow_passes) + " passes";
  }
  return text + ")";
}

// "persistent_workers=True for loader 1 at train.py:52 (it would save about
// X: ...)", where it would save anything: the loaders it would save of
// named as the wait by loader names them (a training loader with
// persistent workers was told to have them, the saving its validation
// loader's), where the marks tell them. A loader made anew each pass starts
// its workers again whatever their kind: "one DataLoader kept across the
// passes (it is made anew each pass), with persistent_workers=True" for
// it, and persistent_workers=True alone for the others ("...=True for
// loader 0 at train.py:40; one DataLoader kept ... for loader 1 at ...").
std::string PersistentWorkersText(const Verdict& v) {
  if (v.persistent_workers_save_ns() == 0) return "";
  const char* what = v.startup_after_first_pass_ns == 0 ? "the shut-downs at the passes' ends"
                     : v.pass_end_shutdown_ns == 0
                         ? "the start-ups after the first pass"
                         : "the start-ups after the first pass and the shut-downs at the "
                           "passes' ends";
  std::string kept, anew;  // the loaders named, by what they need
  size_t named = 0, saving = 0;
  bool any_anew = false;
  for (const LoaderWait& w : v.loader_waits) {
    if (w.persistent_save_ns == 0) continue;
    ++saving;
    any_anew = any_anew || w.made_anew_ns > 0;
    if (w.loader < 0) continue;
    ++named;
    std::string& list = w.made_anew_ns > 0 ? anew : kept;
    list += (list.empty() ? " for " : " and ") + LoaderText(w);
  }
  constexpr const char* kPlain = "persistent_workers=True";
  constexpr const char* kKeepOne =
      "one DataLoader kept across the passes (it is made anew each pass), with "
      "persistent_workers=True";
  // Named where the wait by loader names loaders (two or more), each one
  // it would save of, or none (an unmarked one among them).
  std::string advice;
  if (v.loader_waits.size() < 2 || named != saving || saving == 0) {
    advice = any_anew ? kKeepOne : kPlain;
  } else if (anew.empty()) {
    advice = kPlain + kept;
  } else if (kept.empty()) {
    advice = kKeepOne + anew;
  } else {
    advice = kPlain + kept + "; " + kKeepOne + anew;
  }
  // (Passes left early: their workers still finish the batches they had
  // begun, at the next pass's start.)
  const std::string less =
      v.pass_end_leftover_ns == 0 || v.pass_end_shutdown_ns == 0
          ? ""
          : ", less the " + DurationText(v.pass_end_leftover_ns) +
                " the workers would still spend finishing the batches of passes left early";
  return advice + " (it would save about " + DurationText(v.persistent_workers_save_ns()) +
         ": " + what + less + ")";
}

// "persistent_workers=True saves nothing for loader 1 at train.py:52: the
// DataLoader is made anew each pass (X of its workers started and shut down
// again): keep one DataLoader", where loaders made at one site each ran a
// pass of persistent workers (RankFigures::rebuilt_persistent_ns); the
// loaders named as PersistentWorkersText names them, else those it cost.
std::string RebuiltLoaderText(const Verdict& v) {
  if (v.rebuilt_persistent_ns == 0) return "";
  std::string loaders;
  for (const LoaderWait& w : v.loader_waits) {
    if (w.rebuilt_ns == 0 || w.loader < 0) continue;
    loaders += (loaders.empty() ? " for " : " and ") + LoaderText(w);
  }
  return "persistent_workers=True saves nothing" + loaders +
         ": the DataLoader is made anew each pass (" + DurationText(v.rebuilt_persistent_ns) +
         " of its workers started and shut down again); keep one DataLoader and iterate it "
         "each epoch";
}

// What held the batches' hand-over up, and the advice for it.
std::string HandoverCauseAdvice(HandoverCause cause) {
  switch (cause) {
    case HandoverCause::kWorkerBusy:
      return "each waited in its worker while the worker's main thread made the next one, "
             "holding the interpreter lock its queue's sending thread needs: less Python "
             "per sample (vectorised or native transforms), a shorter switch interval "
             "in the workers (sys.setswitchinterval(0.0005) in worker_init_fn), or more "
             "workers where CPUs are free";
    case HandoverCause::kCpusOversubscribed:
      return "more processes wanted the rank's CPUs than it has (its workers and the "
             "loop take turns): fewer workers, or more CPUs per rank";
    case HandoverCause::kBatchSize:
      return "the batches are large: smaller batches or more compact tensors (uint8 "
             "rather than float32), and room in the shared memory (/dev/shm) they cross";
    case HandoverCause::kPinMemory:
      return "the pin-memory thread copies every batch on its way: pin_memory=False "
             "where the copy to the GPU is not what waits";
    case HandoverCause::kNone: break;
  }
  return "smaller batches or more compact tensors, pin_memory (its thread copies "
         "every batch), and room in the shared memory (/dev/shm) that batches cross";
}

}  // namespace

std::string LoaderText(const LoaderWait& w) {
  std::string name = w.loader < 0 ? "unnamed" : Fmt("loader %" PRId64, w.loader);
  if (w.loader >= 0 && !w.site.empty()) name += " at " + w.site;
  return name;
}

std::string HandoverAdvice(const Verdict& v) {
  const uint64_t worker = v.handover_in_worker_ns, transit = v.handover_in_transit_ns,
                 rebuild = v.handover_rebuild_ns;
  // (Unmeasured where the parts are all 0: the whole run's counters.)
  const std::string parts =
      worker + transit + rebuild == 0
          ? "the batches were made but slow to arrive: "
          : Fmt("the batches were made but slow to arrive (in the worker %s, in transit %s, "
                "rebuilt in the main process %s): ",
                DurationText(worker).c_str(), DurationText(transit).c_str(),
                DurationText(rebuild).c_str());
  const uint64_t shutdown = std::min(v.pass_end_shutdown_ns, v.handover_ns);
  if (shutdown == 0) return parts + HandoverCauseAdvice(v.handover_cause);
  // Non-persistent workers shut down at each pass's end while the loop
  // waited (no batch's hand-over): where that is most of it, or more than
  // the batches' measured cause explains, it leads. Where it is most of it,
  // the batches' advice follows only for a cause measured (tiny batches were
  // told to shrink); where it is not, the rest is most of the hand-over, and
  // their advice follows, a cause measured or not (large tensors with no
  // cause measured: integration.wait_split).
  const uint64_t cause_ns =
      v.handover_cause == HandoverCause::kNone
          ? 0
          : v.handover_cause_ns[static_cast<size_t>(v.handover_cause)];
  const std::string ends =
      Fmt("%s of it the loop waiting at the passes' ends while torch shut the workers down: ",
          DurationText(shutdown).c_str()) +
      PersistentWorkersText(v);
  if (2 * shutdown >= v.handover_ns) {
    return parts + ends +
           (v.handover_cause == HandoverCause::kNone
                ? ""
                : "; of the rest, " + HandoverCauseAdvice(v.handover_cause));
  }
  if (shutdown >= cause_ns) {
    return parts + ends + "; of the rest, " + HandoverCauseAdvice(v.handover_cause);
  }
  return parts + HandoverCauseAdvice(v.handover_cause) + "; and " + ends;
}

std::string PartsText(const Verdict& v) {
  uint64_t total = 0;
  for (const auto& [name, ns] : v.preprocessing_parts) total += ns;
  std::string text;
  for (const auto& [name, ns] : v.preprocessing_parts) {
    if (text.size() > 0 && PerMille(ns, total) < 50) break;  // the parts worth 5 % or more
    text += Fmt("%s%s %s", text.empty() ? "" : ", ", name.c_str(),
                PerMilleText(PerMille(ns, total)).c_str());
  }
  return " (of the workers' preprocessing of the batches waited for: " + text + ")";
}

const char* WaitCauseName(WaitCause c) {
  switch (c) {
    case WaitCause::kReading: return "reading";
    case WaitCause::kPreprocessing: return "preprocessing";
    case WaitCause::kHandover: return "handover";
    case WaitCause::kWorkerStartup: break;
  }
  return "worker_startup";
}

const char* WaitCauseText(WaitCause c) {
  switch (c) {
    case WaitCause::kHandover: return "hand-over";
    case WaitCause::kWorkerStartup: return "worker start-up";
    default: return WaitCauseName(c);
  }
}

WaitCause LargestCause(uint64_t reading_ns, uint64_t preprocessing_ns, uint64_t handover_ns,
                       uint64_t worker_startup_ns) {
  WaitCause largest = WaitCause::kReading;
  uint64_t most = reading_ns;
  const std::pair<WaitCause, uint64_t> rest[] = {{WaitCause::kPreprocessing, preprocessing_ns},
                                                 {WaitCause::kHandover, handover_ns},
                                                 {WaitCause::kWorkerStartup, worker_startup_ns}};
  for (const auto& [cause, ns] : rest) {
    if (ns > most) std::tie(largest, most) = std::make_pair(cause, ns);
  }
  return largest;
}

std::string PassStartupText(const Verdict& v) {
  std::string text;
  for (size_t pass = 0; pass < v.pass_worker_startup_ns.size(); ++pass) {
    const uint64_t ns = v.pass_worker_startup_ns[pass];
    if (ns == 0) continue;
    text += Fmt("%s%s %s", text.empty() ? "" : ", ",
                pass == 0 ? "before any pass" : ("pass " + std::to_string(pass)).c_str(),
                DurationText(ns).c_str());
  }
  return text;
}

std::string WorkerStartupAdvice(const Verdict& v) {
  std::string advice = "the loader's workers were starting (fork or spawn, imports, "
                       "worker_init_fn, the dataset's set-up in each worker): ";
  if (v.rebuilt_persistent_ns > 0) advice += RebuiltLoaderText(v) + "; else ";
  if (v.persistent_workers_save_ns() > 0) advice += PersistentWorkersText(v) + ", ";
  // The whole run's counters: passes, but no start-up by pass.
  if (v.workers_restarted) advice += "persistent_workers=True (the workers started again each pass), ";
  // Fork only to workers that did not fork (it was said to forked ones).
  if (v.worker_start == Verdict::WorkerStart::kForked) {
    return advice + "lighter imports in the workers";
  }
  return advice + "lighter imports in the workers, and fork rather than spawn where it is safe "
                  "(multiprocessing_context)";
}

void WorkerStartupFinding(const Verdict& v, std::vector<Finding>* out) {
  if (!v.has_batch_wait || !v.split || v.worker_startup_ns == 0 ||
      PerMille(v.worker_startup_ns, v.batch_wait_ns) < kWorkerStartupPerMille) {
    return;
  }
  const std::string passes = PassStartupText(v);  // (none in the whole run's counters)
  out->push_back({"worker_startup",
                  Fmt("The loop waited %s for its loader workers to start%s: %s of the "
                      "batch wait.",
                      DurationText(v.worker_startup_ns).c_str(),
                      passes.empty() ? "" : (" (" + passes + ")").c_str(),
                      PerMilleText(PerMille(v.worker_startup_ns, v.batch_wait_ns)).c_str()),
                  WorkerStartupAdvice(v), v.worker_startup_ns});
}

void HeadOfLineFinding(const Verdict& v, std::vector<Finding>* out) {
  if (!v.has_batch_wait || !v.split || v.head_of_line_ns == 0 ||
      PerMille(v.head_of_line_ns, v.batch_wait_ns) < kHeadOfLinePerMille) {
    return;
  }
  Finding f{"head_of_line",
            Fmt("For %s of the batch wait (%s) the loop waited for a batch while a later one "
                "was ready: the loader hands batches over in order, and a slow one holds up "
                "those behind it",
                PerMilleText(PerMille(v.head_of_line_ns, v.batch_wait_ns)).c_str(),
                DurationText(v.head_of_line_ns).c_str()),
            "", v.head_of_line_ns};
  std::string named;
  // Late batches held up by a part of their fetch (collate, a transform,
  // their reading) rather than by one sample: the part, with its time over
  // them.
  std::vector<std::pair<std::string, uint64_t>> parts;
  for (const LateBatch& b : v.late_batches) {
    if (b.held_by.empty()) continue;
    auto it = std::find_if(parts.begin(), parts.end(),
                           [&](const auto& p) { return p.first == b.held_by; });
    if (it == parts.end()) it = parts.insert(parts.end(), {b.held_by, 0});
    it->second += b.held_by_ns;
  }
  std::stable_sort(parts.begin(), parts.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  // A part named explains a tenth of the head-of-line time or more: a few
  // short late batches held up in it say nothing of the rest (5.9 ms of
  // reading was named beside 781 ms of head-of-line time).
  parts.erase(std::remove_if(parts.begin(), parts.end(),
                             [&](const auto& p) {
                               return PerMille(p.second, v.head_of_line_ns) < kHeldByPerMille;
                             }),
              parts.end());
  std::string held;
  for (const auto& [name, ns] : parts) {
    f.parts.push_back(name);
    held += (held.empty() ? "" : ", ") + name + " (" + DurationText(ns) + " of their fetches)";
  }
  for (const LateBatch& b : v.late_batches) {
    if (f.samples.size() == kNamedSamples) break;
    const bool held_by_part =
        std::find(f.parts.begin(), f.parts.end(), b.held_by) != f.parts.end();
    // A sample named explains a tenth of the head-of-line time or more, as a
    // part must: a 1.1 ms sample of a batch 0.4 ms late was named beside
    // 186 ms of head-of-line time.
    if (held_by_part || b.slowest.ns == 0 ||
        PerMille(b.slowest.ns, v.head_of_line_ns) < kHeldByPerMille ||
        std::find(f.samples.begin(), f.samples.end(), b.slowest.index) != f.samples.end()) {
      continue;
    }
    f.samples.push_back(b.slowest.index);
    for (const std::string& file : b.slowest.files) {
      if (std::find(f.files.begin(), f.files.end(), file) == f.files.end()) f.files.push_back(file);
    }
    named += (named.empty() ? "" : ", ") + SampleText(b.slowest);
  }
  if (!named.empty()) f.what += "; the late batches' slowest samples: " + named;
  if (!held.empty()) f.what += "; late batches held up in " + held + ", not by one sample";
  f.what += ".";
  // Had each ready batch been handed over first: the waits replayed in the
  // order the batches were made (out_of_order.h).
  f.has_in_order_estimate = true;
  f.in_order_wait_ns = v.out_of_order_wait_ns;
  std::string cache = named.empty() ? "" : std::string("split the slow samples, or cache them") +
                                                (f.files.empty() ? "" : " (the files above)");
  if (!held.empty()) {
    // Their reads spread over the samples: the storage, not the code.
    const std::string cheaper =
        f.parts.front() == "reading"
            ? "faster reads for them: faster storage, or the data set cached"
            : "make " + f.parts.front() + " cheaper";
    cache += (cache.empty() ? "" : "; ") + cheaper + " (the late batches' time went there)";
  }
  if (cache.empty()) cache = "split the slow samples, or cache them";
  if (f.in_order_wait_ns + v.batch_wait_ns / 10 <= v.batch_wait_ns) {
    f.advice = "in_order=False (DataLoader, torch 2.6 and later) would bring the wait to about " +
               DurationText(f.in_order_wait_ns) + "; " + cache;
  } else {
    // The batches behind the slow ones were made, but the slow ones hold
    // the loop anyway (one worker makes them all, say): reordering would
    // not shorten the wait.
    f.advice = cache + "; in_order=False would hardly help (the wait would stay about " +
               DurationText(f.in_order_wait_ns) + "): the slow batches themselves hold the loop";
  }
  out->push_back(std::move(f));
}

// A loop without a DataLoader waiting for its own work on the batch: what
// it did, and what to try.
static void StepsPreprocessing(const Verdict& v, Finding* f) {
  const uint64_t mapping = PartNs(v, RankFigures::kMappingPart);
  const uint64_t copies = PartNs(v, RankFigures::kMapCopiesPart);
  f->what.pop_back();
  if (copies > 0 && copies >= mapping && copies * 2 >= v.preprocessing_ns) {
    // A map made for each batch and cut a sample at a time (nanoGPT's
    // get_batch: a slice, a conversion and a stack per sample) with its
    // pages in memory: the training thread's copying, no storage.
    f->what += Fmt(": the loop's work on the maps it made for its batches (slicing, copying out "
                   "of them) %s, making and tearing them down %s; reading in data calls %s.",
                   DurationText(copies).c_str(), DurationText(mapping).c_str(),
                   DurationText(v.reading_ns).c_str());
    f->advice = "the loop cuts each batch out of a memory map on the training thread, a sample "
                "at a time: one gather for the whole batch (data[ix[:, None] + np.arange(n)]) "
                "in place of a slice and a conversion per sample, or the next batch made "
                "alongside the step (a DataLoader with workers, or a thread)";
  } else if (mapping > 0 && mapping >= v.reading_ns) {
    // Its calls making and tearing down maps of the data files longer
    // than its reading calls (the Python between them is np.memmap's
    // own): a get_batch making a new np.memmap each step (nanoGPT), the
    // last step's map torn down (munmap, 0.75 ms each) -- no storage, the
    // file in the page cache.
    f->what += Fmt(": the loop's calls making and tearing down maps of its data files "
                   "(mmap, munmap) %s; reading in data calls %s.",
                   DurationText(mapping).c_str(), DurationText(v.reading_ns).c_str());
    f->advice = "the loop maps its data file again for every batch (and unmaps the last "
                "batch's map): keep one map open (np.memmap once, outside the loop)";
  } else {
    // The time between the loop's reads was its own code (a decoder, a
    // parser), not the storage: the reads took the rest.
    f->what += Fmt(": the loop's own work between its reads (decoding, parsing); reading in "
                   "data calls %s.", DurationText(v.reading_ns).c_str());
    f->advice = "the loop decodes or parses its data on the training thread between reads: "
                "a DataLoader with workers (num_workers > 0) to do it alongside the steps, "
                "cheaper decoding, or data kept decoded";
  }
}

Finding BatchWaitFinding(const Verdict& v, uint64_t share) {
  Finding f{"batch_wait",
            Fmt("The training loop waited for data %s of the loop (%s over %" PRIu64 " %s).",
                PerMilleText(share).c_str(), DurationText(v.batch_wait_ns).c_str(), v.steps,
                v.loop_basis == LoopBasis::kSteps ? "steps" : "batches"),
            "more DataLoader workers, a larger prefetch_factor, or faster storage for the data set",
            v.batch_wait_ns};
  if (v.lockstep.found) {
    // The sum reads one rank's wait at 1/N: every rank lost it.
    f.what.pop_back();
    f.what.pop_back();
    f.what += Fmt(", summed over the ranks; they step together, so each step waited for its "
                  "slowest rank: %s).", DurationText(v.lockstep.wait_ns).c_str());
    f.cost_ns = std::max(f.cost_ns, v.lockstep.wait_ns * v.lockstep.ranks);
  }
  if (!v.split) return f;
  f.what.pop_back();
  f.what += Fmt("; of that wait, %s %s (%s).", WaitCauseText(v.cause),
                PerMilleText(PerMille(v.cause_ns(), v.batch_wait_ns)).c_str(),
                DurationText(v.cause_ns()).c_str());
  switch (v.cause) {
    case WaitCause::kReading:
      f.advice = "the loader was reading data files: faster storage for the data set, or "
                 "fewer, larger reads (the findings on the data files below)";
      if (v.reading_faults_ns * 2 >= v.reading_ns) {
        // Through memory maps: no call to make larger, the kernel's reads to
        // steer (docs/ANALYSIS.md, "Where the wait goes").
        f.what.pop_back();
        f.what += Fmt(", %s of it page faults on mapped data files", 
                      DurationText(v.reading_faults_ns).c_str());
        if (v.handover_faults_ns > 0) {
          f.what += Fmt(" (%s of those while finished batches waited in their workers to be "
                        "sent: the workers' main threads, blocked on faults, held the "
                        "interpreter lock the sending thread needs)",
                        DurationText(v.handover_faults_ns).c_str());
        }
        f.what += ".";
        f.advice = "the loader read its data set through memory maps, a page fault at a time: "
                   "madvise(MADV_WILLNEED) on the samples' pages before they are needed (or "
                   "MADV_SEQUENTIAL where the order allows), a page cache that holds the data "
                   "set, or its shards read into memory ahead; faster storage";
      }
      break;
    case WaitCause::kPreprocessing:
      f.advice = "the loader was busy on the CPU (decoding, augmenting, collating): more "
                 "DataLoader workers where cores are free, cheaper transforms, or caching "
                 "decoded samples";
      if (v.loop_basis == LoopBasis::kSteps) {
        StepsPreprocessing(v, &f);
        break;
      }
      if (v.fetch_cpu_ns * 2 < v.fetch_work_ns && v.fetch_work_ns >= v.preprocessing_ns) {
        // The workers' own clock: most of their work was off the CPU --
        // where their work can be the wait's (not a num_workers=0
        // loader's own, in the main process, beside a small one's workers).
        f.advice = Fmt("the loader's workers waited more than they computed (%s on a CPU of "
                       "the %s their fetches spent outside I/O calls): the dataset's code "
                       "waits for something -- a sleep, a lock, a remote service or the "
                       "network: find what; more DataLoader workers overlap such waits "
                       "without needing more cores",
                       PerMilleText(PerMille(v.fetch_cpu_ns, v.fetch_work_ns)).c_str(),
                       DurationText(v.fetch_work_ns).c_str());
      }
      if (!v.preprocessing_parts.empty()) f.advice += PartsText(v);
      break;
    case WaitCause::kWorkerStartup:
      f.advice = WorkerStartupAdvice(v);
      break;
    case WaitCause::kHandover:
      f.advice = HandoverAdvice(v);
      break;
  }
  return f;
}

bool ExplainsCause(const std::string& rule, WaitCause c) {
  // Reading: the storage and the access pattern; reading and preprocessing:
  // the workers (more of them hide reads and share the CPU work).
  static const std::set<std::string> kReading = {"small_reads", "reread", "few_files",
                                                 "metadata", "data_stall", "few_workers",
                                                 "mapped_random", "head_of_line"};
  switch (c) {
    case WaitCause::kReading: return kReading.count(rule) != 0;
    case WaitCause::kPreprocessing: return rule == "few_workers" || rule == "head_of_line";
    case WaitCause::kWorkerStartup: return rule == "worker_startup";
    case WaitCause::kHandover: break;
  }
  return false;
}

}  // namespace dlprof::analysis
