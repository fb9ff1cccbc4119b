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
  const { bytes, secs, percent, count, el, section, note, table, timeline } = window.dlprofKit;

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
    if (w.batches) card(percent(w.batch_wait_ns, w.loop_ns), "batch wait of the loop (" + count(w.batches) + " batches)");
    const c = w.causes;
    const names = { reading: "reading", preprocessing: "preprocessing", handover: "hand-over", worker_startup: "worker start-up" };
    const parts = c ? Object.keys(names).filter(k => c[k + "_ns"] > 0) : [];
    if (w.batches && parts.length) {
      const top = parts.reduce((a, b) => (c[b + "_ns"] > c[a + "_ns"] ? b : a));
      const all = Object.keys(names).reduce((t, k) => t + c[k + "_ns"], c.unsplit_ns);
      card(percent(c[top + "_ns"], all), "of the batch wait " + names[top]);
    }
    if (w.steps) card(count(w.steps), "optimizer steps");
    card(secs(w.kept_event_ns), "kept in full (the rest of this page)");
    s.append(cards);
    // Each interval at its middle, per second; the kept windows as a series
    // that is 1 where full events were kept.
    const at = p => ((p.start_ns + p.end_ns) / 2 - w.start_ns) / 1e9;
    const per = (p, v) => (p.end_ns > p.start_ns ? v * 1e9 / (p.end_ns - p.start_ns) : 0);
    s.append(el("h3", { text: "Bytes read per second, per process and interval" }));
    timeline(s, [{ label: "read", data: w.points.map(p => ({ x: at(p), y: per(p, p.read_bytes) })) }],
             v => bytes(v) + "/s", "bytes per second", "seconds from the run's first interval");
    s.append(el("h3", { text: "Batch wait per interval (share of the interval), kept windows marked" }));
    const kept = [];
    for (const k of w.kept) {
      kept.push({ x: (k.from_ns - w.start_ns) / 1e9, y: 1 }, { x: (k.to_ns - w.start_ns) / 1e9, y: 1 });
    }
    timeline(s, [
      { label: "batch wait", data: w.points.map(p => ({ x: at(p), y: p.end_ns > p.start_ns ? p.batch_wait_ns / (p.end_ns - p.start_ns) : 0 })) },
      { label: "kept window (from, to)", data: kept },
    ], v => (100 * v).toFixed(1) + " %", "share of the interval", "seconds from the run's first interval");
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
})();
