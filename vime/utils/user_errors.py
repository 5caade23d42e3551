"""Errors raised by user code, for the console: the message, the user's frame, and the full
traceback kept in the run folder.

Usage::

    log = write_traceback(run_dir, exc)          # <run_dir>/train.log (appended), its path
    frame = user_frame(exc)                      # ("/home/me/my_rollout.py", 12, "reward") or None
    print(short_report(exc, log))                # what `vime train` prints instead of a traceback

An exception raised inside a Ray actor reaches the driver as a ``RayTaskError`` that carries the
original exception (``.cause``) and the remote traceback as text (``.traceback_str``, Ray's
``ray.exceptions.RayTaskError``); printed, it is some 50 lines of Ray and vime frames with the
message at the bottom. The user's frame is the innermost frame outside vime, the standard
library and installed packages.
"""

from __future__ import annotations

import re
import sys
import sysconfig
import time
import traceback
from pathlib import Path

__all__ = ["TRAIN_LOG", "cause_of", "short_report", "user_frame", "write_traceback"]

#: The run folder's log of errors (full tracebacks), appended by :func:`write_traceback`.
TRAIN_LOG = "train.log"

_FRAME_RE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<name>\S+)')


def cause_of(exc: BaseException) -> BaseException:
    """The user-facing exception inside Ray's wrappers (``RayTaskError.cause``, up to 5 deep)."""
    seen = 0
    while getattr(exc, "cause", None) is not None and seen < 5:
        exc, seen = exc.cause, seen + 1  # type: ignore[attr-defined]
    return exc


def _full_text(exc: BaseException) -> str:
    """The driver-side traceback plus every remote traceback Ray carried."""
    parts = ["".join(traceback.format_exception(type(exc), exc, exc.__traceback__))]
    seen = 0
    inner: BaseException | None = exc
    while inner is not None and seen < 5:
        if inner is not exc and inner.__traceback__ is not None:
            parts.append("".join(traceback.format_exception(type(inner), inner,
                                                            inner.__traceback__)))
        remote = getattr(inner, "traceback_str", None)
        if isinstance(remote, str) and remote and remote not in parts:
            parts.append(remote)
        inner, seen = getattr(inner, "cause", None), seen + 1
    return "\n".join(parts)


def _is_library(path: str) -> bool:
    if path.startswith("<"):
        return True
    vime_root = str(Path(__file__).resolve().parents[1])
    resolved = str(Path(path).resolve())
    if resolved.startswith(vime_root + "/"):
        return True
    roots = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots |= {sys.prefix, sys.base_prefix}
    library = ("site-packages", "dist-packages")
    return any(part in resolved for part in library) or any(
        resolved.startswith(str(Path(r).resolve()) + "/") for r in roots
        if r and Path(r).resolve() != Path("/"))


def user_frame(exc: BaseException) -> tuple[str, int, str] | None:
    """``(file, line, function)`` of the innermost frame of user code in ``exc``'s traceback
    (remote ones included), or None when every frame is vime's or a library's."""
    frames: list[tuple[str, int, str]] = []
    for text in _full_text(exc).split("\n"):
        match = _FRAME_RE.search(text)
        if match:
            frames.append((match["file"], int(match["line"]), match["name"]))
    users = [f for f in frames if not _is_library(f[0])]
    return users[-1] if users else None


def write_traceback(run_dir: str | Path, exc: BaseException) -> Path:
    """Append ``exc``'s full traceback (remote ones included) to ``<run_dir>/train.log`` with a
    UTC time stamp; returns the log's path."""
    path = Path(run_dir) / TRAIN_LOG
    path.parent.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    with path.open("a", encoding="utf-8") as fh:
        fh.write(f"--- {stamp}: {type(cause_of(exc)).__name__}\n{_full_text(exc)}\n")
    return path


def short_report(exc: BaseException, log: Path, *, frame: tuple[str, int, str] | None = None
                 ) -> str:
    """``ExcType: message`` of the user-facing exception, ``at FILE:LINE in NAME`` (the user's
    frame, when there is one) and ``full traceback: LOG``, one per line."""
    cause = cause_of(exc)
    frame = frame if frame is not None else user_frame(exc)
    text = str(cause).strip() or "(no message)"
    lines = [f"{type(cause).__name__}: {text}"]
    if frame is not None:
        lines.append(f"  at {frame[0]}:{frame[1]} in {frame[2]}")
    lines.append(f"  full traceback: {log}")
    return "\n".join(lines)
