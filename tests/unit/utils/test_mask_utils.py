"""vime.utils.mask_utils: the prefix method on a ChatML and a Llama-3-style template."""

from __future__ import annotations

from typing import Any

import pytest
from chat_tokenizers import CORPUS, LLAMA3_TEMPLATE, build_tokenizer

from vime.utils.mask_utils import MultiTurnLossMaskGenerator

pytestmark = pytest.mark.unit

CHAT = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "What is the weather like in Paris?"},
    {"role": "assistant", "content": "Use the calculator tool."},
    {"role": "tool", "content": "sunny and warm"},
    {"role": "assistant", "content": "The weather in Paris is sunny and warm."},
    {"role": "user", "content": "Thank you"},
    {"role": "assistant", "content": "The answer is 42."},
]
END = {"chatml": "<|im_end|>\n", "llama3": "<|eot_id|>"}


def _spans(tokenizer: Any, ids: list[int], mask: list[int]) -> list[str]:
    """Decoded maximal runs of mask 1."""
    spans: list[list[int]] = []
    for i, (token, bit) in enumerate(zip(ids, mask, strict=True)):
        if bit:
            if i == 0 or not mask[i - 1]:
                spans.append([])
            spans[-1].append(token)
    return [tokenizer.decode(s) for s in spans]


@pytest.fixture(params=["chatml", "llama3"])
def template(request: pytest.FixtureRequest, chatml_tokenizer: Any,
             llama3_tokenizer: Any) -> tuple[str, Any]:
    return request.param, {"chatml": chatml_tokenizer, "llama3": llama3_tokenizer}[request.param]


def test_assistant_turns_are_trainable_through_end_marker(template: tuple[str, Any]) -> None:
    name, tok = template
    ids, mask = MultiTurnLossMaskGenerator(tok).get_loss_mask(CHAT)
    assert len(ids) == len(mask) and set(mask) == {0, 1}
    assert ids == tok.encode(tok.apply_chat_template(CHAT, tokenize=False),
                             add_special_tokens=False)
    expected = [m["content"] + END[name] for m in CHAT if m["role"] == "assistant"]
    assert _spans(tok, ids, mask) == expected
    # Everything else (system, user, tool, headers) is masked.
    masked_text = tok.decode([t for t, b in zip(ids, mask, strict=True) if not b])
    for m in CHAT:
        if m["role"] != "assistant":
            assert m["content"] in masked_text


def test_step_loss_mask_zero_masks_that_message(template: tuple[str, Any]) -> None:
    name, tok = template
    chat = [dict(m) for m in CHAT]
    chat[2]["step_loss_mask"] = 0
    ids, mask = MultiTurnLossMaskGenerator(tok, tokenizer_type="qwen3").get_loss_mask(chat)
    assert _spans(tok, ids, mask) == [CHAT[4]["content"] + END[name],
                                      CHAT[6]["content"] + END[name]]


def test_tools_are_rendered_and_masked(chatml_tokenizer: Any) -> None:
    tools = [{"type": "function", "function": {"name": "calculator"}}]
    ids, mask = MultiTurnLossMaskGenerator(chatml_tokenizer).get_loss_mask(CHAT[1:3], tools)
    text = chatml_tokenizer.decode(ids)
    assert "calculator" in text.split("<|im_end|>")[0]
    assert _spans(chatml_tokenizer, ids, mask) == ["Use the calculator tool.<|im_end|>\n"]


def test_no_assistant_message_gives_all_zero_mask(chatml_tokenizer: Any) -> None:
    ids, mask = MultiTurnLossMaskGenerator(chatml_tokenizer).get_loss_mask(CHAT[:2])
    assert ids and mask == [0] * len(ids)


def test_template_rewriting_earlier_turns_names_k() -> None:
    rewriting = ("{% for m in messages %}{{ m['role'] + ': ' + m['content'] }}"
                 "{% if loop.last %}{{ ' END' }}{% endif %}{{ '\n' }}{% endfor %}"
                 "{% if add_generation_prompt %}{{ 'assistant: ' }}{% endif %}")
    tok = build_tokenizer(rewriting)
    with pytest.raises(ValueError, match=r"k=1: R\(1\) is not a prefix of R\(2\)"):
        MultiTurnLossMaskGenerator(tok).get_loss_mask(CHAT[1:3])


def test_merge_across_header_boundary_names_k() -> None:
    # A BPE that learned "\n\n" tokenises the generation header differently from the turn.
    tok = build_tokenizer(LLAMA3_TEMPLATE, corpus=CORPUS + ["x\n\n"] * 50)
    with pytest.raises(ValueError, match=r"k=2: H\(2\) is not a prefix of R\(3\)"):
        MultiTurnLossMaskGenerator(tok).get_loss_mask(CHAT[:3])


@pytest.mark.parametrize(("messages", "needle"), [
    ([], "messages is empty"),
    ("hello", "messages must be a list"),
    ([{"content": "x"}], r"messages\[0\] must be a dict with a 'role'"),
])
def test_bad_messages(chatml_tokenizer: Any, messages: Any, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        MultiTurnLossMaskGenerator(chatml_tokenizer).get_loss_mask(messages)


def test_mask_types(chatml_tokenizer: Any) -> None:
    with pytest.raises(NotImplementedError, match="--loss-mask-type distill_qwen"):
        MultiTurnLossMaskGenerator(chatml_tokenizer, tokenizer_type="distill_qwen")
    with pytest.raises(ValueError, match="--loss-mask-type 'llama'"):
        MultiTurnLossMaskGenerator(chatml_tokenizer, tokenizer_type="llama")
