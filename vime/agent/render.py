"""Requests -> prompt token ids: the chat template applied once per call, and the splice that
keeps the engine's own tokens for the turns the agent sends back.

An agent sends its whole conversation on every call. Re-tokenising the model's earlier replies
from text would not give back the engine's tokens (a byte-level model may emit bytes that are
not valid UTF-8, a tool call is re-rendered in the template's format, BPE merges differ at turn
boundaries), so the trajectory would no longer be the sequence the model saw. When the
messages of a call start with an earlier call's messages followed by the assistant message the
endpoint returned for it, the prompt is built as that call's ``prompt_ids + completion_ids``
followed by the tokens of the rest of the conversation only (:func:`spliced_chat_ids`); the
assembly (:mod:`vime.agent.assemble`) then sees a prefix extension. Anything else is rendered
from scratch (:func:`chat_prompt_ids`) and, if its ids do not extend an earlier call, becomes a
new segment (a context rewrite).

Usage::

    msgs = normalise_messages(body["messages"])            # list[dict], comparable
    ids, text = chat_prompt_ids(tok, msgs, tools=None)     # first call
    ids = spliced_chat_ids(tok, msgs, turn, stop_ids={tok.eos_token_id}) or ids

Source: ours. The message normalisation follows the OpenAI chat-completions request format
(``content`` as a string or a list of ``{"type": "text", "text": ...}`` parts; ``tool_calls``
with ``function.name`` / ``function.arguments``), and, like vLLM's chat utilities, hands
templates tool-call ``arguments`` parsed from JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ChatTurn", "RequestError", "chat_prompt_ids", "normalise_messages", "render_text",
           "spliced_chat_ids", "spliced_text_ids"]

_KEPT = ("role", "content", "name", "tool_calls", "tool_call_id")


class RequestError(ValueError):
    """A request the endpoint cannot serve; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.param = param


@dataclass(frozen=True, slots=True)
class ChatTurn:
    """What one chat call sent and returned, kept to splice the next call's prompt."""

    #: The call's normalised messages (:func:`normalise_messages`).
    messages: tuple[Mapping[str, Any], ...]
    #: The normalised assistant message the endpoint answered with.
    assistant: Mapping[str, Any]
    #: The prompt ids sent to the engine, and the engine's completion ids.
    prompt_ids: tuple[int, ...]
    completion_ids: tuple[int, ...]
    #: The tools of the call (None: none), and the template keywords.
    tools: tuple[Any, ...] | None = None


def _text(content: Any, where: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for j, part in enumerate(content):
            if isinstance(part, Mapping) and part.get("type") == "text":
                parts.append(str(part.get("text", "")))
            else:
                kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
                raise RequestError(f"{where}.content[{j}] is a {kind!r} part; the endpoint "
                                   "serves text parts only", param="messages")
        return "".join(parts)
    raise RequestError(f"{where}.content is {type(content).__name__}; expected a string or a "
                       "list of text parts", param="messages")


def _tool_calls(calls: Any, where: str) -> list[dict[str, Any]]:
    out = []
    for j, call in enumerate(calls or []):
        fn = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(fn, Mapping) or "name" not in fn:
            raise RequestError(f"{where}.tool_calls[{j}] has no function.name", param="messages")
        args = fn.get("arguments", "")
        out.append({"id": str(call.get("id", "")), "type": "function",
                    "function": {"name": str(fn["name"]),
                                 "arguments": args if isinstance(args, str) else json.dumps(args)}})
    return out


def normalise_messages(messages: Any) -> list[dict[str, Any]]:
    """OpenAI request messages -> plain dicts that compare equal when they mean the same.

    Keeps ``role``, ``content`` (a string; text parts joined), ``name``, ``tool_calls``
    (``id``, ``type``, ``function.name``, ``function.arguments`` as a JSON string) and
    ``tool_call_id``; drops None values and empty ``tool_calls`` (the SDK's ``model_dump()``
    of a reply carries ``refusal: None``, ``annotations: None``, ...).

    Raises:
        RequestError: not a non-empty list of objects with a ``role``; a non-text content part.
    """
    if not isinstance(messages, list) or not messages:
        got = "an empty list" if isinstance(messages, list) else f"a {type(messages).__name__}"
        raise RequestError(f"messages is {got}; send a non-empty list of message objects, "
                           "e.g. messages=[{\"role\": \"user\", \"content\": \"...\"}] "
                           "(a bare prompt string goes to /v1/completions as prompt=...)",
                           param="messages")
    out = []
    for i, msg in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(msg, Mapping) or not isinstance(msg.get("role"), str):
            raise RequestError(f"{where} is not an object with a string role", param="messages")
        norm: dict[str, Any] = {"role": msg["role"], "content": _text(msg.get("content"), where)}
        for key in _KEPT[2:]:
            value = msg.get(key)
            if key == "tool_calls":
                value = _tool_calls(value, where) or None
            if value is not None:
                norm[key] = value
        out.append(norm)
    return out


def _for_template(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Copies with tool-call arguments parsed from JSON (templates expect mappings)."""
    out = []
    for msg in messages:
        m = dict(msg)
        if "tool_calls" in m:
            calls = []
            for call in m["tool_calls"]:
                fn = dict(call["function"])
                try:
                    fn["arguments"] = json.loads(fn["arguments"]) if fn["arguments"] else {}
                except ValueError:
                    pass  # the template gets the text as the agent sent it
                calls.append({**call, "function": fn})
            m["tool_calls"] = calls
        out.append(m)
    return out


def render_text(tokenizer: Any, messages: Sequence[Mapping[str, Any]], *,
                tools: Sequence[Any] | None = None, add_generation_prompt: bool = True,
                template_kwargs: Mapping[str, Any] | None = None) -> str:
    """The chat template of ``tokenizer`` applied to ``messages``, as text.

    Raises:
        RequestError: the template failed (e.g. it rejects a role order); the message is the
            template's.
    """
    try:
        text = tokenizer.apply_chat_template(
            _for_template(messages), tools=list(tools) if tools else None, tokenize=False,
            add_generation_prompt=add_generation_prompt, **dict(template_kwargs or {}))
    except Exception as exc:  # jinja2 errors, TemplateError, ValueError from transformers
        raise RequestError(f"the model's chat template failed on these messages: {exc}") from exc
    return str(text)


def _encode(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer.encode(text, add_special_tokens=False)) if text else []


def chat_prompt_ids(tokenizer: Any, messages: Sequence[Mapping[str, Any]], *,
                    tools: Sequence[Any] | None = None,
                    template_kwargs: Mapping[str, Any] | None = None) -> tuple[list[int], str]:
    """``(ids, text)``: the messages rendered with the generation prompt, then encoded once
    without special tokens (the template writes them)."""
    text = render_text(tokenizer, messages, tools=tools, template_kwargs=template_kwargs)
    return _encode(tokenizer, text), text


def _closing(rendered_turn: str, completion_ids: Sequence[int], end_texts: Mapping[int, str]
             ) -> str | None:
    """The end of the rendered assistant turn that the engine did not generate: after the
    generated stop token's text when the completion ends with one, else from the last
    end-of-turn text (the template closes a truncated reply); None when it cannot be found."""
    if completion_ids and completion_ids[-1] in end_texts:
        end = end_texts[completion_ids[-1]]
        pos = rendered_turn.rfind(end) if end else -1
        return rendered_turn[pos + len(end):] if pos >= 0 else None
    hits = [(rendered_turn.rfind(t), t) for t in end_texts.values() if t]
    pos, text = max(hits, default=(-1, ""))
    return rendered_turn[pos:] if pos >= 0 else ""


def spliced_chat_ids(tokenizer: Any, messages: Sequence[Mapping[str, Any]], turn: ChatTurn, *,
                     stop_ids: Iterable[int], tools: Sequence[Any] | None = None,
                     template_kwargs: Mapping[str, Any] | None = None) -> list[int] | None:
    """The prompt ids of ``messages`` built on ``turn``: ``turn.prompt_ids +
    turn.completion_ids + tokens(rest)``, or None when ``messages`` do not continue ``turn``.

    ``messages`` continue ``turn`` when they start with ``turn.messages`` followed by
    ``turn.assistant`` (same normalised content and tool calls) and the tools are the same.
    ``rest`` is the text the template renders after that assistant turn (plus the part of the
    turn's own closing, e.g. ChatML's newline after ``<|im_end|>``, that the engine did not
    generate), encoded without special tokens. ``stop_ids``: the token ids that end a turn
    (EOS and the run's stop tokens), used to find that closing.
    """
    k = len(turn.messages)
    if (len(messages) <= k or list(messages[:k]) != list(turn.messages)
            or dict(messages[k]) != dict(turn.assistant)
            or (tuple(tools) if tools else None) != turn.tools):
        return None
    head = render_text(tokenizer, messages[:k], tools=tools, template_kwargs=template_kwargs)
    with_turn = render_text(tokenizer, messages[:k + 1], tools=tools,
                            add_generation_prompt=False, template_kwargs=template_kwargs)
    full = render_text(tokenizer, messages, tools=tools, template_kwargs=template_kwargs)
    if not (with_turn.startswith(head) and full.startswith(with_turn)):
        return None
    end_texts = {int(t): str(tokenizer.decode([int(t)], skip_special_tokens=False))
                 for t in stop_ids}
    closing = _closing(with_turn[len(head):], turn.completion_ids, end_texts)
    if closing is None:
        return None
    rest = closing + full[len(with_turn):]
    return [*turn.prompt_ids, *turn.completion_ids, *_encode(tokenizer, rest)]


def spliced_text_ids(tokenizer: Any, prompt: str, prior: Sequence[tuple[str, str, Sequence[int],
                                                                        Sequence[int]]]
                     ) -> list[int] | None:
    """For ``/v1/completions``: when ``prompt`` starts with an earlier call's ``prompt_text +
    completion_text`` (``prior`` items ``(prompt_text, completion_text, prompt_ids,
    completion_ids)``, most recent last), that call's ids plus the rest encoded; else None."""
    for p_text, c_text, p_ids, c_ids in reversed(prior):
        head = p_text + c_text
        if prompt.startswith(head):
            return [*p_ids, *c_ids, *_encode(tokenizer, prompt[len(head):])]
    return None
