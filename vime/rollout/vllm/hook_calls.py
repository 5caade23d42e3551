"""One generate or reward call of the default rollout, as a task that can time out, be cancelled
by an abort, and be seen by the watchdog (what ``--hook-failure`` then does is decided by
``vime.rollout.failures.settle_failed_call``).

Usage::

    value = await call_hook(state, sample, hook="reward", phase="reward", path=path,
                            timeout=arg(args, "rm_timeout"), make=lambda: async_rm(args, sample))
    # raises CallAborted when abort() cancelled it, HookCallError when it raised or timed out

    try:
        ...
    except HookCallError as err:
        raised = settle_failed_call(args, [sample], err.hook, err.original, err.seconds,
                                    path=path)
        if raised is not None:          # --hook-failure raise: the run stops on it
            raise raised from raised.__cause__

Every call is registered in ``state.pending`` (:class:`PendingCall`: sample index, hook, phase,
start) while it runs: :func:`vime.rollout.vllm.abort.abort` cancels the reward and custom
generate calls there, and the watchdog (:mod:`vime.rollout.watchdog`) lists them. A timeout
cancels the task (``asyncio.wait_for``); it can only interrupt an ``async`` hook at an
``await`` (a plain ``def`` hook that blocks holds the event loop until it returns; the
watchdog, a thread, still names it).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from vime.contract.errors import ContractError
from vime.rollout.watchdog import PendingCall
from vime.utils.types import Sample

__all__ = ["CallAborted", "HookCallError", "call_hook", "pending_entry", "restore_sample",
           "snapshot_sample"]

T = TypeVar("T")
_ids = itertools.count()


class CallAborted(Exception):
    """The call was cancelled by the step's abort (not an error: the sample is drained)."""


class HookCallError(Exception):
    """A hook call raised or ran past its timeout; ``original`` is what it raised (a
    ``TimeoutError`` naming the flag for a timeout), ``seconds`` how long it ran."""

    def __init__(self, hook: str, original: BaseException, seconds: float) -> None:
        super().__init__(str(original))
        self.hook = hook
        self.original = original
        self.seconds = seconds


def pending_entry(state: Any, sample: Sample, *, hook: str, phase: str, path: str | None,
                  task: asyncio.Task[Any] | None = None) -> int:
    """Register a running call in ``state.pending``; returns its key (pop it when done)."""
    key = next(_ids)
    state.pending[key] = PendingCall(index=sample.index, group_index=sample.group_index,
                                     hook=hook, phase=phase, path=path,
                                     start=time.monotonic(), task=task)
    return key


async def call_hook(state: Any, sample: Sample, *, hook: str, phase: str, path: str | None,
                    timeout: float | None, make: Callable[[], Awaitable[T]],
                    timeout_flag: str = "") -> T:
    """Run ``make()`` as a registered task, with an optional ``timeout`` (seconds).

    Raises:
        CallAborted: the step's abort cancelled the call.
        HookCallError: the call raised an ``Exception`` (not a ``ContractError``: contract
            violations stop the run under every policy) or ran past ``timeout``.
        ContractError: raised by the call, as it is.
        asyncio.CancelledError: the caller itself was cancelled (the call is cancelled too).
    """
    task = asyncio.ensure_future(make())
    key = pending_entry(state, sample, hook=hook, phase=phase, path=path, task=task)
    start = time.monotonic()
    try:
        if timeout is None:
            return await task
        return await asyncio.wait_for(task, timeout)
    except asyncio.CancelledError:
        me = asyncio.current_task()
        if task.cancelled() and state.aborted and not (me is not None and me.cancelling()):
            raise CallAborted() from None
        task.cancel()
        raise
    except TimeoutError as exc:
        seconds = time.monotonic() - start
        if task.done() and not task.cancelled():   # the hook's own TimeoutError
            raise HookCallError(hook, exc, seconds) from exc
        err = TimeoutError(f"{hook} call {path} for sample index={sample.index} was cancelled "
                           f"after {seconds:.1f} s (over {timeout_flag or 'its timeout'} "
                           f"{timeout:g} s)")
        raise HookCallError(hook, err, seconds) from exc
    except ContractError:
        raise
    except Exception as exc:
        raise HookCallError(hook, exc, time.monotonic() - start) from exc
    finally:
        state.pending.pop(key, None)


def snapshot_sample(sample: Sample) -> tuple[Any, ...]:
    """What a generate call may grow: lengths of the per-token lists, the response text, the
    status (see :func:`restore_sample`)."""
    def size(xs: Any) -> int | None:
        return len(xs) if isinstance(xs, list) else None
    return (size(sample.tokens), sample.response_length, size(sample.loss_mask),
            size(sample.rollout_log_probs), sample.response, sample.status)


def restore_sample(sample: Sample, snap: tuple[Any, ...]) -> None:
    """Cut what a failed generate call appended, back to ``snap`` (:func:`snapshot_sample`), so
    the sample's per-token lists agree again."""
    n_tokens, rl, n_mask, n_lp, response, status = snap
    if n_tokens is not None and isinstance(sample.tokens, list):
        del sample.tokens[n_tokens:]
    elif n_tokens is None:
        sample.tokens = []
    sample.response_length = rl
    for name, n in (("loss_mask", n_mask), ("rollout_log_probs", n_lp)):
        value = getattr(sample, name)
        if n is None:
            setattr(sample, name, None)
        elif isinstance(value, list):
            del value[n:]
    sample.response = response
    sample.status = status
