"""VIM194, the run-time token-boundary comparator: a trajectory's tokens outside the generated
spans against the chat template's rendering of its messages, on the tiny byte-level ChatML
tokenizer. Trajectories come from the agent endpoint's own call server (a scripted engine), or
are built by hand as a custom multi-turn generate would build them."""

from __future__ import annotations

import asyncio
import warnings
from argparse import Namespace
from typing import Any

import pytest

from vime.agent.assemble import segment_calls
from vime.agent.calls import CallServer
from vime.agent.engine import Completion
from vime.agent.generate import Endpoint, token_trajectories
from vime.agent.render import chat_prompt_ids, render_text
from vime.agent.sessions import SessionStore
from vime.contract.checks import check_token_boundaries
from vime.contract.checks.chat import check_vim194, first_difference
from vime.utils.tiny_model import build_tokenizer
from vime.utils.types import Sample

pytestmark = pytest.mark.unit

USER1 = {"role": "user", "content": "What is 2+3?"}
USER2 = {"role": "user", "content": "And 4+4?"}


@pytest.fixture(scope="module")
def tok() -> Any:
    return build_tokenizer()


def enc(tok: Any, text: str) -> list[int]:
    return list(tok.encode(text, add_special_tokens=False))


def _args(**kw: Any) -> Namespace:
    base: dict[str, Any] = dict(contract_check="warn", contract_check_interval=1,
                                check_token_boundaries=1, reward_key=None,
                                n_samples_per_prompt=1)
    base.update(kw)
    return Namespace(**base)


def _served(tok: Any, replies: list[str], template: str | None = None) -> tuple[Any, Any]:
    """Two chat calls through the endpoint's CallServer (the engine scripted to answer
    ``replies`` with EOS), the agent sending back each answer: ``(calls, session)``."""
    if template is not None:
        tok = _with_template(tok, template)
    answers = iter(replies)

    async def complete(args: Any, prompt: list[int], params: Any, **kw: Any) -> Completion:
        ids = (*enc(tok, next(answers)), tok.eos_token_id)
        return Completion(ids, tuple(-0.5 for _ in ids), "stop", None)

    calls = CallServer(Namespace(), tok, stop_ids=[tok.eos_token_id], complete_fn=complete)
    session = SessionStore().open(index=7, router_key=None)

    async def run() -> None:
        messages: list[dict[str, Any]] = [USER1]
        for k in range(len(replies)):
            answer = await calls.chat(session, {"messages": messages}, {})
            answer.commit()
            reply = answer.body["choices"][0]["message"]
            messages = [*messages, {"role": "assistant", "content": reply["content"]}]
            if k + 1 < len(replies):
                messages.append(USER2)

    asyncio.run(run())
    return calls, session


def _with_template(tok: Any, template: str) -> Any:
    import copy

    other = copy.deepcopy(tok)
    other.chat_template = template
    return other


def test_vim194_an_agent_trajectory_spliced_by_the_endpoint_matches_the_template(
        tok: Any) -> None:
    calls, session = _served(tok, ["5", "8"])
    segments = segment_calls(session.calls)
    assert len(segments) == 1 and len(segments[0].calls) == 2   # spliced: one trajectory
    found = token_trajectories(calls, session, segments, [Sample(index=7)])
    assert len(found) == 1 and found[0][2][0][1] - found[0][2][0][0] == 2   # "5" + EOS
    assert check_token_boundaries(found, tok, _args()) == []


def test_vim194_a_generate_that_drops_the_closing_newline_is_reported(tok: Any) -> None:
    # a custom multi-turn generate appends the next user turn right after the stop token,
    # without ChatML's newline after <|im_end|>: the next turn's tokens drift
    first = [USER1]
    p1, _ = chat_prompt_ids(tok, first)
    g1 = [*enc(tok, "5"), tok.eos_token_id]
    added = enc(tok, "<|im_start|>user\nAnd 4+4?<|im_end|>\n<|im_start|>assistant\n")
    g2 = [*enc(tok, "8"), tok.eos_token_id]
    tokens = [*p1, *g1, *added, *g2]
    spans = [(len(p1), len(p1) + 2), (len(tokens) - 2, len(tokens))]
    text = render_text(tok, [USER1, {"role": "assistant", "content": "5"}, USER2])
    v = check_vim194(tok, tokens, spans=spans, text=text, where="samples[0][1] (index=3)")
    assert v is not None and v.id == "VIM194" and v.severity == "warning"
    pos = len(p1) + 2
    assert v.where == "samples[0][1] (index=3)"
    assert v.message.startswith(f"differs from the chat template's rendering of its messages "
                                f"at token {pos} (before turn 2's reply): the trajectory has "
                                "'<|im_start|>user\\n' ([257, 117, 115, 101, 114, 10])")
    assert "the template renders '\\n<|im_start|>user' ([10, 257," in v.message
    # through the boundary: logged and warned, never raised (a warning, even in raise mode)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        found = check_token_boundaries([("agent trajectory (index=3)", tokens, spans, text)],
                                       tok, _args(contract_check="raise"))
    assert [f.id for f in found] == ["VIM194"]
    assert check_token_boundaries([("x", tokens, spans, text)], tok,
                                  _args(contract_check="off")) == []


def test_vim194_a_template_that_drops_earlier_reasoning_is_reported(tok: Any) -> None:
    drops = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{% if m.role == 'assistant' and "
             "not loop.last %}{{ m.content.split('</think>')[-1].lstrip() }}{% else %}"
             "{{ m.content }}{% endif %}<|im_end|>\n{% endfor %}"
             "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    t = _with_template(tok, drops)
    reply = "<think>\n2 and 3\n</think>\n\n5"
    p1, _ = chat_prompt_ids(t, [USER1])
    g1 = [*enc(t, reply), t.eos_token_id]
    added = enc(t, "\n<|im_start|>user\nAnd 4+4?<|im_end|>\n<|im_start|>assistant\n")
    g2 = [*enc(t, "8"), t.eos_token_id]
    tokens = [*p1, *g1, *added, *g2]
    spans = [(len(p1), len(p1) + len(g1)), (len(tokens) - len(g2), len(tokens))]
    text = render_text(t, [USER1, {"role": "assistant", "content": reply}, USER2])
    v = check_vim194(t, tokens, spans=spans, text=text, where="agent trajectory (index=0)")
    assert v is not None
    assert v.message.startswith(f"differs from the chat template's rendering of its messages "
                                f"at token {len(p1)}: the engine's reply of turn 1 (tokens "
                                f"{len(p1)}-{len(p1) + len(g1) - 1}, '<think>\\n2 an'...)")
    assert "is not in the rendering, which has '5<|im_end|>\\n<|im_start|>user" in v.message
    assert "(dropped reasoning, a re-rendered tool call, another end token)" in v.message
    # the same trajectory with the ChatML template that keeps the reasoning: no finding
    keep = render_text(tok, [USER1, {"role": "assistant", "content": reply}, USER2])
    assert check_vim194(tok, tokens, spans=spans, text=keep, where="x") is None


def test_vim194_a_bos_the_generate_added_to_the_prompt_is_reported(tok: Any) -> None:
    p1, _ = chat_prompt_ids(tok, [USER1])
    tokens = [tok.eos_token_id, *p1, *enc(tok, "5"), tok.eos_token_id]
    text = render_text(tok, [USER1])
    v = check_vim194(tok, tokens, spans=[(len(p1) + 1, len(tokens))], text=text, where="s")
    assert v is not None and "at token 0 (before turn 1's reply)" in v.message


def test_vim194_every_nth_trajectory_is_checked_and_zero_turns_it_off() -> None:
    def picks(n: int | None, count: int) -> list[bool]:
        endpoint = Endpoint.__new__(Endpoint)
        endpoint.args, endpoint.trajectories = Namespace(check_token_boundaries=n), 0
        return [endpoint.pick_for_token_check() for _ in range(count)]

    assert picks(3, 7) == [True, False, False, True, False, False, True]
    assert picks(0, 4) == [False] * 4
    assert picks(None, 17) == [True] + [False] * 15 + [True]    # the default, 1 in 16
    assert picks(1, 3) == [True] * 3


def test_first_difference() -> None:
    assert first_difference([1, 2, 3], [1, 2, 3]) is None
    assert first_difference([1, 2], [1, 2, 3]) == 2
    assert first_difference([1, 5, 3], [1, 2, 3]) == 1


def test_check_token_boundaries_is_validated_by_vime_train_arguments() -> None:
    from vime.config import parse_args

    with pytest.raises(SystemExit):
        parse_args(["--check-token-boundaries", "-1"])
