"""An inline agent that blocks the event loop its endpoint runs on: found, answered, named.

In ``--agent-function-mode inline`` (the default) the agent's coroutine and the endpoint that
answers it share one event loop. A synchronous client called from the agent (``openai.OpenAI``,
``httpx.Client``, ``requests``; VIM051 finds them statically) connects, sends its request and
waits for the answer without returning to that loop, so the endpoint never accepts the
connection: the call, the rollout and a ``vime-lint check`` hang until the client's own
timeout (10 minutes and two retries for the OpenAI SDK), with no output.

:class:`TrackedRun` awaits the agent's coroutine and records since when the agent's own code
has run without yielding to the loop. :class:`BlockWatch`, a thread per endpoint, looks at the
runs four times a second; one that has held the loop for :data:`BLOCKED_AGENT_SECS`:

- gets one warning line on stderr, once per agent (so a loop blocked by anything,
  ``time.sleep`` included, is never silent);
- has the connections waiting on the endpoint's listening socket (the blocked client's, which
  the loop cannot accept) answered by the thread with HTTP 503, ``x-should-retry: false`` (the
  OpenAI SDK does not retry it) and :func:`blocked_message` as the error, so the client raises
  at once with the fix in its text;
- when a connection was answered so, is marked (``blocked_for``): the agent's generate step
  then raises that message, whatever the agent did with the client's error. A run that holds
  the loop while no call waits (a slow synchronous computation) is only warned about.

Later runs of an agent found blocking count as blocking after :data:`SEEN_BLOCKING_SECS`.

Usage (``vime.agent.generate``)::

    run = TrackedRun(fn(args, sample, base_url, api_key))
    with endpoint.watch.watching(run, path):
        result = await run
    if run.blocked_for:
        raise RuntimeError(blocked_message(path, run.blocked_for))
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import sys
import threading
import time
from collections.abc import Coroutine, Generator, Iterator
from typing import Any

__all__ = ["BLOCKED_AGENT_SECS", "SEEN_BLOCKING_SECS", "BlockWatch", "TrackedRun", "answer_pending", "blocked_message"]

#: Seconds an inline agent's own code may hold the event loop before it counts as blocking.
BLOCKED_AGENT_SECS = 10.0
#: The same, for an agent already found blocking in this process.
SEEN_BLOCKING_SECS = 1.0


def blocked_message(path: str, seconds: float) -> str:
    """The error for an agent ``path`` that held the loop ``seconds`` (names the fix); under
    :data:`BLOCKED_AGENT_SECS` it says why (the agent was found blocking before)."""
    again = (f", stopped after {SEEN_BLOCKING_SECS:.0f} s because an earlier run of it already "
             f"blocked for {BLOCKED_AGENT_SECS:.0f} s") if seconds < BLOCKED_AGENT_SECS else ""
    return (f"--agent-function-path {path} held the event loop that serves vime's agent "
            f"endpoint for {seconds:.0f} s without yielding{again} "
            "(--agent-function-mode inline): a "
            "synchronous client (openai.OpenAI, httpx.Client, requests) blocks the loop that "
            "would answer it, so its calls can never be served. Use openai.AsyncOpenAI / "
            "httpx.AsyncClient and await the calls, or run the agent with "
            "--agent-function-mode subprocess (VIM051)")


class TrackedRun:
    """Awaits ``coro`` (``await TrackedRun(coro)``), recording in :attr:`running_since` the
    ``time.monotonic()`` at which the coroutine's own code started its current stretch on the
    loop (None while it waits on the loop)."""

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.coro = coro
        self.running_since: float | None = None
        #: Seconds the run had held the loop when :class:`BlockWatch` found it blocking
        #: (0.0: never).
        self.blocked_for = 0.0

    def __await__(self) -> Generator[Any, Any, Any]:
        value: Any = None
        error: BaseException | None = None
        while True:
            self.running_since = time.monotonic()
            try:
                yielded = self.coro.send(value) if error is None else self.coro.throw(error)
            except StopIteration as stop:
                return stop.value
            finally:
                self.running_since = None
            try:
                value, error = (yield yielded), None
            except BaseException as exc:  # noqa: BLE001 - cancellation goes into the agent
                value, error = None, exc


def _drain_request(conn: socket.socket) -> None:
    """Read one HTTP request (head and ``Content-Length`` body) from ``conn`` (2 s at most),
    so that closing it after the answer does not reset the connection."""
    conn.settimeout(2.0)
    data = b""
    with contextlib.suppress(OSError):
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip() or 0)
        while len(body) < length:
            chunk = conn.recv(65536)
            if not chunk:
                return
            body += chunk


def _response(message: str) -> bytes:
    body = json.dumps({"error": {"message": message, "type": "agent_blocked_event_loop",
                                 "code": 503}}).encode()
    return (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
            b"x-should-retry: false\r\nconnection: close\r\n"
            + f"content-length: {len(body)}\r\n\r\n".encode() + body)


def answer_pending(sock: socket.socket, message: str) -> int:
    """Answer every connection now waiting on the listening ``sock`` with HTTP 503 and
    ``message``; returns how many."""
    n = 0
    while True:
        try:
            ready, _, _ = select.select([sock], [], [], 0)
            if not ready:
                return n
            conn, _ = sock.accept()
        except (BlockingIOError, InterruptedError, OSError, ValueError):
            return n   # the loop took it, or the socket is closed
        with conn:
            _drain_request(conn)
            with contextlib.suppress(OSError):
                conn.sendall(_response(message))
                conn.shutdown(socket.SHUT_WR)
        n += 1


class BlockWatch:
    """The thread that finds inline agent runs holding the loop (module docstring).

    Args:
        sock: the endpoint's listening socket (its pending connections are answered).
        limit: seconds before a run counts as blocking (:data:`BLOCKED_AGENT_SECS`).
    """

    def __init__(self, sock: socket.socket, limit: float = BLOCKED_AGENT_SECS) -> None:
        self.sock = sock
        self.limit = float(limit)
        #: Agents found blocking a call once: their later runs count as blocking after
        #: :data:`SEEN_BLOCKING_SECS` (the same client blocks again).
        self.blocking_paths: set[str] = set()
        #: Agents warned about (once each).
        self.warned: set[str] = set()
        self._runs: dict[int, tuple[TrackedRun, str]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def watching(self, run: TrackedRun, path: str) -> Iterator[TrackedRun]:
        """Watch ``run`` (the agent ``path``) while the block runs; the thread starts on first
        use."""
        with self._lock:
            self._runs[id(run)] = (run, path)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, daemon=True,
                                                name="vime-agent-block-watch")
                self._thread.start()
        try:
            yield run
        finally:
            with self._lock:
                self._runs.pop(id(run), None)

    def close(self) -> None:
        """Stop the thread (idempotent)."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=2)

    def _loop(self) -> None:
        while not self._stop.wait(0.25):
            now = time.monotonic()
            with self._lock:
                runs = list(self._runs.values())
            for run, path in runs:
                since = run.running_since
                limit = SEEN_BLOCKING_SECS if path in self.blocking_paths else self.limit
                if since is None or now - since < limit:
                    continue
                message = blocked_message(path, now - since)
                if path not in self.warned:
                    self.warned.add(path)
                    print(f"vime: warning: {message}", file=sys.stderr, flush=True)
                if answer_pending(self.sock, message):   # a call the loop could not serve
                    run.blocked_for = now - since
                    self.blocking_paths.add(path)
