"""The built-in advantage estimators (vime.backends.advantages) on hand-computed values, without
a model: every estimator, the discounting, the whitening and the errors."""

from __future__ import annotations

import math
from argparse import Namespace

import pytest
import torch

from vime.backends.advantages import (
    discounted_returns,
    estimator_advantages,
    masked_whiten,
)
from vime.contract.estimators import BROADCAST_ESTIMATORS, ESTIMATORS

pytestmark = pytest.mark.unit


def rows(values: list[torch.Tensor]) -> list[list[float]]:
    return [[round(float(x), 5) for x in v] for v in values]


def test_the_estimator_tables() -> None:
    assert BROADCAST_ESTIMATORS == ("grpo", "gspo", "cispo")
    assert ESTIMATORS == ("grpo", "gspo", "cispo", "reinforce_plus_plus",
                          "reinforce_plus_plus_baseline")


@pytest.mark.parametrize("estimator", BROADCAST_ESTIMATORS)
def test_broadcast_estimators_put_the_reward_on_every_token(estimator: str) -> None:
    masks = [torch.tensor([1.0, 1.0, 0.0]), torch.tensor([0.0, 1.0])]
    adv = estimator_advantages(Namespace(advantage_estimator=estimator), [0.5, -2.0], masks)
    assert rows(adv) == [[0.5, 0.5, 0.5], [-2.0, -2.0]]
    assert all(a.dtype == torch.float32 for a in adv)


def test_broadcast_keeps_float32_on_double_masks() -> None:
    adv = estimator_advantages(Namespace(advantage_estimator="grpo"), [1.0],
                               [torch.ones(2, dtype=torch.float64)])
    assert adv[0].dtype == torch.float32


def test_rewards_and_masks_must_pair_up() -> None:
    with pytest.raises(ValueError):
        estimator_advantages(Namespace(advantage_estimator="grpo"), [1.0, 2.0], [torch.ones(2)])


def test_reinforce_plus_plus_baseline_whitens_over_trainable_tokens() -> None:
    # tokens: 1, 1 | -1 (one masked token of value -1 shifted and scaled like the others)
    masks = [torch.tensor([1.0, 1.0]), torch.tensor([1.0, 0.0])]
    args = Namespace(advantage_estimator="reinforce_plus_plus_baseline")
    adv = estimator_advantages(args, [1.0, -1.0], masks)
    mean = 1 / 3
    std = math.sqrt(((1 - mean) ** 2 * 2 + (-1 - mean) ** 2) / 3 + 1e-8)
    hi, lo = (1 - mean) / std, (-1 - mean) / std
    assert rows(adv) == [[round(hi, 5)] * 2, [round(lo, 5)] * 2]


def test_reinforce_plus_plus_discounts_from_the_last_trainable_token() -> None:
    # sample 0: reward 1 on its last trainable token (index 1, index 2 masked), gamma 0.5
    masks = [torch.tensor([1.0, 1.0, 0.0]), torch.tensor([1.0, 1.0, 1.0])]
    args = Namespace(advantage_estimator="reinforce_plus_plus", gamma=0.5)
    adv = estimator_advantages(args, [1.0, 0.0], masks)
    returns = [0.5, 1.0, 0.0, 0.0, 0.0, 0.0]
    trainable = [returns[i] for i in (0, 1, 3, 4, 5)]
    mean = sum(trainable) / 5
    std = math.sqrt(sum((x - mean) ** 2 for x in trainable) / 5 + 1e-8)
    want = [round((x - mean) / std, 5) for x in returns]
    assert rows(adv) == [want[:3], want[3:]]


def test_reinforce_plus_plus_with_no_trainable_token_gets_no_reward() -> None:
    masks = [torch.tensor([0.0, 0.0]), torch.tensor([1.0, 1.0])]
    args = Namespace(advantage_estimator="reinforce_plus_plus", gamma=1.0)
    adv = estimator_advantages(args, [5.0, 1.0], masks)
    # returns 0, 0 | 1, 1: the trainable tokens are all 1, so the mean is 1 and the variance 0
    assert rows(adv) == [[round(-1 / math.sqrt(1e-8), 5)] * 2, [0.0, 0.0]]


def test_unknown_estimator_names_the_choices() -> None:
    with pytest.raises(NotImplementedError,
                       match=r"^--advantage-estimator ppo is not implemented in vime's trainer; "
                             r"use one of \('grpo', 'gspo', 'cispo', 'reinforce_plus_plus', "
                             r"'reinforce_plus_plus_baseline'\)$"):
        estimator_advantages(Namespace(advantage_estimator="ppo"), [1.0], [torch.ones(1)])


def test_discounted_returns() -> None:
    assert discounted_returns(torch.tensor([1.0, 0.0, 2.0]), gamma=0.5).tolist() == [1.5, 1.0, 2.0]
    assert discounted_returns(torch.tensor([1.0, 1.0]), gamma=1.0).tolist() == [2.0, 1.0]
    assert discounted_returns(torch.tensor([]), gamma=0.9).tolist() == []


def test_masked_whiten_uses_only_masked_tokens_for_the_statistics() -> None:
    out = masked_whiten([torch.tensor([2.0, 4.0, 100.0])], [torch.tensor([1.0, 1.0, 0.0])])
    scale = 1 / math.sqrt(1.0 + 1e-8)   # mean 3, variance 1 over the two masked-in tokens
    assert rows(out) == [[round(-scale, 5), round(scale, 5), round(97 * scale, 5)]]
    split = masked_whiten([torch.tensor([1.0]), torch.tensor([3.0, 5.0])],
                          [torch.ones(1), torch.tensor([1.0, 0.0])])
    assert [len(s) for s in split] == [1, 2]
    assert rows(split) == [[round(-1 / math.sqrt(1 + 1e-8), 5)],
                           [round(1 / math.sqrt(1 + 1e-8), 5), round(3 / math.sqrt(1 + 1e-8), 5)]]


def test_masked_whiten_with_every_token_masked_out_only_adds_epsilon() -> None:
    out = masked_whiten([torch.tensor([1.0, -1.0])], [torch.zeros(2)])
    assert rows(out) == [[round(1 / math.sqrt(1e-8), 5), round(-1 / math.sqrt(1e-8), 5)]]


def test_reinforce_plus_plus_reward_sits_on_the_last_of_several_trainable_tokens() -> None:
    # three trainable tokens: the reward lands on index 2 (the last), not index 1
    args = Namespace(advantage_estimator="reinforce_plus_plus", gamma=0.0)
    adv = estimator_advantages(args, [1.0, 0.0], [torch.ones(3), torch.ones(3)])
    # returns 0, 0, 1 | 0, 0, 0: mean 1/6, variance 5/36
    std = math.sqrt(5 / 36 + 1e-8)
    low, high = round(-1 / 6 / std, 5), round(5 / 6 / std, 5)
    assert rows(adv) == [[low, low, high], [low, low, low]]


@pytest.mark.parametrize("estimator", ["reinforce_plus_plus", "reinforce_plus_plus_baseline"])
def test_whitened_estimators_give_float32_on_double_masks(estimator: str) -> None:
    args = Namespace(advantage_estimator=estimator, gamma=1.0)
    adv = estimator_advantages(args, [1.0, 0.0], [torch.ones(2, dtype=torch.float64)] * 2)
    assert [a.dtype for a in adv] == [torch.float32, torch.float32]


def test_masked_whiten_keeps_the_values_dtype_and_counts_one_token() -> None:
    out = masked_whiten([torch.tensor([3.0, 5.0])], [torch.tensor([1.0, 0.0],
                                                                  dtype=torch.float64)])
    assert out[0].dtype == torch.float32
    # one trainable token: mean 3, variance 0
    assert rows(out) == [[0.0, round(2 / math.sqrt(1e-8), 5)]]
