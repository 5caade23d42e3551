"""Losses vs hand computation, the learning-rate schedule, padding and micro-batches."""

from __future__ import annotations

import math
from argparse import Namespace

import pytest
import torch

from vime.backends.batching import gather_response, micro_batches, pad_batch, pad_per_token
from vime.backends.losses import (
    argmax_hits,
    greedy_match,
    kl_k3,
    policy_loss,
    sft_loss,
    token_log_probs,
)
from vime.backends.optim import build_optimizer, build_scheduler, lr_at

pytestmark = pytest.mark.unit


def test_ppo_clip_matches_hand_computation() -> None:
    # one sample, 3 tokens; ratios e^0.5 (clipped high), e^-0.5 (clipped low for A<0), 1
    lp = torch.tensor([[0.5, -0.5, 0.0]], requires_grad=True)
    old = torch.zeros(1, 3)
    adv = torch.tensor([[1.0, -1.0, 2.0]])
    mask = torch.ones(1, 3)
    loss, stats = policy_loss(lp, old, adv, mask, torch.tensor([3.0]), 1, eps_clip=0.2)
    r = [math.exp(0.5), math.exp(-0.5), 1.0]
    per_tok = []
    for ri, ai in zip(r, [1.0, -1.0, 2.0], strict=True):
        per_tok.append(max(-ai * ri, -ai * min(max(ri, 0.8), 1.2)))
    assert float(loss.detach()) == pytest.approx(sum(per_tok) / 3, rel=1e-6)
    # token 0: -1*1.2 > -1*1.65 -> clipped; token 1: A<0, r=.61: -(-1)*.8=.8 > .61 -> clipped
    assert stats["pg_clipfrac"] == pytest.approx(2 / 3)
    loss.backward()
    # clipped tokens carry no gradient; the unclipped one: d(-A r)/d lp = -A r = -2
    assert lp.grad is not None
    assert lp.grad.tolist()[0] == pytest.approx([0.0, 0.0, -2.0 / 3])


def test_ppo_asymmetric_clip_and_mask_and_denominator() -> None:
    lp = torch.tensor([[0.25, 9.0], [0.0, 0.0]])
    old = torch.zeros(2, 2)
    adv = torch.tensor([[1.0, 1.0], [3.0, 3.0]])
    mask = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    # eps_high 0.28 keeps ratio e^.25=1.284 -> clipped to 1.28; masked token ignored
    loss, _ = policy_loss(lp, old, adv, mask, torch.tensor([1.0, 4.0]), 2, eps_clip=0.2,
                          eps_clip_high=0.28)
    expected = (-1.28 / 1 + (-3.0 - 3.0) / 4) / 2
    assert float(loss.detach()) == pytest.approx(expected, rel=1e-6)


def test_gspo_uses_sequence_ratio() -> None:
    lp = torch.tensor([[0.1, 0.3]], requires_grad=True)
    old = torch.zeros(1, 2)
    adv = torch.ones(1, 2)
    loss, _ = policy_loss(lp, old, adv, torch.ones(1, 2), torch.tensor([2.0]), 1,
                          eps_clip=0.5, sequence_level=True)
    seq_ratio = math.exp(0.2)
    assert float(loss.detach()) == pytest.approx(-seq_ratio, rel=1e-6)


def test_sft_loss_is_masked_nll() -> None:
    lp = torch.tensor([[-1.0, -2.0, -3.0], [-0.5, -0.5, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    loss, stats = sft_loss(lp, mask, torch.tensor([2.0, 1.0]), 2)
    assert float(loss.detach()) == pytest.approx(((1 + 2) / 2 + 0.5 / 1) / 2)
    assert stats["sft_token_nll"] == pytest.approx((1 + 2 + 0.5) / 3)


def test_token_log_probs_and_kl() -> None:
    logits = torch.tensor([[[0.0, 1.0], [2.0, 0.0], [0.0, 0.0]]])
    ids = torch.tensor([[0, 1, 0]])
    lp = token_log_probs(logits, ids)
    assert lp.tolist()[0] == pytest.approx([1 - math.log(1 + math.e), 2 - math.log(1 + math.e ** 2)])
    assert float(kl_k3(lp, lp).abs().max()) == 0.0
    assert float(kl_k3(torch.tensor([0.0]), torch.tensor([-1.0]))) == pytest.approx(
        math.exp(-1) + 1 - 1)


@pytest.mark.parametrize("style,step,expected", [
    ("constant", 0, 0.25), ("constant", 3, 1.0), ("constant", 50, 1.0),
    ("linear", 4, 1.0), ("linear", 54, 0.1 + 0.9 * 0.5), ("linear", 104, 0.1),
    ("cosine", 4, 1.0), ("cosine", 54, 0.1 + 0.9 * 0.5), ("cosine", 29, 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 0.25))),
    ("cosine", 200, 0.1),
])
def test_lr_schedule(style: str, step: int, expected: float) -> None:
    assert lr_at(step, lr=1.0, min_lr=0.1, warmup=4, total=104, style=style) == pytest.approx(expected)


def test_lr_schedule_rejects_unknown_style() -> None:
    with pytest.raises(ValueError, match="--lr-decay-style 'exp' is not supported"):
        lr_at(0, lr=1.0, min_lr=0.0, warmup=0, total=10, style="exp")


def test_scheduler_drives_optimizer() -> None:
    model = torch.nn.Linear(2, 2)
    args = Namespace(lr=0.5, min_lr=0.0, lr_warmup_steps=2, lr_decay_style="linear",
                     weight_decay=0.1, adam_beta1=0.9, adam_beta2=0.99)
    opt = build_optimizer(model, args)
    assert [g["weight_decay"] for g in opt.param_groups] == [0.1, 0.0]
    sched = build_scheduler(opt, args, total_steps=6)
    seen = []
    for _ in range(6):
        seen.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert seen == pytest.approx([0.25, 0.5, 0.5, 0.375, 0.25, 0.125])


def test_weight_decay_all_decays_biases_and_norm_weights_too() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.LayerNorm(2))
    args = Namespace(lr=0.1, weight_decay=0.1)
    groups = build_optimizer(model, args).param_groups
    assert [(len(g["params"]), g["weight_decay"]) for g in groups] == [(1, 0.1), (3, 0.0)]
    args.weight_decay_all = True
    groups = build_optimizer(model, args).param_groups
    assert [(len(g["params"]), g["weight_decay"]) for g in groups] == [(4, 0.1), (0, 0.0)]


def test_padding_sides_and_gather() -> None:
    rows = [[5, 6, 7, 8], [5, 6]]
    right = pad_batch(rows, pad_id=0, side="right")
    left = pad_batch(rows, pad_id=0, side="left")
    assert right.position_ids.tolist() == [[0, 1, 2, 3], [0, 1, 1, 1]]
    assert left.position_ids.tolist() == [[0, 1, 2, 3], [0, 0, 0, 1]]
    # fake per-token values = the target token id, so gathering must return the response ids
    for batch in (right, left):
        fake = batch.input_ids[:, 1:].float()
        values, valid = gather_response(fake, batch, [2, 1])
        assert values.tolist() == [[7.0, 8.0], [6.0, 0.0]]
        assert valid.tolist() == [[1.0, 1.0], [1.0, 0.0]]
    with pytest.raises(ValueError, match=r"row 1: response_length=2 must be in \[1, len\(tokens\) - 1 = 1\]"):
        gather_response(right.input_ids[:, 1:].float(), right, [1, 2])


def test_padded_log_probs_equal_unpadded_either_side() -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=32, hidden_size=32, intermediate_size=64,
                                         num_hidden_layers=1, num_attention_heads=1,
                                         num_key_value_heads=1)).eval()
    rows = [[3, 4, 5, 6, 7], [3, 9, 10]]
    with torch.no_grad():
        single = [token_log_probs(model(torch.tensor([r])).logits, torch.tensor([r]))[0, -2:]
                  for r in rows]
        for side in ("left", "right"):
            batch = pad_batch(rows, side=side)
            logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                           position_ids=batch.position_ids).logits
            lp, _ = gather_response(token_log_probs(logits, batch.input_ids), batch, [2, 2])
            for i in range(2):
                assert torch.allclose(lp[i], single[i], atol=1e-5), side


def test_micro_batches_fixed_and_dynamic() -> None:
    assert micro_batches([3] * 5, micro_batch_size=2) == [[0, 1], [2, 3], [4]]
    assert micro_batches([4, 4, 9, 1, 1], micro_batch_size=1, max_tokens=8) == [[0, 1], [2], [3, 4]]
    with pytest.raises(ValueError, match="--micro-batch-size=0"):
        micro_batches([1], micro_batch_size=0)


def test_pad_per_token() -> None:
    assert pad_per_token([[1.0], [2.0, 3.0]], 3).tolist() == [[1.0, 0.0, 0.0], [2.0, 3.0, 0.0]]


def test_greedy_match_counts_samples_whose_every_trainable_token_is_the_argmax() -> None:
    # vocab 3; sample 0: targets are the argmax everywhere; sample 1: the 2nd target is not;
    # sample 2: the miss is outside the mask; sample 3: no trainable token (not counted)
    logits = torch.tensor([[[0.0, 5.0, 0.0], [0.0, 0.0, 5.0], [0.0, 0.0, 0.0]]]).repeat(4, 1, 1)
    ids = torch.tensor([[0, 1, 2], [0, 1, 0], [0, 1, 0], [0, 1, 0]])
    hits = argmax_hits(logits, ids)
    assert hits.tolist() == [[1.0, 1.0], [1.0, 0.0], [1.0, 0.0], [1.0, 0.0]]
    mask = torch.tensor([[1.0, 1.0], [1.0, 1.0], [1.0, 0.0], [0.0, 0.0]])
    assert greedy_match(hits, mask) == pytest.approx(2 / 3)
    assert greedy_match(hits, torch.zeros(4, 2)) == 0.0
