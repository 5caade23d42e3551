"""One model call of the endpoint, token ids in and out, through vime's engine client.

The endpoint does not talk HTTP to the engines itself: it hands the prompt ids to
:func:`vime.rollout.vllm.client.generate` (the default rollout's client: the router, the
request semaphore, retries of engine failures, the abort of a step, ``--rollout-max-context-len``)
on a scratch ``Sample`` and reads back the engine's tokens, log-probs and weight version.

Usage::

    done = await complete(args, [257, 117, ...], params, index=3, router_key="5f0c...")
    done.token_ids, done.log_probs, done.finish_reason      # [..], [..], "stop"
"""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Completion", "complete"]

_FINISH = {"COMPLETED": "stop", "TRUNCATED": "length", "ABORTED": "abort", "FAILED": "abort"}


@dataclass(frozen=True, slots=True)
class Completion:
    """The engine's answer to one call."""

    #: Generated token ids (a stop token included when the engine stopped on it).
    token_ids: tuple[int, ...]
    #: One natural-log sampler probability per generated token.
    log_probs: tuple[float, ...]
    #: ``"stop"``, ``"length"`` or ``"abort"`` (vime aborted the step, or the engine did).
    finish_reason: str
    #: The engine's weight version (None when it reported none).
    weight_version: str | None


async def complete(args: Namespace, prompt_ids: Sequence[int], params: Mapping[str, Any], *,
                   index: int | None, router_key: str | None) -> Completion:
    """Generate from ``prompt_ids`` with ``params`` (the engine's ``sampling_params``).

    ``params["max_tokens"]`` is this call's budget in tokens; no room left in
    ``--rollout-max-context-len`` gives an empty ``length`` completion without a request.

    Raises:
        EngineUnavailableError, vime.utils.http_utils.HTTPError, ValueError: as
            :func:`vime.rollout.vllm.client.generate`.
    """
    from vime.rollout.vllm.client import generate
    from vime.utils.types import Sample

    scratch = Sample(index=index, tokens=list(prompt_ids), session_id=router_key)
    out = await generate(args, scratch, dict(params))
    n = len(prompt_ids)
    return Completion(token_ids=tuple(out.tokens[n:]),
                      log_probs=tuple(out.rollout_log_probs or ()),
                      finish_reason=_FINISH.get(out.status.name, "stop"),
                      weight_version=out.weight_versions[-1] if out.weight_versions else None)
