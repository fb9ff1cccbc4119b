// What a file's path alone says of its class (docs/ANALYSIS.md, "File
// classes", rules 1 and 2): code, the system's, or "by use" when what the
// job did with it decides (data, outputs, other). The values are those of
// the analysis's FileClass (lib/analysis/summary/file_classes.h).
#ifndef DLPROF_LIB_FORMAT_PATH_CLASS_H_
#define DLPROF_LIB_FORMAT_PATH_CLASS_H_

#include <cstdint>
#include <string_view>

namespace dlprof::format {

constexpr uint8_t kPathData = 0;     // read by the job (decided by use)
constexpr uint8_t kPathCode = 1;
constexpr uint8_t kPathOutputs = 2;  // written, never read (decided by use)
constexpr uint8_t kPathSystem = 3;
constexpr uint8_t kPathByUse = 4;    // "other" until its use says more

uint8_t PathClassOf(std::string_view path);

static_assert(kPathData == 0 && kPathCode == 1 && kPathOutputs == 2 && kPathSystem == 3 &&
                  kPathByUse == 4,
              "the analysis's FileClass (kData, kCode, kOutputs, kSystem, kOther)");

}  // namespace dlprof::format

#endif  // DLPROF_LIB_FORMAT_PATH_CLASS_H_
