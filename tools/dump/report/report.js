// The page script of dlprof-dump's HTML report: reads the summary JSON that
// dlprof-dump embedded in the page (the object `--summary --format json`
// prints; docs/ANALYSIS.md names its keys) and lays it out as sections of
// plots and tables with report_kit.js. The figures are lib/analysis's; the
// only arithmetic here is display: adding a level's per-group counters into
// its total, and shares for labels.
(function () {
  "use strict";
  const K = window.dlprofKit;
  const { bytes, secs, rate, percent, count, byKey, label, el, section, note, table, bars, timeline, heatmap } = K;
  const { rankHistograms, mapSteps, mapOverTime } = window.dlprofRankMap;
  const S = JSON.parse(document.getElementById("dlprof-summary").textContent);
  const meta = JSON.parse(document.getElementById("dlprof-meta").textContent);
  const wall = S.run_end_ns - S.run_start_ns;

  // A level's totals over its operation groups (open, read, write, ...).
  const sum = o => Object.values(o || {}).reduce((a, b) => a + b, 0);
  const ioTime = lv => (lv.io_time_ns !== undefined ? lv.io_time_ns : sum(lv.time_ns));
  const moved = lv => lv.read.bytes + lv.write.bytes;
  const TOP = 15;  // bars in a "top files" plot; the tables list every row

  function card(parent, value, what) {
    parent.append(el("div", { class: "card" }, el("div", { class: "v", text: value }), el("div", { class: "k", text: what })));
  }

  function overview() {
    const s = section("overview", "Overview");
    const cards = el("div", { class: "cards" });
    card(cards, count(S.processes), "processes");
    card(cards, count(S.events), "events");
    card(cards, secs(wall), "run (first event to last)");
    card(cards, bytes(S.run.read.bytes), "read, " + count(S.run.read.ops) + " calls");
    card(cards, bytes(S.run.write.bytes), "written, " + count(S.run.write.ops) + " calls");
    card(cards, secs(ioTime(S.run)), "time in I/O calls, " + count(sum(S.run.ops)) + " calls");
    const data = S.file_classes && S.file_classes.data;
    if (data && data.files) card(cards, bytes(data.read.bytes), "read from the data set (" + count(data.files) + " files)");
    if (S.gpu) {
      card(cards, percent(S.gpu.busy_ns, S.gpu.last_ns - S.gpu.first_ns), "GPU busy in the GPU window");
      card(cards, secs(S.gpu.data_stall_ns) + " (" + percent(S.gpu.data_stall_ns, S.gpu.last_ns - S.gpu.first_ns) + ")",
           "data stall: I/O outstanding, no GPU busy");
    }
    s.append(cards);
    if (S.nested_events) {
      note(s, count(S.nested_events) + " nested calls made inside other traced calls are in the event listing but not counted again here.");
    }
    note(s, "Written by " + meta.generator + ". The figures are those of dlprof-dump --summary --format json on the same input.");
  }

  // The verdict (lib/analysis/findings/verdict.h), where the summary has one: the
  // loop, the shares of it spent waiting for batches, lost to data stall
  // and with the GPU busy, where the I/O time went by role, and the
  // findings, each with its number and what to try.
  function verdict() {
    const v = S.verdict;
    if (!v || typeof v !== "object") return;
    const s = section("verdict", "Verdict");
    const box = el("div", { class: "verdict" });
    s.append(box);  // in the page before its plot is drawn (a plot measures its box)
    const cards = el("div", { class: "cards" });
    const loop = v.loop && typeof v.loop === "object" ? v.loop : null;
    if (loop && (loop.basis === "dataloader" || loop.basis === "steps")) {
      card(cards, secs(loop.ns), "the training loop, " + count(loop.steps) +
           (loop.optimizer_steps ? " optimizer steps" : " batches") +
           (loop.basis === "steps" ? " (no DataLoader: the loop is the optimizer steps)" : "") +
           "; start-up before it " + secs(loop.startup_ns) +
           (loop.startup_restore_ns ? ", restoring a checkpoint " + secs(loop.startup_restore_ns) : ""));
    }
    if (v.batch_wait) {
      card(cards, perMille(v.batch_wait.per_mille), "of the training loop (" + secs(v.batch_wait.loop_ns) + ", " +
           count(v.batch_wait.steps) + " batches" + (v.batch_wait.raised ? ", " + count(v.batch_wait.raised) + " next() raised" : "") + ") waiting for batches: " + secs(v.batch_wait.ns));
    } else if (v.batch_wait_missing) {
      card(cards, "-", "batch wait not measured: " + v.batch_wait_missing);
    }
    if (v.checkpoint) {
      const c = v.checkpoint;
      card(cards, perMille(c.per_mille), "of the loop stopped for " + count(c.writes) + " checkpoint saves (" +
           bytes(c.bytes) + "): " + secs(c.blocking_ns) + "; " + secs(c.background_ns) + " in the background");
    }
    if (v.lockstep) {  // the ranks step together: the shares the verdict judged
      const l = v.lockstep;
      card(cards, perMille(v.batch_wait ? l.wait_per_mille : l.save_per_mille),
           "of a rank's loop (" + secs(l.loop_ns) + ") the " + count(l.ranks) +
           " ranks, which step together, waited for the slowest: its batch waits " +
           secs(l.wait_ns) + (l.save_ns ? ", its saves " + secs(l.save_ns) : ""));
    }
    if (v.data_stall) {
      const share = v.data_stall.loop_per_mille !== undefined ? v.data_stall.loop_per_mille : v.data_stall.per_mille;
      card(cards, perMille(share), "of the loop lost to data stall: " + secs(v.data_stall.ns));
    }
    if (v.gpu_busy) {
      card(cards, perMille(v.gpu_busy.loop_per_mille), "of the loop with the GPU busy: " + secs(v.gpu_busy.ns));
    }
    if (!v.batch_wait && !v.data_stall && !v.batch_wait_missing) {
      card(cards, "-", "no batch region (load_batch) and no GPU work: nothing to measure a wait for data against");
    }
    box.append(cards);
    waitCauses(box, v.batch_wait);
    const findings = Array.isArray(v.findings) ? v.findings : [];
    box.append(el("h3", { text: findings.length ? "Findings" : "Findings: none of the rules fired" }));
    K.findings(box, findings, "data-rule");
    const roles = Array.isArray(v.roles) ? v.roles.filter(r => r.io_ns || r.read_bytes || r.processes) : [];
    if (roles.length) {
      s.append(el("h3", { text: "Where the I/O time went, by role" }));
      bars(s, roles.map(r => r.role), [{ label: "time in I/O calls", data: roles.map(r => r.io_ns) }], secs,
           { horizontal: true, short: true });
      table(s, [
        { title: "role", text: true, value: r => r.role },
        { title: "processes", value: r => r.processes },
        { title: "I/O time", value: r => r.io_ns, show: secs },
        { title: "read", value: r => r.read_bytes, show: bytes },
      ], roles);
    }
  }
  function perMille(n) { return (n / 10).toFixed(1) + " %"; }

  // The batch wait split by cause (lib/analysis/wait_causes.h): what the
  // loader was doing while the loop waited. One bar, its four parts.
  const CAUSES = [["reading_ns", "reading"], ["preprocessing_ns", "preprocessing"], ["handover_ns", "hand-over"],
                  ["worker_startup_ns", "worker start-up"]];
  function hasCauses(x) { return x && CAUSES.some(([key]) => x[key] > 0); }
  function waitCauses(parent, w) {
    if (!hasCauses(w)) return;
    const shares = CAUSES.map(([key, what]) => what + " " + perMille(Math.floor(1000 * w[key] / w.ns))  /* as the text: truncated */);
    parent.append(el("h3", { text: "Where the batch wait went: " + shares.join(", ") }));
    bars(parent, ["batch wait"], CAUSES.map(([key, what]) => ({ label: what, data: [w[key]] })), secs,
         { horizontal: true, stacked: true, short: true });
  }

  // A table of objects: a column per key with a scalar value.
  function objectTable(parent, rows) {
    const keys = [];
    for (const r of rows) for (const [k, v] of Object.entries(r)) if ((v === null || typeof v !== "object") && !keys.includes(k)) keys.push(k);
    table(parent, keys.map(k => ({
      title: label(k), text: rows.some(r => typeof r[k] === "string"),
      value: r => r[k], show: v => byKey(k, v),
    })), rows);
  }

  // The bandwidth over the training loop (the run without one), in the bins
  // lib/analysis fit to its length (loop_timeline): a loop of a second gets
  // bins of milliseconds, not one bar of a per-second plot.
  function timelines() {
    const s = section("timeline", "Over time");
    const lt = S.loop_timeline || {};
    const read = lt.read_bytes || [], written = lt.write_bytes || [];
    if (!read.length || !lt.bin_ns) {
      s.append(el("h3", { text: "I/O bandwidth" }));
      note(s, "No I/O call in the run.");
    } else {
      const span = lt.bin_ns * read.length;
      const ms = span <= 10e9;  // up to 10 s: milliseconds on the axis
      const unit = ms ? 1e6 : 1e9;
      const from = secs(lt.start_ns - S.run_start_ns);
      s.append(el("h3", { text: "I/O bandwidth over the " + (lt.window === "loop" ? "training loop" : "run") +
                                 ": bytes read and written, in bins of " + secs(lt.bin_ns) }));
      // Each bin drawn at its centre, the axis from the window's start.
      const perSecond = n => n * 1e9 / lt.bin_ns;
      const at = i => (i + 0.5) * lt.bin_ns / unit;
      timeline(s, [
        { label: "read", data: read.map((n, i) => ({ x: at(i), y: perSecond(n) })) },
        { label: "written", data: written.map((n, i) => ({ x: at(i), y: perSecond(n) })) },
      ], v => bytes(v) + "/s", "bytes per second",
      (ms ? "ms" : "seconds") + " from the " + (lt.window === "loop" ? "loop's start" : "first event") + " (at " + from + ")",
      [0, span / unit]);
    }
    if (!S.gpu) { note(s, "No GPU activity recorded."); return; }
    const busy = S.gpu_busy_per_second || [];
    s.append(el("h3", { text: "GPU activity: GPU busy time in each second (a rank's devices as one; summed over ranks)" }));
    timeline(s, [
      { label: "GPU busy", data: busy.map((ns, i) => ({ x: i, y: ns })) },
    ], v => secs(v), "GPU busy per second");
  }

  // Per rank: what each rank waited for (batch wait, data stall, straggler
  // loss), its GPU time, its steps (a heat map of rank x step when there
  // are many ranks), and its I/O.
  function ranks() {
    const s = section("ranks", "Per rank");
    const rows = Object.entries(S.ranks || {}).map(([key, r]) => ({ key: key, r: r, lv: r, name: "rank " + key }));
    if (!rows.length) { note(s, "No process had a rank (MPI, or RANK and the like in the environment)."); return; }
    const names = rows.map(x => x.name);
    const many = rows.length > 32;
    // A large job (more ranks than --top): the JSON lists the ranks that
    // waited the longest and maps every rank in rows of ranks (rank_map).
    const map = S.rank_map;
    const some = map ? "the " + rows.length + " ranks that waited the longest" : "";
    if (map) {
      note(s, count(map.ranks) + " ranks: the plots per rank show " + some + " (--top; --details lists every rank); " +
           "the heat maps and the distributions cover every rank" +
           (map.rows.length < map.ranks ? ", " + Math.ceil(map.ranks / map.rows.length) + " ranks a row." : "."));
    }
    const figures = rows.some(x => x.r.batch_wait_ns !== undefined);
    // A job without batch regions and GPU work (an MPI job's ranks) has
    // these figures, all zero: a plot of them would only draw zeros.
    const waits = ["batch_wait_ns", "data_stall_ns", "straggler_loss_ns"];
    const waited = rows.some(x => waits.some(k => x.r[k] > 0));
    if (figures && !waited) {
      note(s, "No batch wait, data stall or straggler loss to show per rank: they are measured against batch regions (" +
           "load_batch, or --batch-region) and GPU work, and the ranks had " +
           (rows.some(x => x.r.gpu_busy_ns) ? "no batch region." : "neither."));
    }
    if (figures && waited) {
      const dist = S.rank_distribution || {};
      const cards = el("div", { class: "cards" });
      for (const [key, what] of [["batch_wait_ns", "batch wait"], ["data_stall_ns", "data stall"], ["straggler_loss_ns", "straggler loss"]]) {
        const d = dist[key];
        if (d) card(cards, secs(d.total_ns), what + " over ranks; per rank min " + secs(d.min_ns) + ", median " + secs(d.median_ns) + ", max " + secs(d.max_ns));
      }
      if (S.slowest_loader_rank !== undefined && S.slowest_loader_rank >= 0) card(cards, "rank " + S.slowest_loader_rank, "slowest loader");
      s.append(cards);
      if (map) rankHistograms(s, map, waits.concat(["io_ns"]));
      s.append(el("h3", { text: "Batch wait, data stall and straggler loss per rank" + (map ? ": " + some : "") }));
      bars(s, names, [
        { label: "batch wait", data: rows.map(x => x.r.batch_wait_ns || 0) },
        { label: "data stall", data: rows.map(x => x.r.data_stall_ns || 0) },
        { label: "straggler loss", data: rows.map(x => x.r.straggler_loss_ns || 0) },
      ], secs, { zoom: many });
      if (rows.some(x => hasCauses(x.r))) {
        s.append(el("h3", { text: "Batch wait per rank by cause: " + CAUSES.map(([, what]) => what).join(", ") }));
        bars(s, names, CAUSES.map(([key, what]) => ({ label: what, data: rows.map(x => x.r[key] || 0) })), secs,
             { zoom: many, stacked: true });
      }
    }
    if (figures) {
      if (rows.some(x => x.r.gpu_busy_ns)) {
        s.append(el("h3", { text: "GPU time per rank: compute, communication, memory, idle (in its GPU window)" }));
        bars(s, names, [
          { label: "compute", data: rows.map(x => x.r.gpu_compute_ns || 0) },
          { label: "communication", data: rows.map(x => x.r.gpu_communication_ns || 0) },
          { label: "memory", data: rows.map(x => x.r.gpu_memory_ns || 0) },
          { label: "idle", data: rows.map(x => x.r.gpu_idle_ns || 0), color: "#c9ced8" },
        ], secs, { zoom: many, stacked: true });
      }
      if (map) {
        mapSteps(s, map);
        mapOverTime(s, map, "read_bytes", "Bytes read per rank over time", bytes, "bytes read");
        mapOverTime(s, map, "gpu_busy_ns", "GPU busy time per rank over time", secs, "GPU busy");
      } else {
        steps(s, rows);
        overTime(s, rows, "read_bytes", "Bytes read per rank over time", bytes, "bytes read");
        overTime(s, rows, "gpu_busy_ns", "GPU busy time per rank over time", secs, "GPU busy");
      }
      const hosts = S.rank_hosts || [];
      if (hosts.length > 1) {
        s.append(el("h3", { text: "Per host: the ranks' batch wait, data stall and straggler loss added up" }));
        if (waited) {
          bars(s, hosts.map(h => h.host), [
            { label: "batch wait", data: hosts.map(h => h.batch_wait_ns) },
            { label: "data stall", data: hosts.map(h => h.data_stall_ns) },
            { label: "straggler loss", data: hosts.map(h => h.straggler_loss_ns) },
          ], secs, { zoom: hosts.length > 32 });
        }
        objectTable(s, hosts);
      }
    }
    if (map && !(figures && waited)) rankHistograms(s, map, ["io_ns", "read_bytes"]);
    s.append(el("h3", { text: "Bytes read and written per rank" + (map ? ": " + some : "") }));
    bars(s, names, [
      { label: "read", data: rows.map(x => x.lv.read ? x.lv.read.bytes : 0) },
      { label: "written", data: rows.map(x => x.lv.write ? x.lv.write.bytes : 0) },
    ], bytes, { zoom: many });
    if (figures) {
      s.append(el("h3", { text: map ? "The " + rows.length + " ranks that waited the longest" : "Every rank" }));
      table(s, [
        { title: "rank", text: true, value: x => x.key },
        { title: "host", text: true, value: x => x.r.host || "" },
        { title: "processes", value: x => x.r.processes },
        { title: "batch wait", value: x => x.r.batch_wait_ns, show: secs },
        { title: "of it GPU idle", value: x => x.r.batch_wait_gpu_idle_ns, show: secs },
        ...CAUSES.map(([key, what]) => ({ title: what, value: x => x.r[key], show: secs })),
        { title: "data stall", value: x => x.r.data_stall_ns, show: secs },
        { title: "straggler loss", value: x => x.r.straggler_loss_ns, show: secs },
        { title: "GPU busy", value: x => x.r.gpu_busy_ns, show: secs },
        { title: "GPU idle", value: x => x.r.gpu_idle_ns, show: secs },
        { title: "I/O time", value: x => x.r.io_ns, show: secs },
        { title: "I/O ops", value: x => x.r.io_ops },
        { title: "read", value: x => x.r.read_bytes, show: bytes },
      ].concat(map ? [] : [{ title: "steps", value: x => (x.r.steps || []).length }]), rows);
    }
  }

  // One series of each rank's timeline (lib/analysis bins it: bin_s seconds
  // a bin, at most 240 bins): a heat map of rank x time past 8 ranks, else a
  // line per rank.
  function overTime(parent, rows, key, title, fmt, what) {
    const series = rows.map(x => (x.r.timeline || {})[key] || []);
    if (!series.some(v => v.some(n => n > 0))) return;
    const bin = (rows.find(x => x.r.timeline) || { r: { timeline: { bin_s: 1 } } }).r.timeline.bin_s;
    parent.append(el("h3", { text: title + (bin > 1 ? " (" + bin + " s a column)" : "") }));
    const n = Math.max(...series.map(v => v.length));
    if (rows.length > 8) {
      const columns = Array.from({ length: n }, (_, i) => (i * bin) + " s");
      const cells = [];
      series.forEach((v, y) => v.forEach((amount, x) => { if (amount > 0) cells.push([x, y, amount]); }));
      heatmap(parent, rows.map(x => x.name), columns, cells, fmt, what);
    } else {
      timeline(parent, rows.map((x, i) => ({ label: x.name, data: series[i].map((amount, t) => ({ x: t * bin, y: amount })) })),
               fmt, what, "seconds from the first event");
    }
  }

  // Per rank and step, the batch wait, then the data stall where there was
  // any (perStep); and, per step, the slowest loader's wait against the
  // median.
  function steps(parent, rows) {
    const numbers = new Set();
    for (const x of rows) for (const st of x.r.steps || []) numbers.add(st.step);
    if (!numbers.size) return;
    const ordered = Array.from(numbers).sort((a, b) => a - b);
    perStep(parent, rows, ordered, "batch_wait_ns", "Batch wait per rank and step", "batch wait");
    if (rows.some(x => (x.r.steps || []).some(st => st.data_stall_ns > 0))) {
      perStep(parent, rows, ordered, "data_stall_ns",
              "Data stall per rank and step (I/O while the rank's GPUs idled)", "data stall");
    }
    const slow = S.slowest_loader_per_step || [];
    if (slow.length) {
      parent.append(el("h3", { text: "Slowest loader per step: its batch wait and the median over ranks" }));
      bars(parent, slow.map(x => "step " + x.step), [
        { label: "slowest rank's wait", data: slow.map(x => x.batch_wait_ns) },
        { label: "median wait", data: slow.map(x => x.median_batch_wait_ns) },
      ], secs, { zoom: slow.length > 32, hover: i => "rank " + slow[i].rank + (slow[i].host ? " on " + slow[i].host : "") });
    }
  }

  // One figure of the ranks' steps (`field` of each steps[] entry): a heat
  // map of rank x step past 8 ranks (steps binned so that the map stays at
  // most ~60,000 cells), else a line per rank.
  function perStep(parent, rows, ordered, field, title, what) {
    const column = new Map(ordered.map((n, i) => [n, i]));
    parent.append(el("h3", { text: title }));
    if (rows.length > 8) {
      const per = Math.max(1, Math.ceil(ordered.length * rows.length / 60000));
      const columns = [];
      for (let i = 0; i < ordered.length; i += per) {
        const last = ordered[Math.min(i + per, ordered.length) - 1];
        columns.push(per === 1 ? "step " + ordered[i] : "steps " + ordered[i] + "-" + last);
      }
      const sums = new Map();
      rows.forEach((x, y) => {
        for (const st of x.r.steps || []) {
          const key = Math.floor(column.get(st.step) / per) + "," + y;
          sums.set(key, (sums.get(key) || 0) + (st[field] || 0));
        }
      });
      const cells = Array.from(sums, ([key, v]) => key.split(",").map(Number).concat([v]));
      if (per > 1) note(parent, "Each column adds up " + per + " consecutive steps.");
      heatmap(parent, rows.map(x => x.name), columns, cells, secs, what);
    } else {
      timeline(parent, rows.map(x => ({ label: x.name, data: (x.r.steps || []).map(st => ({ x: st.step, y: st[field] || 0 })) })),
               secs, what, "step");
    }
  }

  function regions() {
    if (!S.regions || !S.regions.length) return;
    const s = section("regions", "Per region (epochs, steps)");
    note(s, "Outermost regions; I/O busy is the union of the calls' time; data stall is I/O outstanding while no GPU was busy.");
    const names = S.regions.map(r => (r.outside ? "(outside regions)" : r.name));
    bars(s, names, [
      { label: "I/O busy", data: S.regions.map(r => r.io_busy_ns) },
      { label: "data stall", data: S.regions.map(r => r.stall_ns) },
    ], secs, { zoom: S.regions.length > 32 });
    table(s, [
      { title: "region", text: true, value: r => (r.outside ? "(outside regions)" : r.name) },
      { title: "instances", value: r => r.instances },
      { title: "time", value: r => r.region_ns, show: secs },
      { title: "I/O ops", value: r => r.io_ops },
      { title: "I/O busy", value: r => r.io_busy_ns, show: secs },
      { title: "read", value: r => r.read_bytes, show: bytes },
      { title: "written", value: r => r.write_bytes, show: bytes },
      { title: "data stall", value: r => r.stall_ns, show: secs },
    ], S.regions);
  }

  function sizes() {
    const s = section("sizes", "Access sizes");
    note(s, "Calls per size bin (bytes asked for), the whole run; bins as Darshan's.");
    const bins = Object.keys(S.run.read.histogram);
    const series = [];
    if (S.run.read.ops) series.push({ label: "reads", data: bins.map(b => S.run.read.histogram[b]) });
    if (S.run.write.ops) series.push({ label: "writes", data: bins.map(b => S.run.write.histogram[b]), color: K.COLORS[1] });
    if (!series.length) { note(s, "No read or write call."); return; }
    bars(s, bins, series, count);
  }

  function files() {
    const s = section("files", "Files");
    const rows = Object.entries(S.files || {}).map(([path, lv]) => ({ path: path, lv: lv }));
    if (!rows.length) { note(s, "No file was accessed."); return; }
    const classes = Object.entries(S.file_classes || {}).filter(([, c]) => c.files + (c.directories || 0) > 0).map(([name, c]) => ({ name: name, lv: c }));
    if (classes.length) {
      s.append(el("h3", { text: "Files by class" }));
      note(s, "The data set is what the training processes read; code is Python sources and bytecode and shared libraries; outputs and checkpoints are written; system and launcher files are the rest (docs/ANALYSIS.md, File classes).");
      bars(s, classes.map(c => c.name), [
        { label: "read", data: classes.map(c => c.lv.read.bytes) },
        { label: "written", data: classes.map(c => c.lv.write.bytes) },
      ], bytes);
      const cols = levelColumns("class", c => c.name);
      cols.splice(1, 0, { title: "files", value: c => c.lv.files },
                  { title: "directories", value: c => c.lv.directories || 0 });
      table(s, cols, classes);
    }
    // The data set first: its top files, then the others' (imports, caches).
    const data = rows.filter(r => r.lv.class === "data"), rest = rows.filter(r => r.lv.class !== "data");
    for (const [list, what] of [[data, "data files"], [rest, "other files (code, outputs, system)"]]) {
      const byTime = list.filter(r => ioTime(r.lv) > 0).sort((a, b) => ioTime(b.lv) - ioTime(a.lv)).slice(0, TOP);
      const byBytes = list.filter(r => moved(r.lv) > 0).sort((a, b) => moved(b.lv) - moved(a.lv)).slice(0, TOP);
      if (!byTime.length && !byBytes.length) continue;
      const grid = el("div", { class: "grid2" });
      const left = el("div", {}, el("h3", { text: "Top " + what + " by time in I/O calls" }));
      const right = el("div", {}, el("h3", { text: "Top " + what + " by bytes moved" }));
      grid.append(left, right);
      s.append(grid);
      if (byTime.length) bars(left, byTime.map(r => r.path), [{ label: "I/O time", data: byTime.map(r => ioTime(r.lv)) }], secs, { horizontal: true, tall: true });
      if (byBytes.length) {
        bars(right, byBytes.map(r => r.path), [
          { label: "read", data: byBytes.map(r => r.lv.read.bytes) },
          { label: "written", data: byBytes.map(r => r.lv.write.bytes) },
        ], bytes, { horizontal: true, tall: true });
      }
    }
    const cut = (S.left_out || {}).files || 0;
    s.append(el("h3", { text: (cut ? "Listed files" : "Every file") + " (the data set first, then by bytes moved; click a column to sort)" }));
    if (cut) {
      note(s, "Each class's top files by bytes moved and by I/O time; " + count(cut) + " more files are in the class totals above " +
           "(dlprof-dump --details lists every file). Directories are no rows.");
    }
    const order = { data: 0, outputs: 1, code: 2, system: 3, other: 4 };
    const cols = levelColumns("file", r => r.path);
    cols.splice(1, 0, { title: "class", text: true, value: r => r.lv.class || "" });
    table(s, cols.concat(patternColumns()), rows.sort((a, b) =>
      (order[a.lv.class] ?? 5) - (order[b.lv.class] ?? 5) || moved(b.lv) - moved(a.lv)));
  }

  function gpu() {
    const s = section("gpu", "GPU");
    if (!S.gpu) { note(s, "No GPU activity recorded."); return; }
    const g = S.gpu, window_ns = g.last_ns - g.first_ns;
    note(s, "GPU window " + secs(window_ns) + "; I/O outstanding " + secs(g.io_outstanding_ns) + "; data stall " +
         secs(g.data_stall_ns) + " (" + percent(g.data_stall_ns, window_ns) + " of the window) with I/O outstanding and no GPU busy.");
    const names = g.devices.map(d => "device " + d.device);
    bars(s, names, [
      { label: "busy", data: g.devices.map(d => d.busy_ns) },
      { label: "idle", data: g.devices.map(d => d.idle_ns) },
      { label: "data stall", data: g.devices.map(d => d.stall_ns) },
    ], secs);
    table(s, [
      { title: "device", value: d => d.device },
      { title: "busy", value: d => d.busy_ns, show: secs },
      { title: "idle", value: d => d.idle_ns, show: secs },
      { title: "data stall", value: d => d.stall_ns, show: secs },
      { title: "kernels", value: d => d.kernels },
      { title: "copies", value: d => d.copies },
      { title: "copy bytes", value: d => d.copy_bytes, show: bytes },
      { title: "memsets", value: d => d.memsets },
    ], g.devices);
    const grid = el("div", { class: "grid2" });
    s.append(grid);
    for (const [what, list] of [["file", g.stall_by_file], ["process", g.stall_by_process]]) {
      const d = el("div", {}, el("h3", { text: "Data stall by " + what + " (each call's own share)" }));
      grid.append(d);
      if (!list.length) { note(d, "none"); continue; }
      const top = list.slice(0, TOP);
      bars(d, top.map(x => x[0]), [{ label: "stall", data: top.map(x => x[1]) }], secs, { horizontal: true });
      table(d, [{ title: what, text: true, value: x => x[0] }, { title: "stall", value: x => x[1], show: secs }], list);
    }
  }

  // The columns of a level (run, rank, process, file): who, operations by
  // group, time, bytes and bandwidth.
  function levelColumns(title, name) {
    const groups = Object.keys(S.run.ops);
    return [{ title: title, text: true, value: name }]
      .concat(groups.map(g => ({ title: g, value: r => r.lv.ops[g] })))
      .concat([
        { title: "I/O time", value: r => ioTime(r.lv), show: secs },
        { title: "bytes read", value: r => r.lv.read.bytes, show: bytes },
        { title: "read in calls", value: r => (r.lv.read.time_ns ? r.lv.read.bytes / r.lv.read.time_ns : 0), show: (v, r) => rate(r.lv.read.bytes, r.lv.read.time_ns) },
        { title: "bytes written", value: r => r.lv.write.bytes, show: bytes },
        { title: "write in calls", value: r => (r.lv.write.time_ns ? r.lv.write.bytes / r.lv.write.time_ns : 0), show: (v, r) => rate(r.lv.write.bytes, r.lv.write.time_ns) },
        { title: "small ops", value: r => r.lv.read.small_ops + r.lv.write.small_ops },
        { title: "errors", value: r => r.lv.errors },
      ]);
  }
  function patternColumns() {
    const cols = [];
    for (const dir of ["read", "write"]) {
      cols.push({ title: dir + " consec.", value: r => r.lv[dir].consecutive },
                { title: dir + " seq.", value: r => r.lv[dir].sequential },
                { title: dir + " random", value: r => r.lv[dir].random },
                { title: dir + " common sizes", text: true, value: r => r.lv[dir].common_sizes.map(p => p[0] + "×" + p[1]).join(" ") });
    }
    return cols;
  }

  function levels() {
    const s = section("tables", "Run, ranks and processes");
    note(s, "The levels of the text summary; bandwidth over the I/O window divides by the time from the row's first I/O call to its last.");
    const rows = [{ name: "run", lv: S.run }];
    if (S.ranks && !Array.isArray(S.ranks)) for (const [r, lv] of Object.entries(S.ranks)) rows.push({ name: "rank " + r, lv: lv });
    for (const [key, lv] of Object.entries(S.processes_stats || {})) rows.push({ name: key, lv: lv, process: true });
    const cols = levelColumns("level", r => r.name);
    cols.splice(1, 0,
      { title: "host", text: true, value: r => (r.process ? r.lv.host : "") },
      { title: "pid", value: r => (r.process ? r.lv.pid : ""), show: v => (v === "" ? "" : String(v)) },
      { title: "rank", value: r => (r.process ? r.lv.rank : ""), show: v => (v === "" ? "" : String(v)) });
    const window_ns = lv => (lv.last_ns > lv.first_ns ? lv.last_ns - lv.first_ns : 0);
    cols.push({ title: "I/O window", value: r => window_ns(r.lv), show: secs },
              { title: "read over the window", value: r => r.lv.read.bytes, show: (v, r) => rate(v, window_ns(r.lv)) },
              { title: "written over the window", value: r => r.lv.write.bytes, show: (v, r) => rate(v, window_ns(r.lv)) });
    table(s, cols.concat(patternColumns()), rows);
  }

  function lists() {
    const s = section("lists", "Files, slowest calls, call sites");
    // The lists hold their top entries (--top); left_out counts the rest.
    const cut = S.left_out || {};
    const more = key => (cut[key] ? " (the top " + count(S[key].length) + " shown; dlprof-dump --details or --top N for more)" : "");
    s.append(el("h3", { text: "Files opened and never read (most opened first): " + count(S.never_read.length + (cut.never_read || 0)) + more("never_read") }));
    if (S.never_read.length) table(s, [{ title: "path", text: true, value: p => p }], S.never_read);
    s.append(el("h3", { text: "Files read more than once (re-reads, e.g. epochs): " + count(S.rereads.length + (cut.rereads || 0)) + more("rereads") }));
    if (S.rereads.length) {
      table(s, [{ title: "times read", value: r => r[1], show: v => v.toFixed(1) + "×" }, { title: "path", text: true, value: r => r[0] }], S.rereads);
    }
    s.append(el("h3", { text: "Slowest operations" }));
    table(s, [
      { title: "duration", value: o => o.dur_ns, show: secs },
      { title: "call", text: true, value: o => o.name },
      { title: "path", text: true, value: o => o.path },
      { title: "offset", value: o => o.offset },
      { title: "size", value: o => o.size, show: bytes },
      { title: "pid", value: o => o.pid, show: String },
      { title: "tid", value: o => o.tid, show: String },
    ], S.slowest);
    const mpi = S.run.mpi;
    if (mpi.collective_ops + mpi.independent_ops > 0) {
      s.append(el("h3", { text: "MPI-IO" }));
      note(s, "collective: " + count(mpi.collective_ops) + " ops, " + bytes(mpi.collective_bytes) + "; independent: " +
           count(mpi.independent_ops) + " ops, " + bytes(mpi.independent_bytes) + "; imbalance (max rank bytes / mean): " + S.mpi_imbalance.toFixed(2));
    }
    const sites = S.call_sites || {};
    for (const [key, title] of [["by_time", "Top call sites by I/O time"], ["by_bytes", "Top call sites by bytes"], ["by_module", "Libraries that did the I/O, by bytes"]]) {
      if (!sites[key] || !sites[key].length) continue;
      s.append(el("h3", { text: title }));
      table(s, [
        { title: "site", text: true, value: c => c.site },
        { title: "time", value: c => c.time_ns, show: secs },
        { title: "bytes", value: c => c.bytes, show: bytes },
        { title: "ops", value: c => c.ops },
      ], sites[key]);
    }
    if (S.clocks) {
      s.append(el("h3", { text: "Clock domains (put on one time base through their " + S.clocks.method + ")" }));
      objectTable(s, S.clocks.domains);
    }
  }

  function fail(message) {
    document.body.dataset.reportStatus = "error";
    document.getElementById("report").prepend(el("div", { class: "error", text: "The report could not be drawn completely: " + message }));
  }
  window.addEventListener("error", e => fail(e.message));

  // What of the input could not be decoded, or the tracer dropped as it
  // recorded (the summary's "input"), above everything: a report kept without
  // dlprof-dump's stderr must not pass partial figures off as whole.
  function inputLoss() {
    const i = S.input;
    if (!i || i.complete) return;
    const parts = [];
    const part = (n, one, many) => { if (n) parts.push(count(n) + " " + (n === 1 ? one : many)); };
    part(i.inputs_without_traces, "input without traces", "inputs without traces");
    part(i.unreadable_traces, "trace unreadable", "traces unreadable");
    part(i.damaged_blocks, "damaged block", "damaged blocks");
    let text = parts.length ? "Input not all decoded: " + parts.join(", ") : "";
    const lost = !i.uncounted_blocks ? count(i.events_lost) + " events lost"
      : i.events_lost ? "at least " + count(i.events_lost) + " events lost" : "events lost not known";
    if (i.damaged_blocks) text += " (" + lost + ")";
    const dropped = i.events_dropped || 0;
    if (dropped) text += (text ? "; " : "") + count(dropped) + (dropped === 1 ? " event" : " events") + " dropped while tracing";
    text += ". The figures are of what " + (parts.length ? "could be decoded" : "was recorded") + "; dlprof-dump's messages name each file.";
    document.getElementById("report").prepend(el("div", { class: "input-loss", id: "input-loss", text: text }));
  }

  inputLoss();
  verdict();  // the answer first
  overview();
  timelines();
  ranks();
  regions();
  sizes();
  files();
  gpu();
  levels();
  lists();
  K.markCharts();
  document.body.dataset.builtMs = Math.round(performance.now());  // from navigation start
  if (document.body.dataset.reportStatus !== "error") document.body.dataset.reportStatus = "ready";
})();
