// Call stacks in traces: which `call_stack` event belongs to which
// traced call, and offline symbolisation of its addresses.
//
// The runtime (lib/core/stacks.h, DLPROF_STACKS=1) records each stack right
// after the event it belongs to, on the same thread, with the same start
// time; `module` events describe each loaded object (path, load bias, mapped
// range). Symbolisation reads each object's ELF symbol tables (.symtab, else
// .dynsym; a separate debug file found by build id under /usr/lib/debug is
// read too) and demangles C++ names; addresses still unknown can be handed
// to addr2line (binutils), once per object for all of them.
//
//   StackIndex stacks = BuildStackIndex(set);
//   if (const Stack* s = stacks.Of(ref))
//     for (const ResolvedFrame& f : s->frames) ... f.Format() ...
#ifndef DLPROF_LIB_READ_STACKS_H_
#define DLPROF_LIB_READ_STACKS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/read/trace_set.h"

namespace dlprof::read {

// One loaded object of a traced process, from a `module` event.
struct ModuleRecord {
  std::string path;
  uint64_t bias = 0;  // load bias: ELF address = runtime address - bias
  uint64_t lo = 0;    // lowest mapped address
  uint64_t size = 0;  // bytes mapped from lo
  uint64_t ts = 0;    // when the runtime described it
  bool Contains(uint64_t a) const { return a >= lo && a - lo < size; }
};

struct ResolvedFrame {
  uint64_t address = 0;    // return address as recorded
  std::string function;    // demangled name; "??" when unknown
  std::string module;      // the object's path; "" when in no known object
  uint64_t offset = 0;     // address - bias of the object

  // "func (libfoo.so+0x1a2b)"; "?? (0x7f...)" outside every object.
  std::string Format() const;
  // The call site without the offset: "func (libfoo.so)".
  std::string Site() const;
  // Basename of the object ("libfoo.so"), or "?".
  std::string ModuleName() const;
};

struct Stack {
  std::vector<ResolvedFrame> frames;  // innermost (the caller of the traced function) first
};

struct SymbolizeOptions {
  // Resolve what the ELF symbol tables do not know with addr2line.
  bool use_addr2line = true;
  std::string addr2line = "addr2line";
  // Prefix for object paths (traces from another machine's file system).
  std::string sysroot;
};

// Every stack of a trace set, symbolised once.
class StackIndex {
 public:
  // The stack recorded for the event `r`, or null when it has none.
  const Stack* Of(const EventRef& r) const;
  // True when the trace holds any stack at all.
  bool empty() const { return stacks_.empty(); }
  size_t stack_count() const { return stacks_.size(); }
  // The modules described in process `process` (index into TraceSet::processes).
  const std::vector<ModuleRecord>& modules(uint32_t process) const { return modules_[process]; }

 private:
  friend StackIndex BuildStackIndex(const TraceSet&, const SymbolizeOptions&);
  std::vector<Stack> stacks_;
  std::vector<std::vector<int32_t>> stack_of_;  // [process][event index] -> stacks_ index or -1
  std::vector<std::vector<ModuleRecord>> modules_;
};

StackIndex BuildStackIndex(const TraceSet& set, const SymbolizeOptions& options = {});

// Which event a `call_stack` record belongs to, fed one process's events in
// file order (or in time order, which agrees for one thread): the thread's
// previous event, if it started at the same time and has no stack yet. The
// runtime writes a stack right after its event, on its thread.
class StackOwners {
 public:
  // A call_stack record: true with `*owner` set to the index its owner was
  // fed with. Any other event but a module record becomes its thread's last.
  bool Feed(const Event& e, int32_t tid, uint64_t index, uint64_t* owner);

 private:
  struct Last {
    uint64_t index = 0, start = 0;
    bool waiting = false;  // no stack taken yet
  };
  std::unordered_map<int32_t, Last> last_of_thread_;
};

// Every distinct stack of each process, symbolised as BuildStackIndex does
// (against all the modules its process described), read from the trace
// files themselves: a first pass for exporters that stream.
class StackTable {
 public:
  const Stack* Find(uint32_t process, uint32_t stack_string) const;
  size_t stack_count() const;

 private:
  friend StackTable BuildStackTable(const std::vector<ProcessTrace>&, const SymbolizeOptions&);
  // Node-based maps: a Stack's frames stay where Symbolizer::Finish wants them.
  std::vector<std::unordered_map<uint32_t, Stack>> stacks_;  // per process
};

// Reads each process's file (ProcessTrace::path) once more, in file order.
StackTable BuildStackTable(const std::vector<ProcessTrace>& processes,
                           const SymbolizeOptions& options = {});

// Names return addresses: from each object's ELF symbol tables at once, and
// what those lack from addr2line, run once per object by Finish().
class Symbolizer {
 public:
  explicit Symbolizer(const SymbolizeOptions& options);
  ~Symbolizer();
  // Fills `*frame` for `address` as the process's `modules` place it at
  // time `ts`. Finish() may still name it: keep it where it is until then.
  void Resolve(uint64_t address, const std::vector<ModuleRecord>& modules, uint64_t ts,
               ResolvedFrame* frame);
  void Finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The module a `module` event describes (`p`: its process, for the path).
ModuleRecord ModuleOf(const Event& e, const ProcessTrace& p);

// True for the runtime's `call_stack` and `module` events, which describe
// other events and are not themselves printed as calls.
bool IsStackRecord(uint16_t kind);

// The addresses of a stack string (little-endian u64s, innermost first).
std::vector<uint64_t> StackAddresses(const std::string& bytes);

// The object in `modules` holding `address` at time `ts`: among those whose
// range contains it, the latest described at or before `ts`, else the
// earliest. Null when none does.
const ModuleRecord* FindModule(const std::vector<ModuleRecord>& modules, uint64_t address,
                               uint64_t ts);

// Reads an ELF file's function symbols; Lookup() maps an ELF virtual address
// to the function holding it.
class ElfSymbols {
 public:
  // False when `path` is not a readable ELF file (the object is then "??").
  bool Load(const std::string& path);
  // Adds the symbols of another file (a separate debug file).
  bool Merge(const std::string& path) { return Load(path); }
  // The raw (mangled) name of the function holding `vaddr`, or null.
  const std::string* Lookup(uint64_t vaddr) const;
  // The GNU build id, hex, when the file has one.
  const std::string& build_id() const { return build_id_; }
  size_t size() const { return symbols_.size(); }
  // Sorts and dedupes after the last Load/Merge.
  void Finish();

 private:
  struct Symbol {
    uint64_t start, size;
    uint32_t name;  // index into names_
  };
  std::vector<Symbol> symbols_;
  std::vector<std::string> names_;
  std::string build_id_;
};

// C++ demangling ("_ZN3foo3barEv" -> "foo::bar()"); other names unchanged.
std::string Demangle(const std::string& name);

}  // namespace dlprof::read

#endif  // DLPROF_LIB_READ_STACKS_H_
