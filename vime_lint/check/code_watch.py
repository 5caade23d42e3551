"""Notice user code that compiles or runs a given text as a program (``sys.addaudithook``).

The reward probes and the dry run write texts of their own (a probe's response, the engine
stand-in's scripted answers); when the user's reward or agent hands such a text to
``compile``/``exec``/``eval`` or to a subprocess, it is grading code, and expectations about
answers do not apply to it.

Usage::

    with watching(["The answer is 42."]) as seen:
        call_the_reward()
    seen.ran          # True: the text was compiled or given to a subprocess

``exact=True`` counts only a program that *is* the text (after stripping blanks), for short
texts such as ``"42"`` that appear inside unrelated code by chance. The audit hook is added
once per process and does nothing outside a ``watching`` block.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = ["Seen", "watching"]

#: Audit events that run a program given as text: ``compile`` (also raised by ``exec`` and
#: ``eval`` of a string) and the process launchers.
_RUN_EVENTS = frozenset({"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn",
                         "os.spawn"})


@dataclass
class Seen:
    """What a :func:`watching` block saw."""

    #: A watched text was compiled or handed to a subprocess.
    ran: bool = False


_WATCH: tuple[tuple[str, ...], bool, Seen] | None = None
_ADDED = False


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else None


def _hit(value: Any, texts: tuple[str, ...], exact: bool) -> bool:
    text = _text(value)
    if text is None:
        return False
    if exact:
        return text.strip() in texts
    return any(t in text for t in texts)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    watch = _WATCH
    if watch is None or not args:
        return
    texts, exact, seen = watch
    if seen.ran:
        return
    if event == "compile":
        seen.ran = _hit(args[0], texts, exact)
    elif event in _RUN_EVENTS:
        parts = args[1] if event == "subprocess.Popen" and len(args) > 1 else args[0]
        items = parts if isinstance(parts, (list, tuple)) else [parts]
        seen.ran = any(_hit(p, texts, exact) for p in items)


@contextmanager
def watching(texts: Sequence[str], *, exact: bool = False) -> Iterator[Seen]:
    """Watch for ``texts`` being compiled or run as a program inside the block (blank texts
    are not watched; blocks do not nest: an inner block replaces the outer one)."""
    global _WATCH, _ADDED
    if not _ADDED:
        sys.addaudithook(_audit)
        _ADDED = True
    seen = Seen()
    wanted = tuple(t.strip() if exact else t for t in texts if t.strip())
    previous, _WATCH = _WATCH, ((wanted, exact, seen) if wanted else None)
    try:
        yield seen
    finally:
        _WATCH = previous
