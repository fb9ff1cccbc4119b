// The roles of annotation names (region_roles.h).
#include "lib/core/region_roles.h"

#include <string_view>

#include "lib/core/string_table.h"

namespace dlprof::core {
namespace {

constexpr std::string_view kWaitName = "load_batch";
constexpr std::string_view kFetchName = "fetch_batch";
constexpr std::string_view kPinName = "pin_batch";
constexpr std::string_view kIterName = "loader_iter";
constexpr std::string_view kBatchFlowName = "batch";
constexpr std::string_view kStepName = "optimizer_step";
constexpr std::string_view kSaveName = "save_checkpoint";
constexpr std::string_view kLoadName = "load_checkpoint";
// The marks of a request no batch came out of (the name alone, or followed
// by " " and arguments).
constexpr std::string_view kNoBatchMarks[] = {"end", "raised"};

bool IsNoBatchMark(std::string_view s) {
  for (std::string_view m : kNoBatchMarks) {
    if (s.substr(0, m.size()) == m && (s.size() == m.size() || s[m.size()] == ' ')) return true;
  }
  return false;
}

RegionRole RoleOfName(std::string_view s) {
  return s == kWaitName        ? RegionRole::kWait
         : s == kFetchName     ? RegionRole::kFetch
         : s == kPinName       ? RegionRole::kPin
         : s == kIterName      ? RegionRole::kIter
         : s == kBatchFlowName ? RegionRole::kBatchFlow
         : s == kStepName      ? RegionRole::kStep
         : s == kSaveName      ? RegionRole::kSave
         : s == kLoadName      ? RegionRole::kLoad
         : IsNoBatchMark(s)    ? RegionRole::kNoBatchMark
                               : RegionRole::kOther;
}

}  // namespace

RegionRole RegionRoles::Of(uint32_t name) {
  if (name >= roles_.size()) roles_.resize(name + 1, RegionRole::kUnknown);
  if (roles_[name] == RegionRole::kUnknown) {
    size_t len = 0;
    const char* text = name == 0 ? nullptr : strings_->Lookup(name, &len);
    roles_[name] = RoleOfName(text == nullptr ? std::string_view() : std::string_view(text, len));
  }
  return roles_[name];
}

}  // namespace dlprof::core
