// The MPI files this process has open, by MPI_File handle: what the MPI-IO
// wrappers (mpiio.cc) know of each, so that they ask MPI about a handle
// only while it is open, and record its calls with its path.
//
// Lock-free and fixed size (no allocation in a wrapper): threads open, use
// and close files at once. A closed file's slot is taken again by a later
// open. Where more files are open at once than the table holds, the opens
// that found no slot are traced without a path (MayBeUnlistedMpiFile).
#ifndef DLPROF_LIB_INTERCEPT_MPI_FILES_H_
#define DLPROF_LIB_INTERCEPT_MPI_FILES_H_

#include <cstdint>

namespace dlprof::intercept {

struct MpiFile {
  uint32_t file;  // the path's string id; FdTable::kIgnored: not traced
  int32_t comm_size;
  int32_t amode;
};

// A handle (MPI_File, passed as a pointer-sized value) MPI_File_open just
// returned; a handle still in the table (closed where the tracer did not
// see it) takes the new values.
void RememberMpiFile(uintptr_t handle, const MpiFile& file);

// The open file `handle` names; false where it is not in the table.
bool FindMpiFile(uintptr_t handle, MpiFile* file);

// Takes a file being closed out of the table, before MPI frees its handle:
// once it has, another thread's open may be given the same handle, which
// must not lose its place to this close. What the table held goes to
// `*was` (true), for a close that fails to put back.
bool ForgetMpiFile(uintptr_t handle, MpiFile* was);

// Whether `handle`, not in the table, may name an open file all the same:
// one whose open found the table full.
bool MayBeUnlistedMpiFile(uintptr_t handle);

}  // namespace dlprof::intercept

#endif  // DLPROF_LIB_INTERCEPT_MPI_FILES_H_
