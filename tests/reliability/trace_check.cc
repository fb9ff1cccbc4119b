// trace_check: a fast, exact counter over dlprof traces for the reliability
// tests, built on the same TraceReader that dlprof-dump uses.
//
//   trace_check [--seq NAME]... [--raw OUT] TRACE_OR_DIR...
//
// Prints one JSON object: per trace file its header facts, blocks, damaged
// blocks, events, dropped count, end marker and event counts by name; and,
// for each --seq NAME, per (pid, tid) the events of that name: how many, the
// first and last offset, and whether the offsets went up by exactly one from
// event to event ("contiguous") or at least went up ("increasing"). That is
// what the 16-million-event tests need without printing 16 million JSON lines.
//
// --raw OUT writes the file headers and every decompressed block payload to
// OUT, so a test can search what the tracer stored for bytes it must not
// store.
#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "dlprof/format.h"
#include "lib/format/trace_file.h"

namespace {

using dlprof::Event;
using dlprof::format::DecodedBlock;
using dlprof::format::TraceReader;

struct Seq {
  uint64_t count = 0;
  int64_t first = 0;
  int64_t last = 0;
  bool contiguous = true;
  bool increasing = true;
};

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::vector<std::string> Expand(const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const auto& in : inputs) {
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
      std::vector<std::string> found;
      for (auto it = fs::recursive_directory_iterator(in, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        const std::string p = it->path().string();
        if (it->is_regular_file(ec) && p.size() > 7 && p.compare(p.size() - 7, 7, ".dlprof") == 0) {
          found.push_back(p);
        }
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(in);
    }
  }
  return files;
}

// Copies the header and every block payload (decompressed) of `path` to
// `out`; stops at the first block that does not parse.
void DumpRaw(const std::string& path, std::ofstream& out) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < sizeof(dlprof::FileHeader)) return;
  dlprof::FileHeader fh;
  std::memcpy(&fh, bytes.data(), sizeof(fh));
  size_t at = std::min<size_t>(fh.header_size, bytes.size());
  out.write(bytes.data(), static_cast<std::streamsize>(at));
  while (at + sizeof(dlprof::BlockHeader) <= bytes.size()) {
    dlprof::BlockHeader h;
    std::memcpy(&h, bytes.data() + at, sizeof(h));
    if (h.magic != dlprof::kBlockMagic || h.raw_size > dlprof::kMaxBlockRawBytes ||
        h.compressed_size > bytes.size() - at - sizeof(h)) {
      return;
    }
    std::vector<char> raw(h.raw_size);
    size_t r = ZSTD_decompress(raw.data(), raw.size(), bytes.data() + at + sizeof(h),
                               h.compressed_size);
    if (!ZSTD_isError(r)) out.write(raw.data(), static_cast<std::streamsize>(r));
    at += sizeof(h) + h.compressed_size;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> inputs;
  std::set<std::string> seq_names;
  std::string raw_out;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--seq" && i + 1 < argc) {
      seq_names.insert(argv[++i]);
    } else if (a == "--raw" && i + 1 < argc) {
      raw_out = argv[++i];
    } else {
      inputs.push_back(a);
    }
  }
  std::vector<std::string> files = Expand(inputs);
  std::ofstream raw;
  if (!raw_out.empty()) raw.open(raw_out, std::ios::binary | std::ios::trunc);

  uint64_t total_events = 0, total_dropped = 0, total_blocks = 0, total_damaged = 0;
  std::string procs;
  // name -> (pid, tid) -> sequence
  std::map<std::string, std::map<std::pair<int32_t, int32_t>, Seq>> seqs;
  for (const auto& path : files) {
    if (raw.is_open()) DumpRaw(path, raw);
    TraceReader reader;
    std::string error;
    std::vector<std::string> messages;
    uint64_t events = 0, dropped = 0, blocks = 0;
    std::map<std::string, uint64_t> kinds;
    bool opened = reader.Open(path, &error);
    if (!opened) messages.push_back(error);
    DecodedBlock block;
    while (opened) {
      auto status = reader.Next(&block, &error);
      if (status == TraceReader::Status::kEnd) break;
      if (status == TraceReader::Status::kDamaged) {
        messages.push_back(error);
        continue;
      }
      ++blocks;
      dropped += block.info.dropped_events;
      for (size_t i = 0; i < block.events.size(); ++i) {
        const Event& e = block.events[i];
        const dlprof::EventKindInfo* info = dlprof::LookupKind(e.kind);
        const std::string name = info ? info->name : "kind" + std::to_string(e.kind);
        ++kinds[name];
        ++events;
        if (seq_names.count(name)) {
          Seq& s = seqs[name][{reader.process().pid, block.tids[i]}];
          if (s.count == 0) {
            s.first = e.offset;
          } else {
            if (e.offset != s.last + 1) s.contiguous = false;
            if (e.offset <= s.last) s.increasing = false;
          }
          s.last = e.offset;
          ++s.count;
        }
      }
    }
    total_events += events;
    total_dropped += dropped;
    total_blocks += blocks;
    total_damaged += reader.damaged_blocks();
    const auto& p = reader.process();
    std::string obj = "{\"file\":" + Quote(path) + ",\"opened\":" + (opened ? "true" : "false") +
                      ",\"pid\":" + std::to_string(p.pid) + ",\"ppid\":" + std::to_string(p.ppid) +
                      ",\"flags\":" + std::to_string(p.flags) + ",\"exe\":" + Quote(p.exe) +
                      ",\"final\":" + (reader.saw_final_block() ? "true" : "false") +
                      ",\"blocks\":" + std::to_string(blocks) +
                      ",\"damaged\":" + std::to_string(reader.damaged_blocks()) +
                      ",\"events\":" + std::to_string(events) +
                      ",\"dropped\":" + std::to_string(dropped) + ",\"kinds\":{";
    const char* sep = "";
    for (const auto& [k, n] : kinds) {
      obj += sep + Quote(k) + ":" + std::to_string(n);
      sep = ",";
    }
    obj += "},\"messages\":[";
    sep = "";
    for (const auto& m : messages) {
      obj += sep + Quote(m);
      sep = ",";
    }
    obj += "]}";
    procs += (procs.empty() ? "" : ",") + obj;
  }
  std::string seq_json;
  for (const auto& name : seq_names) {
    std::string list;
    for (const auto& [key, s] : seqs[name]) {
      list += (list.empty() ? "" : ",") + std::string("{\"pid\":") + std::to_string(key.first) +
              ",\"tid\":" + std::to_string(key.second) + ",\"count\":" + std::to_string(s.count) +
              ",\"first\":" + std::to_string(s.first) + ",\"last\":" + std::to_string(s.last) +
              ",\"contiguous\":" + (s.contiguous ? "true" : "false") +
              ",\"increasing\":" + (s.increasing ? "true" : "false") + "}";
    }
    seq_json += (seq_json.empty() ? "" : ",") + Quote(name) + ":[" + list + "]";
  }
  printf("{\"files\":%zu,\"blocks\":%llu,\"damaged\":%llu,\"events\":%llu,\"dropped\":%llu,"
         "\"processes\":[%s],\"seq\":{%s}}\n",
         files.size(), static_cast<unsigned long long>(total_blocks),
         static_cast<unsigned long long>(total_damaged),
         static_cast<unsigned long long>(total_events),
         static_cast<unsigned long long>(total_dropped), procs.c_str(), seq_json.c_str());
  return 0;
}
