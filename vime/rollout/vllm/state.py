"""Per-process state of the default rollout: the engines behind the router, the request
semaphore, the tokenizer, in-flight requests and tasks, the abort flag and the step's counters;
and the router's address.

Usage::

    state = await get_state(args)      # one per ``args`` object, on the background loop
    await state.ensure_registered()    # GET /workers, GET /openapi.json (once)
    state.start_step(rollout_id)       # reset the abort flag, tasks and counters
    get_model_url(args)                # "http://10.0.0.1:3000/inference/v1/generate"

Nothing here touches the network until :meth:`RolloutState.ensure_registered` is awaited.
"""

from __future__ import annotations

import asyncio
from argparse import Namespace
from typing import Any

from vime.config import arg
from vime.rollout.rollout_metrics import BusyClock
from vime.utils.types import Sample

__all__ = ["RolloutState", "get_model_url", "get_state"]


class RolloutState:
    """Per-process rollout state: tokenizer, engines, semaphore, in-flight requests, abort flag,
    and the step's counters (generated tokens, generation/reward busy clocks).

    Lives on the background loop; one per ``args`` object. Nothing here touches the network or
    loads the tokenizer until the built-in generate (:mod:`vime.rollout.vllm.client`) needs it
    (:meth:`ensure_registered`, :attr:`tokenizer`), so custom generate functions that do not
    call an engine run without one.
    """

    def __init__(self, args: Namespace) -> None:
        self.args = args
        self._tokenizer: Any = None
        self.base_url = ""
        self.engines: list[Any] = []  # list[EngineInfo]
        self.sampling_keys: frozenset[str] = frozenset()
        self.semaphore: asyncio.Semaphore | None = None
        self.registered = False
        #: The run's engine API key (``--rollout-host`` engines; None: no key), sent on every
        #: generate call.
        self.api_key: str | None = None
        self.aborted = False
        self.rollout_id: int | None = None
        self.inflight: set[str] = set()
        self.request_tasks: set[asyncio.Task[Any]] = set()
        self.group_tasks: set[asyncio.Task[Any]] = set()
        #: Hook calls running now (``vime.rollout.vllm.hook_calls``): abort, watchdog.
        self.pending: dict[int, Any] = {}
        self.eval_cache: dict[tuple[Any, ...], list[Sample]] = {}
        #: prompt text -> token ids, this step's (cleared by :meth:`start_step`).
        self.prompt_ids: dict[str, list[int]] = {}
        self.generated_tokens = 0
        #: Generate requests retried because no engine answered (this step).
        self.engine_retries = 0
        self.gen_clock = BusyClock()
        self.rm_clock = BusyClock()
        #: Custom multi-turn generate samples seen, and the chat template's framing of a turn
        #: once learnt (``vime.rollout.vllm.turns``; None: not comparable), for
        #: --check-token-boundaries.
        self.turn_samples = 0
        self.turn_framing: Any = None
        self.turn_framing_learnt = False
        self._register_lock = asyncio.Lock()

    @property
    def tokenizer(self) -> Any:
        """The ``--hf-checkpoint`` tokenizer (loaded on first use)."""
        if self._tokenizer is None:
            from vime.utils.data import load_tokenizer

            self._tokenizer = load_tokenizer(arg(self.args, "hf_checkpoint"))
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
            from vime.ray.engine_group import engine_api_key
            from vime.utils.http_utils import configure_client

            self.base_url = _router_url(self.args)
            self.api_key = key = engine_api_key(self.args)
            explicit = getattr(self.args, "vllm_engine_urls", None)
            urls = list(explicit) if explicit else await discover_engine_urls(self.base_url,
                                                                              api_key=key)
            self.engines = list(await asyncio.gather(*(probe_engine(u, api_key=key)
                                                       for u in urls)))
            keys = [e.sampling_keys for e in self.engines if e.sampling_keys]
            self.sampling_keys = frozenset.intersection(*keys) if keys else frozenset()
            per_engine = int(arg(self.args, "vllm_server_concurrency"))
            size = per_engine * max(1, len(self.engines))
            self.semaphore = asyncio.Semaphore(size)
            configure_client(max_connections=size,
                             timeout=float(arg(self.args, "router_request_timeout_secs")))
            self.registered = True

    def start_step(self, rollout_id: int | None) -> None:
        """Reset the abort flag, the task sets and the step's counters."""
        self.aborted = False
        self.rollout_id = rollout_id
        self.request_tasks.clear()
        self.group_tasks.clear()
        self.pending.clear()
        self.prompt_ids.clear()
        self.generated_tokens = 0
        self.engine_retries = 0
        self.gen_clock = BusyClock()
        self.rm_clock = BusyClock()


_STATES: dict[int, RolloutState] = {}


async def get_state(args: Namespace) -> RolloutState:
    """The state of ``args`` (created on first use; registration is lazy)."""
    state = _STATES.get(id(args))
    if state is None or state.args is not args:
        state = RolloutState(args)
        _STATES[id(args)] = state
    return state


def _router_url(args: Namespace) -> str:
    ip = arg(args, "vllm_router_ip")
    port = arg(args, "vllm_router_port")
    if ip and port:
        return f"http://{ip}:{int(port)}"
    external = arg(args, "rollout_external_engine_addrs")
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
    hf = arg(args, "hf_checkpoint")
    if model_name not in (None, "", hf, "default", "actor"):
        raise NotImplementedError(f"get_model_url: model {model_name!r}: vime v1 serves one "
                                  f"model (--hf-checkpoint {hf!r})")
    return _router_url(args) + (endpoint if endpoint.startswith("/") else "/" + endpoint)
