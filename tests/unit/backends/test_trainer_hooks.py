"""The four trainer hooks called for real on a small local Llama, each with a passing and a
failing module; TIS, mismatch metrics, CISPO and REINFORCE++ on the same runs."""

from __future__ import annotations

import math
import sys
import textwrap
import warnings
from argparse import Namespace
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from trainer_helpers import make_args

from vime.backends.advantages import discounted_returns, estimator_advantages, masked_whiten
from vime.backends.losses import pg_token_losses
from vime.backends.trainer import Trainer
from vime.backends.trainer_hooks import TrainerHooks
from vime.contract.errors import ContractError
from vime.contract.hooks import HOOKS
from vime.data.batch_builder import BatchBuilder
from vime.utils import misc
from vime.utils.types import Sample

pytestmark = pytest.mark.unit

HOOKS_MODULE = '''
import torch

from vime.backends.losses import response_log_probs


def grpo_advantages(args, rollout_data):
    """The built-in GRPO advantage, written as upstream users write it."""
    rollout_data["advantages"] = [torch.ones_like(m) * r
                                  for r, m in zip(rollout_data["rewards"],
                                                  rollout_data["loss_masks"])]
    rollout_data["returns"] = rollout_data["advantages"]


def doubled_advantages(args, rollout_data):
    """Twice the built-in GRPO advantage: a result no built-in estimator gives."""
    rollout_data["advantages"] = [torch.ones_like(m) * (2.0 * r)
                                  for r, m in zip(rollout_data["rewards"],
                                                  rollout_data["loss_masks"])]


def per_sample_advantages(args, rollout_data):
    rollout_data["advantages"] = [torch.tensor([r]) for r in rollout_data["rewards"]]


def forgets_advantages(args, rollout_data):
    rollout_data["returns"] = [torch.zeros_like(m) for m in rollout_data["loss_masks"]]


def returns_advantages(args, rollout_data):
    return [torch.ones_like(m) for m in rollout_data["loss_masks"]]


def nan_advantages(args, rollout_data):
    rollout_data["advantages"] = [m * float("nan") for m in rollout_data["loss_masks"]]


def ppo_loss(args, batch, logits, sum_of_sample_mean):
    """PPO-clip on the flat per-token layout: the same loss as the built-in one."""
    lp = torch.cat(response_log_probs(logits, batch, args.rollout_temperature))
    old = torch.cat(batch["log_probs"])
    adv = torch.cat(batch["advantages"])
    ratio = (lp - old).exp()
    per_token = torch.maximum(-adv * ratio, -adv * ratio.clamp(1 - args.eps_clip, 1 + args.eps_clip))
    loss = sum_of_sample_mean(per_token)
    return loss, {"my_pg_loss": loss.detach(), "tokens": float(sum(batch["response_lengths"]))}


def half_ppo_loss(args, batch, logits, sum_of_sample_mean):
    """Half the built-in loss: its backward must give half the built-in gradient."""
    loss, log = ppo_loss(args, batch, logits, sum_of_sample_mean)
    return 0.5 * loss, log


def bare_tensor_loss(args, batch, logits, sum_of_sample_mean):
    return logits.mean()


def nan_loss(args, batch, logits, sum_of_sample_mean):
    return logits.mean() * float("nan"), {}


def detached_loss(args, batch, logits, sum_of_sample_mean):
    return logits.mean().detach(), {"x": 1.0}


def text_in_log(args, batch, logits, sum_of_sample_mean):
    return logits.mean(), {"note": "hello"}


def icepop(args, *, pg_loss, train_log_probs, rollout_log_probs, loss_masks, total_lengths,
           response_lengths):
    """Upstream's IcePop form: zero the tokens whose ratio leaves [L, C]."""
    ratio = torch.exp(torch.cat(train_log_probs) - torch.cat(rollout_log_probs))
    keep = (ratio >= args.tis_clip_low) & (ratio <= args.tis_clip)
    masks = [m * k for m, k in zip(loss_masks, torch.split(keep.float(), response_lengths))]
    return pg_loss * keep, masks, {"kept": keep.float()}


def _first_tokens(response_lengths):
    """1.0 on each response's first token, 0.0 elsewhere, flat ``(N,)``."""
    return torch.cat([torch.eye(1, r).reshape(r) for r in response_lengths])


def mask_first_tis(args, *, pg_loss, train_log_probs, rollout_log_probs, loss_masks,
                   total_lengths, response_lengths):
    """The loss untouched, each response's first token taken out of the returned masks."""
    drop = torch.split(_first_tokens(response_lengths), response_lengths)
    return pg_loss, [m * (1 - d) for m, d in zip(loss_masks, drop)], {}


def zero_first_tis(args, *, pg_loss, train_log_probs, rollout_log_probs, loss_masks,
                   total_lengths, response_lengths):
    """The masks untouched, each response's first token's loss multiplied by 0."""
    return pg_loss * (1 - _first_tokens(response_lengths)), list(loss_masks), {}


def identity_tis(args, *, pg_loss, train_log_probs, rollout_log_probs, loss_masks,
                 total_lengths, response_lengths):
    return pg_loss, list(loss_masks), {}


def short_tis(args, *, pg_loss, train_log_probs, rollout_log_probs, loss_masks, total_lengths,
              response_lengths):
    return pg_loss[:-1], loss_masks, {}


def soft_mask_tis(args, *, pg_loss, train_log_probs, rollout_log_probs, loss_masks,
                  total_lengths, response_lengths):
    return pg_loss, [m * 0.5 for m in loss_masks], {}


def token_mean(total_lengths, response_lengths, loss_masks, calculate_per_token_loss=False):
    mask = torch.cat(loss_masks)
    return lambda x: (x * mask).sum() / mask.sum().clamp(min=1)


def not_callable(total_lengths, response_lengths, loss_masks, calculate_per_token_loss=False):
    return 1.0


def no_reduction(total_lengths, response_lengths, loss_masks, calculate_per_token_loss=False):
    return lambda x: x


def loss_without_logits(args, batch):
    """Two of the four parameters of ``--custom-loss-function-path``: a VIM100 error."""
    return torch.zeros(()), {}
'''

MOD = "vime_test_trainer_hooks"


@pytest.fixture(scope="module")
def hooks_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("trainer_hooks")
    (root / f"{MOD}.py").write_text(textwrap.dedent(HOOKS_MODULE))
    sys.path.insert(0, str(root))
    misc._CACHE.clear()
    yield MOD
    sys.path.remove(str(root))
    sys.modules.pop(MOD, None)


def samples(rollout_log_probs: list[list[float]] | None = None,
            rewards: tuple[float, ...] = (0.0, 1.0, 1.0, 0.0)) -> list[Sample]:
    """Two groups of two samples with different response lengths (3, 2, 4, 3 tokens)."""
    lengths = (3, 2, 4, 3)
    out = []
    for i, r in enumerate(lengths):
        lps = rollout_log_probs[i] if rollout_log_probs else [-1.0] * r
        out.append(Sample(index=i, group_index=i // 2,
                          tokens=[1, 2, 3] + [10 + i + j for j in range(r)],
                          response_length=r, reward=rewards[i],
                          status=Sample.Status.COMPLETED, rollout_log_probs=list(lps)))
    return out


def hook(name: str) -> str:
    return f"{MOD}.{name}"


def run(model: Path, data_samples: list[Sample] | None = None, **kw: object
        ) -> tuple[Trainer, dict[str, float]]:
    misc._CACHE.clear()
    args = make_args(model, **kw)
    trainer = Trainer(args)
    out = trainer.train(0, BatchBuilder.convert(args, data_samples or samples()))
    return trainer, out


def params(trainer: Trainer) -> list[torch.Tensor]:
    return [p.detach().clone() for p in trainer.model.parameters()]


def grads(trainer: Trainer) -> list[torch.Tensor]:
    """The gradients of the last optimiser step (the trainer zeroes them at a step's start)."""
    out = []
    for p in trainer.model.parameters():
        assert p.grad is not None
        out.append(p.grad.detach().clone())
    return out


def scaled(values: list[torch.Tensor], factor: float) -> list[torch.Tensor]:
    return [v * factor for v in values]


def max_diff(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    return max(float((x - y).abs().max()) for x, y in zip(a, b, strict=True))


def fails_before_step(model: Path, match: str, **kw: object) -> ContractError:
    """The run raises ContractError matching ``match`` and no parameter moved."""
    misc._CACHE.clear()
    args = make_args(model, **kw)
    trainer = Trainer(args)
    before = params(trainer)
    with pytest.raises(ContractError, match=match) as info:
        trainer.train(0, BatchBuilder.convert(args, samples()))
    assert max_diff(before, params(trainer)) == 0.0
    assert trainer.global_step == 0
    return info.value


# ---- --custom-advantage-function-path ---------------------------------------------------------


def test_custom_grpo_advantage_gives_the_built_in_update(small_model: Path,
                                                          hooks_module: str) -> None:
    builtin, out_a = run(small_model)
    custom, out_b = run(small_model, custom_advantage_function_path=hook("grpo_advantages"))
    assert max_diff(params(builtin), params(custom)) < 1e-6
    assert out_a["train/pg_loss"] == pytest.approx(out_b["train/pg_loss"], abs=1e-7)


def test_custom_advantages_are_the_ones_trained_on(small_model: Path, hooks_module: str) -> None:
    """Advantages x2 give exactly twice the built-in gradient (ratio 1 on the first step, no
    clipping): the update follows the hook's result, not the built-in estimator's."""
    builtin, out_a = run(small_model, clip_grad=0.0)
    custom, out_b = run(small_model, clip_grad=0.0,
                        custom_advantage_function_path=hook("doubled_advantages"))
    g_builtin, g_custom = grads(builtin), grads(custom)
    assert max(float(g.abs().max()) for g in g_builtin) > 1e-4  # the step has a gradient
    assert max_diff(g_custom, scaled(g_builtin, 2.0)) < 1e-6
    assert out_b["train/grad_norm"] == pytest.approx(2 * out_a["train/grad_norm"], rel=1e-5)
    assert out_b["train/pg_loss"] == pytest.approx(2 * out_a["train/pg_loss"], abs=1e-6)
    # the parameter change is the trainer's own optimiser step on twice the built-in gradient
    expected = Trainer(make_args(small_model, clip_grad=0.0))
    start = params(expected)
    for p, g in zip(expected.model.parameters(), scaled(g_builtin, 2.0), strict=True):
        p.grad = g
    expected.optimizer.step()
    assert max_diff(start, params(custom)) > 1e-3
    assert max_diff(params(expected), params(custom)) < 1e-6


@pytest.mark.parametrize("name,match", [
    ("per_sample_advantages", r"rollout_data\['advantages'\]\[0\] has shape \(1,\), expected "
                              r"\(3,\).*broadcast it"),
    ("forgets_advantages", r"has no 'advantages' key"),
    ("returns_advantages", r"expected None: store the advantages"),
    ("nan_advantages", r"NaN or inf"),
])
def test_custom_advantage_violations_stop_before_the_step(small_model: Path, hooks_module: str,
                                                          name: str, match: str) -> None:
    err = fails_before_step(small_model, match, custom_advantage_function_path=hook(name))
    assert err.ids and set(err.ids) == {"VIM191"}
    text = str(err)
    assert hook(name) in text and "--custom-advantage-function-path" in text
    assert "fix:" in text and "before the optimiser step" in text


# ---- --custom-loss-function-path --------------------------------------------------------------


def test_custom_ppo_loss_gives_the_built_in_update(small_model: Path, hooks_module: str) -> None:
    builtin, out_a = run(small_model, eps_clip_high=None)
    custom, out_b = run(small_model, loss_type="custom_loss",
                        custom_loss_function_path=hook("ppo_loss"))
    assert max_diff(params(builtin), params(custom)) < 1e-6
    assert out_b["train/my_pg_loss"] == pytest.approx(out_a["train/pg_loss"], abs=1e-6)
    assert out_b["train/loss"] == pytest.approx(out_a["train/loss"], abs=1e-6)
    assert out_b["train/tokens"] == 12.0  # log_dict values add up over the micro-batches


def test_custom_loss_backward_is_the_one_stepped(small_model: Path, hooks_module: str) -> None:
    """A custom loss x0.5 gives exactly half the built-in gradient: the hook's loss is the one
    back-propagated."""
    builtin, out_a = run(small_model, eps_clip_high=None, clip_grad=0.0)
    half, out_b = run(small_model, clip_grad=0.0, loss_type="custom_loss",
                      custom_loss_function_path=hook("half_ppo_loss"))
    g_builtin = grads(builtin)
    assert max(float(g.abs().max()) for g in g_builtin) > 1e-4
    assert max_diff(grads(half), scaled(g_builtin, 0.5)) < 1e-6
    assert out_b["train/grad_norm"] == pytest.approx(0.5 * out_a["train/grad_norm"], rel=1e-5)
    assert out_b["train/loss"] == pytest.approx(0.5 * out_a["train/loss"], abs=1e-6)


@pytest.mark.parametrize("name,match", [
    ("bare_tensor_loss", r"custom loss result is a tensor of shape \(\), expected a "
                         r"\(loss, log_dict\) pair"),
    ("nan_loss", r"\(loss\) is nan: not finite"),
    ("detached_loss", r"does not require grad"),
    ("text_in_log", r"\['note'\] is a str, not a number"),
])
def test_custom_loss_violations_stop_before_the_step(small_model: Path, hooks_module: str,
                                                     name: str, match: str) -> None:
    err = fails_before_step(small_model, match, loss_type="custom_loss",
                            custom_loss_function_path=hook(name))
    assert set(err.ids) == {"VIM190"}
    assert hook(name) in str(err) and "--custom-loss-function-path" in str(err)


# ---- TIS and mismatch metrics -----------------------------------------------------------------


def own_log_probs(model: Path) -> list[list[float]]:
    """The trainer's own log probs of the samples (same weights, same temperature)."""
    args = make_args(model)
    data = samples()
    return Trainer(args).compute_log_probs([s.tokens for s in data],
                                           [s.response_length for s in data],
                                           micro_batch_size=2)


def test_mismatch_metrics_are_zero_on_own_samples_and_positive_after_a_shift(
        small_model: Path) -> None:
    own = own_log_probs(small_model)
    _, exact = run(small_model, samples(own), get_mismatch_metrics=True)
    assert exact["train/mismatch_logprob_abs_diff"] < 1e-6
    assert exact["train/mismatch_kl_k3"] < 1e-10
    assert exact["train/mismatch_ratio_outside_clip"] == 0.0
    shifted = [[v - 0.1 for v in row] for row in own]  # the engine is 0.1 nats less sure
    _, off = run(small_model, samples(shifted), get_mismatch_metrics=True, tis_clip_low=0.95)
    assert off["train/mismatch_logprob_abs_diff"] == pytest.approx(0.1, abs=1e-5)
    assert off["train/mismatch_kl_k3"] == pytest.approx(math.exp(0.1) - 1 - 0.1, rel=1e-3)
    assert off["train/mismatch_ratio_outside_clip"] == 0.0  # exp(0.1) in [0.95, 2]
    _, outside = run(small_model, samples(shifted), get_mismatch_metrics=True, tis_clip=1.05)
    assert outside["train/mismatch_ratio_outside_clip"] == 1.0


def test_tis_with_bounds_that_never_bind_equals_no_tis(small_model: Path) -> None:
    own = own_log_probs(small_model)
    plain, _ = run(small_model, samples(own))
    tis, out = run(small_model, samples(own), use_tis=True, tis_clip=2.0, tis_clip_low=0.0)
    assert max_diff(params(plain), params(tis)) < 1e-6
    assert out["train/tis"] == pytest.approx(1.0, abs=1e-5) and out["train/tis_clipfrac"] == 0.0
    # engine log probs off by 0.3 nats: with C = L = 1 every weight is 1 again
    shifted = [[v - 0.3 for v in row] for row in own]
    plain, _ = run(small_model, samples(shifted))
    pinned, _ = run(small_model, samples(shifted), use_tis=True, tis_clip=1.0, tis_clip_low=1.0)
    assert max_diff(params(plain), params(pinned)) < 1e-6
    weighted, out = run(small_model, samples(shifted), use_tis=True, tis_clip=2.0)
    assert max_diff(params(plain), params(weighted)) > 1e-6  # the weights exp(0.3) act
    assert out["train/tis"] == pytest.approx(math.exp(0.3), rel=1e-4)


def test_mismatch_metrics_alone_do_not_change_the_update(small_model: Path) -> None:
    shifted = [[v - 0.3 for v in row] for row in own_log_probs(small_model)]
    plain, _ = run(small_model, samples(shifted))
    measured, out = run(small_model, samples(shifted), get_mismatch_metrics=True)
    assert max_diff(params(plain), params(measured)) == 0.0
    assert out["train/mismatch_logprob_abs_diff"] == pytest.approx(0.3, abs=1e-5)


def test_custom_tis_function_masks_tokens(small_model: Path, hooks_module: str) -> None:
    own = own_log_probs(small_model)
    rows = [[v - (0.5 if j == 0 else 0.0) for j, v in enumerate(row)] for row in own]
    _, out = run(small_model, samples(rows), use_tis=True, tis_clip=1.2, tis_clip_low=0.8,
                 custom_tis_function_path=hook("icepop"))
    assert out["train/tis_kept"] == pytest.approx(8 / 12, abs=0.1)  # first tokens dropped
    assert math.isfinite(out["train/pg_loss"])


def test_custom_tis_mask_takes_tokens_out_of_the_gradient(small_model: Path,
                                                          hooks_module: str) -> None:
    """The first response token of every sample zeroed by the returned masks contributes no
    gradient: the step equals the one whose loss is 0 on exactly those tokens, and differs from
    the step that keeps them."""
    own = samples(own_log_probs(small_model))
    kw = dict(use_tis=True, tis_clip=2.0, tis_clip_low=0.0, clip_grad=0.0)
    kept, _ = run(small_model, own, custom_tis_function_path=hook("identity_tis"), **kw)
    masked, _ = run(small_model, own, custom_tis_function_path=hook("mask_first_tis"), **kw)
    zeroed, _ = run(small_model, own, custom_tis_function_path=hook("zero_first_tis"), **kw)
    g_kept, g_masked, g_zeroed = grads(kept), grads(masked), grads(zeroed)
    assert max_diff(g_masked, g_zeroed) < 1e-7
    assert max_diff(g_masked, g_kept) > 1e-4  # the first tokens did carry gradient


@pytest.mark.parametrize("name,match", [
    ("short_tis", r"\[0\] \(pg_loss\) is a tensor of shape \(11,\), expected a tensor of the "
                  r"given shape \(12,\)"),
    ("soft_mask_tis", r"holds values other than 0 and 1"),
])
def test_custom_tis_violations_stop_before_the_step(small_model: Path, hooks_module: str,
                                                    name: str, match: str) -> None:
    err = fails_before_step(small_model, match, use_tis=True, micro_batch_size=4,
                            custom_tis_function_path=hook(name))
    assert set(err.ids) == {"VIM192"} and "--custom-tis-function-path" in str(err)


# ---- --custom-pg-loss-reducer-function-path ---------------------------------------------------


def test_custom_reducer_replaces_the_sample_mean(small_model: Path, hooks_module: str) -> None:
    data = samples(rewards=(0.0, 1.0, 0.0, 0.0))  # advantages -a (3 tokens), +a (2 tokens), 0, 0
    _, default = run(small_model, data, micro_batch_size=4)
    _, token = run(small_model, data, micro_batch_size=4,
                   custom_pg_loss_reducer_function_path=hook("token_mean"))
    a = 0.5 / (math.sqrt(0.5) + 1e-6)  # the group-normalised reward
    assert default["train/pg_loss"] == pytest.approx(0.0, abs=1e-6)  # (3a/3 - 2a/2) / 4
    assert token["train/pg_loss"] == pytest.approx((3 * a - 2 * a) / 12, rel=1e-4)


@pytest.mark.parametrize("name,match", [
    ("not_callable", r"factory result is a float, expected a callable"),
    ("no_reduction", r"reducer output has shape \(12,\), expected a scalar"),
])
def test_custom_reducer_violations_stop_before_the_step(small_model: Path, hooks_module: str,
                                                        name: str, match: str) -> None:
    err = fails_before_step(small_model, match, micro_batch_size=4,
                            custom_pg_loss_reducer_function_path=hook(name))
    assert set(err.ids) == {"VIM193"}


# ---- estimators ---------------------------------------------------------------------------------


def test_reinforce_plus_plus_discounts_from_the_last_trainable_token() -> None:
    g = discounted_returns(torch.tensor([0.0, 0.0, 1.0]), gamma=0.5)
    assert g.tolist() == [0.25, 0.5, 1.0]
    args = Namespace(advantage_estimator="reinforce_plus_plus", gamma=1.0)
    masks = [torch.tensor([1.0, 1.0, 0.0]), torch.tensor([1.0, 1.0])]
    adv = estimator_advantages(args, [1.0, 0.0], masks)
    assert [a.shape[0] for a in adv] == [3, 2]
    trainable = torch.cat([a[m.bool()] for a, m in zip(adv, masks, strict=True)])
    assert float(trainable.mean()) == pytest.approx(0.0, abs=1e-6)
    assert float(adv[0][0]) > 0 > float(adv[1][0])
    assert masked_whiten([torch.tensor([2.0, 4.0])], [torch.ones(2)])[0].tolist() == \
        pytest.approx([-1.0, 1.0], abs=1e-6)


def test_cispo_keeps_the_gradient_of_clipped_tokens() -> None:
    lp = torch.tensor([[-1.0, -1.0]], requires_grad=True)
    old = torch.tensor([[-1.5, -1.0]])  # token 0 ratio e^0.5 > 1.2: clipped
    adv, mask = torch.ones(1, 2), torch.ones(1, 2)
    per_token, clipped = pg_token_losses(lp, old, adv, mask, eps_clip=0.2, cispo=True)
    per_token.sum().backward()
    assert lp.grad is not None and bool((lp.grad != 0).all())  # both tokens keep a gradient
    assert clipped.tolist() == [[1.0, 0.0]]
    assert lp.grad.tolist()[0][0] == pytest.approx(-1.2)
    lp2 = lp.detach().clone().requires_grad_(True)
    ppo, _ = pg_token_losses(lp2, old, adv, mask, eps_clip=0.2)
    ppo.sum().backward()
    assert lp2.grad is not None and float(lp2.grad[0, 0]) == 0.0  # PPO drops it


@pytest.mark.parametrize("estimator", ["cispo", "reinforce_plus_plus"])
def test_new_estimators_train(small_model: Path, estimator: str) -> None:
    trainer, out = run(small_model, advantage_estimator=estimator, eps_clip=1.0 if estimator ==
                       "cispo" else 0.2)
    assert math.isfinite(out["train/loss"]) and out["train/grad_norm"] > 0
    assert trainer.global_step == 1


# ---- vime.backends.tis on hand-computed values (no model) --------------------------------------


def test_vanilla_tis_weights_each_token_by_its_truncated_ratio() -> None:
    from vime.backends.tis import vanilla_tis_function

    train = [torch.tensor([-1.0, -2.0], dtype=torch.float64, requires_grad=True),
             torch.tensor([-0.5, 10.0, -10.0], dtype=torch.float64, requires_grad=True)]
    rollout = [torch.tensor([-1.5, -1.0], dtype=torch.float64),
               torch.tensor([-0.5, -20.0, 20.0], dtype=torch.float64)]
    masks = [torch.tensor([1.0, 1.0]), torch.tensor([1.0, 0.0, 1.0])]
    pg = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0], dtype=torch.float64, requires_grad=True)
    out, out_masks, metrics = vanilla_tis_function(
        args=Namespace(tis_clip=2.0, tis_clip_low=0.5), pg_loss=pg, train_log_probs=train,
        rollout_log_probs=rollout, loss_masks=masks, total_lengths=[5, 6],
        response_lengths=[2, 3])
    # log ratios 0.5, -1, 0, 30 and -30; the last two are clamped to +-20 before exp
    ratio = [math.exp(0.5), math.exp(-1.0), 1.0, math.exp(20.0), math.exp(-20.0)]
    weights = [math.exp(0.5), 0.5, 1.0, 2.0, 0.5]
    assert metrics["tis"].tolist() == pytest.approx(ratio, rel=1e-12)
    assert out.tolist() == pytest.approx([i * w for i, w in enumerate(weights, 1)], rel=1e-12)
    assert metrics["tis_clipfrac"].tolist() == [0.0, 1.0, 0.0, 1.0, 1.0]
    assert metrics["tis_clipfrac"].dtype == torch.float32
    assert metrics["tis_abs"].tolist() == pytest.approx([abs(r - 1.0) for r in ratio], rel=1e-12)
    assert set(metrics) == {"tis", "tis_clipfrac", "tis_abs"}
    assert isinstance(out_masks, list) and all(a is b for a, b in zip(out_masks, masks,
                                                                       strict=True))
    # the weight is a constant of the step: no gradient flows into the trainer's log probs
    assert not metrics["tis"].requires_grad
    out.sum().backward()
    assert pg.grad is not None and pg.grad.tolist() == pytest.approx(weights, rel=1e-12)
    assert all(t.grad is None for t in train)


def test_vanilla_tis_reads_its_bounds_from_the_args() -> None:
    from vime.backends.tis import vanilla_tis_function

    def weights(low: float, high: float) -> list[float]:
        lps = [torch.tensor([0.0, math.log(3.0), math.log(0.25)])]
        out, _, _ = vanilla_tis_function(
            args=Namespace(tis_clip=high, tis_clip_low=low), pg_loss=torch.ones(3),
            train_log_probs=lps, rollout_log_probs=[torch.zeros(3)],
            loss_masks=[torch.ones(3)])
        return out.tolist()

    assert weights(0.0, 10.0) == pytest.approx([1.0, 3.0, 0.25], rel=1e-6)
    assert weights(0.5, 2.0) == pytest.approx([1.0, 2.0, 0.5], rel=1e-6)
    assert weights(1.0, 1.0) == pytest.approx([1.0, 1.0, 1.0], rel=1e-6)


def test_mismatch_metrics_on_hand_computed_values() -> None:
    from vime.backends.tis import MISMATCH_METRICS, mismatch_metrics

    train = [[-1.0, -2.0, -3.0], [-0.5]]
    rollout = [[-1.5, -1.0, -9.0], [-0.7]]
    masks = [[1, 1, 0], [1]]                      # the third token is not trained on
    d = [-1.0 - -1.5, -2.0 - -1.0, -0.5 - -0.7]   # 0.5, -1.0, 0.2
    out = mismatch_metrics(train, rollout, masks, clip_low=0.5, clip_high=1.5)
    assert tuple(out) == MISMATCH_METRICS
    assert out["mismatch_logprob_abs_diff"] == pytest.approx(sum(map(abs, d)) / 3, rel=1e-12)
    assert out["mismatch_kl_k3"] == pytest.approx(
        sum(math.exp(x) - 1 - x for x in d) / 3, rel=1e-12)
    # exp(0.5) = 1.65 > 1.5 and exp(-1) = 0.37 < 0.5 are outside; exp(0.2) = 1.22 is not
    assert out["mismatch_ratio_outside_clip"] == pytest.approx(2 / 3, rel=1e-12)
    assert all(type(v) is float for v in out.values())
    # the bounds themselves are inside; only a trained token counts
    assert mismatch_metrics([[0.0, 5.0]], [[0.0, 0.0]], [[1, 0]], clip_low=1.0,
                            clip_high=1.0) == dict.fromkeys(MISMATCH_METRICS, 0.0)
    assert mismatch_metrics([[1.0]], [[1.0]], [[0]], clip_low=0.0, clip_high=2.0) == \
        dict.fromkeys(MISMATCH_METRICS, 0.0)
    assert mismatch_metrics([], [], [], clip_low=0.0, clip_high=2.0) == \
        dict.fromkeys(MISMATCH_METRICS, 0.0)


def test_mismatch_metrics_clamp_the_log_ratio_at_20() -> None:
    from vime.backends.tis import mismatch_metrics

    high, low = math.exp(20.0) * 1.5, math.exp(-20.0) / 1.5
    # |d| = 30: the ratio is taken at exp(+-20), inside these bounds
    out = mismatch_metrics([[30.0, -30.0]], [[0.0, 0.0]], [[1, 1]], clip_low=low,
                           clip_high=high)
    assert out["mismatch_ratio_outside_clip"] == 0.0
    assert out["mismatch_logprob_abs_diff"] == 30.0


def test_mismatch_metrics_refuse_ragged_inputs() -> None:
    from vime.backends.tis import mismatch_metrics

    with pytest.raises(ValueError):
        mismatch_metrics([[0.0, 1.0]], [[0.0]], [[1, 1]], clip_low=0.0, clip_high=2.0)
    with pytest.raises(ValueError):
        mismatch_metrics([[0.0]], [[0.0]], [[1], [1]], clip_low=0.0, clip_high=2.0)


# ---- TrainerHooks called directly (plain functions, no model) ----------------------------------

HOOK_PATH = "my_pkg.hooks.my_hook"


def direct(dest: str, fn: Callable[..., Any]) -> TrainerHooks:
    return TrainerHooks({dest: HOOK_PATH}, {dest: fn})


def _bad_advantages(hooks: TrainerHooks) -> object:
    return hooks.advantages(Namespace(), {}, [3], 7)  # stores no "advantages"


def _bad_loss(hooks: TrainerHooks) -> object:
    return hooks.loss(Namespace(), {}, torch.zeros(3), lambda x: x.sum(), 7)


def _bad_tis(hooks: TrainerHooks) -> object:
    return hooks.tis({"pg_loss": torch.zeros(3), "loss_masks": [torch.ones(3)]}, 7)


def _bad_reduce(hooks: TrainerHooks) -> object:
    return hooks.reduce_pg_loss(([3], [3], [torch.ones(3)], False), torch.zeros(3), 7)


@pytest.mark.parametrize("dest,fn,call,match", [
    ("custom_advantage_function_path", lambda args, data: None, _bad_advantages,
     "has no 'advantages' key"),
    ("custom_loss_function_path", lambda *a: torch.ones(()), _bad_loss, "expected a"),
    ("custom_tis_function_path", lambda **kw: (kw["pg_loss"][:-1], kw["loss_masks"], {}),
     _bad_tis, r"expected a tensor of the given shape \(3,\)"),
    ("custom_pg_loss_reducer_function_path", lambda *a: 1.0, _bad_reduce,
     "expected a callable"),                                   # the factory's check
    ("custom_pg_loss_reducer_function_path", lambda *a: (lambda x: x), _bad_reduce,
     r"has shape \(3,\), expected a scalar"),                 # the reduced value's check
])
def test_each_hook_violation_names_the_path_and_the_rollout_step(
        dest: str, fn: Callable[..., Any], call: Callable[[TrainerHooks], object],
        match: str) -> None:
    """Every check site passes the rollout step on: the error says which step stopped."""
    with pytest.raises(ContractError, match=match) as info:
        call(direct(dest, fn))
    assert f"`{HOOK_PATH}` ({HOOKS[dest].arg}) step 7:" in str(info.value)


def test_the_advantage_hook_gets_the_args_and_its_returns_come_back() -> None:
    seen: list[object] = []

    def with_returns(args: Namespace, data: dict) -> None:
        seen.append(args)
        data["advantages"] = [torch.ones(2)]
        data["returns"] = [torch.full((2,), 3.0)]

    def without_returns(args: Namespace, data: dict) -> None:
        data["advantages"] = [torch.ones(2)]

    args = Namespace(gamma=0.5)
    adv, ret = direct("custom_advantage_function_path", with_returns).advantages(
        args, {}, [2], 0)
    assert seen == [args] and seen[0] is args
    assert [a.tolist() for a in adv] == [[1.0, 1.0]]
    assert ret is not None and [r.tolist() for r in ret] == [[3.0, 3.0]]
    assert direct("custom_advantage_function_path", without_returns).advantages(
        args, {}, [2], 0)[1] is None


def test_custom_loss_log_values_are_detached_before_they_become_floats() -> None:
    """A log value that still requires grad (the loss itself, undetached) is read without
    torch's "Converting a tensor with requires_grad=True to a scalar" warning."""
    w = torch.tensor(2.0, requires_grad=True)

    def loss_logging_itself(args, batch, logits, sum_of_sample_mean):
        loss = w * 3
        return loss, {"loss_again": loss, "plain": 1, "tensor": torch.tensor(0.5)}

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss, log = direct("custom_loss_function_path", loss_logging_itself).loss(
            Namespace(), {}, torch.zeros(1), lambda x: x, 0)
    assert loss.requires_grad and float(loss.detach()) == 6.0
    assert log == {"loss_again": 6.0, "plain": 1.0, "tensor": 0.5}
    assert all(type(v) is float for v in log.values())


def test_a_reducer_that_detaches_the_loss_is_stopped_only_when_pg_loss_had_a_gradient() -> None:
    hooks = direct("custom_pg_loss_reducer_function_path",
                   lambda *a: (lambda x: x.sum().detach().reshape(1)))
    factory_args = ([3], [3], [torch.ones(3)], False)
    with pytest.raises(ContractError, match="does not require grad although pg_loss did"):
        hooks.reduce_pg_loss(factory_args, torch.ones(3, requires_grad=True), 2)
    out = hooks.reduce_pg_loss(factory_args, torch.ones(3), 2)  # no gradient to lose
    assert out.shape == () and float(out) == 3.0


def test_from_args_loads_each_configured_hook_with_its_signature_check(
        hooks_module: str) -> None:
    misc._CACHE.clear()
    hooks = TrainerHooks.from_args(Namespace(custom_loss_function_path=hook("ppo_loss"),
                                             custom_tis_function_path=hook("identity_tis")))
    assert hooks.paths == {"custom_loss_function_path": hook("ppo_loss"),
                           "custom_tis_function_path": hook("identity_tis")}
    assert hooks.has("custom_loss_function_path") and hooks.has("custom_tis_function_path")
    assert not hooks.has("custom_advantage_function_path")
    misc._CACHE.clear()
    with pytest.raises(ContractError, match="--custom-loss-function-path") as info:
        TrainerHooks.from_args(Namespace(custom_loss_function_path=hook("loss_without_logits")))
    assert "loss_without_logits" in str(info.value)
