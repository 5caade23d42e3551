"""What seeing a run costs per GRPO step (target: dumps and every tracker together
<= 2 % of a demo GRPO step).

Two parts:

- the dump: ``perf/dump_rollouts_time`` against ``perf/step_time`` of a real run made with
  ``--dump-rollouts`` (default ``runs/demo/grpo/metrics.jsonl``: ``make demo`` dumps);
- the trackers: TensorBoard, wandb (offline) and trackio all on, fed ``--steps`` records shaped
  like that run's (every number of each record) and a table of 8 samples per step, in a
  temporary folder; the time per step of logging, and the start-up and close once per run.

Usage::

    python benchmarks/observe_overhead.py [--metrics runs/demo/grpo/metrics.jsonl] [--steps 60]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from argparse import Namespace
from pathlib import Path


def _records(path: Path) -> list[dict[str, object]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if "perf/step_time" in r]


def _trackers_seconds(records: list[dict[str, object]], steps: int) -> tuple[float, float]:
    """``(seconds per step of logging, seconds of start-up and close once per run)``."""
    from vime.tracking import Trackers

    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("TRACKIO_DIR", str(Path(tmp) / "trackio"))
        os.environ.setdefault("WANDB_SILENT", "true")
        args = Namespace(run_dir=tmp, use_wandb=True, use_tensorboard=True, use_trackio=True,
                         tensorboard_dir=None, wandb_project="vime-bench", wandb_group=None,
                         wandb_mode="offline")
        rows = [{"index": i, "group_index": i // 8, "prompt": "What is 12+34?" * 3,
                 "response": "The answer is 46.", "reward": 1.0, "status": "completed",
                 "vime_error": ""} for i in range(8)]
        start = time.perf_counter()
        trackers = Trackers.from_args(args)
        trackers.log_config(args)
        started = time.perf_counter()
        for step in range(steps):
            trackers.log({**records[step % len(records)], "rollout_id": step})
            trackers.log_samples(step, rows)
        logged = time.perf_counter()
        trackers.close()
        once = (started - start) + (time.perf_counter() - logged)
        return (logged - started) / steps, once


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--metrics", type=Path, default=Path("runs/demo/grpo/metrics.jsonl"))
    parser.add_argument("--steps", type=int, default=60)
    ns = parser.parse_args()
    records = _records(ns.metrics)
    if not records or "perf/dump_rollouts_time" not in records[0]:
        raise SystemExit(f"{ns.metrics}: no steps with perf/dump_rollouts_time (run `make demo`"
                         " or vime train --dump-rollouts first)")
    step = statistics.median(float(r["perf/step_time"]) for r in records)  # type: ignore[arg-type]
    dump = statistics.median(float(r["perf/dump_rollouts_time"]) for r in records)  # type: ignore[arg-type]
    trackers, once = _trackers_seconds(records, ns.steps)
    print(f"{ns.metrics}: {len(records)} steps, median step {step:.2f} s")
    print(f"  dump (--dump-rollouts): {dump * 1000:.0f} ms/step = {100 * dump / step:.2f} %")
    print(f"  trackers (TensorBoard + wandb offline + trackio, {ns.steps} steps): "
          f"{trackers * 1000:.1f} ms/step = {100 * trackers / step:.2f} %; start-up and close "
          f"{once:.1f} s once per run")
    print(f"  together: {100 * (dump + trackers) / step:.2f} % of a step")


if __name__ == "__main__":
    main()
