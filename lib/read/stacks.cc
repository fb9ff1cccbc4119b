// Call stacks (stacks.h): matching each `call_stack` event to its call, and
// symbolising addresses from the ELF symbol tables of the loaded objects.
#include "lib/read/stacks.h"

#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <tuple>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <unordered_map>
#include <utility>

#include "dlprof/catalogue.h"
#include "lib/format/trace_file.h"
#include "lib/read/file_stream.h"

namespace dlprof::read {
namespace {

std::string Hex(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string Basename(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A read-only mapping of a whole file.
class MappedFile {
 public:
  bool Open(const std::string& path) {
    // (O_NONBLOCK: a path the trace names may now be a FIFO, which must not
    // hold the open up.)
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return false;
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 64) {
      close(fd);
      return false;
    }
    void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return false;
    data_ = static_cast<const uint8_t*>(p);
    size_ = static_cast<size_t>(st.st_size);
    return true;
  }
  ~MappedFile() {
    if (data_) munmap(const_cast<uint8_t*>(data_), size_);
  }
  // A pointer to `n` bytes at `off`, or null when they run past the end.
  const uint8_t* At(uint64_t off, uint64_t n) const {
    if (off > size_ || n > size_ - off) return nullptr;
    return data_ + off;
  }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

std::string HexBytes(const uint8_t* p, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += kDigits[p[i] >> 4];
    s += kDigits[p[i] & 15];
  }
  return s;
}

// Reads the NT_GNU_BUILD_ID note in a SHT_NOTE section.
std::string BuildIdFromNotes(const uint8_t* p, uint64_t n) {
  uint64_t off = 0;
  while (off + 12 <= n) {
    uint32_t namesz, descsz, type;
    std::memcpy(&namesz, p + off, 4);
    std::memcpy(&descsz, p + off + 4, 4);
    std::memcpy(&type, p + off + 8, 4);
    uint64_t name_off = off + 12;
    uint64_t desc_off = name_off + ((static_cast<uint64_t>(namesz) + 3) & ~uint64_t{3});
    uint64_t next = desc_off + ((static_cast<uint64_t>(descsz) + 3) & ~uint64_t{3});
    if (next > n || desc_off + descsz > n) break;
    if (type == NT_GNU_BUILD_ID && namesz == 4 && std::memcmp(p + name_off, "GNU", 4) == 0) {
      return HexBytes(p + desc_off, descsz);
    }
    off = next;
  }
  return std::string();
}

}  // namespace

// --- ELF symbols -------------------------------------------------------------

bool ElfSymbols::Load(const std::string& path) {
  MappedFile f;
  if (!f.Open(path)) return false;
  const uint8_t* ident = f.At(0, sizeof(Elf64_Ehdr));
  if (!ident || std::memcmp(ident, ELFMAG, SELFMAG) != 0 || ident[EI_CLASS] != ELFCLASS64 ||
      ident[EI_DATA] != ELFDATA2LSB) {
    return false;
  }
  Elf64_Ehdr eh;
  std::memcpy(&eh, ident, sizeof(eh));
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0) return false;
  const uint8_t* sh_base = f.At(eh.e_shoff, uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr));
  if (!sh_base) return false;
  auto section = [&](uint32_t i) {
    Elf64_Shdr s;
    std::memcpy(&s, sh_base + uint64_t{i} * sizeof(Elf64_Shdr), sizeof(s));
    return s;
  };
  for (uint32_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr s = section(i);
    if (s.sh_type == SHT_NOTE && build_id_.empty()) {
      if (const uint8_t* p = f.At(s.sh_offset, s.sh_size)) {
        build_id_ = BuildIdFromNotes(p, s.sh_size);
      }
      continue;
    }
    if (s.sh_type != SHT_SYMTAB && s.sh_type != SHT_DYNSYM) continue;
    if (s.sh_entsize != sizeof(Elf64_Sym) || s.sh_link >= eh.e_shnum) continue;
    Elf64_Shdr strtab = section(s.sh_link);
    const uint8_t* syms = f.At(s.sh_offset, s.sh_size);
    const uint8_t* strs = f.At(strtab.sh_offset, strtab.sh_size);
    if (!syms || !strs) continue;
    const uint64_t count = s.sh_size / sizeof(Elf64_Sym);
    for (uint64_t k = 0; k < count; ++k) {
      Elf64_Sym sym;
      std::memcpy(&sym, syms + k * sizeof(Elf64_Sym), sizeof(sym));
      const unsigned type = ELF64_ST_TYPE(sym.st_info);
      if (type != STT_FUNC && type != STT_GNU_IFUNC) continue;
      if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0 || sym.st_name >= strtab.sh_size) continue;
      const char* name = reinterpret_cast<const char*>(strs + sym.st_name);
      size_t len = strnlen(name, strtab.sh_size - sym.st_name);
      if (len == 0) continue;
      names_.emplace_back(name, len);
      symbols_.push_back({sym.st_value, sym.st_size, static_cast<uint32_t>(names_.size() - 1)});
    }
  }
  return true;
}

void ElfSymbols::Finish() {
  std::sort(symbols_.begin(), symbols_.end(), [](const Symbol& a, const Symbol& b) {
    return a.start < b.start || (a.start == b.start && a.size > b.size);
  });
  symbols_.erase(std::unique(symbols_.begin(), symbols_.end(),
                             [](const Symbol& a, const Symbol& b) { return a.start == b.start; }),
                 symbols_.end());
  // A symbol without a size (hand-written assembly) reaches the next one.
  for (size_t i = 0; i < symbols_.size(); ++i) {
    if (symbols_[i].size == 0) {
      symbols_[i].size = i + 1 < symbols_.size() ? symbols_[i + 1].start - symbols_[i].start : 1;
    }
  }
}

const std::string* ElfSymbols::Lookup(uint64_t vaddr) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), vaddr,
                             [](uint64_t v, const Symbol& s) { return v < s.start; });
  if (it == symbols_.begin()) return nullptr;
  --it;
  if (vaddr - it->start < it->size) return &names_[it->name];
  return nullptr;
}

std::string Demangle(const std::string& name) {
  if (name.size() < 2 || name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) {
    free(out);
    return name;
  }
  std::string s(out);
  free(out);
  return s;
}

// --- frames ------------------------------------------------------------------

std::string ResolvedFrame::ModuleName() const { return module.empty() ? "?" : Basename(module); }

std::string ResolvedFrame::Format() const {
  if (module.empty()) return function + " (" + Hex(address) + ")";
  return function + " (" + ModuleName() + "+" + Hex(offset) + ")";
}

std::string ResolvedFrame::Site() const {
  if (module.empty()) return function + " (" + Hex(address) + ")";
  if (function == "??") return "?? (" + ModuleName() + "+" + Hex(offset) + ")";
  return function + " (" + ModuleName() + ")";
}

bool IsStackRecord(uint16_t kind) {
  return kind == static_cast<uint16_t>(EventKind::CallStack) ||
         kind == static_cast<uint16_t>(EventKind::ModuleMap);
}

std::vector<uint64_t> StackAddresses(const std::string& bytes) {
  std::vector<uint64_t> out(bytes.size() / 8);
  for (size_t i = 0; i < out.size(); ++i) {
    uint64_t v = 0;
    for (int b = 7; b >= 0; --b) v = v << 8 | static_cast<uint8_t>(bytes[i * 8 + b]);
    out[i] = v;
  }
  return out;
}

const ModuleRecord* FindModule(const std::vector<ModuleRecord>& modules, uint64_t address,
                               uint64_t ts) {
  // Modules described in the same nanosecond (by two threads) are told
  // apart by what they are, not by where they sit in the list: the list is
  // in file order for one reader and in time order for another.
  auto what = [](const ModuleRecord& m) { return std::tie(m.lo, m.size, m.bias, m.path); };
  const ModuleRecord* before = nullptr;  // latest at or before ts
  const ModuleRecord* after = nullptr;   // earliest after ts
  for (const ModuleRecord& m : modules) {
    if (!m.Contains(address)) continue;
    if (m.ts <= ts) {
      if (!before || m.ts > before->ts || (m.ts == before->ts && what(m) > what(*before))) {
        before = &m;
      }
    } else if (!after || m.ts < after->ts || (m.ts == after->ts && what(m) > what(*after))) {
      after = &m;
    }
  }
  return before ? before : after;
}

const Stack* StackIndex::Of(const EventRef& r) const {
  if (r.process >= stack_of_.size()) return nullptr;
  const auto& v = stack_of_[r.process];
  if (r.index >= v.size() || v[r.index] < 0) return nullptr;
  return &stacks_[static_cast<size_t>(v[r.index])];
}

namespace {

// Symbols of each object, loaded on first use.
class SymbolCache {
 public:
  explicit SymbolCache(const SymbolizeOptions& o) : options_(o) {}

  const ElfSymbols* Get(const std::string& path) {
    auto [it, added] = cache_.try_emplace(path);
    if (!added) return it->second.get();
    auto syms = std::make_unique<ElfSymbols>();
    const std::string file = options_.sysroot + path;
    if (!syms->Load(file)) return nullptr;
    // Debian's -dbgsym packages: the full symbol table lives apart.
    if (!syms->build_id().empty() && syms->build_id().size() > 2) {
      const std::string& id = syms->build_id();
      syms->Merge(options_.sysroot + "/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" +
                  id.substr(2) + ".debug");
    }
    syms->Finish();
    it->second = std::move(syms);
    return it->second.get();
  }

 private:
  const SymbolizeOptions& options_;
  std::unordered_map<std::string, std::unique_ptr<ElfSymbols>> cache_;
};

// Runs `addr2line -f -C -e FILE ADDR...` and fills `names` (one per address;
// empty when unknown). False when addr2line cannot be run.
bool RunAddr2line(const std::string& tool, const std::string& file,
                  const std::vector<uint64_t>& vaddrs, std::vector<std::string>* names) {
  names->assign(vaddrs.size(), std::string());
  constexpr size_t kBatch = 512;
  for (size_t first = 0; first < vaddrs.size(); first += kBatch) {
    const size_t last = std::min(vaddrs.size(), first + kBatch);
    std::vector<std::string> args = {tool, "-f", "-C", "-e", file};
    for (size_t i = first; i < last; ++i) args.push_back(Hex(vaddrs[i]));
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) return false;
    pid_t pid = fork();
    if (pid < 0) {
      close(out[0]);
      close(out[1]);
      return false;
    }
    if (pid == 0) {
      dup2(out[1], 1);
      int null = open("/dev/null", O_WRONLY);
      if (null >= 0) dup2(null, 2);
      execvp(argv[0], argv.data());
      _exit(127);
    }
    close(out[1]);
    std::string text;
    char buf[65536];
    for (;;) {
      ssize_t n = ::read(out[0], buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      text.append(buf, static_cast<size_t>(n));
    }
    close(out[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return false;
    // Two lines per address: function, then file:line.
    size_t pos = 0;
    for (size_t i = first; i < last && pos < text.size(); ++i) {
      size_t eol = text.find('\n', pos);
      if (eol == std::string::npos) eol = text.size();
      std::string fn = text.substr(pos, eol - pos);
      pos = eol + 1;
      eol = text.find('\n', pos);
      pos = eol == std::string::npos ? text.size() : eol + 1;
      if (fn != "??") (*names)[i] = fn;
    }
  }
  return true;
}

}  // namespace

// Frames are named in place, some only by Finish(): the caller keeps them
// where they are until then.
struct Symbolizer::Impl {
  explicit Impl(const SymbolizeOptions& o) : options(o), symbols(o) {}
  const SymbolizeOptions& options;
  SymbolCache symbols;
  // Frames the symbol tables do not name, per object, for addr2line.
  std::map<std::string, std::vector<ResolvedFrame*>> unresolved;
};

Symbolizer::Symbolizer(const SymbolizeOptions& options) : impl_(std::make_unique<Impl>(options)) {}
Symbolizer::~Symbolizer() = default;

void Symbolizer::Resolve(uint64_t address, const std::vector<ModuleRecord>& modules, uint64_t ts,
                         ResolvedFrame* f) {
  f->address = address;
  f->function = "??";
  const ModuleRecord* m = FindModule(modules, address, ts);
  if (m == nullptr) return;
  f->module = m->path;
  f->offset = address - m->bias;
  // A return address: the call is the instruction before it.
  const uint64_t vaddr = f->offset > 0 ? f->offset - 1 : 0;
  const ElfSymbols* syms = impl_->symbols.Get(m->path);
  const std::string* name = syms ? syms->Lookup(vaddr) : nullptr;
  if (name) {
    f->function = Demangle(*name);
  } else if (syms) {
    impl_->unresolved[m->path].push_back(f);
  }
}

void Symbolizer::Finish() {
  if (!impl_->options.use_addr2line) return;
  for (auto& [path, frames] : impl_->unresolved) {
    std::vector<uint64_t> vaddrs;
    for (const ResolvedFrame* f : frames) vaddrs.push_back(f->offset > 0 ? f->offset - 1 : 0);
    std::vector<std::string> names;
    if (!RunAddr2line(impl_->options.addr2line, impl_->options.sysroot + path, vaddrs, &names)) {
      continue;
    }
    for (size_t i = 0; i < frames.size(); ++i) {
      if (!names[i].empty()) frames[i]->function = names[i];
    }
  }
  impl_->unresolved.clear();
}

ModuleRecord ModuleOf(const Event& e, const ProcessTrace& p) {
  auto s = p.strings.find(e.file);
  return {s != p.strings.end() ? s->second : std::string(), static_cast<uint64_t>(e.offset), e.aux,
          e.size, e.start_ns};
}

bool StackOwners::Feed(const Event& e, int32_t tid, uint64_t index, uint64_t* owner) {
  if (e.kind == static_cast<uint16_t>(EventKind::ModuleMap)) return false;
  Last& last = last_of_thread_[tid];
  if (e.kind != static_cast<uint16_t>(EventKind::CallStack)) {
    last = {index, e.start_ns, true};
    return false;
  }
  if (!last.waiting) return false;
  last.waiting = false;  // one stack per event
  if (last.start != e.start_ns) return false;
  *owner = last.index;
  return true;
}

const Stack* StackTable::Find(uint32_t process, uint32_t stack_string) const {
  if (process >= stacks_.size()) return nullptr;
  auto it = stacks_[process].find(stack_string);
  return it == stacks_[process].end() ? nullptr : &it->second;
}

size_t StackTable::stack_count() const {
  size_t n = 0;
  for (const auto& m : stacks_) n += m.size();
  return n;
}

StackTable BuildStackTable(const std::vector<ProcessTrace>& processes,
                           const SymbolizeOptions& options) {
  StackTable table;
  table.stacks_.resize(processes.size());
  Symbolizer symbolizer(options);
  format::DecodedBlock block;
  for (size_t pi = 0; pi < processes.size(); ++pi) {
    format::TraceReader reader;
    std::string error;
    if (!reader.Open(processes[pi].path, &error)) continue;
    // The whole file first: a stack is resolved against every module its
    // process described, before or after it.
    ProcessTrace strings;  // its strings and module list only
    std::vector<ModuleRecord> modules;
    std::unordered_map<uint32_t, uint64_t> first_seen;  // stack string -> first time
    StackOwners owners;
    uint64_t index = 0;
    size_t string_bytes = 0;
    for (;;) {
      const auto status = reader.Next(&block, &error);
      if (status == format::TraceReader::Status::kEnd) break;
      if (status != format::TraceReader::Status::kBlock) continue;
      // As many string bytes as the stream itself keeps per file.
      for (auto& s : block.strings) {
        if (string_bytes + s.text.size() > kMaxStringBytesPerFile) break;
        string_bytes += s.text.size();
        strings.strings.emplace(s.id, std::move(s.text));
      }
      for (size_t i = 0; i < block.events.size(); ++i, ++index) {
        const Event& e = block.events[i];
        if (e.kind == static_cast<uint16_t>(EventKind::ModuleMap)) {
          modules.push_back(ModuleOf(e, strings));
        }
        uint64_t owner;
        if (owners.Feed(e, block.tids[i], index, &owner) &&
            strings.strings.count(e.file) != 0) {
          first_seen.try_emplace(e.file, e.start_ns);
        }
      }
    }
    for (const auto& [id, ts] : first_seen) {
      const std::vector<uint64_t> addresses = StackAddresses(strings.strings[id]);
      Stack& st = table.stacks_[pi][id];
      st.frames.resize(addresses.size());
      for (size_t f = 0; f < addresses.size(); ++f) {
        symbolizer.Resolve(addresses[f], modules, ts, &st.frames[f]);
      }
    }
  }
  symbolizer.Finish();
  return table;
}

StackIndex BuildStackIndex(const TraceSet& set, const SymbolizeOptions& options) {
  StackIndex index;
  const size_t np = set.processes.size();
  index.stack_of_.resize(np);
  index.modules_.resize(np);
  Symbolizer symbolizer(options);

  for (size_t pi = 0; pi < np; ++pi) {
    const ProcessTrace& p = set.processes[pi];
    auto& modules = index.modules_[pi];
    auto& stack_of = index.stack_of_[pi];
    stack_of.assign(p.events.size(), -1);
    bool any_stack = false;
    for (const Event& e : p.events) {
      if (e.kind == static_cast<uint16_t>(EventKind::ModuleMap)) {
        modules.push_back(ModuleOf(e, p));
      } else if (e.kind == static_cast<uint16_t>(EventKind::CallStack)) {
        any_stack = true;
      }
    }
    if (!any_stack) continue;

    StackOwners owners;
    std::unordered_map<uint32_t, int32_t> by_string;  // stack string id -> stacks_ index
    for (size_t i = 0; i < p.events.size(); ++i) {
      const Event& e = p.events[i];
      uint64_t owner;
      if (!owners.Feed(e, p.tids[i], i, &owner)) continue;
      auto [slot, added] = by_string.try_emplace(e.file, 0);
      if (added) {
        auto text = p.strings.find(e.file);
        if (text == p.strings.end()) {
          by_string.erase(slot);
          continue;
        }
        const std::vector<uint64_t> addresses = StackAddresses(text->second);
        // Moving a Stack keeps its frames where they are, as Finish needs.
        Stack& st = index.stacks_.emplace_back();
        st.frames.resize(addresses.size());
        for (size_t f = 0; f < addresses.size(); ++f) {
          symbolizer.Resolve(addresses[f], modules, e.start_ns, &st.frames[f]);
        }
        slot->second = static_cast<int32_t>(index.stacks_.size() - 1);
      }
      stack_of[owner] = slot->second;
    }
  }
  symbolizer.Finish();
  return index;
}

}  // namespace dlprof::read
