// I/O by call site, measured as the merged stream goes by.
#include "lib/analysis/meters/call_site_meter.h"

#include <algorithm>
#include <string>

#include "dlprof/catalogue.h"

namespace dlprof::analysis {
namespace {

uint64_t PairKey(uint32_t process, uint32_t x) { return static_cast<uint64_t>(process) << 32 | x; }

}  // namespace

CallSiteMeter::CallSiteMeter(const std::vector<ProcessTrace>& processes,
                             const SymbolizeOptions& options)
    : processes_(processes), options_(options), modules_(processes.size()),
      owners_(processes.size()) {}

void CallSiteMeter::Add(const StreamEvent& r, bool counted) {
  const Event& e = *r.event;
  if (e.kind == static_cast<uint16_t>(EventKind::ModuleMap)) {
    modules_[r.process].push_back(ModuleOf(e, processes_[r.process]));
    return;
  }
  // Which event a stack belongs to is StackOwners' rule; what that event
  // did is kept here, per thread (events come in runs of one thread: its
  // entry is remembered; map nodes do not move).
  const uint64_t thread = PairKey(r.process, static_cast<uint32_t>(r.tid));
  if (last_owner_ == nullptr || last_thread_ != thread) {
    last_owner_ = &owner_of_thread_[thread];
    last_thread_ = thread;
  }
  Owner& owner = *last_owner_;
  uint64_t owner_index;
  const bool stack = owners_[r.process].Feed(e, r.tid, r.index, &owner_index);
  if (e.kind != static_cast<uint16_t>(EventKind::CallStack)) {
    const EventKindInfo* k = LookupKind(e.kind);
    owner.io = counted && CountsAsIo(e) &&
               (k->op_class == OpClass::Read || k->op_class == OpClass::Write);
    owner.read = owner.io && k->op_class == OpClass::Read;
    owner.bytes = owner.io ? BytesMoved(e) : 0;
    owner.dur_ns = e.dur_ns;
    return;
  }
  if (!stack) return;
  auto [slot, added] = stacks_.try_emplace(PairKey(r.process, e.file));
  DistinctStack& st = slot->second;
  if (added) {
    const ProcessTrace& p = processes_[r.process];
    auto text = p.strings.find(e.file);
    if (text == p.strings.end()) {
      stacks_.erase(slot);
      return;
    }
    const std::vector<uint64_t> addresses = StackAddresses(text->second);
    st.process = r.process;
    st.first_ns = e.start_ns;
    st.has_frames = !addresses.empty();
    st.top_address = st.has_frames ? addresses.front() : 0;
  }
  if (!owner.io) return;
  ++st.io.ops;
  st.io.bytes += owner.bytes;
  st.io.time_ns += owner.dur_ns;
  (owner.read ? st.io.read_bytes : st.io.write_bytes) += owner.bytes;
}

std::vector<CallSiteStats> CallSiteMeter::Top(CallSiteKey key, bool by_bytes, size_t limit) {
  return RankCallSites(Sites(key), by_bytes, limit);
}

std::unordered_map<std::string, CallSiteStats> CallSiteMeter::Sites(CallSiteKey key) {
  if (!symbolised_) {
    symbolised_ = true;
    Symbolizer symbolizer(options_);
    for (auto& [k, st] : stacks_) {
      if (st.has_frames && st.io.ops > 0) {
        symbolizer.Resolve(st.top_address, modules_[st.process], st.first_ns, &st.top);
      }
    }
    symbolizer.Finish();
  }
  std::unordered_map<std::string, CallSiteStats> sites;
  for (const auto& [k, st] : stacks_) {
    if (!st.has_frames || st.io.ops == 0) continue;
    const std::string name = key == CallSiteKey::kFunction ? st.top.Site() : st.top.ModuleName();
    CallSiteStats& s = sites[name];
    s.site = name;
    s.ops += st.io.ops;
    s.bytes += st.io.bytes;
    s.time_ns += st.io.time_ns;
    s.read_bytes += st.io.read_bytes;
    s.write_bytes += st.io.write_bytes;
  }
  return sites;
}

}  // namespace dlprof::analysis
