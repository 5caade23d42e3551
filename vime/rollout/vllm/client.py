"""The engine client of the default rollout: one sample's call to ``/inference/v1/generate``
through the router, with the retry of engine failures.

Usage::

    sample = await generate(args, sample, sampling_params)   # grows sample, sets its status

A request that fails with a connection error or HTTP 500/502/503/504 is sent again through the
router with back-off for up to ``--rollout-engine-retry-secs`` (the router itself moves a dead
engine's sessions to live engines), then the call fails with ``EngineUnavailableError`` naming
the engines that do not answer ``GET /health``; see :func:`generate`.
"""

from __future__ import annotations

import asyncio
import logging
import math
import uuid
from argparse import Namespace
from typing import Any

from vime.config import arg
from vime.contract.checks.enforced import require
from vime.contract.checks.hook_results import generate_status_problems
from vime.contract.errors import ContractError
from vime.rollout import budget_refusals
from vime.rollout.vllm.state import RolloutState, get_state
from vime.rollout.vllm_protocol import (
    build_generate_request,
    check_sampling_keys,
    parse_generate_response,
)
from vime.utils.types import Sample

__all__ = ["ENGINE_FAILURE_STATUSES", "ENGINE_RETRY_BACKOFF_S", "ENGINE_RETRY_MAX_BACKOFF_S",
           "ENGINE_RETRY_S", "PROMPT_CACHE_SIZE", "generate"]

logger = logging.getLogger(__name__)

#: Default of ``--rollout-engine-retry-secs``: how long (seconds, from the first failure) one
#: sample's request keeps being retried through the router when no engine answers.
ENGINE_RETRY_S = 60.0
#: First back-off and its cap between those retries (seconds; doubled per attempt).
ENGINE_RETRY_BACKOFF_S = 1.0
ENGINE_RETRY_MAX_BACKOFF_S = 4.0
#: HTTP statuses (after the router's and the client's own retries) that mean no engine answered.
ENGINE_FAILURE_STATUSES = frozenset({500, 502, 503, 504})
#: Prompts whose token ids one process keeps (per step; cleared when full).
PROMPT_CACHE_SIZE = 65536


def _prompt_ids(state: RolloutState, sample: Sample) -> list[int]:
    if sample.tokens:
        return list(sample.tokens)
    if not isinstance(sample.prompt, str):
        raise ContractError(
            f"generate: sample index={sample.index} has a message-list prompt and no tokens; the "
            "default generate needs a string prompt: pass --apply-chat-template (or template "
            "the prompt yourself)")
    ids = state.prompt_ids.get(sample.prompt)
    if ids is None:   # a group's samples share one prompt: encode it once per step
        if len(state.prompt_ids) >= PROMPT_CACHE_SIZE:   # generate called outside a step
            state.prompt_ids.clear()
        ids = state.prompt_ids[sample.prompt] = list(
            state.tokenizer.encode(sample.prompt, add_special_tokens=False))
    return list(ids)


def _retry_seconds(args: Namespace) -> float:
    value = arg(args, "rollout_engine_retry_secs")
    if value is None:
        return ENGINE_RETRY_S
    value = float(value)
    if not (value >= 0 and math.isfinite(value)):
        raise ValueError(f"--rollout-engine-retry-secs {value}: expected a number of seconds "
                         ">= 0")
    return value


def _engine_failure(exc: BaseException) -> bool:
    """Whether ``exc`` means "no engine answered" (retry through the router): a connection
    error or timeout (``status`` None) or HTTP 500/502/503/504."""
    from vime.utils.http_utils import HTTPError

    return isinstance(exc, HTTPError) and (exc.status is None
                                           or exc.status in ENGINE_FAILURE_STATUSES)


async def _unavailable(state: RolloutState, sample: Sample, url: str, what: str, attempts: int,
                       seconds: float) -> Exception:
    from vime.ray.engine_control import EngineUnavailableError, unhealthy_engines

    dead = await unhealthy_engines([e.url for e in state.engines])
    names = ", ".join(dead) if dead else "none (all answer GET /health)"
    return EngineUnavailableError(
        f"generate: sample index={sample.index} (session {sample.session_id}) got no answer "
        f"from {url} for {seconds:.1f} s ({attempts} attempt(s)); last: {what}\n"
        f"  engines not answering GET /health: {names} (of {len(state.engines)} registered)\n"
        "  fix: restart the dead engine(s) or drop them from the router; raise "
        "--rollout-engine-retry-secs to wait longer for a fail-over",
        url=url, dead_engines=dead)


async def _post_generate(state: RolloutState, url: str, body: dict[str, Any],
                         headers: dict[str, str], request_id: str) -> Any:
    from vime.utils.http_utils import post

    assert state.semaphore is not None
    async with state.semaphore:
        if state.aborted:
            return None
        state.inflight.add(request_id)
        try:
            return await post(url, body, headers=headers, pool="generate")
        finally:
            state.inflight.discard(request_id)


def _budget(params: dict[str, Any], limit: str, max_context: Any) -> int:
    """The whole budget (tokens) that ``limit`` names: the response's ``max_tokens`` or the
    context length (0 when unset)."""
    total = params.get("max_tokens") if limit == "--rollout-max-response-len" else max_context
    return int(total or 0)


def _note_refusal(sample: Sample, params: dict[str, Any], limit: str,
                  max_context: Any) -> None:
    """Tell :mod:`vime.rollout.budget_refusals` (while it listens) that no request was sent
    for ``sample``."""
    if not budget_refusals.recording_refusals():
        return
    used = int(sample.response_length)
    mask = sample.loss_mask
    # no loss mask: every response token is trainable (the model's)
    generated = sum(1 for m in mask if m) if isinstance(mask, list) else used
    budget_refusals.note_refusal(budget_refusals.BudgetRefusal(
        "generate", sample.index, used, int(generated), _budget(params, limit, max_context),
        limit))


def _note_call(sample: Sample, params: dict[str, Any], limit: str, max_context: Any,
               before: int, generated: int) -> None:
    """Tell :mod:`vime.rollout.budget_refusals` (while it listens) how much of the budget one
    answered call of ``sample`` used."""
    if not budget_refusals.listening_to_calls():
        return
    budget = _budget(params, limit, max_context)
    filled = sample.status == Sample.Status.TRUNCATED or (
        limit == "--rollout-max-response-len" and budget > 0 and before + generated >= budget)
    budget_refusals.note_call(budget_refusals.EngineCall(sample.index, before, generated,
                                                         filled, budget, limit))


async def generate(args: Namespace, sample: Sample, sampling_params: dict[str, Any]) -> Sample:
    """Generate (or continue) one sample's response with one engine call; grows the sample with
    ``Sample.append_response_tokens`` and sets its status from the finish reason.

    ``sampling_params["max_tokens"]`` is the whole response budget (tokens); the tokens a
    continuation already has are subtracted (no budget left: TRUNCATED, no request). After an
    abort the sample comes back ABORTED (with what was generated so far).

    Engine failures: when a request fails with a connection error or HTTP 500/502/503/504 (after
    the router's retries, which move a dead engine's sessions to live engines, and the client's
    own), the request is sent again through the router with back-off (1, 2, 4, 4, ... s) for up
    to ``--rollout-engine-retry-secs`` (default 60 s); an engine-side abort that vime did not
    ask for (``finish_reason="abort"`` outside :func:`abort`, e.g. an engine shutting down)
    keeps its partial tokens and continues the same way. Each attempt has a fresh request id,
    and the sample is changed only by a successful response, so a retried sample is neither lost
    nor duplicated.

    Raises:
        ContractError: VIM140 when the sample is not PENDING/ABORTED; a message-list prompt
            without tokens.
        EngineResponseError: the engine's reply breaks the token-in/token-out format (its
            log-probs do not match its tokens; ``vime.rollout.vllm_protocol``).
        ValueError: a ``sampling_params`` key the server does not know.
        EngineUnavailableError: the engines did not answer within the retry budget (names the
            engines that do not answer ``GET /health``).
        vime.utils.http_utils.HTTPError: another HTTP error (e.g. 400, the server's message).
    """
    state = await get_state(args)
    require(generate_status_problems(sample.status, f"generate input (index={sample.index})"))
    await state.ensure_registered()
    loop = asyncio.get_running_loop()
    url = state.base_url + "/inference/v1/generate"
    model = arg(args, "hf_checkpoint")
    max_context = arg(args, "rollout_max_context_len")
    skip_special = sampling_params.get("skip_special_tokens", True)
    checked = False
    first_failure: float | None = None
    attempts = 0
    while True:
        params = dict(sampling_params)
        prompt_ids = _prompt_ids(state, sample)
        budget = params.get("max_tokens")
        if budget is not None:
            budget = int(budget) - sample.response_length
        limit = "--rollout-max-response-len"
        if max_context:
            room = int(max_context) - len(prompt_ids)
            if budget is None or room < budget:
                budget, limit = room, "--rollout-max-context-len"
        if budget is not None and budget <= 0:
            if not sample.tokens:
                sample.tokens = prompt_ids
            sample.status = Sample.Status.TRUNCATED
            _note_refusal(sample, params, limit, max_context)
            return sample
        if budget is not None:
            params["max_tokens"] = budget
        if not checked:
            check_sampling_keys(params, state.sampling_keys, where=f"sample index={sample.index}")
            checked = True
        if state.aborted:
            sample.status = Sample.Status.ABORTED
            return sample
        request_id = uuid.uuid4().hex
        body, headers = build_generate_request(
            prompt_ids=prompt_ids, sampling_params=params, request_id=request_id, model=model,
            session_id=sample.session_id)
        if state.api_key:
            from vime.ray.engine_guard import auth_headers

            headers = {**headers, **auth_headers(state.api_key)}
        attempts += 1
        try:
            response = await _post_generate(state, url, body, headers, request_id)
        except Exception as exc:
            if not _engine_failure(exc):
                raise
            what = str(exc).splitlines()[0][:300]
        else:
            if response is None:  # aborted while waiting for a slot
                sample.status = Sample.Status.ABORTED
                return sample
            result = parse_generate_response(response, request_id=request_id, url=url)
            state.generated_tokens += len(result.token_ids)
            if not sample.tokens:
                sample.tokens = prompt_ids
            text = state.tokenizer.decode(result.token_ids, skip_special_tokens=skip_special)
            before = int(sample.response_length)
            sample.append_response_tokens(args, tokens=result.token_ids,
                                          log_probs=result.log_probs, trainable=True,
                                          meta_info=result.meta_info(), text=text)
            _note_call(sample, sampling_params, limit, max_context, before,
                       len(result.token_ids))
            if sample.status != Sample.Status.ABORTED or state.aborted:
                return sample
            what = (f"the engine aborted request {request_id} on its own after "
                    f"{len(result.token_ids)} token(s)")
        now = loop.time()
        if first_failure is None:
            first_failure = now
        waited = now - first_failure
        if waited >= _retry_seconds(args):
            raise await _unavailable(state, sample, url, what, attempts, waited)
        state.engine_retries += 1
        delay = min(ENGINE_RETRY_MAX_BACKOFF_S, ENGINE_RETRY_BACKOFF_S * 2 ** (attempts - 1))
        logger.warning("generate: sample index=%s: %s; retrying through %s in %.1f s",
                       sample.index, what, url, delay)
        await asyncio.sleep(delay)
