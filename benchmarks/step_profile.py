"""Per-phase profile of training steps: the median seconds of each phase of a run's steps,
read from its ``metrics.jsonl``, and optionally two runs side by side (a ratio per phase).

The phases, each a metric vime writes per step (seconds):

- rollout: ``perf/rollout_time`` (the whole rollout function), of it the default rollout's
  ``rollout/vllm_rollout/generation_time_s`` (generate busy time) and ``reward_time_s``;
- ``perf/contract_check_time`` (the run-time check), ``perf/convert_time`` (samples to
  training columns), ``perf/dump_rollouts_time``;
- trainer: ``perf/train_log_probs_time``, ``perf/train_advantages_time``,
  ``perf/train_forward_backward_time``, ``perf/train_optimizer_step_time`` (together with
  its own overhead ``train/time``);
- ``perf/weight_sync_time``; ``perf/eval_time`` on the steps that end with an evaluation;
  ``perf/step_time`` (the whole step, evaluation and checkpoint included); the rest of the
  step is what no phase covers (a checkpoint, metrics, progress, failure accounting, Ray
  calls, and the rollout of the next step with ``--async-rollout``, which overlaps).

Usage::

    .venv/bin/python -m vime.demo --quick --out runs/q      # or any vime train run folder
    .venv/bin/python benchmarks/step_profile.py runs/q/grpo
    .venv/bin/python benchmarks/step_profile.py NEW_RUN --against OLD_RUN   # e.g. two commits

The evaluation before the first step is its own line of ``metrics.jsonl`` (not a step); the
first step is left out with ``--skip-first`` (warm-up).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

#: (label, metric) in step order; indented labels are parts of the phase above them.
PHASES: tuple[tuple[str, str], ...] = (
    ("rollout", "perf/rollout_time"),
    ("  generate (busy)", "rollout/vllm_rollout/generation_time_s"),
    ("  reward (busy)", "rollout/vllm_rollout/reward_time_s"),
    ("contract check", "perf/contract_check_time"),
    ("convert", "perf/convert_time"),
    ("dump", "perf/dump_rollouts_time"),
    ("train", "train/time"),
    ("  log probs", "perf/train_log_probs_time"),
    ("  advantages", "perf/train_advantages_time"),
    ("  forward/backward", "perf/train_forward_backward_time"),
    ("  optimiser step", "perf/train_optimizer_step_time"),
    ("weight sync", "perf/weight_sync_time"),
    ("eval", "perf/eval_time"),
    ("step", "perf/step_time"),
)
_TOP = ("perf/rollout_time", "perf/contract_check_time", "perf/convert_time",
        "perf/dump_rollouts_time", "train/time", "perf/weight_sync_time", "perf/eval_time")


def step_records(run_dir: Path, skip_first: bool = False) -> list[dict[str, float]]:
    """The training steps of a run folder (``metrics.jsonl`` lines with ``train/loss``)."""
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        raise SystemExit(f"step_profile: {path} does not exist (give a vime train --run-dir)")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    steps = [r for r in rows if "train/loss" in r or "perf/step_time" in r]
    return steps[1:] if skip_first and len(steps) > 1 else steps


def medians(steps: list[dict[str, float]]) -> dict[str, float]:
    """Median seconds of each phase present in ``steps``; ``other``: step minus the phases."""
    out: dict[str, float] = {}
    for _, key in PHASES:
        values = [float(s.get(key, 0.0)) for s in steps] if key == "perf/eval_time" else [
            float(s[key]) for s in steps if key in s]   # eval: 0 on the steps without one
        if values and (key != "perf/eval_time" or statistics.median(values) > 0):
            out[key] = statistics.median(values)
    others = [float(s["perf/step_time"]) - sum(float(s.get(k, 0.0)) for k in _TOP)
              for s in steps if "perf/step_time" in s]
    if others:
        out["other"] = statistics.median(others)
    return out


def table(new: dict[str, float], old: dict[str, float] | None) -> str:
    """A markdown table: phase, median ms, share of the step (and the old run, the ratio)."""
    step = new.get("perf/step_time") or 0.0
    head = "| phase | median ms | share of step |" + (" old ms | new/old |" if old else "")
    lines = [head, "|---" * (5 if old else 3) + "|"]
    for label, key in (*PHASES, ("other (not in a phase)", "other")):
        if key not in new:
            continue
        ms, share = new[key] * 1e3, (f"{100 * new[key] / step:.1f} %" if step else "")
        row = f"| {label} | {ms:.1f} | {share} |"
        if old is not None:
            was = old.get(key)
            row += (f" {was * 1e3:.1f} | {new[key] / was:.2f} |" if was else " | |")
        lines.append(row)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--against", type=Path, default=None, help="an older run to compare")
    parser.add_argument("--skip-first", action="store_true", help="leave out the first step")
    ns = parser.parse_args(argv)
    new = step_records(ns.run_dir, ns.skip_first)
    old = step_records(ns.against, ns.skip_first) if ns.against else None
    print(f"{ns.run_dir}: {len(new)} step(s)" + (f"; {ns.against}: {len(old)}" if old else ""))
    print(table(medians(new), medians(old) if old is not None else None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
