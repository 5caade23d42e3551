"""Child-server process helpers shared by the vLLM engine and the vllm-router wrappers.

Usage::

    wait_ready(proc, lambda: probe() , timeout=300.0, interval=0.5, fail=lambda w: Err(w))
    wait_ready(proc, probe, timeout=300.0, interval=0.5, fail=Err, what="answer",
               progress=lambda: log_size(path), max_timeout=900.0)   # silence limit, cap
    stop_process_group(proc, timeout=20.0)      # SIGTERM, then SIGKILL of the whole group
    stop_process_group(proc, 20.0, leader_first=True)   # SIGTERM the leader only, then the same
    log_tail(path, lines=40)                    # "" when there is no log yet
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["first_error_line", "log_size", "log_tail", "stop_process_group", "wait_ready"]


def wait_ready(proc: subprocess.Popen[bytes], ready: Callable[[], bool], *, timeout: float,
               interval: float, fail: Callable[[str], Exception], what: str,
               progress: Callable[[], int] | None = None, max_timeout: float | None = None
               ) -> None:
    """Poll ``ready()`` every ``interval`` seconds until it is True.

    ``ready`` may raise ``OSError``/``ValueError``/``KeyError`` (a server not listening yet);
    those count as not ready. With ``progress`` (a count that grows while the process works,
    such as its log's size in bytes), ``timeout`` is how long the process may go *without*
    progress, up to ``max_timeout`` seconds in all: a start slowed by a loaded machine goes on
    while it still writes its log, one that hangs still fails after ``timeout`` seconds.

    Raises:
        Exception: ``fail(reason)`` when the process exits, after ``timeout`` seconds without
            readiness (or without progress), or after ``max_timeout`` seconds (the reason says
            which, and ``what`` names the readiness condition).
    """
    start = time.monotonic()
    last_progress, seen = start, progress() if progress is not None else 0
    cap = start + (max_timeout if max_timeout is not None else timeout)
    while True:
        code = proc.poll()
        if code is not None:
            raise fail(f"exited with code {code} during start-up")
        with contextlib.suppress(OSError, ValueError, KeyError):
            if ready():
                return
        now = time.monotonic()
        if progress is not None:
            count = progress()
            if count != seen:
                seen, last_progress = count, now
        if now > last_progress + timeout:
            if progress is None:
                raise fail(f"did not {what} within {timeout:.0f} s")
            raise fail(f"did not {what}: no progress (its log unchanged) for {timeout:.0f} s, "
                       f"{now - start:.0f} s after the start")
        if now > cap:
            raise fail(f"did not {what} within {cap - start:.0f} s (it was still writing "
                       "its log: a machine this loaded needs a longer startup_timeout)")
        time.sleep(interval)


def log_size(path: str | Path) -> int:
    """The size of the log at ``path`` in bytes (0 while it does not exist)."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def stop_process_group(proc: subprocess.Popen[bytes] | None, timeout: float, *,
                       leader_first: bool = False) -> None:
    """SIGTERM ``proc``'s process group (it must lead one: ``setsid``), or with
    ``leader_first`` only ``proc`` (a server that stops its own children), SIGKILL the group
    after ``timeout`` seconds, and return only once the group is empty (10 s at most).
    Idempotent."""
    if proc is None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if leader_first:
            os.kill(proc.pid, signal.SIGTERM)
        else:
            os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout)
    # children (vLLM's EngineCore) live in the same group: nothing of it may survive
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(5)
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)  # fails once the group is empty
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.05)


#: A log line whose message is an exception (``ValueError: ...``), after vLLM's optional
#: ``(EngineCore pid=1) ERROR 12-07 10:43:34 [core.py:1512]`` prefix.
_EXCEPTION_LINE = re.compile(r"^(?:\(\w+ pid=\d+\) )?(?:[A-Z]+ \S+ \S+ \[\S+\] )?"
                             r"((?:\w+\.)*\w*(?:Error|Exception): .+)$")


def first_error_line(path: Path, start: int = 0) -> str | None:
    """The first exception line (``ValueError: ...``) of the log at ``path`` from byte
    ``start`` on (where this start's lines begin in a log that earlier starts appended to),
    without vLLM's process and level prefix: the root cause of a failed start, which the log's
    last lines (stack frames of the processes that died after it) often do not show; None if
    none."""
    try:
        with open(path, "rb") as log:
            log.seek(start)
            text = log.read().decode(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        found = _EXCEPTION_LINE.match(line.strip())
        if found:
            return found.group(1)
    return None


def log_tail(path: Path, lines: int) -> str:
    """The last ``lines`` lines of the log at ``path`` ("" if it cannot be read)."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
