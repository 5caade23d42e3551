"""Trainer ranks: step time of one rank vs two (``torch.distributed`` gloo + FSDP2) on the CPU,
and the parity of their parameters after the same optimiser step.

Usage::

    .venv/bin/python benchmarks/data_parallel.py                       # tiny model, 3 steps
    .venv/bin/python benchmarks/data_parallel.py --model runs/demo/sft_model --steps 5

Both runs train on the same synthetic GRPO rollout of the demo's shape (32 prompts x 8
samples, 40 prompt + 19 response tokens, two optimiser steps per rollout, rollout log probs as
the old policy's) with micro-batches of 64 samples, so the one-rank run's micro-batches are the
two ranks' halves. One rank runs in a child process without a process group (the path a
one-rank ``vime train`` takes) with every core as torch threads; two ranks run as two processes
(``torch.multiprocessing.spawn``) in one gloo group, each with half the cores; all of them with
``OMP_WAIT_POLICY=PASSIVE``, as ``vime train``'s trainer actors. Reported: the
median ``train/time`` of a ``Trainer.train`` call (seconds, the first call of each run left out,
runs of one and two ranks alternating ``--reps`` times), and after the
first call the largest and the median per-tensor ``||p_2 - p_1|| / ||p_1||`` (with the tensor
that has the largest). The machine may be shared: compare only runs made back to back.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _args(model: str) -> Any:
    from vime.config import parse_args

    return parse_args(["--hf-checkpoint", model, "--rollout-batch-size", "32",
                       "--n-samples-per-prompt", "8", "--use-rollout-logprobs",
                       "--num-steps-per-rollout", "2", "--micro-batch-size", "64", "--lr", "1e-4",
                       "--num-rollout", "10"])


def _data(args: Any) -> dict[str, Any]:
    from vime.data.batch_builder import BatchBuilder
    from vime.utils.types import Sample

    rng = random.Random(0)
    samples = [Sample(index=i, group_index=i // 8,
                      tokens=[rng.randrange(1, 250) for _ in range(59)], response_length=19,
                      reward=float(rng.random() < 0.3), status=Sample.Status.COMPLETED,
                      rollout_log_probs=[-1.0] * 19) for i in range(256)]
    return BatchBuilder.convert(args, samples)


def _run(rank: int, world: int, port: int, model: str, steps: int, out: str) -> None:
    """One rank: ``steps`` ``Trainer.train`` calls on the same rollout; rank 0 saves the times
    and the full parameters after the first call."""
    import copy

    import torch

    torch.set_num_threads(max(1, (os.cpu_count() or 1) // world))
    if world > 1:
        import torch.distributed as dist

        from vime.backends.parallel import init_rank

        store = dist.TCPStore("127.0.0.1", port, world,  # type: ignore[attr-defined]
                              is_master=rank == 0)
        init_rank(rank=rank, world=world, store=store, device=torch.device("cpu"))
    from vime.backends.trainer import Trainer

    args = _args(model)
    data = _data(args)
    trainer = Trainer(args)
    times, first = [], None
    for step in range(steps):
        times.append(trainer.train(step, copy.deepcopy(data))["train/time"])
        if step == 0:
            first = {k: v.clone() for k, v in trainer.dp.full_model_state(trainer.model).items()}
    if rank == 0:
        torch.save({"times": times, "state": first}, out)


def measure(model: str, world: int, steps: int, work: Path) -> dict[str, Any]:
    """Run ``world`` ranks (a child process each); returns rank 0's times and parameters."""
    import torch
    import torch.multiprocessing as mp

    from vime.ray.engine_command import find_free_port

    out = work / f"ranks{world}.pt"
    mp.spawn(_run, args=(world, find_free_port(), model, steps, str(out)), nprocs=world,
             join=True)
    return dict(torch.load(out, weights_only=False))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None,
                        help="Hugging Face model folder (default: a fresh tiny model)")
    parser.add_argument("--steps", type=int, default=3, help="Trainer.train calls per run")
    parser.add_argument("--reps", type=int, default=2,
                        help="Runs of each rank count, alternating 1, 2, 1, 2, ...")
    ns = parser.parse_args(argv)
    # OMP_WAIT_POLICY: what vime train gives its CPU trainer actors (vime.backends.trainer.
    # trainer_env); with OpenMP's spin-waiting one rank of two threads is 5-10x slower on a
    # busy 2-core machine, which would measure that, not the ranks
    for key, value in {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                       "OMP_WAIT_POLICY": "PASSIVE"}.items():
        os.environ.setdefault(key, value)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = ns.model
        if model is None:
            from vime.utils.tiny_model import build_tiny_model

            model = str(build_tiny_model(work / "model", seed=0))
        ones, twos = [], []
        for _ in range(ns.reps):
            ones.append(measure(model, 1, ns.steps, work))
            twos.append(measure(model, 2, ns.steps, work))
    one, two = ones[0], twos[0]
    rel = {k: float((two["state"][k] - v).norm() / v.norm().clamp(min=1e-30))
           for k, v in one["state"].items()}
    worst = max(rel, key=lambda k: rel[k])
    report = {
        "model": ns.model or "tiny (vime.utils.tiny_model)", "cores": os.cpu_count(),
        "step_time_s": {"1 rank": statistics.median(t for r in ones for t in r["times"][1:]),
                        "2 ranks": statistics.median(t for r in twos for t in r["times"][1:])},
        "times_s": {"1 rank": [r["times"] for r in ones], "2 ranks": [r["times"] for r in twos]},
        "parity": {"max_relative": rel[worst], "max_tensor": worst,
                   "median_relative": statistics.median(rel.values())},
    }
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
