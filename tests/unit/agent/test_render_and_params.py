"""vime.agent.render (chat template, token splice), params (sampling policy), sessions,
responses (OpenAI bodies, vLLM's hermes tool parser) on the tiny byte-level ChatML tokenizer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from vime.agent.assemble import CallRecord, segment_calls
from vime.agent.params import request_sampling_params
from vime.agent.render import (
    ChatTurn,
    RequestError,
    chat_prompt_ids,
    normalise_messages,
    spliced_chat_ids,
    spliced_text_ids,
)
from vime.agent.responses import chat_chunks, chat_response, load_tool_parser, parse_tool_calls
from vime.agent.sessions import SessionStore
from vime.utils.tiny_model import build_tokenizer

pytestmark = pytest.mark.unit

RUN = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "max_tokens": 64, "logprobs": 1}


@pytest.fixture(scope="module")
def tok() -> Any:
    return build_tokenizer()


def enc(tok: Any, text: str) -> list[int]:
    return list(tok.encode(text, add_special_tokens=False))


def test_normalise_messages_compares_sdk_dumps_equal() -> None:
    sdk = {"role": "assistant", "content": "hi", "refusal": None, "annotations": None,
           "tool_calls": None, "function_call": None}
    parts = {"role": "user", "content": [{"type": "text", "text": "a"},
                                         {"type": "text", "text": "b"}]}
    assert normalise_messages([sdk, parts]) == [{"role": "assistant", "content": "hi"},
                                                {"role": "user", "content": "ab"}]
    with pytest.raises(RequestError, match=r"messages\[0\].content\[0\] is a 'image_url' part"):
        normalise_messages([{"role": "user", "content": [{"type": "image_url"}]}])
    with pytest.raises(RequestError, match="non-empty list"):
        normalise_messages([])


def test_a_string_messages_is_answered_with_what_to_send() -> None:
    with pytest.raises(RequestError) as err:
        normalise_messages("What is 2+3?")
    text = str(err.value)
    assert text.startswith("messages is a str; send a non-empty list of message objects")
    assert 'messages=[{"role": "user", "content": "..."}]' in text
    assert "/v1/completions" in text and err.value.status == 400


def _turn(tok: Any, messages: list[dict[str, Any]], completion: list[int], content: str
          ) -> ChatTurn:
    prompt, _ = chat_prompt_ids(tok, messages)
    return ChatTurn(tuple(messages), {"role": "assistant", "content": content}, tuple(prompt),
                    tuple(completion))


def test_splice_keeps_the_engines_tokens_even_when_text_does_not_round_trip(tok: Any) -> None:
    first = normalise_messages([{"role": "user", "content": "12+7="}])
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    completion = [*enc(tok, "ab"), enc(tok, "\u00e9")[0], eos]
    content = tok.decode(completion, skip_special_tokens=True)   # a lone UTF-8 lead byte
    assert enc(tok, content) != completion[:-1]                   # re-tokenising would differ
    turn = _turn(tok, first, completion, content)
    second = [*first, {"role": "assistant", "content": content},
              {"role": "user", "content": "tool: 19"}]
    ids = spliced_chat_ids(tok, second, turn, stop_ids={eos})
    assert ids is not None
    n = len(turn.prompt_ids) + len(completion)
    assert ids[:n] == [*turn.prompt_ids, *completion]
    assert tok.decode(ids[n:], skip_special_tokens=False) == (
        "\n<|im_start|>user\ntool: 19<|im_end|>\n<|im_start|>assistant\n")
    (seg,) = segment_calls([CallRecord(turn.prompt_ids, tuple(completion),
                                       (-0.5,) * len(completion), "stop"),
                            CallRecord(tuple(ids), (5,), (-0.1,), "stop")])
    assert seg.loss_mask == [1] * len(completion) + [0] * (len(ids) - n) + [1]


def test_splice_closes_a_truncated_reply_with_the_templates_end(tok: Any) -> None:
    first = normalise_messages([{"role": "user", "content": "q"}])
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    completion = enc(tok, "abc")                       # cut by max_tokens: no <|im_end|>
    turn = _turn(tok, first, completion, "abc")
    second = [*first, {"role": "assistant", "content": "abc"},
              {"role": "user", "content": "more"}]
    ids = spliced_chat_ids(tok, second, turn, stop_ids={eos})
    assert ids is not None
    rest = tok.decode(ids[len(turn.prompt_ids) + 3:], skip_special_tokens=False)
    assert rest.startswith("<|im_end|>\n<|im_start|>user\nmore")


def test_no_splice_when_the_agent_edited_the_reply_or_the_history(tok: Any) -> None:
    first = normalise_messages([{"role": "user", "content": "q"}])
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    turn = _turn(tok, first, [*enc(tok, "abc"), eos], "abc")
    edited = [*first, {"role": "assistant", "content": "abd"}, {"role": "user", "content": "x"}]
    assert spliced_chat_ids(tok, edited, turn, stop_ids={eos}) is None
    other = [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "abc"},
             {"role": "user", "content": "x"}]
    assert spliced_chat_ids(tok, other, turn, stop_ids={eos}) is None


def test_text_completions_splice_on_prompt_plus_returned_text(tok: Any) -> None:
    prior = [("Q:", " 4", (1, 2), (9, 9))]
    assert spliced_text_ids(tok, "Q: 4\nQ:", prior) == [1, 2, 9, 9, *enc(tok, "\nQ:")]
    assert spliced_text_ids(tok, "Other", prior) is None


def test_sampling_policy_keeps_the_runs_distribution_and_caps_the_budget() -> None:
    params, overrides = request_sampling_params(
        {"temperature": 0.2, "top_p": 1.0, "max_tokens": 100, "stop": "END", "seed": 3}, RUN,
        remaining=40)
    assert params["temperature"] == 1.0 and overrides == ["temperature"]
    assert params["max_tokens"] == 40 and params["stop"] == ["END"] and params["seed"] == 3
    params, overrides = request_sampling_params({"max_completion_tokens": 8}, RUN, remaining=None)
    assert params["max_tokens"] == 8 and overrides == []


@pytest.mark.parametrize(("body", "param"), [
    ({"n": 2}, "n"), ({"presence_penalty": 0.5}, "presence_penalty"),
    ({"logit_bias": {"1": 5}}, "logit_bias"), ({"top_logprobs": 3}, "top_logprobs"),
    ({"tool_choice": "required"}, "tool_choice"),
    ({"response_format": {"type": "json_object"}}, "response_format"),
    ({"max_tokens": 0}, "max_tokens"), ({"stop": 5}, "stop"),
])
def test_sampling_policy_rejects_what_it_cannot_honour(body: dict[str, Any], param: str) -> None:
    with pytest.raises(RequestError) as info:
        request_sampling_params(body, RUN, remaining=10)
    assert info.value.param == param and info.value.status == 400


def test_sessions_drop_calls_after_close_and_measure_the_response_so_far() -> None:
    store = SessionStore()
    s = store.open(index=3, router_key="r")
    assert s.key.startswith("vime-3-") and store.get(s.key) is s
    assert s.record(CallRecord((1, 2), (3,), (-0.1,), "stop"))
    assert s.response_so_far([1, 2, 3, 4, 5]) == 3 and s.response_so_far([7]) == 0
    store.close(s.key)
    assert store.get(s.key) is None
    assert not s.record(CallRecord((1,), (2,), (-0.1,), "stop")) and s.dropped == 1
    assert len(s.calls) == 1


def test_session_keys_carry_the_index_and_32_random_hex_digits() -> None:
    import re

    store = SessionStore()
    s = store.open(index=7, router_key="route-7")
    anonymous = store.open()
    assert re.fullmatch(r"vime-7-[0-9a-f]{32}", s.key), s.key
    assert re.fullmatch(r"vime-x-[0-9a-f]{32}", anonymous.key), anonymous.key
    assert (s.index, s.router_key) == (7, "route-7")
    assert (anonymous.index, anonymous.router_key) == (None, None)
    assert len(store) == 2 and store.open(index=7).key != s.key   # never the same key twice


def test_a_session_keeps_each_calls_turns_and_counts_every_drop() -> None:
    s = SessionStore().open(index=0)
    call = CallRecord((1,), (2,), (-0.1,), "stop")
    chat = ChatTurn(({"role": "user", "content": "q"},), {"role": "assistant", "content": "a"},
                    (1,), (2,))
    text = ("Q:", " 4", (1,), (2,))
    assert s.record(call) and (s.chat_turns, s.text_turns) == ([], [])
    assert s.record(call, chat=chat) and s.chat_turns == [chat] and s.text_turns == []
    assert s.record(call, text=text) and s.chat_turns == [chat] and s.text_turns == [text]
    s.closed = True
    assert not s.record(call, chat=chat) and not s.record(call, text=text)
    assert s.dropped == 2 and len(s.calls) == 3
    assert (s.chat_turns, s.text_turns) == ([chat], [text])


def test_hermes_tool_parser_turns_text_into_openai_tool_calls(tok: Any) -> None:
    parser = load_tool_parser("hermes", tok)
    text = '<tool_call>{"name": "calculator", "arguments": {"expression": "2+3"}}</tool_call>'
    body = {"model": "m", "messages": [{"role": "user", "content": "2+3?"}],
            "tools": [{"type": "function", "function": {"name": "calculator",
                                                        "parameters": {"type": "object"}}}]}
    content, calls = parse_tool_calls(parser, text, body)
    assert [c["function"]["name"] for c in calls] == ["calculator"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"expression": "2+3"}
    assert parse_tool_calls(None, text, body) == (text, [])
    with pytest.raises(ValueError, match="no such tool parser"):
        load_tool_parser("no-such-parser", tok)


def test_chat_response_and_its_stream_carry_the_same_message() -> None:
    calls = [{"id": "c1", "type": "function",
              "function": {"name": "lookup", "arguments": "{}"}}]
    body = chat_response("m", "hi", calls, "stop", 5, 2)
    assert body["choices"][0]["finish_reason"] == "tool_calls"
    events = list(chat_chunks(body, include_usage=True))
    assert events[-1] == "data: [DONE]\n\n"
    chunks = [json.loads(e[6:]) for e in events[:-1]]
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert "".join(d.get("content", "") for d in deltas) == "hi"
    assert deltas[2]["tool_calls"][0]["function"]["name"] == "lookup"
    assert chunks[-1]["usage"]["total_tokens"] == 7


def test_a_cancelled_call_moves_from_in_flight_to_dropped_without_an_await_between() -> None:
    # the endpoint cancels the engine call of a client that went away; a session that closes
    # while the engine abort is still being awaited must count the call once, in either field
    import asyncio
    from argparse import Namespace

    from vime.agent.calls import CallServer

    seen: list[tuple[int, int]] = []

    async def complete(args: Any, prompt: list[int], params: Any, **kw: Any) -> Any:
        try:
            await asyncio.sleep(10)
        finally:   # the engine abort, awaited while cancelled
            seen.append((s.in_flight, s.dropped))
            await asyncio.sleep(0)
            seen.append((s.in_flight, s.dropped))

    s = SessionStore().open(index=0, router_key=None)
    calls = CallServer(Namespace(), None, stop_ids=[], complete_fn=complete)

    async def main() -> None:
        task = asyncio.ensure_future(calls._generate(s, [1, 2], {}))
        await asyncio.sleep(0)
        assert (s.in_flight, s.dropped) == (1, 0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert seen == [(1, 0), (1, 0)] and (s.in_flight, s.dropped) == (0, 1)


async def _agent_sending_a_string(args: Any, sample: Any, base_url: str, api_key: str) -> float:
    normalise_messages("What is 2+3?")   # the line the report must point at
    return 1.0


def test_an_agent_error_points_at_the_agents_own_line() -> None:
    import asyncio
    import inspect

    from vime.agent.generate import agent_line

    with pytest.raises(RequestError) as err:
        asyncio.run(_agent_sending_a_string(None, None, "", ""))
    line = inspect.getsourcelines(_agent_sending_a_string)[1] + 1
    assert agent_line(_agent_sending_a_string, err.value) == (
        f" at {__file__}:{line} in _agent_sending_a_string")
    assert agent_line(len, err.value) == ""     # no source file: nothing claimed
