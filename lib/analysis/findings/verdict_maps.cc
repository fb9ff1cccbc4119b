// The verdict's findings about data read through memory maps (verdict.h;
// docs/ANALYSIS.md, "Verdict" and "Reading through memory maps").
#include <cinttypes>
#include <string>
#include <vector>

#include "lib/analysis/findings/verdict.h"
#include "lib/analysis/summary/file_classes.h"
#include "lib/analysis/summary/rank_figures.h"
#include "lib/text/text.h"

namespace dlprof::analysis {
using namespace dlprof::text;
namespace {

// A mapped data set read at random: of its faults that follow another of
// the same process and file, 30 % or more land before the previous one's
// page (Darshan's "random": pages drawn at random give about half, the
// other half landing after it by chance; a sequential scan none), and
// there are enough of them to tell.
constexpr uint64_t kMappedRandomPerMille = 300;
constexpr uint64_t kMappedRandomMinFaults = 100;

}  // namespace

uint64_t PartNs(const Verdict& v, const char* name) {
  for (const auto& [part, ns] : v.preprocessing_parts) {
    if (part == name) return ns;
  }
  return 0;
}

void MapFindings(const Summary& s, const Verdict& v, std::vector<Finding>* out) {
  // A loop mapping its data file anew each step (nanoGPT's np.memmap per
  // get_batch), whose wait is not measured for the copies out of its live
  // maps: what its mmap and munmap calls took is the part of the wait that
  // is (with the wait measured, the batch_wait finding says it).
  const uint64_t mapping = PartNs(v, RankFigures::kMappingPart);
  if (v.wait_unmeasured && mapping > 0 && mapping >= v.reading_ns) {
    out->push_back(
        {"maps_each_step",
         Fmt("The loop's calls making and tearing down maps of its data files (mmap, munmap) "
             "took %s of the %s loop; reading in data calls %s (the copies out of the maps, "
             "which make the rest of its wait, are not seen).",
             DurationText(mapping).c_str(), DurationText(v.loop_ns).c_str(),
             DurationText(v.reading_ns).c_str()),
         "the loop maps its data file again for every batch (and unmaps the last batch's "
         "map): keep one map open (np.memmap once, outside the loop)",
         mapping});
  }
  MapReads maps;
  for (const auto& [path, io] : s.files) {
    if (ClassifyFile(path, io) == FileClass::kData) maps.Merge(io.maps);
  }
  const uint64_t classified = maps.faults - maps.first;
  const uint64_t random = PerMille(maps.random(), classified);
  if (maps.faults < kMappedRandomMinFaults || random < kMappedRandomPerMille) return;
  out->push_back(
      {"mapped_random",
       Fmt("%s of the %" PRIu64 " page faults on mapped data files went back before the one "
           "before them (%s brought in, %s holding their threads): the data set is read at "
           "random through its map, which the kernel reads a page (or a read-around) at a time.",
           PerMilleText(random).c_str(), maps.faults, ByteText(maps.bytes).c_str(),
           DurationText(maps.time_ns).c_str()),
       "madvise(MADV_WILLNEED) on the samples' pages before they are needed (or "
       "MADV_SEQUENTIAL where the order allows), a page cache large enough to hold the data "
       "set, or the shards read into memory ahead",
       static_cast<uint64_t>(static_cast<unsigned __int128>(maps.time_ns) * random / 1000)});
}

}  // namespace dlprof::analysis
