"""The trainer actor's torch threads: every core, or all but the engine's with --async-rollout."""

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
