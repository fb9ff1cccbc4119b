// The ranks of a large job in dlprof-dump's HTML report (report.js's
// "Per rank" section): past --top ranks the summary JSON lists the ranks that
// waited the longest and maps every rank in `rank_map` (rows of consecutive
// ranks, columns of steps and of time, distributions; lib/analysis/json/
// rank_map_json.h), which these draw as heat maps and histograms, so that
// a job of ten thousand ranks stays a page of a bounded size.
(function () {
  "use strict";
  const { bytes, secs, count, label, el, note, bars, heatmap } = window.dlprofKit;

  // A large job's ranks (rank_map): how many ranks had how much of each
  // figure, a bar per bin.
  function rankHistograms(parent, map, keys) {
    for (const key of keys) {
      const h = (map.histograms || {})[key];
      if (!h || h.counts.length < 2) continue;  // all alike (all zero)
      const fmt = key === "read_bytes" ? bytes : secs;
      parent.append(el("h3", { text: "Ranks by " + label(key) + " (how many ranks had how much)" }));
      bars(parent, h.counts.map((_, i) => fmt(i * h.bin) + "-" + fmt((i + 1) * h.bin)),
           [{ label: "ranks", data: h.counts }], count, {});
    }
  }

  function mapRowNames(map) {
    return map.rows.map(([first, last, n]) => (n === 1 ? "rank " + first : "ranks " + first + "-" + last));
  }

  // The rank map's steps: a heat map of rows of ranks x columns of steps,
  // each cell the most a rank of the row waited in those steps.
  function mapSteps(parent, map) {
    const columns = map.step_columns.map(([a, b]) => (a === b ? "step " + a : "steps " + a + "-" + b));
    if (!columns.length) return;
    for (const [key, title, what] of [
      ["batch_wait_ns", "Batch wait per rank and step", "batch wait"],
      ["data_stall_ns", "Data stall per rank and step (I/O while the rank's GPUs idled)", "data stall"]]) {
      const cells = [];
      map[key].forEach((row, y) => row.forEach((v, x) => { if (v > 0) cells.push([x, y, v]); }));
      if (!cells.length && key !== "batch_wait_ns") continue;
      parent.append(el("h3", { text: title }));
      if (map.rows.length < map.ranks || map.step_columns.some(([a, b]) => a !== b)) {
        note(parent, "A cell: the most any rank of its row waited in its steps.");
      }
      heatmap(parent, mapRowNames(map), columns, cells, secs, what);
    }
  }

  // The rank map's timeline: rows of ranks x bins of time, each cell the
  // row's ranks added up.
  function mapOverTime(parent, map, key, title, fmt, what) {
    const t = map.timeline || {};
    const cells = [];
    (t[key] || []).forEach((row, y) => row.forEach((v, x) => { if (v > 0) cells.push([x, y, v]); }));
    if (!cells.length) return;
    parent.append(el("h3", { text: title + (t.bin_s > 1 ? " (" + t.bin_s + " s a column)" : "") +
                                (map.rows.length < map.ranks ? ", a row's ranks added up" : "") }));
    const n = Math.max(...t[key].map(r => r.length));
    heatmap(parent, mapRowNames(map), Array.from({ length: n }, (_, i) => (i * t.bin_s) + " s"), cells, fmt, what);
  }

  window.dlprofRankMap = { rankHistograms: rankHistograms, mapSteps: mapSteps, mapOverTime: mapOverTime };
})();
