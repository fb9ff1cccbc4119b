#!/usr/bin/python3
"""DLIO's own figures (dlio_truth.py) beside dlprof's verdict
(`dlprof-dump --summary --format json`), with the ratio dlprof / DLIO, for
one run of bench/dlio/run_dlio.py; also runnable alone on a run's folder
(after a rebuild of dlprof, to see the new verdict on the same traces):

    bench/dlio/compare.py RUN_DIR [--dump build/tools/dlprof-dump]

RUN_DIR holds `out/` (DLIO's output folder) and `trace/` (DLPROF_DIR); the
summary is made anew when --dump is given, else read from summary.json.
Writes RUN_DIR/compare.json and prints the table.

What is compared with what (the meanings are in dlio_truth.py's note):
* batch wait: DLIO's summed `load` (its clock around each next()) against
  `verdict.batch_wait.ns`, per rank against `ranks[r].batch_wait_ns`;
* steps: DLIO's steps against `verdict.batch_wait.steps` (dlprof counts the
  call that ends each epoch as a batch request: N steps, E epochs give N + E);
* share: DLIO's wait over its loop (first epoch's start to last epoch's end)
  and over its AU denominator, against `batch_wait.per_mille`; DLIO's AU and
  1 - AU beside it;
* loop: DLIO's loop against `verdict.loop.ns` (summed over ranks, as dlprof);
* each epoch's first wait (DLIO: it holds iter(DataLoader), the workers'
  start or resume) against dlprof's step at the same place, where the step
  lists line up, and `worker_startup_ns` where the verdict has it;
* checkpoints: DLIO's save durations (count, sum, per rank) against
  `verdict.checkpoint` (`writes`, `ns`, `blocking_ns`, `background_ns`,
  `bytes`) where the verdict has it.
"""

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dlio_truth import run_truth  # noqa: E402

NS = 1e-9


def _ratio(dlprof, dlio):
    if dlprof is None or dlio is None or dlio == 0:
        return None
    return dlprof / dlio


def summarize(dump, trace_dir):
    """(summary JSON, the text summary's first line) of the trace folder."""
    js = subprocess.run([dump, "--summary", "--format", "json", trace_dir],
                        capture_output=True, text=True, check=True).stdout
    text = subprocess.run([dump, "--summary", trace_dir], capture_output=True, text=True,
                          check=True).stdout
    return json.loads(js), (text.splitlines() or [""])[0]


def _line_up(rank_steps, truth_rank):
    """dlprof's waits at the start of each epoch (its iter(loader) and first
    batch, as DLIO's first step holds both) and its epoch-closing calls, by
    each wait's `request` (iter, batch, end); None where they do not line up
    with DLIO's epochs."""
    firsts, closing, pending = [], [], 0.0
    for s in rank_steps:
        ns = s["batch_wait_ns"] * NS
        if s.get("request") == "iter":
            pending += ns
        elif s.get("request") == "end":
            closing.append(ns)
        elif pending or not firsts:
            firsts.append(pending + ns)
            pending = 0.0
    if len(firsts) != len(truth_rank["epochs"]):
        return None, None
    return firsts, closing or None


def compare(truth, summary, headline):
    v = summary.get("verdict", {}) or {}
    bw = v.get("batch_wait") or {}
    loop = v.get("loop") or {}
    ck = v.get("checkpoint")
    job = truth["job"]
    rows = []

    def row(name, dlio, dlprof, note=""):
        rows.append({"figure": name, "dlio": dlio, "dlprof": dlprof,
                     "ratio": _ratio(dlprof, dlio) if isinstance(dlio, (int, float))
                     and isinstance(dlprof, (int, float)) else None, "note": note})

    row("batch wait (s)", job["wait_s"], bw.get("ns", 0) * NS if bw else None)
    regions = {r.get("name"): r for r in summary.get("regions") or [] if not r.get("outside")}
    if "load_batch" in regions:
        # Not the verdict: the trace's own regions, to show where a gap comes
        # from. DLIO's wait holds iter(DataLoader) (dlprof's loader_iter) too.
        both = regions["load_batch"]["region_ns"] + regions.get("loader_iter", {}).get("region_ns", 0)
        row("  regions load_batch + loader_iter (s)", job["wait_s"], both * NS,
            f"the trace's regions, not the verdict: load_batch {regions['load_batch']['region_ns'] * NS:.3f} s "
            f"x {regions['load_batch']['instances']}, loader_iter "
            f"{regions.get('loader_iter', {}).get('region_ns', 0) * NS:.3f} s")
    row("batch waits (steps)", job["steps"], bw.get("steps") if bw else None,
        "batches received (iter(loader) and each epoch's closing call are waits of their own)")
    row("batch wait / loop (%)", job["wait_share_of_loop_pct"],
        bw["per_mille"] / 10.0 if bw and bw.get("per_mille") is not None else None,
        f"DLIO: wait / AU denominator {job['wait_share_pct']:.1f} %" if job["wait_share_pct"] is not None else "")
    row("loop (s)", job["loop_s"], loop.get("ns", 0) * NS if loop else None,
        f"DLIO: first epoch's start to last one's end (AU denominator {job['train_s']:.3f} s); "
        f"dlprof basis {loop.get('basis')}")
    au, pooled = job["au_headline_pct"], job["au_pooled_pct"]
    row("100 - AU (%)", 100.0 - pooled if pooled is not None else None,
        bw["per_mille"] / 10.0 if bw and bw.get("per_mille") is not None else None,
        (f"DLIO: 100 - its pooled AU (compute / AU denominator); headline AU {au:.2f} % (mean of the "
         "epochs' AUs); holds barriers and bookkeeping besides the wait") if au is not None else "")
    row("compute + barriers + bookkeeping (s)", job["compute_s"] + job["other_s"], None,
        f"compute {job['compute_s']:.3f} s, barriers and bookkeeping {job['other_s']:.3f} s")
    if bw:
        causes = {k: bw.get(k) for k in ("reading_ns", "preprocessing_ns", "handover_ns", "worker_startup_ns")}
        row("wait causes (dlprof)", None, None,
            ", ".join(f"{k[:-3]} {val * NS:.3f} s" for k, val in causes.items() if val is not None)
            + f"; cause {bw.get('cause')}")
        if bw.get("worker_startup_ns") is not None:
            firsts = sum(sum(e["first_wait_s"] or 0 for e in t["epochs"]) for t in truth["ranks"].values())
            row("worker start-up <= first waits (s)", firsts, bw["worker_startup_ns"] * NS,
                "DLIO's first wait of each epoch bounds the start-up from above")
    if job["checkpoints"]:
        row("checkpoints (rank 0's saves)", job["checkpoint_writes"], ck.get("writes") if ck else None)
        r0 = truth["ranks"].get(0)
        row("checkpoint time (s)", job["checkpoint_s"], ck.get("ns", 0) * NS if ck else None,
            "DLIO: its save durations, all ranks" + (f" (rank 0: {r0['checkpoint_s']:.4f} s)" if r0 else ""))
        row("checkpoint blocking (s)", job["checkpoint_s"], ck.get("blocking_ns", 0) * NS if ck else None,
            "DLIO saves synchronously: the loop waits for all of each save")
        files = truth.get("checkpoint_files")
        if files:
            row("checkpoint bytes", files["bytes"], ck.get("bytes") if ck else None,
                f"the {files['files']} files DLIO wrote, as stat() sizes them; DLIO's own "
                f"checkpoint_size x saves: {job['checkpoint_bytes']}")
        else:
            row("checkpoint bytes", job["checkpoint_bytes"], ck.get("bytes") if ck else None,
                "DLIO: checkpoint_size x saves (torch.save adds its zip framing)")
        if ck:
            row("checkpoint in background (s)", 0.0, ck.get("background_ns", 0) * NS,
                "DLIO saves synchronously")
    elif ck:
        row("checkpoints", 0, ck.get("writes"), "DLIO made none")

    ranks = []
    for r, t in sorted(truth["ranks"].items()):
        dr = (summary.get("ranks") or {}).get(str(r)) or {}
        steps = dr.get("steps") if isinstance(dr.get("steps"), list) else []
        firsts_dlprof, closing = _line_up(steps, t) if steps else (None, None)
        ranks.append({
            "rank": r,
            "steps": [t["steps"], sum(1 for s in steps if s.get("request", "batch") == "batch")
                      if steps else None],
            "batch_wait_s": [t["wait_s"], dr.get("batch_wait_ns", 0) * NS if dr else None],
            "loop_s": [t["loop_s"], dr.get("loop_ns", 0) * NS if dr else None],
            "first_waits_s": [[e["first_wait_s"] for e in t["epochs"]], firsts_dlprof],
            "closing_calls_s": closing,
            "checkpoint_s": [t["checkpoint_s"], None],
            "checkpoints": [c["duration_s"] for c in t["checkpoints"]],
            "worker_startup_s": dr.get("worker_startup_ns", 0) * NS if "worker_startup_ns" in dr else None,
            "au_per_epoch_pct": [e["au_pct"] for e in t["epochs"]],
        })
    return {"headline": headline, "rows": rows, "ranks": ranks,
            "verdict_bound": v.get("bound"), "loop_basis": loop.get("basis"),
            "batch_wait_missing": v.get("batch_wait_missing"),
            "checkpoint_in_verdict": "checkpoint" in v}


def _fmt(x, digits=4):
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    if isinstance(x, list):
        return "[" + ", ".join(_fmt(i, 3) for i in x) + "]"
    return str(x)


def format_table(title, result):
    lines = [f"== {title}", f"   dlprof: {result['headline']}"]
    if result.get("batch_wait_missing"):
        lines.append(f"   dlprof batch wait missing: {result['batch_wait_missing']}")
    lines.append(f"   {'figure':38} {'DLIO (own clocks)':>18} {'dlprof verdict':>16} {'ratio':>7}  note")
    for r in result["rows"]:
        lines.append(f"   {r['figure']:38} {_fmt(r['dlio']):>18} {_fmt(r['dlprof']):>16} "
                     f"{_fmt(r['ratio'], 3):>7}  {r['note']}")
    for k in result["ranks"]:
        lines.append(f"   rank {k['rank']}: steps {k['steps'][0]} / {_fmt(k['steps'][1])}, "
                     f"batch wait {_fmt(k['batch_wait_s'][0])} / {_fmt(k['batch_wait_s'][1])} s, "
                     f"loop {_fmt(k['loop_s'][0])} / {_fmt(k['loop_s'][1])} s  (DLIO / dlprof)")
        lines.append(f"      first wait of each epoch (s): DLIO {_fmt(k['first_waits_s'][0])}, "
                     f"dlprof {_fmt(k['first_waits_s'][1])}; DLIO AU per epoch {_fmt(k['au_per_epoch_pct'])}")
        if k["closing_calls_s"]:
            lines.append(f"      dlprof's epoch-closing calls (s), in its batch wait, in no DLIO step: "
                         f"{_fmt(k['closing_calls_s'])}")
        if k["checkpoints"]:
            lines.append(f"      DLIO checkpoint saves (s): {_fmt(k['checkpoints'])}")
    if not result["checkpoint_in_verdict"]:
        lines.append("   (this dlprof has no verdict.checkpoint)")
    return "\n".join(lines)


def compare_run(run_dir, dump=None):
    """Compare one run folder; writes compare.json (and summary.json when made anew)."""
    out_dir = os.path.join(run_dir, "out")
    truth = run_truth(out_dir)
    files_path = os.path.join(run_dir, "checkpoint_files.json")
    if os.path.exists(files_path):
        with open(files_path, encoding="utf-8") as f:
            truth["checkpoint_files"] = json.load(f)
    summary_path = os.path.join(run_dir, "summary.json")
    if dump:
        summary, headline = summarize(dump, os.path.join(run_dir, "trace"))
        with open(summary_path, "w", encoding="utf-8") as f:
            json.dump(summary, f)
        with open(os.path.join(run_dir, "headline.txt"), "w", encoding="utf-8") as f:
            f.write(headline + "\n")
    else:
        with open(summary_path, encoding="utf-8") as f:
            summary = json.load(f)
        with open(os.path.join(run_dir, "headline.txt"), encoding="utf-8") as f:
            headline = f.read().strip()
    result = compare(truth, summary, headline)
    result["dlio"] = truth
    with open(os.path.join(run_dir, "compare.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run_dir", nargs="+")
    p.add_argument("--dump", help="dlprof-dump to summarize the traces with (default: summary.json as saved)")
    a = p.parse_args()
    for d in a.run_dir:
        print(format_table(os.path.basename(os.path.normpath(d)), compare_run(d, a.dump)))


if __name__ == "__main__":
    main()
