"""Step time of ``vime train`` with and without ``--async-rollout`` on the demo's GRPO shape.

Usage::

    .venv/bin/python benchmarks/pipeline.py                      # tiny model, 2 x 2 runs
    .venv/bin/python benchmarks/pipeline.py --reps 3 --steps 8
    .venv/bin/python benchmarks/pipeline.py --model runs/demo/sft_model   # after `make demo`
    .venv/bin/python benchmarks/pipeline.py --accuracy --reps 3   # the demo's whole GRPO stage

Each repetition runs two ``vime train`` processes back to back, in alternating order: the
synchronous loop (rollout, then train, then weight sync) and ``--async-rollout`` (rollout k+1
generated while step k trains). Both use ``examples/demo/grpo.yaml``'s batch shape (32 prompts
x 8 samples, 24 response tokens, 2 optimiser steps per rollout, micro-batches of 128) on a
fresh tiny model (or ``--model``) and the arithmetic task, with no evaluation and no contract
check beyond the always-enforced one. Reported per run: the median ``perf/step_time`` over the
steps after the first (seconds; the first step pays start-up and, with ``--async-rollout``,
has nothing to overlap with), ``perf/tokens_per_s`` (the rollout's generated tokens per
second) and the whole run's wall time. The summary line gives the medians over repetitions
and ``speedup = median(sync step) / median(async step)``.

``--accuracy`` runs the demo's whole GRPO stage instead (``examples/demo/grpo.yaml``: 60 steps
from ``runs/demo/sft_model``, held-out evaluation every 10 steps; run ``make demo`` first), each
repetition with its own ``--seed``/``--rollout-seed``, shared by its sync and async runs. It
reports the held-out accuracy after training (``eval/greedy`` and ``eval/sampled``, the mean of
the last 3 evaluations, as the demo's report does) next to the step time.

The machine is shared: compare only runs made back to back, and read the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vime.utils.quiet_env import QUIET_ENV

REPO = Path(__file__).resolve().parent.parent
QUIET = QUIET_ENV


def _train_args(model: str, data: Path, run_dir: Path, steps: int) -> list[str]:
    return ["--hf-checkpoint", model, "--prompt-data", str(data), "--input-key", "input",
            "--label-key", "label", "--apply-chat-template", "--rollout-shuffle",
            "--rm-type", "math", "--rollout-batch-size", "32", "--n-samples-per-prompt", "8",
            "--rollout-max-response-len", "24", "--use-rollout-logprobs",
            "--num-steps-per-rollout", "2", "--micro-batch-size", "128", "--lr", "1e-4",
            "--num-rollout", str(steps), "--run-dir", str(run_dir), "--vllm-enforce-eager"]


def _vime_train(train_args: list[str], run_dir: Path,
                overlap: bool) -> tuple[list[dict[str, float]], float]:
    """Run ``vime train TRAIN_ARGS`` (plus ``--async-rollout`` with ``overlap``); returns its
    metrics records and wall time (s).

    Raises:
        RuntimeError: the run failed (its last stderr lines are included).
    """
    argv = [sys.executable, "-m", "vime.cli", "train", *train_args]
    if overlap:
        argv.append("--async-rollout")
    start = time.perf_counter()
    proc = subprocess.run(argv, env={**os.environ, **QUIET}, capture_output=True, text=True,
                          cwd=REPO)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"vime train failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines], wall


def run_once(model: str, data: Path, work: Path, steps: int, overlap: bool) -> dict[str, float]:
    """One ``vime train`` run; returns its step-time, tokens/s and wall-time figures.

    Raises:
        RuntimeError: the run failed (its last stderr lines are included).
    """
    run_dir = work / f"{'async' if overlap else 'sync'}-{time.time_ns()}"
    records, wall = _vime_train([*_train_args(model, data, run_dir, steps)], run_dir, overlap)
    train = [r for r in records if "perf/step_time" in r]
    later = train[1:] or train
    return {"step_s": statistics.median(float(r["perf/step_time"]) for r in later),
            "tokens_per_s": statistics.median(float(r.get("perf/tokens_per_s", 0.0))
                                              for r in later),
            "wall_s": wall}


def run_demo_grpo(work: Path, rep: int, overlap: bool) -> dict[str, float]:
    """The demo's GRPO stage (``examples/demo/grpo.yaml``) with seeds ``rep``; returns its
    median step time (s) and held-out accuracies (mean of the last 3 evaluations).

    Raises:
        RuntimeError: the run failed (its last stderr lines are included).
    """
    run_dir = work / f"demo-{'async' if overlap else 'sync'}-{rep}"
    records, wall = _vime_train(["--config", "examples/demo/grpo.yaml", "--run-dir",
                                 str(run_dir), "--seed", str(1234 + rep),
                                 "--rollout-seed", str(42 + rep)], run_dir, overlap)
    evals = [r for r in records if "eval/greedy" in r]
    steps = [float(r["perf/step_time"]) for r in records if "perf/step_time" in r][1:]
    return {"step_s": statistics.median(steps), "wall_s": wall,
            "greedy_first": float(evals[0]["eval/greedy"]),
            "greedy": statistics.mean(float(r["eval/greedy"]) for r in evals[-3:]),
            "sampled": statistics.mean(float(r["eval/sampled"]) for r in evals[-3:])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=2, help="repetitions of the pair")
    parser.add_argument("--steps", type=int, default=6, help="rollout steps per run")
    parser.add_argument("--model", default=None, help="model folder (default: a tiny model)")
    parser.add_argument("--accuracy", action="store_true",
                        help="the demo's whole GRPO stage with held-out accuracy (after make demo)")
    opts = parser.parse_args(argv)
    if opts.accuracy and not (REPO / "runs" / "demo" / "sft_model").exists():
        parser.error("--accuracy trains from runs/demo/sft_model: run `make demo` first")
    from vime.tasks.arithmetic import write_task
    from vime.utils.tiny_model import build_tiny_model

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = opts.model or ("" if opts.accuracy else
                               str(build_tiny_model(work / "model", seed=0)))
        data = write_task(work / "data", seed=0, n_train=2000, n_eval=10)["rl_train"]
        results: dict[str, list[dict[str, float]]] = {"sync": [], "async": []}
        for rep in range(opts.reps):
            order = [False, True] if rep % 2 == 0 else [True, False]
            for overlap in order:
                figures = (run_demo_grpo(work, rep, overlap) if opts.accuracy
                           else run_once(model, data, work, opts.steps, overlap))
                name = "async" if overlap else "sync"
                results[name].append(figures)
                print(json.dumps({"rep": rep, "mode": name, **figures}), flush=True)
        summary = {name: {key: statistics.median(r[key] for r in runs) for key in runs[0]}
                   for name, runs in results.items()}
        summary["speedup"] = {"step": summary["sync"]["step_s"] / summary["async"]["step_s"]}
        print(json.dumps({"summary": summary, "model": opts.model or (
            "runs/demo/sft_model (examples/demo/grpo.yaml)" if opts.accuracy else "a fresh tiny model (seed 0)")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
