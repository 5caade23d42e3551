"""The trainer's response log probs (``vime.backends.log_probs.response_log_probs``) are
computed on the response tokens' logits only, and with ``logits_to_keep`` the output head runs
from the first response position on: the values and their gradients equal the whole-batch
computation's (``token_log_probs``/``entropy_from_logits``/``argmax_hits`` then
``gather_response``), for a Hugging Face model and for one without ``logits_to_keep``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from vime.backends.batching import gather_response, pad_batch, response_index
from vime.backends.log_probs import keeps_logits, response_log_probs
from vime.backends.losses import argmax_hits, entropy_from_logits, token_log_probs

pytestmark = pytest.mark.unit

TOKENS = [[5, 9, 3, 7, 11, 2, 8], [4, 6, 12, 9], [3, 3, 5, 7, 9, 11, 13, 15, 17]]
RESPONSES = [3, 1, 5]


class NoKeep(torch.nn.Module):
    """A causal LM without ``logits_to_keep``: the same model, every position's logits."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                position_ids: torch.Tensor) -> Any:
        return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                          position_ids=position_ids)


def _whole_batch(model: torch.nn.Module, temperature: float) -> tuple[torch.Tensor, ...]:
    batch = pad_batch(TOKENS, pad_id=0, side="right", device="cpu")
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                   position_ids=batch.position_ids).logits
    lp, valid = gather_response(token_log_probs(logits, batch.input_ids, temperature), batch,
                                RESPONSES)
    ent, _ = gather_response(entropy_from_logits(logits, temperature), batch, RESPONSES)
    hits, _ = gather_response(argmax_hits(logits, batch.input_ids), batch, RESPONSES)
    return lp, valid, ent, hits


@pytest.fixture
def model(small_model: Path) -> torch.nn.Module:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(small_model, torch_dtype=torch.float32)


def test_the_window_starts_at_the_first_response_position() -> None:
    batch = pad_batch(TOKENS, pad_id=0, side="right", device="cpu")
    index = response_index(batch, RESPONSES)
    # row 1 has 4 tokens and 1 response token: its log prob is next-token column 2
    assert index.first_col == 2 and index.shape == (3, 5)
    assert index.cols.tolist() == [3, 4, 5, 2, 3, 4, 5, 6, 7]


@pytest.mark.parametrize("temperature", [1.0, 0.7])
@pytest.mark.parametrize("wrap", [False, True], ids=["logits_to_keep", "every-position"])
def test_values_and_gradients_equal_the_whole_batch(model: torch.nn.Module, temperature: float,
                                                    wrap: bool) -> None:
    used = NoKeep(model) if wrap else model
    assert keeps_logits(used) is not wrap
    lp, valid, stats = response_log_probs(used, TOKENS, RESPONSES, pad_id=0,
                                          device=torch.device("cpu"), temperature=temperature,
                                          with_stats=True)
    assert stats is not None
    ent, hits = stats
    ((lp * valid).sum() + 0.1 * (ent * valid).sum()).backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    ref_lp, ref_valid, ref_ent, ref_hits = _whole_batch(model, temperature)
    ((ref_lp * ref_valid).sum() + 0.1 * (ref_ent * ref_valid).sum()).backward()
    assert torch.equal(valid, ref_valid)
    torch.testing.assert_close(lp, ref_lp, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(ent, ref_ent, rtol=1e-6, atol=1e-6)
    assert torch.equal(hits, ref_hits)
    for got, ref in zip(grads, (p.grad for p in model.parameters()), strict=True):
        torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-6)


def test_the_output_head_sees_only_the_window(model: torch.nn.Module) -> None:
    seen: list[int] = []
    head = model.get_output_embeddings()
    handle = head.register_forward_hook(lambda m, i, o: seen.append(int(o.shape[1])))
    try:
        response_log_probs(model, TOKENS, RESPONSES, pad_id=0, device=torch.device("cpu"),
                           temperature=1.0)
    finally:
        handle.remove()
    assert seen == [9 - 2]     # T = 9 positions, the window from next-token column 2
