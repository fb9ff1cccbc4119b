// The table of open MPI files (mpi_files.h): open addressing with linear
// probing over a fixed array. A slot's handle word says whose it is; a
// closed file's slot keeps a mark (kClosed) that lookups probe past and an
// open takes again, so that a long run opening many distinct handles never
// fills it. The other fields are written by the thread that opened the
// handle before the program has the handle, and read by threads the
// program gave it to afterwards.
#include "lib/intercept/mpi_files.h"

#include <atomic>

namespace dlprof::intercept {
namespace {

constexpr int kSlots = 4096;
constexpr uintptr_t kNeverUsed = 0;  // no handle got this far: lookups stop here
constexpr uintptr_t kClosed = 1;     // held a file since closed (no handle is 1)

struct Slot {
  std::atomic<uintptr_t> handle;  // or one of the marks above
  MpiFile file;
};
Slot g_slots[kSlots];
std::atomic<bool> g_overflowed{false};

Slot& Probed(uintptr_t handle, int probe) { return g_slots[((handle >> 4) + probe) % kSlots]; }

Slot* Find(uintptr_t handle) {
  if (handle <= kClosed) return nullptr;
  for (int probe = 0; probe < kSlots; ++probe) {
    Slot& slot = Probed(handle, probe);
    const uintptr_t cur = slot.handle.load(std::memory_order_acquire);
    if (cur == handle) return &slot;
    if (cur == kNeverUsed) return nullptr;
  }
  return nullptr;
}

// The handle's own slot where it is still there, else the first closed or
// never used one on its probe path, which every lookup passes before it
// stops. Only the thread opening `handle` inserts it, so none can place it
// between the look and the claim; opens of other handles race for a slot by
// CAS, and the loser looks again.
Slot* Insert(uintptr_t handle) {
  if (handle <= kClosed) return nullptr;
  for (;;) {
    Slot* free_slot = nullptr;
    uintptr_t was = kNeverUsed;
    for (int probe = 0; probe < kSlots; ++probe) {
      Slot& slot = Probed(handle, probe);
      const uintptr_t cur = slot.handle.load(std::memory_order_acquire);
      if (cur == handle) return &slot;
      if (free_slot == nullptr && (cur == kClosed || cur == kNeverUsed)) {
        free_slot = &slot;
        was = cur;
      }
      if (cur == kNeverUsed) break;  // the handle lies nowhere further
    }
    if (free_slot == nullptr) return nullptr;
    if (free_slot->handle.compare_exchange_strong(was, handle, std::memory_order_acq_rel)) {
      return free_slot;
    }
  }
}

}  // namespace

void RememberMpiFile(uintptr_t handle, const MpiFile& file) {
  if (Slot* slot = Insert(handle)) {
    slot->file = file;
  } else if (handle > kClosed) {
    g_overflowed.store(true, std::memory_order_relaxed);
  }
}

bool FindMpiFile(uintptr_t handle, MpiFile* file) {
  const Slot* slot = Find(handle);
  if (slot == nullptr) return false;
  *file = slot->file;
  return true;
}

bool ForgetMpiFile(uintptr_t handle, MpiFile* was) {
  Slot* slot = Find(handle);
  if (slot == nullptr) return false;
  *was = slot->file;
  slot->handle.store(kClosed, std::memory_order_release);
  return true;
}

bool MayBeUnlistedMpiFile(uintptr_t handle) {
  return handle > kClosed && g_overflowed.load(std::memory_order_relaxed);
}

}  // namespace dlprof::intercept
