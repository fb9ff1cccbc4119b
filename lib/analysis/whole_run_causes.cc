// The whole run's batch wait split by cause, from counters (whole_run_causes.h).
#include "lib/analysis/whole_run_causes.h"

#include <algorithm>
#include <map>
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

}  // namespace

WholeRunCauses SplitWholeRunWait(const std::vector<ProcessBatches>& processes) {
  WholeRunCauses out;
  struct Fetch {
    const format::FetchSample* sample;
    uint8_t level;
  };
  std::map<std::pair<std::string, uint64_t>, Fetch> fetches;
  for (const ProcessBatches& p : processes) {
    for (const format::BatchRecord& r : p.records) {
      for (const format::FetchSample& f : r.fetches) {
        fetches.emplace(std::make_pair(p.machine, f.id), Fetch{&f, r.level});
      }
    }
  }
  // Weighted sums of the joined samples (a weight up to 2^23 times a wait
  // of hours: 128 bits).
  // Preprocessing is what the other three leave, so that the parts add up
  // to the waits exactly.
  unsigned __int128 wait = 0, reading = 0, handover = 0, startup = 0;
  uint64_t flow_ns = 0;
  format::OwnWaits read, idle, iter;
  auto add = [](format::OwnWaits* sum, const format::OwnWaits& o) {
    sum->count += o.count;
    sum->ns += o.ns;
    sum->reading_ns += o.reading_ns;
    sum->pin_ns += o.pin_ns;
  };
  for (const ProcessBatches& p : processes) {
    for (const format::BatchRecord& r : p.records) {
      add(&read, r.read);
      add(&idle, r.idle);
      add(&iter, r.iter);
      out.flow_waits += r.flow_waits;
      flow_ns += r.flow_wait_ns;
      for (const format::WaitSample& w : r.waits) {
        auto f = fetches.find(std::make_pair(p.machine, w.id));
        if (f == fetches.end() || w.end_ns < w.start_ns || f->second.sample->end_ns <
                                                               f->second.sample->start_ns) {
          continue;
        }
        const uint64_t weight = format::BatchWeight(w.id, std::max(r.level, f->second.level));
        const SampleParts s = SplitOne(w, *f->second.sample);
        ++out.sampled;
        wait += static_cast<unsigned __int128>(weight) * (w.end_ns - w.start_ns);
        reading += static_cast<unsigned __int128>(weight) * s.reading;

        handover += static_cast<unsigned __int128>(weight) * s.handover;
        startup += static_cast<unsigned __int128>(weight) * s.startup;
      }
    }
  }
  if (wait > 0) {
    auto share = [&](unsigned __int128 part) {
      return static_cast<uint64_t>(part * flow_ns / wait);
    };
    out.reading_ns = share(reading);
    out.handover_ns = share(handover);
    out.worker_startup_ns = share(startup);
    const uint64_t rest = out.reading_ns + out.handover_ns + out.worker_startup_ns;
    out.preprocessing_ns = flow_ns > rest ? flow_ns - rest : 0;
  } else {
    out.unsplit_ns = flow_ns;
  }
  // The waits split where they happened, as wait_causes.h splits a wait
  // matched to no fetch: beside workers, one without reads of its own is
  // the loader's machinery (hand-over), and iter(loader) beyond its reads
  // is the workers starting; without, pinning is hand-over and the rest
  // preprocessing.
  const bool workers = out.flow_waits > 0 || !fetches.empty();
  auto split = [&](const format::OwnWaits& o, uint64_t* rest) {
    const uint64_t reading = std::min(o.reading_ns, o.ns);
    const uint64_t pin = std::min(o.pin_ns, o.ns - reading);
    out.reading_ns += reading;
    out.handover_ns += pin;
    *rest += o.ns - reading - pin;
  };
  split(read, &out.preprocessing_ns);
  split(idle, workers ? &out.handover_ns : &out.preprocessing_ns);
  split(iter, workers ? &out.worker_startup_ns : &out.preprocessing_ns);
  out.own_waits = read.count + idle.count + iter.count;
  return out;
}

}  // namespace dlprof::analysis
