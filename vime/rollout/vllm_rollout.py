"""The default rollout: generate with vLLM over HTTP, score, filter, batch (CONTRACT.md §8).

Usage::

    --rollout-function-path vime.rollout.vllm_rollout.generate_rollout   # the default

    out = generate_rollout(args, rollout_id, data_source)                  # train step
    out.samples        # rollout_batch_size groups of n_samples_per_prompt Samples
    out.metrics        # {"rollout/vllm_rollout/generated_tokens_per_s": 2603.0, ...,
                       #  "rollout/dynamic_filter/drop_zero_std_1.0": 3}  (rollout_metrics.py)
    ev = generate_rollout(args, rollout_id, data_source, evaluation=True)  # eval step
    ev.data            # {name: {"rewards": [...], "truncated": [...], "samples": [...]}}

    # inside a custom rollout or generate function (async):
    sample = await generate(args, sample, sampling_params)      # one engine call
    sample = await generate_and_rm(args, sample, sampling_params)
    group = await generate_and_rm_group(args, group, sampling_params)

Requests go to ``args.vllm_router_ip:args.vllm_router_port`` (a vllm-router, or a single engine
itself); control calls (abort) go to every engine behind it, which registration finds with the
router's ``GET /workers`` and checks with ``GET /openapi.json``. Concurrency is bounded by one
semaphore of ``vllm_server_concurrency * num_engines`` requests, and the shared, pooled httpx
client (``vime.utils.http_utils``) lives on the process's background loop
(``vime.utils.async_utils.run``).

Train loop (``generate_rollout_async``): keep ``rollout_batch_size`` groups. While fewer than
that are in flight or kept, take ``over_sampling_batch_size`` more groups from the data source.
Each finished group goes through ``--dynamic-sampling-filter-path`` (a drop frees a slot and is
counted as ``rollout/dynamic_filter/drop_<reason>``). Once enough groups are kept, in-flight
requests are aborted; with ``--partial-rollout``, drained groups holding an ABORTED sample with a
response go back to the data source (``metadata["start_rollout_id"]`` set) to continue next step.

Engine failures: a request that fails with a connection error or HTTP 500/502/503/504 is sent
again through the router with back-off for up to ``--rollout-engine-retry-secs`` (the router
itself moves a dead engine's sessions to live engines), then the rollout fails with
``EngineUnavailableError`` naming the engines that do not answer ``GET /health``; see
:func:`generate`.

Source: CONTRACT.md §8; upstream ``slime/rollout/sglang_rollout.py`` (structure and names only:
``GenerateState``-like state, over-sampling loop, abort-and-recycle).
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import logging
import math
import time
import uuid
from argparse import Namespace
from collections import Counter
from collections.abc import Sequence
from typing import Any

from vime.contract import checks as rt
from vime.contract.errors import ContractError
from vime.contract.invariants import INVARIANTS
from vime.rollout.base_types import (
    RolloutFnEvalOutput,
    RolloutFnTrainOutput,
    finalize_rollout_groups,
    iter_samples,
)
from vime.rollout.rollout_metrics import BusyClock, rollout_step_metrics
from vime.rollout.vllm_protocol import (
    build_generate_request,
    check_sampling_keys,
    make_sampling_params,
    parse_generate_response,
)
from vime.utils.async_utils import run
from vime.utils.types import Sample

__all__ = [
    "abort",
    "eval_rollout",
    "generate",
    "generate_and_rm",
    "generate_and_rm_group",
    "generate_rollout",
    "generate_rollout_async",
    "get_model_url",
    "sampling_params_from_args",
]

logger = logging.getLogger(__name__)

#: Seconds between abort POSTs while draining, and the drain's limit (CONTRACT.md §8).
ABORT_INTERVAL_S = 3.0
ABORT_TIMEOUT_S = 180.0
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


# ---- process state ---------------------------------------------------------------------------


class _State:
    """Per-process rollout state: tokenizer, engines, semaphore, in-flight requests, abort flag,
    and the step's counters (generated tokens, generation/reward busy clocks).

    Lives on the background loop; one per ``args`` object. Nothing here touches the network or
    loads the tokenizer until the built-in :func:`generate` needs it (:meth:`ensure_registered`,
    :attr:`tokenizer`), so custom generate functions that do not call an engine run without one.
    """

    def __init__(self, args: Namespace) -> None:
        self.args = args
        self._tokenizer: Any = None
        self.base_url = ""
        self.engines: list[Any] = []  # list[EngineInfo]
        self.sampling_keys: frozenset[str] = frozenset()
        self.semaphore: asyncio.Semaphore | None = None
        self.registered = False
        self.aborted = False
        self.rollout_id: int | None = None
        self.inflight: set[str] = set()
        self.request_tasks: set[asyncio.Task[Any]] = set()
        self.group_tasks: set[asyncio.Task[Any]] = set()
        self.eval_cache: dict[tuple[Any, ...], list[Sample]] = {}
        #: prompt text -> token ids, this step's (cleared by :meth:`start_step`).
        self.prompt_ids: dict[str, list[int]] = {}
        self.generated_tokens = 0
        self.gen_clock = BusyClock()
        self.rm_clock = BusyClock()
        self._register_lock = asyncio.Lock()

    @property
    def tokenizer(self) -> Any:
        """The ``--hf-checkpoint`` tokenizer (loaded on first use)."""
        if self._tokenizer is None:
            from vime.utils.data import load_tokenizer

            self._tokenizer = load_tokenizer(getattr(self.args, "hf_checkpoint", None))
        return self._tokenizer

    async def ensure_registered(self) -> None:
        """Find and probe the engines once (``GET /workers``, ``GET /openapi.json``), size the
        semaphore and the HTTP pool (``vllm_server_concurrency * num_engines``).

        Raises:
            ValueError: the router address is not set.
            EngineRegistrationError: an engine lacks the generate or abort route.
        """
        if self.registered:
            return
        async with self._register_lock:
            if self.registered:
                return
            from vime.ray.engine_control import discover_engine_urls, probe_engine
            from vime.utils.http_utils import configure_client

            self.base_url = _router_url(self.args)
            explicit = getattr(self.args, "vllm_engine_urls", None)
            urls = list(explicit) if explicit else await discover_engine_urls(self.base_url)
            self.engines = list(await asyncio.gather(*(probe_engine(u) for u in urls)))
            keys = [e.sampling_keys for e in self.engines if e.sampling_keys]
            self.sampling_keys = frozenset.intersection(*keys) if keys else frozenset()
            per_engine = int(getattr(self.args, "vllm_server_concurrency", None) or 512)
            size = per_engine * max(1, len(self.engines))
            self.semaphore = asyncio.Semaphore(size)
            configure_client(max_connections=size,
                             timeout=float(getattr(self.args, "router_request_timeout_secs",
                                                   None) or 14400))
            self.registered = True

    def start_step(self, rollout_id: int | None) -> None:
        """Reset the abort flag, the task sets and the step's counters."""
        self.aborted = False
        self.rollout_id = rollout_id
        self.request_tasks.clear()
        self.group_tasks.clear()
        self.prompt_ids.clear()
        self.generated_tokens = 0
        self.gen_clock = BusyClock()
        self.rm_clock = BusyClock()


_STATES: dict[int, _State] = {}


async def _get_state(args: Namespace) -> _State:
    """The state of ``args`` (created on first use; registration is lazy)."""
    state = _STATES.get(id(args))
    if state is None or state.args is not args:
        state = _State(args)
        _STATES[id(args)] = state
    return state


def _router_url(args: Namespace) -> str:
    ip = getattr(args, "vllm_router_ip", None)
    port = getattr(args, "vllm_router_port", None)
    if ip and port:
        return f"http://{ip}:{int(port)}"
    external = getattr(args, "rollout_external_engine_addrs", None)
    if external and len(external) == 1:
        addr = str(external[0]).rstrip("/")
        return addr if "://" in addr else f"http://{addr}"
    raise ValueError("args.vllm_router_ip / args.vllm_router_port are not set: the "
                     "RolloutManager sets them after starting the engines (or pass "
                     "--vllm-router-ip/--vllm-router-port, or one --rollout-external-engine-addrs)")


def get_model_url(args: Namespace, model_name: str | None = None,
                  endpoint: str = "/inference/v1/generate") -> str:
    """The URL of ``endpoint`` on the router (or the single engine) serving ``model_name``.

    v1 serves one model (``--hf-checkpoint``), so ``model_name`` only has to be that model or
    None.

    Raises:
        ValueError: the router address is not set.
        NotImplementedError: another model name (multi-model setups are not in v1).
    """
    hf = getattr(args, "hf_checkpoint", None)
    if model_name not in (None, "", hf, "default", "actor"):
        raise NotImplementedError(f"get_model_url: model {model_name!r}: vime v1 serves one "
                                  f"model (--hf-checkpoint {hf!r})")
    return _router_url(args) + (endpoint if endpoint.startswith("/") else "/" + endpoint)


def sampling_params_from_args(args: Namespace) -> dict[str, Any]:
    """The train ``sampling_params`` from ``--rollout-*`` arguments (see
    ``vllm_protocol.make_sampling_params``).

    Raises:
        ValueError: ``--rollout-temperature`` <= 0 or another out-of-range value.
    """
    temperature = float(getattr(args, "rollout_temperature", 1.0))
    if temperature <= 0:
        raise ValueError(f"--rollout-temperature {temperature}: expected > 0 for RL rollouts")
    return make_sampling_params(
        temperature=temperature,
        top_p=float(getattr(args, "rollout_top_p", 1.0)),
        top_k=int(getattr(args, "rollout_top_k", -1)),
        max_response_len=getattr(args, "rollout_max_response_len", None),
        stop=getattr(args, "rollout_stop", None),
        stop_token_ids=getattr(args, "rollout_stop_token_ids", None),
        skip_special_tokens=bool(getattr(args, "rollout_skip_special_tokens", False)),
    )


# ---- one engine call -------------------------------------------------------------------------


def _prompt_ids(state: _State, sample: Sample) -> list[int]:
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
    value = getattr(args, "rollout_engine_retry_secs", None)
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


async def _unavailable(state: _State, sample: Sample, url: str, what: str, attempts: int,
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


async def _post_generate(state: _State, url: str, body: dict[str, Any],
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
            without tokens; VIM109 when the engine's log-probs do not match its tokens.
        ValueError: a ``sampling_params`` key the server does not know.
        EngineUnavailableError: the engines did not answer within the retry budget (names the
            engines that do not answer ``GET /health``).
        vime.utils.http_utils.HTTPError: another HTTP error (e.g. 400, the server's message).
    """
    state = await _get_state(args)
    if sample.status not in (Sample.Status.PENDING, Sample.Status.ABORTED):
        raise ContractError([INVARIANTS["VIM140"].violation(
            f"sample index={sample.index}", problem=f"generate got a sample with status "
            f"{sample.status.value}; expected pending or aborted (a finished sample is not "
            "generated again)")])
    await state.ensure_registered()
    loop = asyncio.get_running_loop()
    url = state.base_url + "/inference/v1/generate"
    model = getattr(args, "hf_checkpoint", None)
    max_context = getattr(args, "rollout_max_context_len", None)
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
        if max_context:
            room = int(max_context) - len(prompt_ids)
            budget = room if budget is None else min(budget, room)
        if budget is not None and budget <= 0:
            if not sample.tokens:
                sample.tokens = prompt_ids
            sample.status = Sample.Status.TRUNCATED
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
            sample.append_response_tokens(args, tokens=result.token_ids,
                                          log_probs=result.log_probs, trainable=True,
                                          meta_info=result.meta_info(), text=text)
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
        delay = min(ENGINE_RETRY_MAX_BACKOFF_S, ENGINE_RETRY_BACKOFF_S * 2 ** (attempts - 1))
        logger.warning("generate: sample index=%s: %s; retrying through %s in %.1f s",
                       sample.index, what, url, delay)
        await asyncio.sleep(delay)


# ---- generate + reward -----------------------------------------------------------------------


def _generate_function(args: Namespace, sample: Sample, evaluation: bool) -> tuple[Any, str]:
    from vime.utils.misc import load_function

    path = sample.generate_function_path or getattr(args, "custom_generate_function_path", None)
    if not path:
        return generate, "vime.rollout.vllm_rollout.generate"
    return load_function(path, hook="custom_generate_function_path"), path


def _accepts(fn: Any, name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


async def _call_generate(state: _State, fn: Any, args: Namespace, sample: Sample,
                         sampling_params: dict[str, Any], evaluation: bool) -> Any:
    kwargs = {"evaluation": evaluation} if fn is not generate and _accepts(fn, "evaluation") else {}
    if getattr(fn, "abort_mode", None) != "request":
        return await fn(args, sample, sampling_params, **kwargs)
    task = asyncio.ensure_future(fn(args, sample, sampling_params, **kwargs))
    state.request_tasks.add(task)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        if task.cancelled() and state.aborted:
            sample.status = Sample.Status.ABORTED
            return sample
        task.cancel()
        raise
    finally:
        state.request_tasks.discard(task)


async def _run_sample_hooks(state: _State, args: Namespace, sample: Sample,
                            evaluation: bool) -> Sample:
    from vime.utils.misc import load_function

    for path in getattr(args, "rollout_sample_hook_path", None) or []:
        hook = load_function(path, hook="rollout_sample_hook_path")
        kwargs: dict[str, Any] = {}
        if _accepts(hook, "rollout_id"):
            kwargs["rollout_id"] = state.rollout_id
        if _accepts(hook, "evaluation"):
            kwargs["evaluation"] = evaluation
        out = hook(args, sample, **kwargs)
        if inspect.isawaitable(out):
            out = await out
        rt.check_sample_hook_result(out, args, hook_path=path, rollout_id=state.rollout_id)
        if isinstance(out, Sample):
            sample = out
    return sample


async def generate_and_rm(args: Namespace, sample: Sample, sampling_params: dict[str, Any],
                          evaluation: bool = False) -> Sample | list[Sample]:
    """Generate one sample (built-in or custom generate function), run the sample hooks, and
    score it (unless ``--group-rm``: then the group is scored together).

    COMPLETED/TRUNCATED samples come back unchanged; ABORTED samples are not scored. With
    ``--partial-rollout --mask-offpolicy-in-partial-rollout`` a re-entering sample's earlier
    response tokens are masked out (``loss_mask = [0] * response_length``).

    Returns:
        The sample, or a non-empty ``list[Sample]`` from a fan-out generate function.

    Raises:
        ContractError: generate-boundary violations (VIM140, VIM109, ...), hook result errors.
    """
    state = await _get_state(args)
    if sample.status in (Sample.Status.COMPLETED, Sample.Status.TRUNCATED):
        return sample
    if (getattr(args, "partial_rollout", False)
            and getattr(args, "mask_offpolicy_in_partial_rollout", False)
            and sample.response_length > 0):
        sample.loss_mask = [0] * sample.response_length
    if state.aborted:
        sample.status = Sample.Status.ABORTED
        return sample
    fn, fn_path = _generate_function(args, sample, evaluation)
    status_in, length_in = sample.status, sample.response_length
    with state.gen_clock.busy():
        result = await _call_generate(state, fn, args, sample, sampling_params, evaluation)
    rt.check_generate_result(status_in, result, args,
                             hook_path=None if fn is generate else fn_path,
                             rollout_id=state.rollout_id, in_response_length=length_in)
    leaves = result if isinstance(result, list) else [result]
    leaves = [await _run_sample_hooks(state, args, s, evaluation) for s in leaves]
    result = leaves if isinstance(result, list) else leaves[0]
    if getattr(args, "group_rm", False):
        return result
    if isinstance(result, list):
        if not any(s.status == Sample.Status.ABORTED for s in result):
            await _score_batch(state, args, [s for s in result if s.reward is None], evaluation)
    elif result.status != Sample.Status.ABORTED and result.reward is None:
        from vime.rollout.rm_hub import async_rm

        with state.rm_clock.busy():
            reward = await async_rm(args, result)
        rt.check_reward_result(reward, args, hook_path=_rm_path(args, result),
                               rollout_id=state.rollout_id, evaluation=evaluation,
                               index=result.index)
        result.reward = reward
    return result


def _rm_path(args: Namespace, sample: Sample | None = None) -> str | None:
    return (sample.custom_rm_path if sample is not None else None) or getattr(
        args, "custom_rm_path", None)


async def _score_batch(state: _State, args: Namespace, samples: list[Sample],
                       evaluation: bool) -> None:
    """Score ``samples`` with one ``batched_async_rm`` call (B3-checked) and store rewards."""
    if not samples:
        return
    from vime.rollout.rm_hub import batched_async_rm

    with state.rm_clock.busy():
        rewards = await batched_async_rm(args, samples)
    rt.check_batch_reward_result(rewards, samples, args, hook_path=_rm_path(args),
                                 rollout_id=state.rollout_id, evaluation=evaluation)
    for s, reward in zip(samples, rewards, strict=True):
        s.reward = reward


async def generate_and_rm_group(args: Namespace, group: list[Sample],
                                sampling_params: dict[str, Any], evaluation: bool = False
                                ) -> list[Any]:
    """Generate and score one group concurrently; fills missing ``session_id`` (uuid4) so the
    router keeps each sample on one engine. With ``--vllm-enable-deterministic-inference``
    member ``j`` gets ``seed = rollout_seed + j``; with ``--group-rm`` the group is scored by one
    ``batched_async_rm`` call (unless a member was aborted).

    Returns:
        The group, same length and order (elements may be fan-out lists).
    """
    state = await _get_state(args)
    deterministic = getattr(args, "vllm_enable_deterministic_inference", False)
    seed = int(getattr(args, "rollout_seed", 42))
    calls = []
    for j, sample in enumerate(group):
        if sample.session_id is None:
            sample.session_id = str(uuid.uuid4())
        params = {**sampling_params, "seed": seed + j} if deterministic else sampling_params
        calls.append(generate_and_rm(args, sample, params, evaluation=evaluation))
    results = list(await asyncio.gather(*calls))
    if getattr(args, "group_rm", False) and not state.aborted:
        leaves = list(iter_samples(results))
        if leaves and not any(s.status == Sample.Status.ABORTED for s in leaves):
            await _score_batch(state, args, leaves, evaluation)
    return results


# ---- abort -----------------------------------------------------------------------------------


async def _abort_engines(state: _State) -> None:
    from vime.ray.engine_control import abort_requests

    ids = list(state.inflight)
    if not ids:
        return
    results = await asyncio.gather(*(abort_requests(e, ids) for e in state.engines),
                                   return_exceptions=True)
    for engine, res in zip(state.engines, results, strict=True):
        if isinstance(res, BaseException):
            logger.warning("abort on engine %s failed: %s", engine.url, res)


async def abort(args: Namespace, rollout_id: int | None = None) -> list[list[Any]]:
    """Stop the step's in-flight work and drain it; return the groups to recycle.

    Marks the state aborted (new requests are not sent), cancels ``abort_mode="request"``
    generate tasks, and POSTs every engine's abort route with our in-flight request ids every
    3 s until the step's group tasks have returned. With ``--partial-rollout`` the drained
    groups holding an ABORTED sample with a response are returned (``metadata
    ["start_rollout_id"]`` set if unset); otherwise ``[]`` (they are discarded).

    Raises:
        RuntimeError: the drain took more than 180 s (names the engines and the number of
            requests still in flight).
    """
    state = await _get_state(args)
    state.aborted = True
    for task in list(state.request_tasks):
        task.cancel()
    pending = set(state.group_tasks)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + ABORT_TIMEOUT_S
    while True:
        await _abort_engines(state)
        pending = {t for t in pending if not t.done()}
        if not pending:
            break
        if loop.time() > deadline:
            engines = ", ".join(e.url for e in state.engines)
            raise RuntimeError(f"abort: {len(pending)} group(s) and {len(state.inflight)} "
                               f"request(s) still in flight after {ABORT_TIMEOUT_S:.0f} s on "
                               f"engine(s) {engines}")
        await asyncio.wait(pending, timeout=ABORT_INTERVAL_S)
    drained: list[list[Any]] = []
    for task in state.group_tasks:
        if task.cancelled() or task.exception() is not None:
            continue
        drained.append(task.result())
    state.group_tasks.clear()
    return _recyclable(args, drained, rollout_id)


def _recyclable(args: Namespace, groups: list[list[Any]], rollout_id: int | None
                ) -> list[list[Any]]:
    if not getattr(args, "partial_rollout", False):
        return []
    out = []
    for group in groups:
        leaves = list(iter_samples(group))
        if any(s.status == Sample.Status.ABORTED and s.response_length > 0 for s in leaves):
            for s in leaves:
                s.metadata.setdefault("start_rollout_id", rollout_id)
            out.append(group)
    return out


# ---- the train loop --------------------------------------------------------------------------


def _run_dynamic_filter(fn: Any, path: str, args: Namespace, group: list[Any],
                        rollout_id: int | None) -> tuple[bool, str | None, bool]:
    """``(keep, reason, keep_when_insufficient)`` of one filter call; the group's rewards and
    the result are checked first (B4: VIM110, VIM160, VIM165)."""
    from vime.rollout.filter_hub.base_types import DynamicFilterOutput

    rt.check_group_rewards(list(iter_samples(group)), args, hook_path=path,
                           rollout_id=rollout_id)
    out = fn(args, group)
    rt.check_dynamic_filter_result(out, args, hook_path=path, rollout_id=rollout_id)
    if isinstance(out, DynamicFilterOutput):
        return bool(out.keep), out.reason, bool(out.keep_when_insufficient)
    if inspect.iscoroutine(out):  # only reached with --contract-check off/warn
        out.close()
        return True, None, False
    return bool(out), None, False


async def _get_groups(data_source: Any, n: int) -> list[list[Sample]]:
    getter = getattr(data_source, "get_samples_async", None)
    if getter is not None:
        return list(await getter(n))
    return list(data_source.get_samples(n))


async def generate_rollout_async(args: Namespace, rollout_id: int, data_source: Any
                                 ) -> tuple[RolloutFnTrainOutput, list[list[Any]]]:
    """The train loop (see the module docstring); returns the output and the groups to recycle.

    Raises:
        ContractError: VIM103 when a finished group does not have ``n_samples_per_prompt``
            members; filter result errors (VIM160, VIM165).
        RuntimeError: the data source returned no groups while none are in flight.
    """
    from vime.utils.misc import load_function

    state = await _get_state(args)
    state.start_step(rollout_id)
    start = time.monotonic()
    target = int(args.rollout_batch_size)
    n = int(getattr(args, "n_samples_per_prompt", 1) or 1)
    over = int(getattr(args, "over_sampling_batch_size", None) or target)
    params = sampling_params_from_args(args)
    filter_path = getattr(args, "dynamic_sampling_filter_path", None)
    dyn = load_function(filter_path, hook="dynamic_sampling_filter_path") if filter_path else None
    kept: list[list[Any]] = []
    finished: list[list[Any]] = []
    extra: list[list[Any]] = []
    drops: Counter[str] = Counter()
    remaining = 0
    try:
        while len(kept) < target:
            while remaining < target:
                groups = await _get_groups(data_source, over)
                if not groups:
                    break
                for group in groups:
                    state.group_tasks.add(asyncio.ensure_future(
                        generate_and_rm_group(args, group, params)))
                remaining += len(groups)
            pending = {t for t in state.group_tasks if not t.done()}
            done_now = {t for t in state.group_tasks if t.done()}
            if not pending and not done_now:
                raise RuntimeError(f"rollout {rollout_id}: the data source returned no groups "
                                   f"and none are in flight; kept {len(kept)} of {target}")
            if not done_now:
                done_now, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done_now:
                state.group_tasks.discard(task)
                group = task.result()
                if len(kept) >= target:
                    extra.append(group)
                    continue
                if len(group) != n:
                    first = next(iter_samples(group), None)
                    raise ContractError([INVARIANTS["VIM103"].violation(
                        f"rollout {rollout_id}, group_index="
                        f"{first.group_index if first is not None else None}",
                        actual=len(group), expected=n)])
                finished.append(group)
                if dyn is not None:
                    keep, reason, fallback = _run_dynamic_filter(dyn, str(filter_path), args,
                                                                 group, rollout_id)
                    if not keep and not (fallback and remaining <= target):
                        remaining -= 1
                        drops[reason or "unknown"] += 1
                        continue
                kept.append(group)
    except BaseException:
        for task in state.group_tasks:
            task.cancel()
        await abort(args, rollout_id)
        raise
    recycled = await abort(args, rollout_id) + _recyclable(args, extra, rollout_id)
    metrics: dict[str, Any] = {f"rollout/dynamic_filter/drop_{r}": c for r, c in drops.items()}
    metrics.update(rollout_step_metrics(
        kept, args, wall_s=time.monotonic() - start, generated_tokens=state.generated_tokens,
        generation_busy_s=state.gen_clock.total(), reward_busy_s=state.rm_clock.total()))
    metrics["rollout/vllm_rollout/recycled_groups"] = len(recycled)
    metrics["rollout/vllm_rollout/response_tokens"] = sum(
        s.response_length for g in kept for s in iter_samples(g))
    all_path = getattr(args, "rollout_all_samples_process_path", None)
    if all_path:
        load_function(all_path, hook="rollout_all_samples_process_path")(args, finished,
                                                                        data_source)
    return finalize_rollout_groups(args, rollout_id, kept, metrics), recycled


# ---- eval ------------------------------------------------------------------------------------


def _eval_prompts(state: _State, args: Namespace, cfg: Any) -> list[Sample]:
    from vime.utils.data import Dataset

    key = (cfg.path, cfg.input_key, cfg.label_key, cfg.metadata_key, cfg.tool_key,
           cfg.max_prompt_len)
    if key not in state.eval_cache:
        ds = Dataset(cfg.path, tokenizer=state.tokenizer, max_length=cfg.max_prompt_len,
                     input_key=cfg.input_key or "input", label_key=cfg.label_key,
                     metadata_key=cfg.metadata_key or "metadata", tool_key=cfg.tool_key,
                     apply_chat_template=bool(getattr(args, "apply_chat_template", False)),
                     apply_chat_template_kwargs=getattr(args, "apply_chat_template_kwargs",
                                                        None),
                     seed=int(getattr(args, "rollout_seed", 42)))
        state.eval_cache[key] = list(ds.samples)
    return state.eval_cache[key]


def _eval_sampling_params(args: Namespace, cfg: Any) -> dict[str, Any]:
    def pick(value: Any, default: Any) -> Any:
        return default if value is None else value

    return make_sampling_params(
        temperature=float(pick(cfg.temperature, getattr(args, "rollout_temperature", 1.0))),
        top_p=float(pick(cfg.top_p, getattr(args, "rollout_top_p", 1.0))),
        top_k=int(pick(cfg.top_k, getattr(args, "rollout_top_k", -1))),
        max_response_len=pick(cfg.max_response_len,
                              getattr(args, "rollout_max_response_len", None)),
        min_new_tokens=cfg.min_new_tokens,
        repetition_penalty=cfg.repetition_penalty,
        stop=cfg.stop, stop_token_ids=cfg.stop_token_ids,
        no_stop_trim=True if cfg.no_stop_trim is None else bool(cfg.no_stop_trim),
        skip_special_tokens=bool(getattr(args, "rollout_skip_special_tokens", False)),
    )


async def _eval_dataset(state: _State, args: Namespace, cfg: Any) -> dict[str, Any]:
    prompts = _eval_prompts(state, args, cfg)
    n_per = int(cfg.n_samples_per_eval_prompt or getattr(args, "n_samples_per_eval_prompt", 1)
                or 1)
    params = _eval_sampling_params(args, cfg)
    deterministic = getattr(args, "vllm_enable_deterministic_inference", False)
    seed = int(getattr(args, "rollout_seed", 42))
    samples: list[Sample] = []
    calls = []
    for i, prompt in enumerate(prompts):
        for j in range(n_per):
            s = copy.deepcopy(prompt)
            s.index = len(samples)
            s.group_index = i
            s.session_id = str(uuid.uuid4())
            if cfg.rm_type:
                s.metadata.setdefault("rm_type", cfg.rm_type)
            s.metadata.update(copy.deepcopy(cfg.metadata_overrides or {}))
            if cfg.custom_rm_path:
                s.custom_rm_path = cfg.custom_rm_path
            if cfg.custom_generate_function_path:
                s.generate_function_path = cfg.custom_generate_function_path
            samples.append(s)
            p = {**params, "seed": seed + j} if deterministic else params
            calls.append(generate_and_rm(args, s, p, evaluation=True))
    results = await asyncio.gather(*calls)
    leaves = sorted(iter_samples(list(results)), key=lambda s: s.index or 0)
    key = getattr(args, "eval_reward_key", None) or getattr(args, "reward_key", None)
    reward_args = Namespace(reward_key=key)
    return {"rewards": [float(s.get_reward_value(reward_args)) for s in leaves],
            "truncated": [s.status == Sample.Status.TRUNCATED for s in leaves],
            "samples": leaves}


async def eval_rollout(args: Namespace, rollout_id: int) -> RolloutFnEvalOutput:
    """Generate and score every ``args.eval_datasets`` entry concurrently.

    Each prompt is copied ``n_samples_per_eval_prompt`` times with sequential ``index``; the
    dataset's ``rm_type``, ``metadata_overrides``, reward and generate paths apply to its
    samples; sampling uses the dataset's settings, falling back to the rollout's.

    Returns:
        ``RolloutFnEvalOutput(data={name: {"rewards", "truncated", "samples"}})``, lists of
        equal length sorted by ``index``; ``data={}`` without eval datasets.

    Raises:
        ValueError: ``--group-rm`` (not supported for evaluation).
    """
    if getattr(args, "group_rm", False):
        raise ValueError("--group-rm is not supported for evaluation in vime v1: score eval "
                         "samples one by one (drop --group-rm or give the eval a --custom-rm-path"
                         " for single samples)")
    state = await _get_state(args)
    state.start_step(rollout_id)
    configs: Sequence[Any] = getattr(args, "eval_datasets", None) or []
    start = time.monotonic()
    results = await asyncio.gather(*(_eval_dataset(state, args, cfg) for cfg in configs))
    data = {cfg.name: res for cfg, res in zip(configs, results, strict=True)}
    metrics = {"eval/vllm_rollout/generate_time_s": time.monotonic() - start}
    return RolloutFnEvalOutput(data=data, metrics=metrics)


# ---- the rollout function --------------------------------------------------------------------


def generate_rollout(args: Namespace, rollout_id: int, data_source: Any,
                     evaluation: bool = False) -> RolloutFnTrainOutput | RolloutFnEvalOutput:
    """The default ``--rollout-function-path``: eval -> :func:`eval_rollout`; train -> the
    over-sampling loop, then ``data_source.add_samples(recycled)`` for partial rollouts.

    Returns:
        ``RolloutFnTrainOutput`` (``rollout_batch_size`` groups of ``n_samples_per_prompt``) or
        ``RolloutFnEvalOutput``.
    """
    if evaluation:
        return run(eval_rollout(args, rollout_id))
    output, recycled = run(generate_rollout_async(args, rollout_id, data_source))
    if recycled:
        data_source.add_samples(recycled)
    return output
