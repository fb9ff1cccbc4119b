// The traces of a directory (or of a list of files) known from their headers
// alone: each trace's process and what its blocks hold, and when the first
// event of them all started. A reader plans with it before decoding any
// event: which traces must be read together (summarize.h), where --from
// counts from.
#ifndef DLPROF_LIB_READ_TRACE_CATALOG_H_
#define DLPROF_LIB_READ_TRACE_CATALOG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "lib/format/trace_file.h"

namespace dlprof::read {

struct CatalogEntry {
  std::string path;
  bool opened = false;          // its header was read
  std::string error;            // why not, when not
  // Not opened: listed from a directory, and gone (ENOENT) by the time its
  // header was to be read; a bounded trace's sweep deletes old segments as
  // the job runs (docs/FORMAT_BOUNDED.md). The stream says so in a note,
  // not an error; no process is known of it.
  bool vanished = false;
  // What the header says (when opened), but for `rank`: the process's
  // rank, the header's or, where the header has none, the one it gained
  // later (MPI initialised after tracing began, as mpi4py's singleton
  // does): a process that gains a rank is one process of that rank.
  format::ProcessInfo info;
  bool rank_gained = false;     // info.rank came from a block, not the header
  uint32_t block_flags = 0;     // kBlockFlag* of every block, or-ed
  uint64_t blocks = 0;          // blocks with an intact header
  uint64_t events = 0;          // events the block headers announce
  uint64_t first_start_ns = UINT64_MAX;  // earliest block start; MAX: no event
  uint64_t last_end_ns = 0;     // latest block end; 0: no event
  uint64_t bytes = 0;           // file size

  // Whether any block may hold GPU work (a trace of an older writer that
  // does not mark such blocks may).
  bool MayHoldGpu() const;
};

struct TraceCatalog {
  std::vector<CatalogEntry> traces;       // in input order
  uint64_t first_start_ns = UINT64_MAX;   // of all traces; MAX: no event
  uint32_t block_flags = 0;               // of all traces, or-ed
  uint64_t events = 0;
  uint64_t bytes = 0;

  // 0 when no trace holds an event.
  uint64_t base_ns() const { return first_start_ns == UINT64_MAX ? 0 : first_start_ns; }
  // Appends a trace and counts it in the totals.
  void Add(CatalogEntry entry);
};

// A process runs one image per exec, and each image writes a trace of its
// own: the images of one process share host, clock domain, pid and the
// kernel's start time of the process (docs/FORMAT.md, kernel_start).
struct ProcessImage {
  bool later_image = false;  // an image after the process's first: not another process
  std::string exe_chain;     // "sh -> dd" when the process ran several images, else ""
  bool forked = false;       // its first image was a traced fork's child
  // How many processes before it (in catalog order) had its host and pid: a
  // pid reused, or pid namespaces. A process is (host, pid, this), never
  // its pid alone.
  int earlier_same_pid = 0;
};
// Whether two traces are images of one process.
bool SameProcess(const format::ProcessInfo& a, const format::ProcessInfo& b);
// Per trace of `infos` (null: a trace not opened), the index of the first
// image of its process, the one that ran first: its own index unless it is
// a later image of a process that exec'ed.
std::vector<size_t> FirstImages(const std::vector<const format::ProcessInfo*>& infos);
// Per trace of `infos`, ProcessImage::earlier_same_pid of its process, from
// `first_image` (FirstImages): what tells apart the processes that one host's
// pid named, in every output that lists them.
std::vector<int> EarlierSamePids(const std::vector<const format::ProcessInfo*>& infos,
                                 const std::vector<size_t>& first_image);
// Per trace, its process's rank: the first of `ranks` (one per trace) that
// any of its process's images has, in input order (`first_image`:
// FirstImages), else the trace's own. A process that gained its rank in an
// image it exec'd is of that rank: a launcher's `RANK=i prog &` forks a
// shell with none, which execs prog with RANK=i.
std::vector<int32_t> ProcessRanks(const std::vector<int32_t>& ranks,
                                  const std::vector<size_t>& first_image);
// Per trace of the catalog, the image it is of its process (from the
// catalog's other traces).
std::vector<ProcessImage> ProcessImages(const TraceCatalog& catalog);

// Whether the readable traces come from more than one host.
bool SeveralHosts(const TraceCatalog& catalog);

// Reads the file header and every block header of `files` (no payload but
// one: a trace whose header has no rank has its last block decoded for the
// rank it gained). Damage is not reported here: the decoder reports it
// when it reads. `listed` (optional, one per file; ExpandInputs): the file
// was found in a directory, so one missing now was deleted since (vanished);
// one named that does not exist stays an error.
TraceCatalog CatalogTraces(const std::vector<std::string>& files,
                           const std::vector<bool>& listed = {});

}  // namespace dlprof::read

#endif  // DLPROF_LIB_READ_TRACE_CATALOG_H_
