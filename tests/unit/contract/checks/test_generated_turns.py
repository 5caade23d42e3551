"""VIM194 on a custom multi-turn generate's samples, which carry no messages: the turns the
generate inserts between generated spans against the chat template's own framing of a turn
(learnt from its rendering), on the tiny byte-level ChatML tokenizer; and through the default
rollout, 1 in ``--check-token-boundaries N`` multi-turn samples, with a real tokenizer folder."""

from __future__ import annotations

import copy
import logging
import warnings
from argparse import Namespace
from pathlib import Path
from typing import Any

import pytest

from vime.contract.checks import check_generated_turns_result
from vime.contract.checks.chat import (
    check_generated_turns,
    generated_spans,
    turn_framing,
)
from vime.rollout import vllm_rollout as vr
from vime.utils.async_utils import run
from vime.utils.tiny_model import build_tokenizer
from vime.utils.types import Sample

pytestmark = pytest.mark.unit

HERE = __name__
END, START = "<|im_end|>", "<|im_start|>"


@pytest.fixture(scope="module")
def tok() -> Any:
    return build_tokenizer()


def enc(tok: Any, text: str) -> list[int]:
    return list(tok.encode(text, add_special_tokens=False))


def two_turns(tok: Any, inserted: list[int], *, first: str = "5<|im_end|>",
              second: str = "8<|im_end|>") -> tuple[list[int], list[int], int]:
    """``(tokens, loss_mask, response_length)`` of a two-turn sample as a custom generate
    builds it: the prompt, reply 1, the ``inserted`` turn (mask 0), reply 2."""
    prompt = enc(tok, f"{START}user\nWhat is 2+3?{END}\n{START}assistant\n")
    g1, g2 = enc(tok, first), enc(tok, second)
    response = [*g1, *inserted, *g2]
    mask = [1] * len(g1) + [0] * len(inserted) + [1] * len(g2)
    return [*prompt, *response], mask, len(response)


def check(tok: Any, tokens: list[int], mask: list[int], length: int) -> Any:
    return check_generated_turns(tok, tokens, loss_mask=mask, response_length=length,
                                 framing=turn_framing(tok), where="custom generate sample (index=3)")


def test_the_framing_is_learnt_from_the_template(tok: Any) -> None:
    framing = turn_framing(tok)
    assert framing is not None
    assert framing.generation_prompt == f"{START}assistant\n"
    assert framing.between["user"] == (f"{END}\n{START}user\n", f"{END}\n{START}assistant\n")
    assert framing.between["tool"] == (f"{END}\n{START}tool\n", f"{END}\n{START}assistant\n")


def test_generated_spans() -> None:
    assert generated_spans([1, 1, 0, 0, 1, 0, 1], 10) == [(10, 12), (14, 15), (16, 17)]
    assert generated_spans([0, 0], 3) == []


@pytest.mark.parametrize(("name", "inserted", "first"), [
    # the engine generated <|im_end|>; the generate adds the rest of ChatML's framing
    ("user turn", f"\n{START}user\nAnd 4+4?{END}\n{START}assistant\n", "5<|im_end|>"),
    ("tool turn", f"\n{START}tool\n{{\"sum\": 8}}{END}\n{START}assistant\n", "5<|im_end|>"),
    # the engine stopped on a string, without the end token: the generate adds it
    ("end added by the generate", f"{END}\n{START}user\nAnd 4+4?{END}\n{START}assistant\n", "5"),
    # a tool result inside one reply (search-R1 style): no new turn, not compared
    ("in-reply result", "\n<information>8</information>\n", "<search>4+4</search>"),
])
def test_turns_the_template_renders_have_no_finding(tok: Any, name: str, inserted: str,
                                                    first: str) -> None:
    assert check(tok, *two_turns(tok, enc(tok, inserted), first=first)) is None, name


def test_a_turn_without_the_newline_after_the_end_token_is_reported(tok: Any) -> None:
    inserted = f"{START}user\nAnd 4+4?{END}\n{START}assistant\n"
    tokens, mask, length = two_turns(tok, enc(tok, inserted))
    v = check(tok, tokens, mask, length)
    at = len(tokens) - length + 2
    assert v is not None and v.id == "VIM194" and v.severity == "warning"
    assert v.where == "custom generate sample (index=3)"
    assert v.message.startswith(
        f"inserts a turn the chat template does not render at token {at} (after reply 1, "
        f"tokens {at - 2}-{at - 1}): the sample has '<|im_start|>user\\nAnd 4+4?")
    assert "the template renders '<|im_end|>\\n<|im_start|>user\\n' after a reply" in v.message
    assert "(tried: user, tool)" in v.message
    # the generate's own text is at fault, not the template (the fix said "run `vime-lint
    # template MODEL_DIR` ... or fix the template")
    assert v.fix.startswith("the text the generate inserts between two replies is at fault, "
                            "not the chat template: write each inserted turn as the template "
                            "frames it, '<|im_end|>\\n<|im_start|>user\\n' + the turn's "
                            "content + "), v.fix
    assert "fix the template" not in v.format()


def test_a_turn_without_the_generation_prompt_is_reported(tok: Any) -> None:
    # the next reply is generated straight after the user turn, with no assistant header;
    # the header of the turn after it is what makes the stretch a new turn
    inserted = f"\n{START}user\nAnd 4+4?{END}\n{START}assistant"
    v = check(tok, *two_turns(tok, enc(tok, inserted)))
    assert v is not None and "inserts a turn the chat template does not render" in v.message


def test_an_end_token_missing_after_a_reply_is_reported(tok: Any) -> None:
    # the engine stopped on a string and the generate did not close the reply
    inserted = f"\n{START}user\nAnd 4+4?{END}\n{START}assistant\n"
    v = check(tok, *two_turns(tok, enc(tok, inserted), first="5"))
    assert v is not None and "after reply 1" in v.message


def test_special_tokens_encoded_as_text_are_reported(tok: Any) -> None:
    # the right text, but <|im_start|> encoded byte by byte (split_special_tokens=True)
    text = f"\n{START}user\nAnd 4+4?{END}\n{START}assistant\n"
    as_bytes = list(tok(text, add_special_tokens=False, split_special_tokens=True)["input_ids"])
    assert as_bytes != enc(tok, text)
    tokens, mask, length = two_turns(tok, as_bytes)
    v = check(tok, tokens, mask, length)
    at = len(tokens) - length + 3
    assert v is not None
    assert v.message.startswith(f"differs from the tokenizer's encoding of its own text at "
                                f"token {at} (the turn inserted after reply 1)")
    assert v.fix.startswith("the generate's encoding of its inserted turn is at fault, not the "
                            "chat template: encode the whole inserted text in one call"), v.fix


def test_a_template_without_a_tool_role_frames_user_turns_only(tok: Any) -> None:
    other = copy.deepcopy(tok)
    other.chat_template = (
        "{% for m in messages %}{% if m.role == 'tool' %}{{ raise_exception('no tools') }}"
        "{% endif %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    framing = turn_framing(other)
    assert framing is not None and list(framing.between) == ["user"]
    no_prompt = copy.deepcopy(tok)
    no_prompt.chat_template = "{% for m in messages %}{{ m.content }}\n{% endfor %}"
    assert turn_framing(no_prompt) is None


def test_through_the_boundary_a_warning_never_raised(tok: Any) -> None:
    tokens, mask, length = two_turns(tok, enc(tok, f"{START}user\nx{END}\n{START}assistant\n"))
    args = Namespace(contract_check="raise", contract_check_interval=1)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        found = check_generated_turns_result([("s", tokens, mask, length)], tok, turn_framing(tok),
                                             args)
    assert [f.id for f in found] == ["VIM194"]
    assert check_generated_turns_result([("s", tokens, mask, length)], tok, turn_framing(tok),
                                        Namespace(contract_check="off",
                                                  contract_check_interval=1)) == []


# ---- through the default rollout ------------------------------------------------------------

GOOD = f"\n{START}user\nAnd 4+4?{END}\n{START}assistant\n"
BAD = f"{START}user\nAnd 4+4?{END}\n{START}assistant\n"


async def two_turn_generate(args, sample, sampling_params):
    tok = build_tokenizer()
    inserted = BAD if sample.index % 2 else GOOD
    for text, mask in (("5<|im_end|>", 1), (inserted, 0), ("8<|im_end|>", 1)):
        ids = enc(tok, text)
        sample.append_response_tokens(tokens=ids, log_probs=[-0.5] * len(ids) if mask else None,
                                      trainable=bool(mask), text=text)
    sample.status = Sample.Status.COMPLETED
    return sample


async def reward(args, sample, **kwargs):
    return 1.0


@pytest.mark.parametrize(("every", "reported"), [(1, [1, 3]), (2, []), (3, [3]), (0, [])])
def test_the_rollout_compares_1_in_n_multi_turn_samples(
        tok: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture, every: int,
        reported: list[int]) -> None:
    tok.save_pretrained(tmp_path)
    args = Namespace(hf_checkpoint=str(tmp_path), check_token_boundaries=every,
                     custom_generate_function_path=f"{HERE}.two_turn_generate",
                     custom_rm_path=f"{HERE}.reward", rm_type=None, group_rm=False,
                     reward_key=None, partial_rollout=False, contract_check="warn",
                     contract_check_interval=1, hook_failure="raise", rm_timeout=None,
                     custom_generate_timeout=None, rollout_watchdog_secs=None,
                     apply_chat_template_kwargs=None, n_samples_per_prompt=1)

    async def main() -> None:
        for i in range(4):
            prompt = enc(tok, f"{START}user\nWhat is 2+3?{END}\n{START}assistant\n")
            s = Sample(index=i, prompt="What is 2+3?", tokens=list(prompt), response_length=0)
            await vr.generate_and_rm(args, s, {})

    with caplog.at_level(logging.WARNING), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run(main())
    shown = [r.getMessage() for r in caplog.records if "VIM194" in r.getMessage()]
    assert [i for i in range(4)
            if any(f"custom generate sample (index={i})" in m for m in shown)] == reported


def test_with_the_contract_check_off_nothing_is_loaded_or_counted(tok: Any) -> None:
    from vime.rollout.vllm.state import RolloutState
    from vime.rollout.vllm.turns import check_generated_turns as check_in_rollout

    tokens, mask, length = two_turns(tok, enc(tok, BAD))
    sample = Sample(index=0, tokens=tokens, response_length=length, loss_mask=mask)
    args = Namespace(contract_check="off", check_token_boundaries=1, hf_checkpoint="/nowhere")
    state = RolloutState(args)
    assert check_in_rollout(state, args, sample, hook_path="m.gen") == []
    assert state.turn_samples == 0 and not state.turn_framing_learnt
    # on, the same sample is compared (and the missing tokenizer said, not raised)
    args.contract_check = "warn"
    assert check_in_rollout(state, args, sample, hook_path="m.gen") == []
    assert state.turn_samples == 1 and state.turn_framing_learnt
