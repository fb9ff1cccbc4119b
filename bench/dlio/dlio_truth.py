"""DLIO's own figures for one run, read from its output folder: the truth that
bench/dlio/run_dlio.py sets beside dlprof's verdict.

What DLIO measures (dlio_benchmark/main.py `_train`, utils/statscounter.py),
per rank, with `time.time()`:

    stats.start_block()                      block start (after a checkpoint, or the epoch's start)
    stats.start_loading()
    for batch in loader.next():              <- the batch wait: DLIO's generator around
        stats.batch_loaded()                    iter(DataLoader) and its __next__
        stats.start_compute()
        framework.compute()                  <- the emulated step: a sleep of computation_time
        stats.batch_processed()
        comm.barrier()                       <- "simulates allreduce": waiting for the other ranks
        [end_block, save checkpoint, start_block: every steps_between_checkpoints]
        stats.start_loading()
    stats.end_block()

* `{rank}_output.json[epoch]["load"][block]`: each step's wait, from
  start_loading to batch_loaded: exactly the time the loop waited for the
  batch by DLIO's clock. The first step of every epoch also holds the
  generator's start and `iter(DataLoader)` (starting the workers, or resuming
  persistent ones), which dlprof records as `loader_iter`, not `load_batch`.
  The call that ends an epoch (StopIteration) is in no step's wait.
* `["compute"][block]`: each step's compute (start_compute to batch_processed).
* `["au"][block]`: AU in % = sum(compute) / total_time, where total_time is the
  block's wall time (start_block to end_block) less the `proc` times (wait +
  compute) of the steps left out by `metric.exclude_start_steps` /
  `exclude_end_steps`. With `++workload.output.metric.exclude_start_steps=0`
  (and DLIO's default exclude_end_steps=0) nothing is left out, so
  total_time = the block's wall time = waits + computes + barriers + DLIO's
  own bookkeeping, and the block time is recovered exactly as
  sum(compute) / (au / 100). (With compute 0, AU is 0 by definition; the block
  time then comes from the block's start/end stamps, 1 us resolution.)

So, per rank, over all blocks and epochs:

    wait  = sum of "load"          (DLIO's batch wait)
    train = sum of block times     (DLIO's AU denominator)
    AU    = compute / train,  and  1 - AU = (wait + barrier + bookkeeping) / train

DLIO's headline "Training Accelerator Utilization [AU]" is the mean over
epochs of the ranks' mean of each epoch's AU, an epoch's AU being its
blocks' AUs weighted by their steps (not by time); with one block per epoch
and epochs of equal length it equals the pooled compute / train. The
figure meaning the same as dlprof's batch-wait share (batch wait over the
loop) is therefore wait / train, DLIO's `1 - AU` only where barriers and
bookkeeping are negligible (one rank); both are given.

Checkpoints: `{rank}_per_epoch_stats.json[epoch]["save_ckptN"]` holds each
save's start, end (utcnow strings, 1 us) and duration in seconds, measured
around `checkpointing_mechanism.save_checkpoint()` (with zero_stage 0 only
rank 0 writes; other ranks' saves are empty and last microseconds). The
loop is stopped for the whole save (DLIO saves synchronously), so each
duration is blocking time. DLIO's `checkpoint.fsync` setting does not reach
the save (utils/config.py stores it as `checkpoint_sync`, the save reads
`checkpoint_fsync`): its saves end with close(), never fsync().
"""

import datetime
import glob
import json
import os


def _stamp(s):
    """DLIO's utcnow() string (local time, microseconds) as seconds."""
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%f").timestamp()


def _epochs(d):
    return sorted((k for k in d if k.isdigit()), key=int)


def rank_truth(output, per_epoch_stats):
    """One rank's figures from its {rank}_output.json and {rank}_per_epoch_stats.json."""
    t = {"steps": 0, "wait_s": 0.0, "compute_s": 0.0, "train_s": 0.0, "epochs": [],
         "checkpoints": [], "loop_s": None}
    for e in _epochs(output):
        ep = output[e]
        stats = per_epoch_stats.get(e, {})
        row = {"epoch": int(e), "steps": 0, "wait_s": 0.0, "first_wait_s": None, "compute_s": 0.0,
               "train_s": 0.0, "au_pct": None}
        blocks = sorted(ep.get("load", {}), key=lambda b: int(b[5:]) if b[5:].isdigit() else 0)
        for b in blocks:
            load = ep["load"][b]
            compute = ep.get("compute", {}).get(b, [])
            au = ep.get("au", {}).get(b, 0.0)
            if row["first_wait_s"] is None and load:
                row["first_wait_s"] = load[0]
            if au > 0 and sum(compute) > 0:
                block_s = sum(compute) / (au / 100.0)
            elif "start" in stats.get(b, {}) and "end" in stats.get(b, {}):
                block_s = _stamp(stats[b]["end"]) - _stamp(stats[b]["start"])
            else:
                block_s = 0.0
            row["steps"] += len(load)
            row["wait_s"] += sum(load)
            row["compute_s"] += sum(compute)
            row["train_s"] += block_s
        # DLIO's epoch AU: blocks weighted by their steps (statscounter.end_train).
        weighted = [(ep["au"][b], len(ep["load"][b])) for b in blocks if b in ep.get("au", {})]
        nsteps = sum(n for _, n in weighted)
        row["au_pct"] = sum(a * n for a, n in weighted) / nsteps if nsteps else 0.0
        for k in ("steps", "wait_s", "compute_s", "train_s"):
            t[k] += row[k]
        t["epochs"].append(row)
        for key in sorted((k for k in stats if k.startswith("save_ckpt")), key=lambda k: _stamp(stats[k]["start"])):
            c = stats[key]
            t["checkpoints"].append({"epoch": int(e), "name": key, "start": c["start"],
                                     "duration_s": float(c["duration"])})
    eps = _epochs(per_epoch_stats)
    if eps and "start" in per_epoch_stats[eps[0]] and "end" in per_epoch_stats[eps[-1]]:
        # From the first epoch's start to the last one's end: DLIO's training
        # loop with its checkpoints and the work between epochs.
        t["loop_s"] = _stamp(per_epoch_stats[eps[-1]]["end"]) - _stamp(per_epoch_stats[eps[0]]["start"])
    t["checkpoint_s"] = sum(c["duration_s"] for c in t["checkpoints"])
    t["other_s"] = t["train_s"] - t["wait_s"] - t["compute_s"]
    t["au_pooled_pct"] = 100.0 * t["compute_s"] / t["train_s"] if t["train_s"] else None
    t["wait_share_pct"] = 100.0 * t["wait_s"] / t["train_s"] if t["train_s"] else None
    t["wait_share_of_loop_pct"] = 100.0 * t["wait_s"] / t["loop_s"] if t["loop_s"] else None
    return t


def run_truth(out_dir):
    """DLIO's figures for a run: per rank, summed over the ranks, and its summary's headline."""
    ranks = {}
    for path in sorted(glob.glob(os.path.join(out_dir, "*_output.json"))):
        r = os.path.basename(path).split("_", 1)[0]
        if not r.isdigit():
            continue
        with open(path, encoding="utf-8") as f:
            output = json.load(f)
        stats_path = os.path.join(out_dir, f"{r}_per_epoch_stats.json")
        with open(stats_path, encoding="utf-8") as f:
            stats = json.load(f)
        ranks[int(r)] = rank_truth(output, stats)
    if not ranks:
        raise FileNotFoundError(f"no DLIO outputs (RANK_output.json) in {out_dir}")
    job = {k: sum(t[k] for t in ranks.values())
           for k in ("steps", "wait_s", "compute_s", "train_s", "other_s", "checkpoint_s")}
    job["loop_s"] = sum(t["loop_s"] or 0.0 for t in ranks.values())
    job["checkpoints"] = sum(len(t["checkpoints"]) for t in ranks.values())
    job["au_pooled_pct"] = 100.0 * job["compute_s"] / job["train_s"] if job["train_s"] else None
    job["wait_share_pct"] = 100.0 * job["wait_s"] / job["train_s"] if job["train_s"] else None
    job["wait_share_of_loop_pct"] = 100.0 * job["wait_s"] / job["loop_s"] if job["loop_s"] else None
    summary = {}
    summary_path = os.path.join(out_dir, "summary.json")
    if os.path.exists(summary_path):
        with open(summary_path, encoding="utf-8") as f:
            summary = json.load(f)
    metric = summary.get("metric", {})
    job["au_headline_pct"] = metric.get("train_au_mean_percentage")
    job["au_per_epoch_pct"] = metric.get("train_au_percentage")
    job["checkpoint_size_bytes"] = round(metric.get("checkpoint_size_GB", 0.0) * 1024 ** 3)
    job["checkpoint_mean_s"] = metric.get("save_checkpoint_duration_mean_seconds")
    # Bytes the saves wrote by DLIO's own account: with zero_stage 0 only
    # rank 0 writes its model state (checkpoint_size_GB) at each save.
    rank0 = ranks.get(0, next(iter(ranks.values())))
    job["checkpoint_writes"] = len(rank0["checkpoints"])
    job["checkpoint_bytes"] = job["checkpoint_size_bytes"] * job["checkpoint_writes"]
    return {"ranks": ranks, "job": job}
