"""``Trainer.train`` inside ``vime train``'s Ray trainer actor against a plain process, on the
same GRPO rollout of the demo's shape.

Usage::

    .venv/bin/python benchmarks/trainer_actor.py                          # tiny model
    .venv/bin/python benchmarks/trainer_actor.py --model runs/demo/sft_model --reps 3

The rollout is ``benchmarks/data_parallel.py``'s synthetic one (32 prompts x 8 samples, 40
prompt + 19 response tokens, rollout log probs as the old policy's, two optimiser steps per
rollout) with the demo's micro-batches of 128. *Standalone* is a child process with OpenMP's
defaults and every core as torch threads; *actor* is the trainer actor exactly as ``vime
train`` starts it (``vime.ray.trainer_actor.create_trainer_actor``: its threads and
``OMP_WAIT_POLICY=PASSIVE``) on a local Ray cluster, with nothing else running. Reported: the
median ``train/time`` (seconds, measured inside ``train``; the first call of each run left
out) per setting over ``--reps`` alternating runs of ``--steps`` calls, and the ratio actor /
standalone. Run it on an idle machine: the point is the actor's own overhead.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from data_parallel import _data  # noqa: E402  (the same synthetic rollout)

MICRO_BATCH = 128   # examples/demo/grpo.yaml


def _args(model: str) -> Any:
    from vime.config import parse_args

    return parse_args(["--hf-checkpoint", model, "--rollout-batch-size", "32",
                       "--n-samples-per-prompt", "8", "--use-rollout-logprobs",
                       "--num-steps-per-rollout", "2", "--micro-batch-size", str(MICRO_BATCH),
                       "--lr", "1e-4", "--num-rollout", "10"])


def standalone(model: str, steps: int) -> list[float]:
    """``steps`` ``train/time`` figures from a child process (OpenMP defaults)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS")}
    out = subprocess.run([sys.executable, __file__, "--child", "--model", model,
                          "--steps", str(steps)], env=env, capture_output=True, text=True,
                         check=True).stdout
    return [float(t) for t in json.loads(out.strip().splitlines()[-1])]


def _child(model: str, steps: int) -> None:
    import torch

    from vime.backends.trainer import Trainer

    torch.set_num_threads(os.cpu_count() or 1)
    args = _args(model)
    data = _data(args)
    trainer = Trainer(args)
    print(json.dumps([trainer.train(i, copy.deepcopy(data))["train/time"] for i in range(steps)]))


def in_actor(model: str, steps: int) -> list[float]:
    """``steps`` ``train/time`` figures from the trainer actor ``vime train`` would start."""
    import ray

    from vime.ray.trainer_actor import create_trainer_actor

    args = _args(model)
    data = ray.put(_data(args))
    actor = create_trainer_actor(args)
    try:
        return [float(ray.get(actor.train.remote(i, data))["train/time"]) for i in range(steps)]
    finally:
        ray.kill(actor)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None,
                        help="Hugging Face model folder (default: a fresh tiny model)")
    parser.add_argument("--steps", type=int, default=5, help="Trainer.train calls per run")
    parser.add_argument("--reps", type=int, default=2, help="runs of each, alternating")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ns = parser.parse_args(argv)
    for key, value in {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                       "RAY_USAGE_STATS_ENABLED": "0"}.items():
        os.environ.setdefault(key, value)
    if ns.child:
        _child(ns.model, ns.steps)
        return 0
    import ray

    with tempfile.TemporaryDirectory() as tmp:
        model = ns.model
        if model is None:
            from vime.utils.tiny_model import build_tiny_model

            model = str(build_tiny_model(Path(tmp) / "model", seed=0))
        from argparse import Namespace

        from vime.ray.auth import setup_ray_auth

        setup_ray_auth(Namespace(run_dir=tmp), joining=False)   # token auth, as vime train
        ray.init(address="local", include_dashboard=False, num_cpus=os.cpu_count() or 1,
                 log_to_driver=False)
        runs: dict[str, list[list[float]]] = {"standalone": [], "actor": []}
        try:
            for _ in range(ns.reps):
                runs["standalone"].append(standalone(model, ns.steps))
                runs["actor"].append(in_actor(model, ns.steps))
        finally:
            ray.shutdown()
    medians = {name: statistics.median(t for run in times for t in run[1:])
               for name, times in runs.items()}
    print(json.dumps({"model": ns.model or "tiny (vime.utils.tiny_model)",
                      "cores": os.cpu_count(), "train_time_s": medians,
                      "actor_over_standalone": medians["actor"] / medians["standalone"],
                      "runs_s": runs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
