"""The micro-batch loss paths (``vime.backends.loss_paths``) on hand-built tensors, no model."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from vime.backends.batching import pad_batch
from vime.backends.loss_paths import (
    LossSettings,
    ResponseOutputs,
    builtin_loss,
    custom_loss_batch,
)
from vime.backends.losses import kl_k3, policy_loss, reduce_sample_mean, sft_loss

pytestmark = pytest.mark.unit


def _settings(**over: Any) -> LossSettings:
    base: dict[str, Any] = dict(loss_type="policy_loss", estimator="grpo", eps_clip=0.2,
                                eps_clip_high=None, kl_loss_coef=0.0, use_kl=False,
                                entropy_coef=0.0)
    base.update(over)
    return LossSettings(**base)


def _step() -> dict[str, Any]:
    # two samples: 2 and 3 response tokens; the second has one masked token
    return {
        "tokens": [[1, 2, 3, 4], [1, 5, 6, 7, 8]],
        "response_lengths": [2, 3],
        "total_lengths": [4, 5],
        "loss_masks": [[1, 1], [1, 0, 1]],
        "rollout_mask_sums": [2, 2],
        "old_log_probs": [[-1.0, -1.0], [-0.5, -0.5, -0.5]],
        "advantages": [[1.0, 1.0], [-1.0, -1.0, -1.0]],
        "ref_log_probs": [[-1.2, -0.8], [-0.5, -0.4, -0.6]],
        "rewards": [1.0, 0.0],
    }


def _outputs() -> ResponseOutputs:
    lp = torch.tensor([[-0.9, -1.1, 0.0], [-0.6, -0.5, -0.3]], requires_grad=True)
    valid = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    ent = torch.tensor([[0.5, 0.4, 0.0], [0.3, 0.2, 0.1]])
    hits = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0]])
    return ResponseOutputs(lp, valid, ent, hits)


MASK = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0]])
OLD = torch.tensor([[-1.0, -1.0, 0.0], [-0.5, -0.5, -0.5]])
ADV = torch.tensor([[1.0, 1.0, 0.0], [-1.0, -1.0, -1.0]])
DENOM = torch.tensor([2.0, 2.0])


def test_policy_path_is_policy_loss_plus_kl_minus_entropy() -> None:
    out = _outputs()
    settings = _settings(eps_clip_high=0.28, kl_loss_coef=0.1, use_kl=True, entropy_coef=0.01)
    loss, stats, additive = builtin_loss(settings, _step(), [0, 1], out, 2)
    pg, pg_stats = policy_loss(out.log_probs, OLD, ADV, MASK, DENOM, 2, eps_clip=0.2,
                               eps_clip_high=0.28)
    ref = torch.tensor([[-1.2, -0.8, 0.0], [-0.5, -0.4, -0.6]])
    kl = reduce_sample_mean(kl_k3(out.log_probs, ref), MASK, DENOM, 2)
    ent = reduce_sample_mean(out.entropy, MASK, DENOM, 2)
    assert float(loss.detach()) == pytest.approx(float((pg + 0.1 * kl - 0.01 * ent).detach()),
                                              rel=1e-6)
    for key in ("pg_loss", "pg_clipfrac", "ppo_kl"):
        assert stats[key] == pytest.approx(pg_stats[key], rel=1e-6)
    assert stats["kl_loss"] == pytest.approx(float(kl), rel=1e-6)
    assert stats["greedy_match"] == pytest.approx(1.0)   # sample 1's miss is masked
    assert additive == set()


def test_sft_path_ignores_tis_and_reducer() -> None:
    out = _outputs()
    called: list[str] = []

    def tis(kwargs: dict[str, Any]) -> Any:
        called.append("tis")
        raise AssertionError("TIS runs on the pg loss only")

    loss, stats, _ = builtin_loss(_settings(loss_type="sft_loss"), _step(), [0, 1], out, 2,
                                  tis=tis)
    expected, _ = sft_loss(out.log_probs, MASK, DENOM, 2)
    assert float(loss.detach()) == pytest.approx(float(expected.detach()), rel=1e-6)
    assert "pg_loss" not in stats and called == []


def test_tis_and_reducer_see_flat_tensors_and_the_tis_masks() -> None:
    step = _step()
    step["train_log_probs"] = step["old_log_probs"]
    step["rollout_log_probs"] = [[-1.1, -0.9], [-0.5, -0.7, -0.4]]
    seen: dict[str, Any] = {}

    def tis(kwargs: dict[str, Any]) -> Any:
        seen["tis"] = kwargs
        masks = [torch.tensor([1.0, 0.0]), torch.tensor([1.0, 0.0, 1.0])]   # drops one token
        return kwargs["pg_loss"] * 2.0, masks, {"ratio": torch.ones(5), "tis_abs": 0.5}

    def reducer(factory_args: Any, pg_flat: torch.Tensor) -> torch.Tensor:
        seen["factory"] = factory_args
        seen["flat_shape"] = tuple(pg_flat.shape)
        return pg_flat.sum()

    _, stats, additive = builtin_loss(_settings(), step, [0, 1], _outputs(), 2, tis=tis,
                                      reducer=reducer)
    assert sorted(seen["tis"]) == ["loss_masks", "pg_loss", "response_lengths",
                                   "rollout_log_probs", "total_lengths", "train_log_probs"]
    assert tuple(seen["tis"]["pg_loss"].shape) == (5,)
    total_lengths, rlens, masks, per_token = seen["factory"]
    assert (total_lengths, rlens, per_token) == ([4, 5], [2, 3], False)
    assert [m.tolist() for m in masks] == [[1.0, 0.0], [1.0, 0.0, 1.0]]
    assert seen["flat_shape"] == (5,)
    assert additive == {"tis_ratio", "tis_abs"} == {k for k in stats if k.startswith("tis")}
    assert stats["tis_abs"] == 0.5


def test_custom_loss_batch_names_and_sum_of_sample_mean() -> None:
    step = _step()
    padded = pad_batch(step["tokens"], pad_id=0, side="right")
    batch, ssm = custom_loss_batch(step, [1, 0], padded, 2)
    assert batch["response_lengths"] == [3, 2] and batch["total_lengths"] == [5, 4]
    assert [t.tolist() for t in batch["log_probs"]] == [[-0.5, -0.5, -0.5], [-1.0, -1.0]]
    assert "old_log_probs" not in batch and batch["num_rollouts"] == 2
    assert [m.tolist() for m in batch["loss_masks"]] == [[1.0, 0.0, 1.0], [1.0, 1.0]]
    flat = torch.tensor([1.0, 5.0, 3.0, 2.0, 4.0])      # sample 1's three, then sample 0's two
    dense = torch.tensor([[1.0, 5.0, 3.0], [2.0, 4.0, 0.0]])
    # (1 + 3) / 2 + (2 + 4) / 2, over 2 rollouts
    assert float(ssm(flat)) == float(ssm(dense)) == pytest.approx(2.5)


def _uneven_step(failed: list[int] | None = None) -> dict[str, Any]:
    # two rollouts of 2 and 3 loss tokens; with ``failed`` a third, FAILED one of 1 token
    step = {
        "tokens": [[1, 2, 3, 4], [1, 5, 6, 7, 8]],
        "response_lengths": [2, 3],
        "total_lengths": [4, 5],
        "loss_masks": [[1, 1], [1, 1, 1]],
        "rollout_mask_sums": [2, 3],
        "rollout_ids": [0, 1],
        "old_log_probs": [[-1.0, -1.0], [-0.5, -0.5, -0.5]],
        "advantages": [[1.0, 1.0], [-1.0, -1.0, -1.0]],
        "rewards": [1.0, 0.0],
    }
    if failed is not None:
        step = {k: [*v, v[0]] for k, v in step.items()}
        step["rollout_ids"][-1], step["rollout_mask_sums"][-1] = 2, 1
        step["failed"] = failed
    return step


def test_per_token_loss_weighs_every_token_the_same() -> None:
    from vime.backends.loss_paths import step_mask_tokens
    from vime.backends.losses import pg_token_losses

    lp = torch.tensor([[-0.9, -1.1, 0.0], [-0.6, -0.5, -0.3]], requires_grad=True)
    valid = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    out = ResponseOutputs(lp, valid, torch.zeros(2, 3), torch.zeros(2, 3))
    mask = valid
    old = torch.tensor([[-1.0, -1.0, 0.0], [-0.5, -0.5, -0.5]])
    adv = torch.tensor([[1.0, 1.0, 0.0], [-1.0, -1.0, -1.0]])
    per_token, _ = pg_token_losses(lp, old, adv, mask, eps_clip=0.2, eps_clip_high=None)
    token_mean = float(((per_token * mask).sum() / 5).detach())
    sample_mean = float(((per_token[0] * mask[0]).sum() / 2
                         + (per_token[1] * mask[1]).sum() / 3).detach()) / 2
    assert token_mean != pytest.approx(sample_mean)       # the case tells the two apart
    per_sample, _, _ = builtin_loss(_settings(), _uneven_step(), [0, 1], out, 2)
    assert float(per_sample.detach()) == pytest.approx(sample_mean, rel=1e-6)
    per_tok, _, _ = builtin_loss(_settings(per_token=True), _uneven_step(), [0, 1], out, 2)
    assert float(per_tok.detach()) == pytest.approx(token_mean, rel=1e-6)
    # micro-batches of one row each add up to the same token mean
    halves = [builtin_loss(_settings(per_token=True), _uneven_step(), [i], ResponseOutputs(
        lp[i:i + 1], valid[i:i + 1], torch.zeros(1, 3), torch.zeros(1, 3)), 2)[0]
        for i in (0, 1)]
    assert float(sum(h.detach() for h in halves)) == pytest.approx(token_mean, rel=1e-6)
    # a FAILED rollout's tokens are not counted, as num_rollouts does not count it
    assert step_mask_tokens(_uneven_step(failed=[0, 0, 1])) == 5
    assert step_mask_tokens(_uneven_step(failed=[0, 0, 0])) == 6
    # the custom loss's reducer and the pg-loss reducer factory see the same setting
    padded = pad_batch(_uneven_step()["tokens"])
    _, reduce = custom_loss_batch(_uneven_step(), [0, 1], padded, 2, per_token=True)
    assert float(reduce(per_token).detach()) == pytest.approx(token_mean, rel=1e-6)
    seen: list[bool] = []

    def reducer(factory_args: Any, flat: torch.Tensor) -> torch.Tensor:
        seen.append(factory_args[3])
        return flat.sum()

    builtin_loss(_settings(per_token=True), _uneven_step(), [0, 1], out, 2, reducer=reducer)
    builtin_loss(_settings(), _uneven_step(), [0, 1], out, 2, reducer=reducer)
    assert seen == [True, False]


def test_per_token_loss_flag() -> None:
    from vime.config import parse_args

    base = ["--rollout-batch-size", "4"]
    assert LossSettings.from_args(parse_args(base, training=False)).per_token is False
    assert LossSettings.from_args(parse_args([*base, "--calculate-per-token-loss"],
                                             training=False)).per_token is True
