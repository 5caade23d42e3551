"""OpenAI response bodies for the endpoint: chat completions (whole and as server-sent-event
chunks), text completions, errors, and tool calls parsed with vLLM's tool parsers. Pure apart
from building a vLLM parser.

Usage::

    content, calls = parse_tool_calls(parser, text, body)      # parser None: (text, [])
    chat_response(model, content, calls, finish, prompt_n, completion_n, logprobs)
    for chunk in chat_chunks(response): ...                    # "data: {...}\\n\\n" strings

Source: the field names and shapes are OpenAI's chat-completions / completions response
objects (``chat.completion``, ``chat.completion.chunk``, ``text_completion``); the tool parsers
are vLLM's ``vllm.tool_parsers.ToolParserManager`` (``extract_tool_calls``).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

__all__ = ["chat_chunks", "chat_response", "completion_response", "error_body",
           "load_tool_parser", "parse_tool_calls"]


def load_tool_parser(name: str, tokenizer: Any) -> Any:
    """vLLM's tool parser ``name`` (``--agent-tool-parser``, e.g. ``hermes``) on ``tokenizer``.

    Raises:
        ValueError: vLLM has no parser of that name (the message lists the ones it has).
    """
    from vllm.tool_parsers import ToolParserManager

    try:
        cls = ToolParserManager.get_tool_parser(name)
    except KeyError:
        known = sorted(getattr(ToolParserManager, "lazy_parsers", {}) or
                       getattr(ToolParserManager, "tool_parsers", {}))
        raise ValueError(f"--agent-tool-parser {name!r}: vLLM has no such tool parser; known: "
                         f"{', '.join(known)}") from None
    return cls(tokenizer)


def parse_tool_calls(parser: Any, text: str, body: Mapping[str, Any]
                     ) -> tuple[str | None, list[dict[str, Any]]]:
    """``(content, tool_calls)`` of a reply: with a parser and ``tools`` in the request, the
    calls vLLM's parser finds in ``text`` (OpenAI ``tool_calls`` items); else ``(text, [])``."""
    if parser is None or not body.get("tools") or body.get("tool_choice") == "none":
        return text, []
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest

    request = ChatCompletionRequest.model_validate(
        {k: v for k, v in body.items() if k in ("messages", "model", "tools", "tool_choice")})
    info = parser.extract_tool_calls(text, request)
    if not info.tools_called:
        return text, []
    calls = [{"id": c.id, "type": "function",
              "function": {"name": c.function.name, "arguments": c.function.arguments}}
             for c in info.tool_calls]
    return info.content or None, calls


def _logprobs(token_texts: Sequence[str], log_probs: Sequence[float]) -> dict[str, Any]:
    return {"content": [{"token": t, "logprob": lp, "bytes": list(t.encode()),
                         "top_logprobs": []} for t, lp in zip(token_texts, log_probs, strict=True)]}


def chat_response(model: str, content: str | None, tool_calls: Sequence[Mapping[str, Any]],
                  finish_reason: str, prompt_tokens: int, completion_tokens: int, *,
                  token_texts: Sequence[str] | None = None,
                  log_probs: Sequence[float] | None = None) -> dict[str, Any]:
    """A ``chat.completion`` object with one choice; ``finish_reason`` becomes
    ``"tool_calls"`` when there are tool calls. ``token_texts``/``log_probs`` (one per
    completion token) fill ``choices[0].logprobs`` when the request asked for them."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [dict(c) for c in tool_calls]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion",
        "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "tool_calls" if tool_calls else finish_reason,
                     "logprobs": (_logprobs(token_texts, log_probs)
                                  if token_texts is not None and log_probs is not None else None)}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def chat_chunks(response: Mapping[str, Any], include_usage: bool = False) -> Iterator[str]:
    """A whole ``chat.completion`` as server-sent events: a role chunk, one content chunk,
    one chunk per tool call, the finish chunk (and a usage chunk when asked), then
    ``data: [DONE]``. The engine call is not streamed token by token: the events go out once
    the completion is done."""
    base = {"id": response["id"], "object": "chat.completion.chunk",
            "created": response["created"], "model": response["model"]}
    choice = response["choices"][0]
    message = choice["message"]

    def event(delta: Mapping[str, Any], finish: str | None = None, **extra: Any) -> str:
        body = {**base, "choices": [{"index": 0, "delta": dict(delta), "finish_reason": finish,
                                     **extra}]}
        return f"data: {json.dumps(body)}\n\n"

    yield event({"role": "assistant", "content": ""})
    if message.get("content"):
        yield event({"content": message["content"]}, logprobs=choice.get("logprobs"))
    for i, call in enumerate(message.get("tool_calls") or []):
        yield event({"tool_calls": [{"index": i, **call}]})
    yield event({}, choice["finish_reason"])
    if include_usage:
        yield f"data: {json.dumps({**base, 'choices': [], 'usage': response['usage']})}\n\n"
    yield "data: [DONE]\n\n"


def completion_response(model: str, text: str, finish_reason: str, prompt_tokens: int,
                        completion_tokens: int, *, token_texts: Sequence[str] | None = None,
                        log_probs: Sequence[float] | None = None) -> dict[str, Any]:
    """A ``text_completion`` object with one choice (``logprobs`` in the completions API's
    ``tokens``/``token_logprobs`` form when asked)."""
    lp = None
    if token_texts is not None and log_probs is not None:
        lp = {"tokens": list(token_texts), "token_logprobs": list(log_probs),
              "top_logprobs": None, "text_offset": None}
    return {
        "id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion",
        "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "text": text, "finish_reason": finish_reason, "logprobs": lp}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def error_body(message: str, kind: str = "invalid_request_error",
               param: str | None = None) -> dict[str, Any]:
    """OpenAI's error object: ``{"error": {"message", "type", "param", "code"}}``."""
    return {"error": {"message": message, "type": kind, "param": param, "code": None}}
