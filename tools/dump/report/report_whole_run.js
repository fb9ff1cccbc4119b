// The whole run of a bounded trace (DLPROF_KEEP) in dlprof-dump's HTML
// report: the counters of every interval over time (the summary JSON's
// `whole_run.points`, lib/analysis/json/whole_run_json.h) with the windows
// whose full events the rest of the page is about marked, so that a reader
// sees the whole run first and never takes a window's figures for it. It
// runs after report.js (dlprof-dump adds it to bounded traces' reports
// only, so that every other report stays as it was) and puts its section
// first.
(function () {
  "use strict";
  const { bytes, secs, percent, count, el, section, note, table, timeline, findings, markCharts } = window.dlprofKit;

  function wholeRun(S) {
    const w = S.whole_run;
    if (!w) return;
    const s = section("whole-run", "Whole run, from counters (DLPROF_KEEP)");
    s.parentNode.prepend(s);
    const cards = el("div", { class: "cards" });
    const card = (v, k) => cards.append(el("div", { class: "card" }, el("div", { class: "v", text: v }), el("div", { class: "k", text: k })));
    card(secs(w.end_ns - w.start_ns), "run, " + count(w.processes) + " processes");
    card(count(w.io.calls), "I/O calls");
    card(bytes(w.io.read_bytes), "read, " + count(w.io.reads) + " calls");
    // A loop of steps whose wait the counters cannot see (whole_run_verdict.h):
    // its measured share is no batch wait, and the note below says why.
    const unmeasured = w.verdict && w.verdict.batch_wait_missing;
    if (w.batches && !unmeasured) card(percent(w.batch_wait_ns, w.loop_ns), "batch wait of the loop (" + count(w.batches) + " batches)");
    const c = w.causes;
    const names = { reading: "reading", preprocessing: "preprocessing", handover: "hand-over", worker_startup: "worker start-up" };
    const parts = c ? Object.keys(names).filter(k => c[k + "_ns"] > 0) : [];
    if (w.batches && parts.length && !unmeasured) {
      const top = parts.reduce((a, b) => (c[b + "_ns"] > c[a + "_ns"] ? b : a));
      const all = Object.keys(names).reduce((t, k) => t + c[k + "_ns"], c.unsplit_ns);
      card(percent(c[top + "_ns"], all), "of the batch wait " + names[top]);
    }
    // The worst point: where the loop waited the largest share of its time.
    const worst = w.worst_point === null || w.worst_point === undefined ? null : w.points[w.worst_point];
    if (worst && worst.batch_wait_ns && w.points.length > 1 && !unmeasured) {
      card(percent(worst.batch_wait_ns, worst.waiting_ns),
           "batch wait at its worst, " + secs(worst.start_ns - w.start_ns) + " - " + secs(worst.end_ns - w.start_ns) +
           (worst.causes.cause ? " (mostly " + names[worst.causes.cause] + ")" : ""));
    }
    if (w.steps) card(count(w.steps), "optimizer steps");
    // The GPU's busy time from the counters' GPU records against the loop
    // (the GPU's own window where the run has none), as the verdict's text
    // line gives it; and the data stall from the data stall records (null
    // from a writer without them) against the same.
    const v = w.verdict;
    const basis = v && (v.batch_wait || v.optimizer_steps) ? "the loop" : "the GPU's window";
    if (v && v.gpu_busy) {
      card((v.gpu_busy.loop_per_mille / 10).toFixed(1) + " %", "of " + basis + " with the GPU busy: " + secs(v.gpu_busy.ns));
    }
    if (v && v.data_stall) {
      card((v.data_stall.loop_per_mille / 10).toFixed(1) + " %",
           "of " + basis + " with I/O outstanding and the GPU idle: " + secs(v.data_stall.ns));
    }
    card(secs(w.kept_event_ns), "kept in full (the rest of this page)");
    s.append(cards);
    if (unmeasured) note(s, "Batch wait not measured: " + unmeasured);
    // The whole run's verdict from the counters (whole_run_verdict.h): its
    // findings, by the verdict's rules.
    if (v && v.bound !== "unknown") {
      const list = Array.isArray(v.findings) ? v.findings : [];
      s.append(el("h3", { text: list.length ? "Findings, whole run" : "Findings, whole run: none of the rules fired" }));
      findings(s, list, "data-whole-run-rule");
    }
    // Each point at its middle, per second; the kept windows as a series
    // that is 1 where full events were kept.
    const at = p => ((p.start_ns + p.end_ns) / 2 - w.start_ns) / 1e9;
    const per = (p, v) => (p.end_ns > p.start_ns ? v * 1e9 / (p.end_ns - p.start_ns) : 0);
    const span = "seconds from the run's first interval; a point every " + secs(w.point_ns);
    s.append(el("h3", { text: "Bytes read per second, all processes" }));
    timeline(s, [{ label: "read", data: w.points.map(p => ({ x: at(p), y: per(p, p.read_bytes) })) }],
             v => bytes(v) + "/s", "bytes per second", span);
    if (w.gpu_busy_ns !== null && w.gpu_busy_ns !== undefined) {
      s.append(el("h3", { text: "GPU busy time per second, all processes" }));
      timeline(s, [{ label: "GPU busy", data: w.points.map(p => ({ x: at(p), y: per(p, p.gpu_busy_ns) })) }],
               v => secs(v) + "/s", "GPU busy per second", span);
    }
    s.append(el("h3", { text: "Batch wait by cause (share of the waiting processes' time), kept windows marked" }));
    const kept = [];
    for (const k of w.kept) {
      kept.push({ x: (k.from_ns - w.start_ns) / 1e9, y: 1 }, { x: (k.to_ns - w.start_ns) / 1e9, y: 1 });
    }
    const share = (p, v) => (p.waiting_ns > 0 ? v / p.waiting_ns : 0);
    const series = [{ label: "batch wait", data: w.points.map(p => ({ x: at(p), y: share(p, p.batch_wait_ns) })) }];
    for (const k of Object.keys(names)) {
      if (w.points.some(p => p.causes[k + "_ns"] > 0)) {
        series.push({ label: names[k], data: w.points.map(p => ({ x: at(p), y: share(p, p.causes[k + "_ns"]) })) });
      }
    }
    series.push({ label: "kept window (from, to)", data: kept });
    timeline(s, series, v => (100 * v).toFixed(1) + " %", "share of the time", span);
    if (w.kept.length) {
      s.append(el("h3", { text: "Windows kept whole" }));
      table(s, [
        { title: "pid", value: k => k.pid },
        { title: "host", text: true, value: k => k.host },
        { title: "from", value: k => k.from_ns - w.start_ns, show: secs },
        { title: "to", value: k => k.to_ns - w.start_ns, show: secs },
        { title: "reason", text: true, value: k => k.reason },
      ], w.kept);
    }
    note(s, "The sections below are about the kept windows' full events only: " + secs(w.kept_event_ns) + " of the run.");
  }

  wholeRun(JSON.parse(document.getElementById("dlprof-summary").textContent));
  markCharts();
})();
