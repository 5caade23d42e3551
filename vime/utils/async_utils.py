"""One background event loop per process, and ``run(coro)`` to use it from synchronous code.

Usage::

    from vime.utils.async_utils import run
    result = run(some_coroutine())            # blocks the caller; runs on the background loop
    result = run(some_coroutine(), timeout=30.0)   # seconds; TimeoutError after that

Rollout functions are plain ``def`` (docs/contract.md §4); their async work (HTTP to the engines,
async reward functions) goes through :func:`run`, never ``asyncio.run``: the loop, and the shared
HTTP client that lives on it (``vime.utils.http_utils``), outlive one call, so connections are
pooled across rollout steps. The loop runs in a daemon thread; a forked child process gets its
own loop on first use; at interpreter exit the loop closes its HTTP sessions and stops.

See ``docs/contract.md`` §4.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["get_loop", "run", "shutdown_loop"]

T = TypeVar("T")

_lock = threading.Lock()
_state: dict[str, Any] = {"loop": None, "thread": None, "pid": None, "exit_hook": None}
#: Seconds the exit hook waits for the HTTP sessions to close and for the loop to stop.
EXIT_TIMEOUT_S = 1.0


def get_loop() -> asyncio.AbstractEventLoop:
    """The process's background event loop (started on first use, in a daemon thread)."""
    with _lock:
        loop = _state["loop"]
        if loop is not None and _state["pid"] == os.getpid() and not loop.is_closed():
            return loop  # type: ignore[no-any-return]
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def _serve() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()

        thread = threading.Thread(target=_serve, name="vime-async-loop", daemon=True)
        thread.start()
        ready.wait()
        if _state["exit_hook"] != os.getpid():
            # the shared HTTP sessions are closed on their loop before the interpreter tears
            # down (else aiohttp reports each one as an unclosed session on stderr)
            atexit.register(shutdown_loop, EXIT_TIMEOUT_S)
            _state["exit_hook"] = os.getpid()
        _state.update(loop=loop, thread=thread, pid=os.getpid())
        return loop


def run(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Run ``coro`` on the background loop and return its result (or raise its exception).

    Args:
        coro: a coroutine object (``fn(...)``, not ``fn``).
        timeout: seconds to wait (None: no limit); the coroutine is cancelled on timeout.

    Raises:
        TypeError: ``coro`` is not a coroutine (e.g. the function itself, or a plain value).
        RuntimeError: called from the background loop's own thread (it would deadlock: use
            ``await`` there).
        TimeoutError: ``timeout`` seconds passed.
    """
    if not asyncio.iscoroutine(coro):
        raise TypeError(f"async_utils.run expects a coroutine object, got {type(coro).__name__}; "
                        "call the async function: run(fn(...))")
    loop = get_loop()
    if threading.current_thread() is _state["thread"]:
        coro.close()
        raise RuntimeError("async_utils.run called from the background event loop itself; "
                           "use `await` inside async code")
    future = asyncio.run_coroutine_threadsafe(coro, loop)
    try:
        return future.result(timeout)
    except TimeoutError:
        future.cancel()
        raise
    except BaseException:
        if not future.done():
            future.cancel()
        raise


def shutdown_loop(timeout: float = 5.0) -> None:
    """Stop the background loop (closing the shared HTTP client first); the next ``run`` starts
    a fresh one. For tests and clean interpreter exit."""
    with _lock:
        loop = _state["loop"]
        thread = _state["thread"]
        if loop is None or _state["pid"] != os.getpid() or loop.is_closed():
            _state.update(loop=None, thread=None, pid=None)
            return
        _state.update(loop=None, thread=None, pid=None)
    try:
        from vime.utils import http_utils

        asyncio.run_coroutine_threadsafe(http_utils.aclose_client(), loop).result(timeout)
    except Exception:  # noqa: BLE001 - best effort at shutdown
        pass
    loop.call_soon_threadsafe(loop.stop)
    if thread is not None:
        thread.join(timeout)
    loop.close()
