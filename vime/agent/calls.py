"""Serving one call of a session: the request rendered to prompt ids once, the run's sampling
policy applied, the engine called through vime's client, the answer built in OpenAI's format,
and the call's record kept only when the client is still there to receive it.

Usage::

    calls = CallServer(args, tokenizer, stop_ids={tokenizer.eos_token_id})
    answer = await calls.chat(session, body)      # body: a chat-completions request
    answer.body                                   # the chat.completion object
    answer.commit()                               # record the call (False: session closed)

Errors are :class:`~vime.agent.render.RequestError` (HTTP 4xx/503, OpenAI's error object).
"""

from __future__ import annotations

import asyncio
import logging
from argparse import Namespace
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vime.agent.assemble import CallRecord
from vime.agent.engine import Completion, complete
from vime.agent.params import request_sampling_params
from vime.agent.render import (
    ChatTurn,
    RequestError,
    chat_prompt_ids,
    normalise_messages,
    spliced_chat_ids,
    spliced_text_ids,
)
from vime.agent.responses import chat_response, completion_response, parse_tool_calls
from vime.agent.sessions import Session
from vime.config import arg

__all__ = ["Answer", "CallServer"]

logger = logging.getLogger(__name__)

#: ``complete(args, prompt_ids, params, *, index, router_key) -> Completion``.
Complete = Callable[..., Awaitable[Completion]]


@dataclass(slots=True)
class Answer:
    """A served call: the response body and how to record it."""

    #: The OpenAI response object.
    body: dict[str, Any]
    #: Records the call in its session (None: nothing to record, e.g. a budget refusal).
    record: Callable[[], bool] | None = None

    def commit(self) -> bool:
        """Record the call; False when there is nothing to record or the session closed."""
        return self.record() if self.record is not None else False


class CallServer:
    """Turns requests of open sessions into engine calls (one instance per endpoint)."""

    def __init__(self, args: Namespace, tokenizer: Any, *, stop_ids: Iterable[int],
                 tool_parser: Any = None, complete_fn: Complete = complete) -> None:
        self.args = args
        self.tokenizer = tokenizer
        self.stop_ids = frozenset(int(t) for t in stop_ids)
        self.tool_parser = tool_parser
        self.complete = complete_fn
        self.template_kwargs = dict(arg(args, "apply_chat_template_kwargs") or {})
        self.max_response = arg(args, "rollout_max_response_len")
        self._warned: set[str] = set()

    def _model(self, body: Mapping[str, Any]) -> str:
        return str(body.get("model") or arg(self.args, "hf_checkpoint") or "vime")

    def _params(self, session: Session, body: Mapping[str, Any], run_params: Mapping[str, Any],
                prompt_ids: Sequence[int]) -> dict[str, Any] | None:
        remaining = None
        if self.max_response is not None:
            remaining = int(self.max_response) - session.response_so_far(list(prompt_ids))
            if remaining <= 0:
                session.budget_refusals += 1
                from vime.rollout.budget_refusals import BudgetRefusal, note_refusal

                note_refusal(BudgetRefusal(
                    "agent", session.index, int(self.max_response) - remaining,
                    sum(len(c.completion_ids) for c in session.calls), int(self.max_response),
                    "--rollout-max-response-len"))
                return None
        params, overrides = request_sampling_params(body, run_params, remaining=remaining)
        for name in overrides:
            session.overrides[name] += 1
            if name not in self._warned:
                self._warned.add(name)
                logger.warning("agent endpoint: a request asked for %s=%r; served with the "
                               "run's %r (the trainer assumes the run's sampling)", name,
                               body.get(name), run_params.get(name))
        return params

    async def _generate(self, session: Session, prompt_ids: Sequence[int],
                        params: Mapping[str, Any]) -> Completion:
        if not prompt_ids:
            raise RequestError("the rendered prompt is empty")
        session.in_flight += 1
        try:
            done = await self.complete(self.args, list(prompt_ids), params, index=session.index,
                                       router_key=session.router_key)
        except asyncio.CancelledError:
            # the client went away (the endpoint cancels the call): in flight -> dropped in one
            # step, with no await between, so that a session closing meanwhile counts it once
            session.in_flight -= 1
            session.dropped += 1
            raise
        except BaseException:
            session.in_flight -= 1
            raise
        session.in_flight -= 1
        if done.finish_reason == "abort":
            raise RequestError("the rollout step was aborted (enough samples were generated); "
                               "this trajectory is discarded", status=503)
        return done

    def _texts(self, ids: Sequence[int]) -> list[str]:
        return [str(self.tokenizer.decode([t], skip_special_tokens=False)) for t in ids]

    async def chat(self, session: Session, body: Mapping[str, Any],
                   run_params: Mapping[str, Any]) -> Answer:
        """Serve one ``POST /v1/chat/completions`` body for ``session``.

        Raises:
            RequestError: a bad request (400), an aborted step (503).
        """
        messages = normalise_messages(body.get("messages"))
        tools = body.get("tools") or None
        tools_key = tuple(tools) if tools else None
        prompt_ids: list[int] | None = None
        for turn in reversed(session.chat_turns):
            prompt_ids = spliced_chat_ids(self.tokenizer, messages, turn, stop_ids=self.stop_ids,
                                          tools=tools, template_kwargs=self.template_kwargs)
            if prompt_ids is not None:
                break
        if prompt_ids is None:
            prompt_ids, _ = chat_prompt_ids(self.tokenizer, messages, tools=tools,
                                            template_kwargs=self.template_kwargs)
        params = self._params(session, body, run_params, prompt_ids)
        model = self._model(body)
        if params is None:
            return Answer(chat_response(model, "", [], "length", len(prompt_ids), 0))
        done = await self._generate(session, prompt_ids, params)
        text = str(self.tokenizer.decode(list(done.token_ids), skip_special_tokens=True))
        content, calls = parse_tool_calls(self.tool_parser, text, body)
        want_lp = bool(body.get("logprobs"))
        answer = chat_response(model, content, calls, done.finish_reason, len(prompt_ids),
                               len(done.token_ids),
                               token_texts=self._texts(done.token_ids) if want_lp else None,
                               log_probs=done.log_probs if want_lp else None)
        if not done.token_ids:  # no room left in --rollout-max-context-len
            return Answer(answer)
        assistant = normalise_messages([answer["choices"][0]["message"]])[0]
        record = CallRecord(tuple(prompt_ids), done.token_ids, done.log_probs, done.finish_reason,
                            done.weight_version, messages=tuple(messages), tools=tools_key)
        turn = ChatTurn(tuple(messages), assistant, tuple(prompt_ids), done.token_ids, tools_key)
        return Answer(answer, lambda: session.record(record, chat=turn))

    async def completion(self, session: Session, body: Mapping[str, Any],
                         run_params: Mapping[str, Any]) -> Answer:
        """Serve one ``POST /v1/completions`` body: ``prompt`` a string or token ids.

        Raises:
            RequestError: a bad request (400), an aborted step (503).
        """
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], (str, list)):
            prompt = prompt[0]
        for key in ("echo", "suffix", "best_of"):
            if body.get(key) not in (None, False, 1):
                raise RequestError(f"{key}={body[key]!r} is not supported", param=key)
        if isinstance(prompt, str):
            text_prompt: str | None = prompt
            prompt_ids = (spliced_text_ids(self.tokenizer, prompt, session.text_turns)
                          or list(self.tokenizer.encode(prompt, add_special_tokens=False)))
        elif isinstance(prompt, list) and prompt and all(
                isinstance(t, int) and not isinstance(t, bool) for t in prompt):
            text_prompt, prompt_ids = None, list(prompt)
        else:
            raise RequestError("prompt must be one string or one list of token ids",
                               param="prompt")
        params = self._params(session, body, run_params, prompt_ids)
        model = self._model(body)
        if params is None:
            return Answer(completion_response(model, "", "length", len(prompt_ids), 0))
        done = await self._generate(session, prompt_ids, params)
        text = str(self.tokenizer.decode(list(done.token_ids), skip_special_tokens=True))
        want_lp = body.get("logprobs") not in (None, False, 0)
        answer = completion_response(
            model, text, done.finish_reason, len(prompt_ids), len(done.token_ids),
            token_texts=self._texts(done.token_ids) if want_lp else None,
            log_probs=done.log_probs if want_lp else None)
        if not done.token_ids:
            return Answer(answer)
        record = CallRecord(tuple(prompt_ids), done.token_ids, done.log_probs, done.finish_reason,
                            done.weight_version)
        turn = (None if text_prompt is None
                else (text_prompt, text, tuple(prompt_ids), done.token_ids))
        return Answer(answer, lambda: session.record(record, text=turn))
