// cuFile's compatibility-mode reads on its own threads (cufile_compat.h).
#include "lib/read/cufile_compat.h"

#include <algorithm>

#include "lib/format/event_rules.h"

namespace dlprof::read {

bool CufileCompatReads::IsTransfer(uint16_t kind) { return RulesFor(kind).gds_transfer; }

bool CufileCompatReads::IsCaller(uint16_t kind) {
  return kind < kEventKindLimit && kEventKinds.info[kind].category == Category::Gds &&
         kind != static_cast<uint16_t>(EventKind::CufileAsyncRead) &&
         kind != static_cast<uint16_t>(EventKind::CufileAsyncWrite);
}

void CufileCompatReads::AddCaller(int32_t tid) {
  if (std::find(callers_.begin(), callers_.end(), tid) == callers_.end()) callers_.push_back(tid);
}

void CufileCompatReads::AddTransfer(const Event& e) {
  if (e.offset < 0 || e.size == 0) return;  // a failed call that names no range
  const uint64_t offset = static_cast<uint64_t>(e.offset);
  transfers_.push_back({e.file, e.start_ns, e.start_ns + e.dur_ns, offset, offset + e.size});
}

bool CufileCompatReads::SameFile(uint32_t a, uint32_t b) const {
  if (a == b) return true;
  auto x = strings_->find(a), y = strings_->find(b);
  return x != strings_->end() && y != strings_->end() && x->second == y->second;
}

void CufileCompatReads::FlagIfServing(Event& e, int32_t tid) {
  // Transfers that ended before this event can cover nothing after it.
  transfers_.erase(std::remove_if(transfers_.begin(), transfers_.end(),
                                  [&](const Transfer& t) { return t.end_ns < e.start_ns; }),
                   transfers_.end());
  if ((e.flags & kEventFlagNested) || !RulesFor(e.kind).posix_data || e.offset < 0) return;
  // A thread that called cuFile is the program's: its calls are its own.
  if (std::find(callers_.begin(), callers_.end(), tid) != callers_.end()) return;
  const uint64_t offset = static_cast<uint64_t>(e.offset);
  const uint64_t end = offset + e.size;
  for (const Transfer& t : transfers_) {
    if (e.start_ns >= t.start_ns && offset >= t.offset && end <= t.end_offset &&
        SameFile(t.file, e.file)) {
      e.flags = static_cast<uint16_t>(e.flags | kEventFlagNested | kEventFlagServesTransfer);
      return;
    }
  }
}

void CufileCompatReads::FlagRange(std::vector<Event>* events, const std::vector<int32_t>& tids,
                                  const std::unordered_map<uint32_t, std::string>* strings) {
  std::vector<uint32_t> order(events->size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return (*events)[a].start_ns < (*events)[b].start_ns;
  });
  CufileCompatReads reads(strings);
  for (uint32_t i : order) reads.See((*events)[i], tids[i]);
}

}  // namespace dlprof::read
