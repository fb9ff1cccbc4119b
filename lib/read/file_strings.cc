// FileStrings (file_strings.h).
#include "lib/read/file_strings.h"

#include "dlprof/catalogue.h"

namespace dlprof::read {

void FileStrings::Add(format::DecodedBlock* block) {
  for (auto& s : block->strings) {
    if (bytes_ + s.text.size() > max_bytes_) {
      if (!warned_) {
        warned_ = true;
        p_->messages.push_back("warning: " + p_->path + ": strings past " +
                               std::to_string(max_bytes_ >> 20) + " MiB are ignored");
      }
      continue;
    }
    if (p_->strings.try_emplace(s.id, std::move(s.text)).second) {
      bytes_ += p_->strings[s.id].size();
    }
  }
}

void FileStrings::CountUndefined(const format::DecodedBlock& block, uint32_t k) {
  const auto& runs = block.file_runs;
  for (size_t r = 0; r < runs.size(); ++r) {
    const uint32_t file = runs[r].file;
    if (file == 0 || file == last_known_file_) continue;
    if (p_->strings.count(file)) {
      last_known_file_ = file;
      continue;
    }
    const size_t end = r + 1 < runs.size() ? runs[r + 1].first : block.events.size();
    undefined_ += end - runs[r].first;
    auto it = missing_.find(file);
    if (it == missing_.end()) {
      if (missing_.size() == kMissingNamed) {
        more_missing_ = true;
        continue;
      }
      it = missing_.emplace(file, Missing{0, block.events[runs[r].first].kind, k}).first;
    }
    it->second.events += end - runs[r].first;
  }
}

std::string FileStrings::DescribeUndefined(size_t blocks) const {
  std::string out;
  for (const auto& [file, m] : missing_) {
    const EventKindInfo* kind = LookupKind(m.first_kind);
    out += std::string(out.empty() ? " (" : "; ") + "file " + std::to_string(file) + ": " +
           std::to_string(m.events) + " events, the first a " +
           (kind != nullptr && kind->name != nullptr ? kind->name : "kind " +
            std::to_string(m.first_kind)) +
           " in block " + std::to_string(m.block + 1) + " of " + std::to_string(blocks) +
           (p_->strings.count(file) ? ", its string in a later block" : ", no string");
  }
  if (more_missing_) out += "; and other paths";
  return out.empty() ? out : out + ")";
}

}  // namespace dlprof::read
