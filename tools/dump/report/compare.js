// The page script of dlprof-dump's --compare report (--compare BEFORE AFTER
// --format html): reads the comparison JSON that dlprof-dump embedded in the
// page ({"before", "after": each run's summary JSON, "change": its figures
// side by side; lib/analysis/compare/compare_json.cc) and lays out both runs
// on the same axes with report_kit.js: the verdict's figures side by side,
// a plot of both runs' loop figures, both runs' I/O bandwidth over their
// loops, per rank and host, the data set, and the findings that appeared or
// went away. The figures are lib/analysis's; the only arithmetic here is
// display (bytes per bin as bytes per second).
(function () {
  "use strict";
  const K = window.dlprofKit;
  const { bytes, secs, count, el, section, note, table, bars, timeline } = K;
  const C = JSON.parse(document.getElementById("dlprof-summary").textContent);
  const meta = JSON.parse(document.getElementById("dlprof-meta").textContent);
  const ch = C.change;
  const RUNS = ["before", "after"];
  const COLORS = { before: "#6b7280", after: "#2f6fd6" };

  // A figure's value as its unit says (compare_json.cc: "unit").
  function show(unit, v) {
    if (v === null || v === undefined) return "-";
    if (unit === "ns") return secs(v);
    if (unit === "bytes") return bytes(v);
    if (unit === "bytes_per_s") return bytes(v) + "/s";
    if (unit === "per_mille") return (v / 10).toFixed(1) + " %";
    return count(v);
  }
  function showChange(f) {
    if (f.change === null || f.change === undefined) return "-";
    const sign = f.change > 0 ? "+" : f.change < 0 ? "-" : "";
    if (f.unit === "per_mille") return sign + (Math.abs(f.change) / 10).toFixed(1) + " points";
    const rel = f.before ? " (" + (f.change > 0 ? "+" : "") + (100 * f.change / f.before).toFixed(1) + " %)" : "";
    return sign + show(f.unit, Math.abs(f.change)) + rel;
  }

  // A table of a group's figures: before, after, change.
  function figureTable(parent, group) {
    const rows = Object.entries(group).filter(([, f]) => f.before !== null || f.after !== null)
      .map(([key, f]) => Object.assign({ key: key }, f));
    const t = table(parent, [
      { title: "figure", value: f => f.label, text: true },
      { title: "before", value: f => (f.before === null ? -1 : f.before), show: (v, f) => show(f.unit, f.before) },
      { title: "after", value: f => (f.after === null ? -1 : f.after), show: (v, f) => show(f.unit, f.after) },
      { title: "change", value: f => (f.change === null ? 0 : f.change), show: (v, f) => showChange(f) },
    ], rows);
    t.dataset.figures = rows.map(f => f.key).join(" ");
    return t;
  }

  function card(parent, value, what) {
    parent.append(el("div", { class: "card" }, el("div", { class: "v", text: value }), el("div", { class: "k", text: what })));
  }

  function verdicts() {
    const s = section("compare", "Before and after");
    const cards = el("div", { class: "cards" });
    const v = ch.verdict;
    for (const key of ["step_ns", "judged_wait_per_mille", "data_stall_per_mille", "gpu_busy_per_mille"]) {
      const f = v[key];
      if (f && (f.before !== null || f.after !== null)) {
        card(cards, show(f.unit, f.before) + " → " + show(f.unit, f.after), f.label + " (" + showChange(f) + ")");
      }
    }
    card(cards, ch.bound.before + " → " + ch.bound.after, "what holds the job back");
    if (ch.cause.before || ch.cause.after) {
      card(cards, (ch.cause.before || "-") + " → " + (ch.cause.after || "-"), "the batch wait's largest cause");
    }
    s.append(cards);
    figureTable(s, v);
    // Both runs' loop figures on one axis of time.
    const keys = ["step_ns", "batch_wait_ns", "reading_ns", "preprocessing_ns", "handover_ns", "worker_startup_ns",
                  "data_stall_ns", "gpu_busy_ns"]
      .filter(k => v[k] && (v[k].before || v[k].after));
    if (keys.length) {
      s.append(el("h3", { text: "The loop's figures, both runs" }));
      bars(s, keys.map(k => v[k].label), RUNS.map(run => ({
        label: run, color: COLORS[run], data: keys.map(k => v[k][run] || 0),
      })), secs);
    }
    note(s, "Written by " + meta.generator + ". Each run's figures are those of dlprof-dump --summary --format json on it; the change is after minus before.");
  }

  // Both runs' bytes read over their loops (or runs), from each window's start.
  function bandwidth() {
    const s = section("timeline", "I/O bandwidth over the loop, both runs");
    const series = [];
    let span = 0;
    for (const run of RUNS) {
      const lt = C[run].loop_timeline || {};
      if (lt.bin_ns && lt.read_bytes && lt.read_bytes.length) span = Math.max(span, lt.bin_ns * lt.read_bytes.length);
    }
    if (!span) { note(s, "Neither run read anything."); return; }
    const ms = span <= 10e9, unit = ms ? 1e6 : 1e9;
    for (const run of RUNS) {
      const lt = C[run].loop_timeline || {};
      if (!lt.bin_ns) continue;
      series.push({
        label: run + " (" + (lt.window === "loop" ? "loop" : "run") + ", bins of " + secs(lt.bin_ns) + ")", color: COLORS[run],
        data: (lt.read_bytes || []).map((n, i) => ({ x: (i + 0.5) * lt.bin_ns / unit, y: n * 1e9 / lt.bin_ns })),
      });
    }
    timeline(s, series, b => bytes(b) + "/s", "bytes read per second",
             (ms ? "ms" : "seconds") + " from the loop's start (each run's own)", [0, span / unit]);
  }

  // A group per rank or host: its figures' before, after and change.
  function groups(id, title, list, name) {
    const s = section(id, title);
    if (!list.length) { note(s, id === "ranks" ? "No process had a rank in either run." : "No host had ranks."); return; }
    const keys = [];
    for (const g of list) for (const [k, f] of Object.entries(g)) if (f && f.unit && !keys.includes(k)) keys.push(k);
    const columns = [{ title: id === "ranks" ? "rank" : "host", value: g => name(g), text: true },
                     { title: "in", value: g => g.in, text: true }];
    for (const k of keys) {
      const label = list.find(g => g[k])[k].label;
      columns.push({ title: label, value: g => (g[k] && g[k].change !== null ? g[k].change : 0),
                     show: (v, g) => (g[k] ? show(g[k].unit, g[k].before) + " → " + show(g[k].unit, g[k].after) + " (" + showChange(g[k]) + ")" : "-") });
    }
    table(s, columns, list);
  }

  function dataSet() {
    const s = section("data", "The data set's I/O");
    note(s, "Files read that are not code, outputs or the system's (docs/ANALYSIS.md, \"File classes\").");
    figureTable(s, ch.data_set);
  }

  function findings() {
    const s = section("findings", "Findings");
    const lists = [["appeared", "Appeared (after only)"], ["went_away", "Went away (before only)"], ["stayed", "In both"]];
    let any = false;
    for (const [key, title] of lists) {
      const list = ch.findings[key] || [];
      if (!list.length) continue;
      any = true;
      s.append(el("h3", { text: title }));
      for (const f of list) {
        s.append(el("div", { class: "finding", "data-rule": f.rule, "data-change": key },
          el("div", { class: "what", text: f.rule + ": " + f.what }),
          el("div", { class: "try", text: "time it stands for: " + show("ns", f.cost_ns.before) + " → " + show("ns", f.cost_ns.after) })));
      }
    }
    if (!any) note(s, "No finding in either run.");
  }

  function fail(message) {
    document.body.dataset.reportStatus = "error";
    document.getElementById("report").prepend(el("div", { class: "error", text: "The report could not be drawn completely: " + message }));
  }
  window.addEventListener("error", e => fail(e.message));

  document.querySelector("header h1").textContent = "dlprof: two runs side by side";
  verdicts();
  bandwidth();
  findings();
  dataSet();
  groups("ranks", "Per rank", ch.ranks, g => g.key + (g.host ? " (" + g.host + ")" : ""));
  groups("hosts", "Per host", ch.hosts, g => g.host);
  // For tests and tools: how many plots, and what each drew.
  document.body.dataset.charts = K.charts.length;
  for (const c of K.charts) {
    c.canvas.dataset.colored = K.coloredPixels(c.canvas);
    c.canvas.dataset.nonzero = K.nonZero(c);
    c.canvas.dataset.series = c.data.datasets.map(d => d.label).join("|");
    // Values above zero per series: that both runs were drawn.
    c.canvas.dataset.seriesNonzero = c.data.datasets.map(d => d.data.filter(p => (typeof p === "number" ? p : p.y) > 0).length).join("|");
  }
  if (document.body.dataset.reportStatus !== "error") document.body.dataset.reportStatus = "ready";
})();
