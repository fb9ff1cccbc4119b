// The ranks of a large job in the summary's JSON (rank_map_json.h).
#include "lib/analysis/json/rank_map_json.h"

#include <algorithm>
#include <cinttypes>
#include <numeric>
#include <tuple>

#include "lib/text/text.h"

namespace dlprof::analysis {
using namespace dlprof::text;
namespace {

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// A row of cells per row of the map, as JSON.
std::string Grid(const std::vector<std::vector<uint64_t>>& cells) {
  std::string j = "[";
  for (size_t r = 0; r < cells.size(); ++r) {
    j += r ? ",[" : "[";
    for (size_t c = 0; c < cells[r].size(); ++c) j += Fmt("%s%" PRIu64, c ? "," : "", cells[r][c]);
    j += "]";
  }
  return j + "]";
}

// How many ranks had each bin of `value`.
template <typename Value>
std::string Histogram(const std::vector<RankFigures>& ranks, Value value) {
  uint64_t most = 0;
  for (const RankFigures& r : ranks) most = std::max(most, value(r));
  const uint64_t bin = std::max<uint64_t>(1, CeilDiv(most + 1, kRankHistogramBins));
  std::vector<uint64_t> counts(most / bin + 1, 0);
  for (const RankFigures& r : ranks) ++counts[value(r) / bin];
  std::string j = Fmt("{\"bin\":%" PRIu64 ",\"counts\":[", bin);
  for (size_t i = 0; i < counts.size(); ++i) j += Fmt("%s%" PRIu64, i ? "," : "", counts[i]);
  return j + "]}";
}

}  // namespace

std::vector<size_t> ListedRanks(const std::vector<RankFigures>& ranks, size_t top) {
  std::vector<size_t> order(ranks.size());
  std::iota(order.begin(), order.end(), 0);
  auto key = [&](size_t i) {
    const RankFigures& r = ranks[i];
    return std::make_tuple(r.batch_wait_ns, r.io_ns, r.read_bytes);
  };
  const size_t n = std::min(top, order.size());
  std::partial_sort(order.begin(), order.begin() + n, order.end(), [&](size_t a, size_t b) {
    if (key(a) != key(b)) return key(a) > key(b);
    return a < b;  // `ranks` is by rank, then host
  });
  order.resize(n);
  return order;
}

std::string RankMapJson(const std::vector<RankFigures>& ranks, size_t rows) {
  const size_t n = ranks.size();
  const size_t per_row = std::max<size_t>(1, CeilDiv(n, std::max<size_t>(rows, 1)));
  const size_t row_count = CeilDiv(n, per_row);
  // Steps are numbered from 1 in each rank; a column holds `per_column`.
  uint64_t last_step = 0;
  size_t longest = 0;
  for (const RankFigures& r : ranks) {
    for (const RankStep& s : r.steps) last_step = std::max(last_step, s.step);
    longest = std::max({longest, r.read_per_second.size(), r.gpu_busy_per_second.size()});
  }
  const uint64_t per_column = std::max<uint64_t>(1, CeilDiv(last_step, kRankMapStepColumns));
  const size_t columns = CeilDiv(last_step, per_column);
  const uint64_t bin_s = std::max<uint64_t>(1, CeilDiv(longest, kRankMapTimeBins));
  const size_t bins = CeilDiv(longest, bin_s);

  using Cells = std::vector<std::vector<uint64_t>>;
  Cells wait(row_count, std::vector<uint64_t>(columns, 0)), stall = wait;
  Cells read(row_count, std::vector<uint64_t>(bins, 0)), busy = read;
  std::vector<uint64_t> rank_wait(columns), rank_stall(columns);
  std::string row_list = "[";
  for (size_t row = 0; row < row_count; ++row) {
    const size_t first = row * per_row, end = std::min(n, first + per_row);
    row_list += Fmt("%s[%d,%d,%zu]", row ? "," : "", ranks[first].rank, ranks[end - 1].rank,
                    end - first);
    for (size_t i = first; i < end; ++i) {
      const RankFigures& r = ranks[i];
      // The rank's own sum per column, then the row's most.
      std::fill(rank_wait.begin(), rank_wait.end(), 0);
      std::fill(rank_stall.begin(), rank_stall.end(), 0);
      for (const RankStep& s : r.steps) {
        const size_t c = (std::max<uint64_t>(s.step, 1) - 1) / per_column;
        rank_wait[c] += s.batch_wait_ns;
        rank_stall[c] += s.data_stall_ns;
      }
      for (size_t c = 0; c < columns; ++c) {
        wait[row][c] = std::max(wait[row][c], rank_wait[c]);
        stall[row][c] = std::max(stall[row][c], rank_stall[c]);
      }
      for (size_t t = 0; t < r.read_per_second.size(); ++t) {
        read[row][t / bin_s] += r.read_per_second[t];
      }
      for (size_t t = 0; t < r.gpu_busy_per_second.size(); ++t) {
        busy[row][t / bin_s] += r.gpu_busy_per_second[t];
      }
    }
  }
  std::string step_columns = "[";
  for (size_t c = 0; c < columns; ++c) {
    step_columns += Fmt("%s[%" PRIu64 ",%" PRIu64 "]", c ? "," : "", 1 + c * per_column,
                        std::min<uint64_t>(last_step, (c + 1) * per_column));
  }
  std::string j = Fmt("\"rank_map\":{\"ranks\":%zu,\"rows\":", n) + row_list +
                  "],\"step_columns\":" + step_columns + "],\"batch_wait_ns\":" + Grid(wait) +
                  ",\"data_stall_ns\":" + Grid(stall) +
                  Fmt(",\"timeline\":{\"bin_s\":%" PRIu64 ",\"read_bytes\":", bin_s) + Grid(read) +
                  ",\"gpu_busy_ns\":" + Grid(busy) + "}";
  j += ",\"histograms\":{\"batch_wait_ns\":" +
       Histogram(ranks, [](const RankFigures& r) { return r.batch_wait_ns; }) +
       ",\"data_stall_ns\":" +
       Histogram(ranks, [](const RankFigures& r) { return r.data_stall_ns; }) +
       ",\"straggler_loss_ns\":" +
       Histogram(ranks, [](const RankFigures& r) { return r.straggler_loss_ns; }) +
       ",\"io_ns\":" + Histogram(ranks, [](const RankFigures& r) { return r.io_ns; }) +
       ",\"read_bytes\":" + Histogram(ranks, [](const RankFigures& r) { return r.read_bytes; }) +
       "}";
  return j + "}";
}

}  // namespace dlprof::analysis
