"""An OpenAI request's sampling fields -> the engine's ``sampling_params``, within the run's
limits. Pure functions.

The policy (docs/en/get_started/customization.md, "Train any agent"):

- ``temperature``, ``top_p``, ``top_k`` are the run's (``--rollout-temperature``,
  ``--rollout-top-p``, ``--rollout-top-k``): the trainer's log-probs and the importance ratios
  assume the distribution the run samples from. A request asking for other values is served
  with the run's; each such field is reported in ``overrides`` (the endpoint counts them as
  ``rollout/agent/sampling_overrides`` and logs the first one per field).
- ``max_tokens`` / ``max_completion_tokens`` are honoured, capped by what is left of the
  trajectory's response budget (``--rollout-max-response-len``); ``--rollout-max-context-len``
  is applied by the engine client.
- ``stop`` strings are added to the run's ``--rollout-stop``; ``seed`` is passed through.
- Fields that would change the sampled distribution or ask for something the endpoint does
  not do are rejected with HTTP 400 rather than silently dropped: ``n`` != 1, non-zero
  ``presence_penalty``/``frequency_penalty``, ``logit_bias``, ``top_logprobs`` > 0,
  ``response_format`` other than text, ``tool_choice`` ``"required"`` or a named function.
  Bookkeeping fields (``user``, ``metadata``, ``store``, ``parallel_tool_calls``,
  ``stream_options``, ``logprobs``) are accepted.

Usage::

    params, overrides = request_sampling_params(body, run_params, remaining=40)
    params["max_tokens"]        # min(body["max_tokens"], 40)
    overrides                   # ["temperature"] when body asked for another temperature

Source: ours; field names are OpenAI's chat-completions and completions request fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vime.agent.render import RequestError

__all__ = ["RUN_FIELDS", "request_sampling_params"]

#: Request field -> the run's sampling key it must agree with.
RUN_FIELDS: Mapping[str, str] = {"temperature": "temperature", "top_p": "top_p",
                                 "top_k": "top_k"}


def _reject(body: Mapping[str, Any]) -> None:
    if body.get("n") not in (None, 1):
        raise RequestError(f"n={body['n']!r}: the endpoint returns one choice per call (send "
                           "one request per sample)", param="n")
    for key in ("presence_penalty", "frequency_penalty"):
        if body.get(key) not in (None, 0, 0.0):
            raise RequestError(f"{key}={body[key]!r}: penalties change the sampled "
                               "distribution, which the trainer would not see; leave it unset",
                               param=key)
    if body.get("logit_bias"):
        raise RequestError("logit_bias is not supported (it changes the sampled distribution)",
                           param="logit_bias")
    top = body.get("top_logprobs")
    if top not in (None, 0):
        raise RequestError(f"top_logprobs={top!r}: the endpoint reports the sampled token's "
                           "log-prob only (logprobs=true)", param="top_logprobs")
    fmt = body.get("response_format")
    if fmt is not None and not (isinstance(fmt, Mapping) and fmt.get("type") == "text"):
        raise RequestError("response_format other than text needs guided decoding, which the "
                           "endpoint does not do", param="response_format")
    choice = body.get("tool_choice")
    if choice not in (None, "auto", "none"):
        raise RequestError(f"tool_choice={choice!r}: only 'auto' and 'none' are served (forcing "
                           "a call needs guided decoding)", param="tool_choice")


def _max_tokens(body: Mapping[str, Any]) -> int | None:
    asked = [body[k] for k in ("max_tokens", "max_completion_tokens") if body.get(k) is not None]
    for value in asked:
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise RequestError(f"max_tokens={value!r}: expected a positive integer",
                               param="max_tokens")
    return min(asked) if asked else None


def _stop(body: Mapping[str, Any]) -> list[str]:
    stop = body.get("stop")
    if stop is None:
        return []
    if isinstance(stop, str):
        return [stop]
    if isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        return list(stop)
    raise RequestError(f"stop={stop!r}: expected a string or a list of strings", param="stop")


def request_sampling_params(body: Mapping[str, Any], run_params: Mapping[str, Any], *,
                            remaining: int | None) -> tuple[dict[str, Any], list[str]]:
    """``(sampling_params, overrides)`` for one call, see the module docstring.

    Args:
        body: the request's JSON object.
        run_params: the run's train ``sampling_params`` (``sampling_params_from_args``).
        remaining: response tokens left in the trajectory's budget (None: no budget).

    Returns:
        The engine's ``sampling_params`` (``max_tokens`` >= 1 when a budget applies) and the
        request fields served with the run's value instead (``["temperature", ...]``).

    Raises:
        RequestError: a rejected field (HTTP 400).
        ValueError: ``remaining <= 0`` (the caller's job: answer ``length`` without a call).
    """
    _reject(body)
    params = dict(run_params)
    overrides = []
    for field, key in RUN_FIELDS.items():
        asked = body.get(field)
        if asked is not None and key in params and float(asked) != float(params[key]):
            overrides.append(field)
    asked_max = _max_tokens(body)
    limits = [v for v in (asked_max, params.get("max_tokens"), remaining) if v is not None]
    if remaining is not None and remaining <= 0:
        raise ValueError(f"remaining={remaining}: the caller answers a call with no budget left "
                         "itself (finish_reason 'length', no engine call)")
    if limits:
        params["max_tokens"] = int(min(limits))
    stops = [*params.get("stop", []), *(s for s in _stop(body) if s not in params.get("stop", []))]
    if stops:
        params["stop"] = stops
    if body.get("seed") is not None:
        params["seed"] = int(body["seed"])
    return params, overrides
