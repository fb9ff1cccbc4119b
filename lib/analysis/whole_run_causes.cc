// The whole run's batch wait split by cause, from counters (whole_run_causes.h).
#include "lib/analysis/whole_run_causes.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "lib/analysis/summary/intervals.h"

namespace dlprof::analysis {
namespace {

// The fetch's data reads within [c, d), from its eighths.
uint64_t FetchReadsIn(const format::FetchSample& f, uint64_t c, uint64_t d) {
  const uint64_t len = f.end_ns - f.start_ns;
  uint64_t total = 0;
  for (int k = 0; k < format::kFetchParts; ++k) {
    const uint64_t lo = f.start_ns + len * k / format::kFetchParts;
    const uint64_t hi = f.start_ns + len * (k + 1) / format::kFetchParts;
    if (hi <= lo) continue;
    total += static_cast<uint64_t>(static_cast<unsigned __int128>(f.read_us[k]) * 1000 *
                                   Overlap(lo, hi, c, d) / (hi - lo));
  }
  return total;
}

struct SampleParts {
  uint64_t reading = 0, preprocessing = 0, handover = 0, startup = 0;
};

SampleParts SplitOne(const format::WaitSample& w, const format::FetchSample& f) {
  SampleParts p;
  const uint64_t a = w.start_ns, b = w.end_ns;
  const uint64_t made = std::min(b, f.end_ns);        // the batch made, or the wait over
  const uint64_t worked = made > a ? made - a : 0;    // [a, made): before it was made
  p.handover = (b - a) - worked;
  const uint64_t from = std::max(a, f.start_ns);
  p.reading = made > from ? std::min(FetchReadsIn(f, from, made), made - from) : 0;
  const uint64_t began = std::min(b, f.start_ns);
  p.startup = f.first && began > a ? began - a : 0;
  p.preprocessing = worked - p.reading - p.startup;
  return p;
}

// A wait's length (0 where its clock went back).
uint64_t WaitNs(const format::WaitSample& w) {
  return w.end_ns >= w.start_ns ? w.end_ns - w.start_ns : 0;
}

// A pass's first batches (kept whatever their hash: the workers start in
// them).
bool FirstOfPass(uint64_t id) { return format::BatchIndexOf(id) < format::kAlwaysSampled; }

// Whether a reader past its budget keeps a pass's first batches at
// `level`: where the hash of the pass (the flow id above the batch index:
// the loop's pid and its pass) has `level` low bits 0. A wait and its fetch
// share the id, so both are kept or neither.
bool PassSampled(uint64_t id, uint8_t level) {
  return (format::BatchHash(id >> format::kBatchIndexBits) & ((uint64_t{1} << level) - 1)) == 0;
}

// The first-of-pass samples `r` holds.
size_t FirstOfPassSamplesOf(const format::BatchRecord& r) {
  size_t n = 0;
  for (const format::WaitSample& w : r.waits) n += FirstOfPass(w.id);
  for (const format::WaitSample& w : r.longest) n += FirstOfPass(w.id);
  for (const format::FetchSample& f : r.fetches) n += FirstOfPass(f.id);
  return n;
}

}  // namespace

void ThinBatchSamples(uint8_t level, uint8_t pass_level, format::BatchRecord* r) {
  auto kept = [&](uint64_t id, uint8_t at) {
    return FirstOfPass(id) ? PassSampled(id, pass_level) : format::BatchSampled(id, at);
  };
  // (What is dropped is given back: a month's run drops most of its samples.)
  auto drop = [](auto* list, auto&& dropped) {
    const size_t before = list->size();
    list->erase(std::remove_if(list->begin(), list->end(), dropped), list->end());
    if (list->size() < before) list->shrink_to_fit();
  };
  r->level = std::max(r->level, level);
  r->pass_level = std::max(r->pass_level, pass_level);
  drop(&r->waits, [&](const format::WaitSample& w) {
    if (kept(w.id, r->level)) return false;
    if (FirstOfPass(w.id)) r->first_dropped_ns += WaitNs(w);
    return true;
  });
  // A fetch kept for its lateness, or hashed at a level below `level`, goes
  // where the hash does not sample it at `level` (a hashed one is joined
  // only where the record's level samples it).
  drop(&r->fetches, [&](const format::FetchSample& f) { return !kept(f.id, level); });
  r->longest_level = std::max(r->longest_level, level);
  drop(&r->longest, [&](const format::WaitSample& w) {
    if (kept(w.id, r->longest_level)) return false;
    r->longest_dropped_ns += WaitNs(w);
    return true;
  });
}

size_t BatchSamplesOf(const format::BatchRecord& r) {
  return r.waits.size() + r.longest.size() + r.fetches.size();
}

void DropUnsampled(std::vector<ProcessBatches>* processes, size_t from) {
  size_t kept_processes = from;
  for (size_t at = from; at < processes->size(); ++at) {
    ProcessBatches& p = (*processes)[at];
    size_t kept = 0;
    for (size_t i = 0; i < p.records.size(); ++i) {
      if (BatchSamplesOf(p.records[i]) == 0) continue;
      if (kept != i) {
        p.records[kept] = std::move(p.records[i]);
        if (i < p.points.size()) p.points[kept] = p.points[i];
      }
      ++kept;
    }
    if (kept < p.records.size()) {
      p.records.resize(kept);
      p.records.shrink_to_fit();
      p.points.resize(std::min(p.points.size(), kept));
      p.points.shrink_to_fit();
    }
    if (kept == 0) continue;
    if (at != kept_processes) (*processes)[kept_processes] = std::move(p);
    ++kept_processes;
  }
  processes->resize(kept_processes);
}

void BatchSampleBudget::Append(ProcessBatches p, std::vector<ProcessBatches>* processes) {
  for (format::BatchRecord& r : p.records) Hold(&r);
  processes->push_back(std::move(p));
  while (held_ > budget_) {
    // Each level halves the samples it thins: the passes' first batches
    // (kept whatever their hash) where they are most of what is held, the
    // hashed ones else.
    if (held_first_ * 2 > budget_ && pass_level_ < kMaxPassLevel) {
      ++pass_level_;
    } else if (level_ < format::kBatchIndexBits - 1) {
      ++level_;
    } else {
      break;
    }
    held_ = held_first_ = 0;
    for (ProcessBatches& q : *processes) {
      for (format::BatchRecord& r : q.records) Hold(&r);
    }
  }
}

void BatchSampleBudget::Hold(format::BatchRecord* r) {
  if (level_ > 0 || pass_level_ > 0) ThinBatchSamples(level_, pass_level_, r);
  held_ += BatchSamplesOf(*r);
  held_first_ += FirstOfPassSamplesOf(*r);
}

FetchIndex::FetchIndex(const std::vector<ProcessBatches>& processes) {
  size_t count = 0;
  for (const ProcessBatches& p : processes) {
    for (const format::BatchRecord& r : p.records) count += r.fetches.size();
  }
  fetches_.reserve(count);
  for (const ProcessBatches& p : processes) {
    const uint32_t machine =
        machines_.emplace(p.machine, static_cast<uint32_t>(machines_.size())).first->second;
    for (const format::BatchRecord& r : p.records) {
      for (const format::FetchSample& f : r.fetches) {
        fetches_.push_back(Entry{f.id, &f, machine, r.level});
      }
    }
  }
  std::stable_sort(fetches_.begin(), fetches_.end());
}

FetchIndex::Fetch FetchIndex::Find(const std::string& machine, uint64_t id) const {
  auto m = machines_.find(machine);
  if (m == machines_.end()) return Fetch{nullptr, 0};
  const Entry key{id, nullptr, m->second, 0};
  auto f = std::lower_bound(fetches_.begin(), fetches_.end(), key);
  if (f == fetches_.end() || f->machine != key.machine || f->id != id) return Fetch{nullptr, 0};
  return Fetch{f->sample, f->level};
}

void WaitCauseSums::AddCounts(const format::BatchRecord& r) {
  auto add = [](format::OwnWaits* sum, const format::OwnWaits& o) {
    sum->count += o.count;
    sum->ns += o.ns;
    sum->reading_ns += o.reading_ns;
    sum->pin_ns += o.pin_ns;
  };
  add(&read_, r.read);
  add(&idle_, r.idle);
  add(&iter_, r.iter);
  flow_waits_ += r.flow_waits;
  flow_ns_ += r.flow_wait_ns;
  fetched_ = fetched_ || !r.fetches.empty();
  for (const format::WaitSample& w : r.longest) {
    longest_ns_ += WaitNs(w);
  }
  longest_ns_ += r.longest_dropped_ns;
  for (const format::WaitSample& w : r.waits) {
    if (FirstOfPass(w.id)) first_ns_ += WaitNs(w);
  }
  first_ns_ += r.first_dropped_ns;
}

void WaitCauseSums::AddSamples(const FetchIndex& fetches, const std::string& machine,
                               const format::BatchRecord& r) {
  for (const format::WaitSample& w : r.waits) {
    const FetchIndex::Fetch f = fetches.Find(machine, w.id);
    // A pass's first batches: each stands for itself, or for 2^pass_level
    // where the reader thinned the passes.
    if (FirstOfPass(w.id)) {
      if (f.sample != nullptr) {
        always_.Add(w, *f.sample, uint64_t{1} << r.pass_level);
      } else {
        const uint64_t y = WaitNs(w);
        first_unjoined_ += static_cast<unsigned __int128>(y) << r.pass_level;
      }
      continue;
    }
    if (f.sample == nullptr) continue;
    // A sample of weight 2^level where both sides hashed it; a fetch kept
    // for its lateness alone is no part of that sample.
    const uint8_t level = std::max(r.level, f.level);
    if (!format::BatchSampled(w.id, level)) continue;
    hashed_.Add(w, *f.sample, format::BatchWeight(w.id, level));
  }
  // The longest waits, where their worker kept the fetch: each stands for
  // itself, or for 2^level where the reader thinned them (a pass's first
  // batches, for 2^pass_level).
  for (const format::WaitSample& w : r.longest) {
    const FetchIndex::Fetch f = fetches.Find(machine, w.id);
    const uint8_t level = FirstOfPass(w.id) ? r.pass_level : r.longest_level;
    if (f.sample != nullptr) {
      longest_.Add(w, *f.sample, uint64_t{1} << level);
    } else {
      const uint64_t y = WaitNs(w);
      longest_unjoined_ += static_cast<unsigned __int128>(y) << level;
    }
  }
}

void WaitCauseSums::Stratum::Add(const format::WaitSample& w, const format::FetchSample& f,
                                 uint64_t weight) {
  if (w.end_ns < w.start_ns || f.end_ns < f.start_ns) return;
  const SampleParts s = SplitOne(w, f);
  const uint64_t y = w.end_ns - w.start_ns;
  const uint64_t p[kParts] = {s.reading, y - s.reading - s.handover - s.startup, s.handover,
                              s.startup};
  ++samples;
  seen += y;
  wait += static_cast<unsigned __int128>(weight) * y;
  for (int k = 0; k < kParts; ++k) parts[k] += static_cast<unsigned __int128>(weight) * p[k];
  if (weight > 1) {
    const long double ww = static_cast<long double>(weight) * (weight - 1);
    yy += ww * y * y;
    for (int k = 0; k < kParts; ++k) {
      pp[k] += ww * p[k] * p[k];
      py[k] += ww * p[k] * y;
    }
  }
}

void WaitCauseSums::Stratum::Split(uint64_t total, uint64_t unspoken, uint64_t split[kParts],
                                   long double variance[kParts]) const {
  if (wait == 0 || total == 0) return;
  const long double y = static_cast<long double>(wait);
  // The waits this stratum is a sample of, and of those the time no
  // sample of it was.
  const long double sampled = static_cast<long double>(total - std::min(unspoken, total));
  const long double unseen = std::max<long double>(sampled - static_cast<long double>(seen), 0);
  for (int k = 0; k < kParts; ++k) {
    split[k] += static_cast<uint64_t>(parts[k] * total / wait);
    const long double r = static_cast<long double>(parts[k]) / y;
    // The ratio estimator's variance over the sampled waits:
    // (H / Y)^2 sum w(w-1) (p - R y)^2, the square expanded into the sums kept.
    const long double v = std::max<long double>(pp[k] - 2 * r * py[k] + r * r * yy, 0) *
                          (sampled / y) * (sampled / y);
    // At least what no sample saw could hold: a sample of n waits that
    // never varied leaves about one wait in n unseen that may (a chance of
    // 1/e that n samples all miss them), each off by its share's farther
    // end (whole_run_causes.h).
    const long double floor = std::max(r, 1 - r) * unseen / static_cast<long double>(samples);
    variance[k] += std::max(v, floor * floor);
    // The waits none of its samples stands for, split by its shares: their
    // own share may be any, the same in all (a cause that made them long);
    // the mean square error of the estimate over every such share, equally
    // likely: ((r - 1/2)^2 + 1/12) U^2.
    const long double u = static_cast<long double>(std::min(unspoken, total));
    variance[k] += ((r - 0.5L) * (r - 0.5L) + 1.0L / 12) * u * u;
  }
}

WholeRunCauses WaitCauseSums::Split(bool workers) const {
  WholeRunCauses out;
  out.flow_waits = flow_waits_;
  out.sampled = always_.samples + longest_.samples + hashed_.samples;
  // Each stratum's shares split its waits' time (whole_run_causes.h);
  // preprocessing is what the other three parts leave, so that the parts
  // add up exactly.
  if (out.sampled > 0) {
    uint64_t split[kParts] = {};
    long double variance[kParts] = {};
    // Of a pass's first batches, the share whose fetch was kept (all of
    // those joined: their own time, unless the passes were thinned); the
    // rest, kept without their fetch, no sample stands for.
    uint64_t left = flow_ns_, unspoken = 0;
    {
      const uint64_t first = std::min<uint64_t>(first_ns_, left);
      const unsigned __int128 kept = always_.wait + first_unjoined_;
      const auto joined = kept > 0 ? static_cast<uint64_t>(first * always_.wait / kept) : 0;
      always_.Split(joined, 0, split, variance);
      left -= joined;
      unspoken += first - joined;
    }
    // Of the longest waits, the share whose fetch was kept (all of those
    // joined, unless thinned); the others take the hashed samples' shares,
    // though no hashed sample stands for them: they are not in the hashed
    // sample's frame, and they are long for a reason (a worker descheduled
    // between fetches) that the hashed ones need not share.
    {
      const uint64_t longest = std::min<uint64_t>(longest_ns_, left);
      const unsigned __int128 kept = longest_.wait + longest_unjoined_;
      const auto joined = kept > 0 ? static_cast<uint64_t>(longest * longest_.wait / kept) : 0;
      longest_.Split(joined, 0, split, variance);
      left -= joined;
      unspoken += longest - joined;
    }
    // Where no hashed sample joined, the others' time takes the shares of
    // a pass's first batches (else the longest ones'): no sample of their
    // own stands for any of it.
    const Stratum& shares = hashed_.samples > 0   ? hashed_
                            : always_.samples > 0 ? always_
                                                  : longest_;
    shares.Split(left, hashed_.samples > 0 ? std::min(unspoken, left) : left, split, variance);
    out.reading_ns = split[kReading];
    out.handover_ns = split[kHandover];
    out.worker_startup_ns = split[kStartup];
    const uint64_t others = out.reading_ns + out.handover_ns + out.worker_startup_ns;
    out.preprocessing_ns = flow_ns_ > others ? flow_ns_ - others : 0;
    uint64_t* errors[kParts] = {&out.reading_error_ns, &out.preprocessing_error_ns,
                                &out.handover_error_ns, &out.worker_startup_error_ns};
    for (int k = 0; k < kParts; ++k) {
      *errors[k] = static_cast<uint64_t>(std::llround(std::sqrt(variance[k])));
    }
  } else {
    out.unsplit_ns = flow_ns_;
  }
  // The waits split where they happened, as wait_causes.h splits a wait
  // matched to no fetch: beside workers, one without reads of its own is
  // the loader's machinery (hand-over), and iter(loader) beyond its reads
  // is the workers starting; without, pinning is hand-over and the rest
  // preprocessing.
  workers = workers || flow_waits_ > 0 || fetched_;
  auto split = [&](const format::OwnWaits& o, uint64_t* rest) {
    const uint64_t reading = std::min(o.reading_ns, o.ns);
    const uint64_t pin = std::min(o.pin_ns, o.ns - reading);
    out.reading_ns += reading;
    out.handover_ns += pin;
    *rest += o.ns - reading - pin;
  };
  split(read_, &out.preprocessing_ns);
  split(idle_, workers ? &out.handover_ns : &out.preprocessing_ns);
  split(iter_, workers ? &out.worker_startup_ns : &out.preprocessing_ns);
  out.own_waits = read_.count + idle_.count + iter_.count;
  return out;
}

WholeRunCauses SplitWholeRunWait(const std::vector<ProcessBatches>& processes) {
  const FetchIndex fetches(processes);
  WaitCauseSums sums;
  for (const ProcessBatches& p : processes) {
    for (const format::BatchRecord& r : p.records) sums.Add(fetches, p.machine, r);
  }
  return sums.Split(false);
}

}  // namespace dlprof::analysis
