// The building blocks of dlprof-dump's HTML report page (report.html): number
// formatting (as the text summary, tools/dump/summary_text.cc, writes them),
// DOM helpers, sortable tables and the plots, drawn by Chart.js with its zoom
// and matrix plugins. report.js uses them to lay out the summary JSON; nothing
// here computes a figure. Loaded before report.js; exports window.dlprofKit.
(function () {
  "use strict";

  // ---- numbers, formatted for people ----
  const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  function bytes(b) {
    if (b === undefined || b === null) return "-";
    let v = Number(b), u = 0;
    while (Math.abs(v) >= 1024 && u < UNITS.length - 1) { v /= 1024; ++u; }
    return u === 0 ? v + " B" : v.toFixed(1) + " " + UNITS[u];
  }
  function secs(ns) {
    if (ns === undefined || ns === null) return "-";
    const v = Number(ns);
    if (Math.abs(v) >= 1e9) return (v / 1e9).toFixed(3) + " s";
    if (Math.abs(v) >= 1e6) return (v / 1e6).toFixed(2) + " ms";
    if (Math.abs(v) >= 1e3) return (v / 1e3).toFixed(1) + " µs";
    return v + " ns";
  }
  function rate(b, ns) { return ns ? bytes(Math.round(b * 1e9 / ns)) + "/s" : "-"; }
  function percent(part, whole) { return whole ? (100 * part / whole).toFixed(1) + " %" : "-"; }
  function count(n) { return n === undefined || n === null ? "-" : Number(n).toLocaleString("en-US"); }

  // A value named `key` in the JSON, formatted by what its name says it is
  // (the summary's keys end in _ns for durations, bytes for sizes).
  function byKey(key, v) {
    if (v === null || v === undefined) return "-";
    if (typeof v === "boolean") return v ? "yes" : "no";
    if (typeof v !== "number") return String(v);
    if (/_ns$/.test(key)) return secs(v);
    if (/bytes/.test(key)) return bytes(v);
    if (/(share|fraction|ratio)$/.test(key)) return (100 * v).toFixed(1) + " %";
    if (/(percent|pct)$/.test(key)) return v.toFixed(1) + " %";
    return Number.isInteger(v) ? count(v) : v.toFixed(3);
  }
  function label(key) { return String(key).replace(/_ns$/, "").replace(/_/g, " "); }

  // ---- DOM ----
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    for (const c of children) if (c !== null && c !== undefined) e.append(c);
    return e;
  }
  function section(id, title) {
    const s = el("section", { id: id }, el("h2", { text: title }));
    document.getElementById("report").append(s);
    document.getElementById("contents").append(el("a", { href: "#" + id, text: title }));
    return s;
  }
  function note(parent, text) { parent.append(el("p", { class: "note", text: text })); }

  // ---- tables ----
  // columns: [{title, value: row => raw value (sorts), show: (raw, row) => text,
  // text: left-aligned}]; shows `limit` rows, and a button for the rest.
  function table(parent, columns, rows, limit) {
    limit = limit || 50;
    const wrap = el("div", { class: "tablewrap" });
    const t = el("table", { "data-rows": rows.length });
    const head = el("tr");
    const body = el("tbody");
    let shown = Math.min(limit, rows.length), order = rows.slice();
    function fill() {
      body.replaceChildren();
      for (const r of order.slice(0, shown)) {
        const tr = el("tr");
        for (const c of columns) {
          const raw = c.value(r);
          const text = c.show ? c.show(raw, r) : typeof raw === "number" ? count(raw) : String(raw);
          tr.append(el("td", { class: c.text ? "text" : "", text: text }));
        }
        body.append(tr);
      }
      more.textContent = shown < order.length ? "show all " + count(order.length) + " rows" : "";
      more.style.display = shown < order.length ? "" : "none";
    }
    columns.forEach((c, i) => {
      let descending = true;
      head.append(el("th", {
        class: c.text ? "text" : "", text: c.title, title: "sort by " + c.title,
        onclick: () => {
          const key = r => c.value(r);
          order.sort((a, b) => {
            const x = key(a), y = key(b);
            const d = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
            return descending ? -d : d;
          });
          descending = !descending;
          fill();
        },
      }));
    });
    t.append(el("thead", {}, head), body);
    wrap.append(t);
    const more = el("button", { class: "more", onclick: () => { shown = order.length; fill(); } });
    parent.append(wrap, more);
    fill();
    return t;
  }

  // ---- plots ----
  const COLORS = ["#2f6fd6", "#e07b28", "#2a9d5b", "#c23b5a", "#7a55c7", "#8c6d31", "#1b9fb0", "#6b7280"];
  const charts = [];

  // Zoom on the x axis: wheel, pinch, drag a box; shift-drag pans;
  // double-click or the button goes back.
  function zoomOptions() {
    return {
      zoom: { wheel: { enabled: true }, pinch: { enabled: true }, drag: { enabled: true }, mode: "x" },
      pan: { enabled: true, mode: "x", modifierKey: "shift" },
      limits: { x: { min: "original", max: "original" } },
    };
  }

  // Draws `config` (a Chart.js configuration) into a new canvas in `parent`.
  // `points` is how many values it plots (written on the canvas for tests).
  function plot(parent, config, points, opts) {
    opts = opts || {};
    const box = el("div", { class: "plot" + (opts.tall ? " tall" : opts.short ? " short" : "") });
    const canvas = el("canvas", { "data-kind": opts.kind || config.type, "data-points": points });
    box.append(canvas);
    const options = config.options = config.options || {};
    options.animation = false;
    options.responsive = true;
    options.maintainAspectRatio = false;
    options.plugins = options.plugins || {};
    if (opts.zoom) {
      options.plugins.zoom = zoomOptions();
      const bar = el("div", { class: "plotbar", text: "zoom: wheel or drag a box on the plot; shift-drag pans" });
      bar.append(el("button", { text: "reset zoom", onclick: () => chart.resetZoom() }));
      parent.append(bar);
    }
    parent.append(box);
    const chart = new Chart(canvas, config);
    if (opts.zoom) canvas.addEventListener("dblclick", () => chart.resetZoom());
    charts.push(chart);
    return chart;
  }

  // Bars of one or more series over labels; `fmt` formats values (axis and
  // hover). Horizontal when opts.horizontal.
  function bars(parent, labels, series, fmt, opts) {
    opts = opts || {};
    const value = opts.horizontal ? "x" : "y";
    const scales = {};
    scales[value] = { beginAtZero: true, stacked: !!opts.stacked, ticks: { callback: fmt } };
    scales[opts.horizontal ? "y" : "x"] = { stacked: !!opts.stacked };
    if (opts.horizontal) scales.y.ticks = { autoSkip: false, callback: (v, i) => shorten(labels[i], 48) };
    let points = 0;
    const datasets = series.map((s, i) => {
      points += s.data.length;
      return { label: s.label, data: s.data, backgroundColor: s.color || COLORS[i % COLORS.length], maxBarThickness: 48 };
    });
    return plot(parent, {
      type: "bar",
      data: { labels: labels, datasets: datasets },
      options: {
        indexAxis: opts.horizontal ? "y" : "x",
        scales: scales,
        plugins: {
          legend: { display: series.length > 1 },
          tooltip: {
            callbacks: {
              title: items => (items.length ? labels[items[0].dataIndex] + (opts.hover ? " (" + opts.hover(items[0].dataIndex) + ")" : "") : ""),
              label: c => c.dataset.label + ": " + fmt(c.raw),
            },
          },
        },
      },
    }, points, { zoom: opts.zoom, tall: opts.tall, short: opts.short, kind: "bar" });
  }

  // Series of {x, y} points over seconds of the run (or over `xTitle`, e.g.
  // steps), on a linear axis with zoom.
  // Up to 120 seconds are bars (one per second), longer series lines.
  // The axis spans the data's x, half a bar either side: left to itself,
  // Chart.js widens a one-point axis to [x - 1, x + 1] (a run shorter than a
  // second began at second -1), and labels only whole x values.
  // `range` ([min, max]) sets the x axis where the points are bins'
  // centres (bins of any width); else bars of unit bins get half a bin of
  // room on each side.
  function timeline(parent, series, fmt, yTitle, xTitle, range) {
    let points = 0;
    const longest = Math.max(0, ...series.map(s => s.data.length));
    const type = longest <= 120 ? "bar" : "line";
    const xs = series.flatMap(s => s.data.map(p => p.x));
    const pad = type === "bar" ? 0.5 : 0;
    const xMin = range ? range[0] : xs.length ? Math.min(...xs) - pad : undefined;
    const xMax = range ? range[1] : xs.length ? Math.max(...xs) + pad : undefined;
    const datasets = series.map((s, i) => {
      points += s.data.length;
      const color = s.color || COLORS[i % COLORS.length];
      return {
        label: s.label, data: s.data, parsing: false, normalized: true, borderColor: color,
        backgroundColor: type === "bar" ? color : color + "40",
        fill: true, pointRadius: 0, borderWidth: type === "bar" ? 0 : 1.5,
      };
    });
    return plot(parent, {
      type: type,
      data: { datasets: datasets },
      options: {
        interaction: { mode: "nearest", axis: "x", intersect: false },
        scales: {
          x: { type: "linear", offset: false, min: xMin, max: xMax,
               title: { display: true, text: xTitle || "seconds from the first event" },
               ticks: { precision: 0, callback: v => (Number.isInteger(v) ? String(v) : "") } },
          y: { beginAtZero: true, title: { display: !!yTitle, text: yTitle || "" }, ticks: { callback: fmt } },
        },
        plugins: {
          decimation: { enabled: type === "line", algorithm: "lttb", samples: 1000 },
          tooltip: {
            callbacks: {
              title: items => (items.length ? (xTitle || "second") + " " + items[0].raw.x : ""),
              label: c => c.dataset.label + ": " + fmt(c.raw.y),
            },
          },
        },
      },
    }, points, { zoom: true, kind: type });
  }

  // A heat map: rows (e.g. ranks) x columns (e.g. steps or seconds), each
  // cell coloured by its value; `cells` is [column, row, value] triples.
  function heatmap(parent, rowLabels, columnLabels, cells, fmt, what) {
    let max = 0;
    for (const c of cells) max = Math.max(max, c[2]);
    const data = cells.map(c => ({ x: c[0], y: c[1], v: c[2] }));
    const nx = columnLabels.length, ny = rowLabels.length;
    const shade = v => {
      const f = max > 0 ? v / max : 0;  // white to dark blue
      const r = Math.round(255 - f * (255 - 22)), g = Math.round(255 - f * (255 - 64)), b = Math.round(255 - f * (255 - 140));
      return "rgb(" + r + "," + g + "," + b + ")";
    };
    return plot(parent, {
      type: "matrix",
      data: {
        datasets: [{
          label: what, data: data, borderWidth: 0,
          backgroundColor: c => shade(c.raw ? c.raw.v : 0),
          width: ({ chart }) => Math.max(1, (chart.chartArea || { width: 0 }).width / nx),
          height: ({ chart }) => Math.max(1, (chart.chartArea || { height: 0 }).height / ny),
        }],
      },
      options: {
        scales: {
          x: { type: "linear", min: -0.5, max: nx - 0.5, offset: false,
               ticks: { callback: v => Number.isInteger(v) ? columnLabels[v] : "" }, grid: { display: false } },
          y: { type: "linear", reverse: true, min: -0.5, max: ny - 0.5, offset: false,
               ticks: { callback: v => Number.isInteger(v) ? rowLabels[v] : "" }, grid: { display: false } },
        },
        plugins: {
          legend: { display: false },
          tooltip: {
            callbacks: {
              title: items => items.length ? rowLabels[items[0].raw.y] + ", " + columnLabels[items[0].raw.x] : "",
              label: c => what + ": " + fmt(c.raw.v),
            },
          },
        },
      },
    }, cells.length, { zoom: true, tall: ny > 16, kind: "matrix" });
  }

  // How many pixels of a drawn canvas have a colour: not white, black or
  // grey, which axes, grid lines and labels are. Tests read it (data-colored).
  function coloredPixels(canvas) {
    const d = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) {
      if (d[i + 3] > 128 && Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 48) ++n;
    }
    return n;
  }

  // How many of a plot's values are above zero (a plot of zeros says
  // nothing). Tests read it (data-nonzero), with its axes' labels.
  function nonZero(chart) {
    let n = 0;
    for (const d of chart.data.datasets) {
      for (const p of d.data) {
        const v = typeof p === "number" ? p : p && (p.v !== undefined ? p.v : p.y);
        if (v > 0) ++n;
      }
    }
    return n;
  }
  function tickLabels(chart, axis) {
    const scale = chart.scales[axis];
    return scale ? scale.ticks.map(t => String(t.label === undefined ? "" : t.label)).filter(l => l !== "") : [];
  }
  // For tests and tools: how many plots, and where each canvas is and what
  // it drew. Called by each script of a page once it has drawn (report.js,
  // then report_whole_run.js, which puts its section first: every box
  // moves). A canvas's pixels are read once (a second read of one makes
  // Chromium warn on the console).
  function markCharts() {
    document.body.dataset.charts = charts.length;
    for (const c of charts) {
      const r = c.canvas.getBoundingClientRect();
      c.canvas.dataset.box = [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height].map(Math.round).join(",");
      if (c.canvas.dataset.colored !== undefined) continue;
      c.canvas.dataset.colored = coloredPixels(c.canvas);
      c.canvas.dataset.nonzero = nonZero(c);
      c.canvas.dataset.xTicks = tickLabels(c, "x").join("|");
    }
  }

  // Findings (the verdict's, or the whole run's from its counters), each
  // with what was found, the rule and the time it stands for, and what to
  // try; `attr` names the attribute that carries each one's rule.
  function findings(parent, list, attr) {
    for (const f of list) {
      const d = el("div", { class: "finding", [attr]: String(f.rule) },
                   el("div", { class: "what", text: String(f.what) }));
      if (f.cost_ns) d.append(el("div", { class: "note", text: f.rule + "; stands for " + secs(f.cost_ns) }));
      if (f.advice) d.append(el("div", { class: "try", text: "Try: " + f.advice }));
      parent.append(d);
    }
  }

  // The tail of a long path, which tells files apart.
  function shorten(s, n) { s = String(s); return s.length <= n ? s : "…" + s.slice(s.length - n + 1); }

  window.dlprofKit = {
    bytes, secs, rate, percent, count, byKey, label, el, section, note, table, plot, bars,
    timeline, heatmap, findings, shorten, coloredPixels, nonZero, tickLabels, markCharts, charts, COLORS,
  };
})();
