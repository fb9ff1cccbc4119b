// InputLoss (input_loss.h).
#include "lib/read/input_loss.h"

namespace dlprof::read {

InputLoss InputLossOf(const std::vector<std::string>& input_errors,
                      const std::vector<ProcessTrace>& traces) {
  InputLoss loss;
  loss.inputs_without_traces = input_errors.size();
  for (const ProcessTrace& p : traces) {
    if (!p.opened) {
      loss.unreadable_traces += p.vanished ? 0 : 1;
      continue;
    }
    loss.damaged_blocks += p.damaged_blocks;
    loss.events_lost += p.lost_events;
    loss.uncounted_blocks += p.uncounted_damage;
    loss.events_dropped += p.dropped_events;
  }
  return loss;
}

std::string InputLossText(const InputLoss& loss) {
  std::string s;
  auto part = [&s](uint64_t n, const char* one, const char* many) {
    if (n == 0) return;
    s += (s.empty() ? "" : ", ") + std::to_string(n) + " " + (n == 1 ? one : many);
  };
  part(loss.inputs_without_traces, "input without traces", "inputs without traces");
  part(loss.unreadable_traces, "trace unreadable", "traces unreadable");
  part(loss.damaged_blocks, "damaged block", "damaged blocks");
  if (loss.damaged_blocks > 0) s += " (" + EventsLostText(loss) + ")";
  part(loss.events_dropped, "event dropped while tracing", "events dropped while tracing");
  return s;
}

std::string EventsLostText(const InputLoss& loss) {
  // The events of a block without a sound header are not known: then the
  // count is a floor.
  if (loss.uncounted_blocks == 0) return std::to_string(loss.events_lost) + " events lost";
  if (loss.events_lost == 0) return "events lost not known";
  return "at least " + std::to_string(loss.events_lost) + " events lost";
}

}  // namespace dlprof::read
