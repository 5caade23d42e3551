"""The trainer actor's torch threads (every core, all but the engine's with --async-rollout, split
between CPU ranks) and its OpenMP wait policy."""

from __future__ import annotations

import os
from argparse import Namespace

import pytest

from vime.backends.trainer import trainer_threads
from vime.ray.engine import is_vllm_cpu

pytestmark = pytest.mark.unit


def test_synchronous_trainer_takes_every_core():
    assert trainer_threads(Namespace(async_rollout=False)) == (os.cpu_count() or 1)


def test_overlapped_trainer_leaves_the_cpu_engine_a_core():
    assert is_vllm_cpu()   # the embedded default this suite runs on
    cores = os.cpu_count() or 1
    assert trainer_threads(Namespace(async_rollout=True)) == max(1, cores - 1)


def test_a_gpu_trainer_is_not_limited():
    assert trainer_threads(Namespace(async_rollout=True), gpus=1) == (os.cpu_count() or 1)


def test_a_cpu_trainer_actor_waits_passively(monkeypatch: pytest.MonkeyPatch):
    """OpenMP's spin-waiting made Trainer.train 5-10x slower in the actor on a busy 2-core
    machine; the actor gets OMP_WAIT_POLICY=PASSIVE unless the driver sets a policy."""
    from vime.backends.trainer import trainer_env

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    cores = os.cpu_count() or 1
    sync = Namespace(async_rollout=False)
    assert trainer_env(sync) == {"OMP_NUM_THREADS": str(cores), "OMP_WAIT_POLICY": "PASSIVE"}
    assert trainer_env(sync, gpus=1) == {"OMP_NUM_THREADS": str(cores)}
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert trainer_env(sync)["OMP_WAIT_POLICY"] == "ACTIVE"


def test_cpu_trainer_ranks_split_the_cores():
    cores = os.cpu_count() or 1
    assert trainer_threads(Namespace(async_rollout=False), ranks=2) == max(1, cores // 2)
    assert trainer_threads(Namespace(async_rollout=False), ranks=4 * cores) == 1
