"""A FAILED sample (--hook-failure fail-sample) gives no gradient: one optimiser step on a batch
holding it equals the step on the same batch without it (same group statistics for the others,
same sample-mean denominator)."""

from __future__ import annotations

from argparse import Namespace
from pathlib import Path

import pytest
import torch
from trainer_helpers import make_args

from vime.backends.trainer import Trainer
from vime.data.batch_builder import BatchBuilder
from vime.rollout.failures import mark_failed
from vime.utils.types import Sample

pytestmark = pytest.mark.unit


def _args(model: Path, gbs: int, **kw: object) -> Namespace:
    return make_args(model, n_samples_per_prompt=3, global_batch_size=gbs, clip_grad=0.0,
                     entropy_coef=0.01, **kw)


def _samples(with_failed: bool) -> list[Sample]:
    rewards = [1.0, 0.0, 0.5, 0.0, 1.0, 1.0]
    out = []
    for i in range(6):
        s = Sample(index=i, group_index=i // 3, tokens=[1, 2, 3, 10 + i, 20 + i, 30],
                   response_length=3, reward=rewards[i], status=Sample.Status.COMPLETED)
        if i == 1:
            if not with_failed:
                continue
            mark_failed(s, "reward", ValueError("judge down"), 0.2)
        out.append(s)
    return out


@pytest.mark.parametrize("estimator", ["grpo", "reinforce_plus_plus_baseline"])
def test_failed_sample_changes_nothing_in_the_update(small_model: Path, estimator: str) -> None:
    with_failed = Trainer(_args(small_model, 6, advantage_estimator=estimator))
    without = Trainer(_args(small_model, 5, advantage_estimator=estimator))
    data_a = BatchBuilder.convert(with_failed.args, _samples(True))
    data_b = BatchBuilder.convert(without.args, _samples(False))
    kept = [i for i in range(6) if i != 1]
    assert [data_a["rewards"][i] for i in kept] == pytest.approx(data_b["rewards"])
    a = with_failed.train(0, data_a)
    b = without.train(0, data_b)
    assert a["train/loss"] == pytest.approx(b["train/loss"], abs=1e-6)
    # the step's gradients (kept after the optimiser step) are those of the batch without it
    for p, q in zip(with_failed.model.parameters(), without.model.parameters(), strict=True):
        assert p.grad is not None and q.grad is not None
        assert torch.allclose(p.grad, q.grad, rtol=1e-4, atol=1e-7)


def test_a_trainable_sample_in_its_place_does_change_the_update(small_model: Path) -> None:
    # the comparison above can fail: the same sample left trainable moves the weights
    trainable = _samples(True)
    trainable[1] = Sample(index=1, group_index=0, tokens=[1, 2, 3, 11, 21, 30],
                          response_length=3, reward=0.0, status=Sample.Status.COMPLETED)
    one = Trainer(_args(small_model, 6))
    two = Trainer(_args(small_model, 5))
    one.train(0, BatchBuilder.convert(one.args, trainable))
    two.train(0, BatchBuilder.convert(two.args, _samples(False)))
    assert not all(torch.allclose(p.grad, q.grad, rtol=1e-4, atol=1e-7)
                   for p, q in zip(one.model.parameters(), two.model.parameters(), strict=True))
