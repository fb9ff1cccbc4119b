// The fd table's memory and its lookups (fd_table.h).
#include "lib/core/fd_table.h"

#include <sys/mman.h>

#include "lib/core/raw_map.h"

namespace dlprof::core {

bool FdTable::Init(int capacity) {
  void* p = RawMmap(nullptr, sizeof(Entry) * static_cast<size_t>(capacity),
                    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  entries_ = static_cast<Entry*>(p);
  capacity_ = capacity;
  return true;
}

void FdTable::Set(int fd, uint32_t file, int64_t position, bool append) {
  if (!InRange(fd)) return;
  Entry& e = entries_[fd];
  e.position.store(position, std::memory_order_relaxed);
  e.append.store(append, std::memory_order_relaxed);
  e.shared.store(false, std::memory_order_relaxed);
  e.file.store(file, std::memory_order_release);
}

void FdTable::ClearRange(unsigned first, unsigned last) {
  if (capacity_ == 0) return;
  unsigned end = last >= static_cast<unsigned>(capacity_) ? capacity_ - 1 : last;
  for (unsigned fd = first; fd <= end; ++fd) {
    if (entries_[fd].file.load(std::memory_order_relaxed) != kUnknown) Clear(static_cast<int>(fd));
  }
}

void FdTable::Copy(int from, int to) {
  if (!InRange(from) || !InRange(to)) return;
  Set(to, File(from), Position(from), Append(from));
  entries_[from].shared.store(true, std::memory_order_relaxed);
  entries_[to].shared.store(true, std::memory_order_relaxed);
}

int64_t FdTable::Advance(int fd, int64_t bytes) {
  if (!InRange(fd)) return kNoPosition;
  std::atomic<int64_t>& pos = entries_[fd].position;
  int64_t cur = pos.load(std::memory_order_relaxed);
  if (cur < 0) return kNoPosition;
  if (bytes <= 0) return cur;
  return pos.fetch_add(bytes, std::memory_order_relaxed);
}

}  // namespace dlprof::core
