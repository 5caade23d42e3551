"""The abort of a train step: stop the step's in-flight requests on every engine, drain its
group tasks, and pick the drained groups that ``--partial-rollout`` recycles.

Usage::

    recycled = await abort(args, rollout_id)   # [] unless --partial-rollout
    data_source.add_samples(recycled)          # they continue next step
"""

from __future__ import annotations

import asyncio
import logging
from argparse import Namespace
from typing import Any

from vime.config import arg
from vime.contract.hooks import BUILTIN_GENERATE_PATH
from vime.rollout.base_types import iter_samples
from vime.rollout.vllm.state import RolloutState, get_state
from vime.utils.types import Sample

__all__ = ["ABORT_INTERVAL_S", "ABORT_TIMEOUT_S", "abort", "cancel_hook_calls",
           "recyclable_groups"]

logger = logging.getLogger(__name__)

#: Seconds between abort POSTs while draining, and the drain's limit (docs/contract.md §8).
ABORT_INTERVAL_S = 3.0
ABORT_TIMEOUT_S = 180.0


async def _abort_engines(state: RolloutState) -> None:
    from vime.ray.engine_control import abort_requests

    ids = list(state.inflight)
    if not ids:
        return
    results = await asyncio.gather(*(abort_requests(e, ids) for e in state.engines),
                                   return_exceptions=True)
    for engine, res in zip(state.engines, results, strict=True):
        if isinstance(res, BaseException):
            logger.warning("abort on engine %s failed: %s", engine.url, res)


def cancel_hook_calls(state: RolloutState, *, generate: bool) -> int:
    """Cancel the running reward calls (and, with ``generate``, the custom generate calls; the
    built-in generate is stopped through the engines' abort route and keeps its partial
    response) registered in ``state.pending``; returns how many were cancelled. Their samples
    come back unscored (reward) or ABORTED (generate); nothing waits for them."""
    n = 0
    for entry in list(state.pending.values()):
        task = entry.task
        if task is None or task.done():
            continue
        if entry.phase == "reward" or (generate and entry.phase == "generate"
                                       and entry.path != BUILTIN_GENERATE_PATH):
            task.cancel()
            n += 1
    return n


async def abort(args: Namespace, rollout_id: int | None = None) -> list[list[Any]]:
    """Stop the step's in-flight work and drain it; return the groups to recycle.

    Marks the state aborted (new requests are not sent), cancels ``abort_mode="request"``
    generate tasks and every running reward call, and POSTs every engine's abort route with our
    in-flight request ids every 3 s until the step's group tasks have returned; custom generate
    calls still running after the first 3 s are cancelled too (:func:`cancel_hook_calls`). With ``--partial-rollout`` the drained
    groups holding an ABORTED sample with a response are returned (``metadata
    ["start_rollout_id"]`` set if unset); otherwise ``[]`` (they are discarded).

    Raises:
        RuntimeError: the drain took more than 180 s (names the engines and the number of
            requests still in flight).
    """
    state = await get_state(args)
    state.aborted = True
    for task in list(state.request_tasks):
        task.cancel()
    cancel_hook_calls(state, generate=False)
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
        cancel_hook_calls(state, generate=True)
    drained: list[list[Any]] = []
    for task in state.group_tasks:
        if task.cancelled() or task.exception() is not None:
            continue
        drained.append(task.result())
    state.group_tasks.clear()
    return recyclable_groups(args, drained, rollout_id)


def recyclable_groups(args: Namespace, groups: list[list[Any]], rollout_id: int | None
                      ) -> list[list[Any]]:
    """With ``--partial-rollout``: the ``groups`` holding an ABORTED sample with a response,
    their samples' ``metadata["start_rollout_id"]`` set to ``rollout_id`` if unset; else ``[]``.
    """
    if not arg(args, "partial_rollout"):
        return []
    out = []
    for group in groups:
        leaves = list(iter_samples(group))
        if any(s.status == Sample.Status.ABORTED and s.response_length > 0 for s in leaves):
            for s in leaves:
                s.metadata.setdefault("start_rollout_id", rollout_id)
            out.append(group)
    return out
