"""The demo's SFT step in this process (no Ray, no engine): ``Trainer.train`` on rollouts of
``examples/demo/sft.yaml``'s shape, from any checkout, so that two commits compare side by side.

What it measures: the tiny model that ``vime.demo`` builds (``build_tiny_model``, seed 1234),
the demo's addition task (``write_task``, ``Scale()``'s sizes), ``sft.yaml``'s arguments
(32 conversations per step, one micro-batch of 32, ``sft_loss``); ``--steps`` rollouts are made
first by the SFT rollout and ``BatchBuilder.convert`` (``RolloutManagerCore.generate``,
untimed), then trained one ``train`` call each. Printed as one JSON line: the median over the
steps (the first ``--warmup`` left out) of the whole ``train`` call and, where the checkout
reports them, of ``perf/train_forward_backward_time`` and ``perf/train_optimizer_step_time``;
a fingerprint of the data (so two checkouts are seen to train on the same batches) and the
losses and gradient norms of the first and last step (to compare what is computed).
``--profile cprofile`` prints cProfile's top functions by tottime and cumtime,
``--profile torch`` torch.profiler's ``key_averages`` (op counts and self CPU time).

Usage (from the repository root; ``--repo`` picks the checkout whose ``vime`` is imported)::

    .venv/bin/python benchmarks/sft_step.py --steps 200
    git worktree add /tmp/sft_old 2d71ce9       # the commit of 2026-11-29's 183 s SFT stage
    .venv/bin/python benchmarks/sft_step.py --steps 200 --repo /tmp/sft_old
    .venv/bin/python benchmarks/sft_step.py --steps 50 --profile cprofile

Alternate the two checkouts on a loaded machine and compare ratios, not absolute times; the
load-independent figures are ``train_cpu_ms`` (the process's CPU seconds per call: with one
thread, the work itself), the op counts of ``--profile torch`` and
``voluntary_switches_per_step`` (how often this process's threads slept: with
``OMP_WAIT_POLICY=PASSIVE`` and no spin count, the OpenMP worker sleeps at every parallel
region). ``--threads`` (default 1; the trainer actor uses every core, 2 on the demo's machine)
sets ``torch.set_num_threads``; ``--wait-policy`` (default ``actor``: ``OMP_WAIT_POLICY`` and
``GOMP_SPINCOUNT`` as the checkout's trainer actor gets them for this run). The model and data
are built once under ``--work`` (default ``/tmp/vime_sft_step``) with this checkout's builders,
so both checkouts train the same model on the same file.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def _parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=100, help="timed train calls (one step each)")
    p.add_argument("--warmup", type=int, default=5, help="first calls left out of the median")
    p.add_argument("--repo", type=Path, default=HERE, help="the checkout to import vime from")
    p.add_argument("--work", type=Path, default=Path("/tmp/vime_sft_step"),
                   help="folder for the tiny model and the task data (built once)")
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    p.add_argument("--wait-policy", choices=["actor", "PASSIVE", "ACTIVE", "unset"],
                   default="actor",
                   help="OMP_WAIT_POLICY of this process: 'actor' (default) as the checkout's "
                        "trainer actor sets it (and GOMP_SPINCOUNT) for this run "
                        "(vime.ray.trainer_actor.trainer_env; unset where the checkout has "
                        "none), else this value, with the shell's GOMP_SPINCOUNT")
    p.add_argument("--profile", choices=["none", "cprofile", "torch"], default="none")
    p.add_argument("--top", type=int, default=30, help="rows of the profile")
    return p.parse_args()


def _prepare(work: Path) -> tuple[Path, Path]:
    """The tiny model and ``sft_train.jsonl`` under ``work``, built by this checkout."""
    model, data = work / "model", work / "data"
    if not (model / "config.json").is_file() or not (data / "sft_train.jsonl").is_file():
        sys.path.insert(0, str(HERE))
        from vime.demo.config import Scale
        from vime.tasks.arithmetic import write_task
        from vime.utils.tiny_model import build_tiny_model

        build_tiny_model(model, seed=1234)
        scale = Scale()
        write_task(data, seed=1234, n_train=scale.n_train, n_eval=scale.n_eval, ops=scale.ops)
        sys.path.remove(str(HERE))
        for name in [m for m in sys.modules if m == "vime" or m.startswith("vime.")]:
            del sys.modules[name]   # --repo's vime is imported next
    return model, data / "sft_train.jsonl"


def _openmp_env(choice: str, args: argparse.Namespace) -> dict[str, str | None]:
    """``OMP_WAIT_POLICY`` and ``GOMP_SPINCOUNT`` to run with (None: unset); set before torch
    is imported (libgomp reads them once). ``actor``: what the checkout's trainer actor gets
    for this run (``trainer_env``, from an environment without either variable)."""
    if choice != "actor":
        return {"OMP_WAIT_POLICY": None if choice == "unset" else choice,
                "GOMP_SPINCOUNT": os.environ.get("GOMP_SPINCOUNT")}
    try:
        from vime.ray.trainer_actor import trainer_env
    except ImportError:   # older checkouts: the actor set OMP_NUM_THREADS only
        return {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": None}
    names = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
    saved = {name: os.environ.pop(name, None) for name in names}
    try:
        env = trainer_env(args)
    finally:
        os.environ.update({k: v for k, v in saved.items() if v is not None})
    return {name: env.get(name) for name in names}


def _context_switches() -> tuple[int, int]:
    """(voluntary, involuntary) context switches of this process's threads so far."""
    vol = invol = 0
    for status in Path("/proc/self/task").glob("*/status"):
        try:
            text = status.read_text()
        except OSError:   # a thread that ended
            continue
        for line in text.splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                vol += int(line.split()[1])
            elif line.startswith("nonvoluntary_ctxt_switches:"):
                invol += int(line.split()[1])
    return vol, invol


def _fingerprint(rollouts: list[dict]) -> str:
    h = hashlib.sha256()
    for data in rollouts:
        for key in ("tokens", "loss_masks", "response_lengths"):
            h.update(json.dumps(data[key]).encode())
    return h.hexdigest()[:16]


def main() -> None:
    ns = _parse_args()
    model, prompts = _prepare(ns.work)
    sys.path.insert(0, str(ns.repo.resolve()))
    try:
        from vime.config import parse_args
    except ImportError:   # older checkouts
        from vime.utils.arguments import parse_args  # type: ignore[no-redef]

    total = ns.steps + ns.warmup
    run_dir = ns.work / "run"
    args = parse_args(["--config", str(HERE / "examples/demo/sft.yaml"),
                       "--hf-checkpoint", str(model), "--prompt-data", str(prompts),
                       "--run-dir", str(run_dir), "--num-rollout", str(total)])
    args.save = None
    openmp = _openmp_env(ns.wait_policy, args)
    for name, value in openmp.items():   # read by libgomp when torch loads it
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    import torch

    torch.set_num_threads(ns.threads)
    from vime.backends.trainer import Trainer
    from vime.ray.rollout import RolloutManagerCore

    manager = RolloutManagerCore(args, start_engines=False)
    rollouts = [manager.generate(i)[0] for i in range(total)]
    trainer = Trainer(args, total_steps=total)
    times: list[float] = []
    cpu: list[float] = []
    metrics: list[dict[str, float]] = []

    switches: list[tuple[int, int]] = []

    def run() -> None:
        for i, data in enumerate(rollouts):
            if i == ns.warmup:
                switches.append(_context_switches())
            t0, c0 = time.perf_counter(), time.process_time()
            metrics.append(trainer.train(i, copy.copy(data)))
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        switches.append(_context_switches())

    if ns.profile == "cprofile":
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.runcall(run)
        for key in ("tottime", "cumtime"):
            print(f"--- cProfile by {key} ---", file=sys.stderr)
            pstats.Stats(prof, stream=sys.stderr).sort_stats(key).print_stats(ns.top)
    elif ns.profile == "torch":
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU]) as prof:
            run()
        table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=ns.top)
        print(table, file=sys.stderr)
        events = prof.key_averages()
        print(f"ops per step: {sum(e.count for e in events) / total:.1f}", file=sys.stderr)
    else:
        run()
    kept = slice(ns.warmup, None)

    def median(key: str) -> float | None:
        vals = [m[key] for m in metrics[kept] if key in m]
        return round(statistics.median(vals) * 1e3, 2) if vals else None

    keys = ("train/loss", "train/sft_loss", "train/grad_norm", "train/greedy_match")
    print(json.dumps({
        "repo": str(ns.repo), "steps": ns.steps, "threads": ns.threads,
        "profile": ns.profile, "omp_wait_policy": openmp["OMP_WAIT_POLICY"],
        "gomp_spincount": openmp["GOMP_SPINCOUNT"],
        "voluntary_switches_per_step": round((switches[1][0] - switches[0][0]) / ns.steps, 1),
        "involuntary_switches_per_step": round((switches[1][1] - switches[0][1]) / ns.steps, 1),
        "train_ms": round(statistics.median(times[kept]) * 1e3, 2),
        "train_cpu_ms": round(statistics.median(cpu[kept]) * 1e3, 2),
        "tokens_per_step": statistics.median(sum(d["total_lengths"]) for d in rollouts),
        "max_len": statistics.median(max(d["total_lengths"]) for d in rollouts),
        "forward_backward_ms": median("perf/train_forward_backward_time"),
        "optimizer_step_ms": median("perf/train_optimizer_step_time"),
        "data": _fingerprint(rollouts),
        "first": {k: metrics[0].get(k) for k in keys},
        "last": {k: metrics[-1].get(k) for k in keys},
    }))


if __name__ == "__main__":
    main()
