"""What runs before LibCST sees a file: Python's own verdict, size and nesting limits, a time
budget, and a parse that cannot overflow the process's stack.

LibCST's native parser recurses on the C stack (2,000 nested brackets, or 50,000 ``and``
operands, which Python accepts, ended the process with SIGSEGV) and its visitors recurse in
Python (a few hundred nested brackets raise RecursionError). So, for each file:

1. :func:`screen`: more than :attr:`Limits.max_bytes` bytes -> not linted (VIM092, "too
   large"); else ``compile()``, as the interpreter would: a file Python rejects (a syntax
   error, "too many nested parentheses", "too many levels of indentation", "maximum recursion
   depth exceeded during compilation", NUL bytes) is a syntax error (exit 2), never clean (an
   error only the compiler finds, ``'await' outside async function``, is reported when no
   rule finds anything in the file: a rule says what is wrong in the contract's words); a file whose syntax tree is deeper than
   :attr:`Limits.max_depth` -> not linted (VIM092, "too deeply nested").
2. :func:`parse_module`: ``libcst.parse_module`` on a thread with a large stack
   (:data:`PARSE_STACK_BYTES`), so a deep file LibCST cannot handle raises instead of
   crashing; a RecursionError or a parse error on a file Python accepts -> not linted (VIM092).
3. :func:`time_budget`: the file's whole lint (fix rounds included) runs under a wall-clock
   budget (:attr:`Limits.seconds`, SIGALRM, main thread only: the command's process, or each
   worker process of a parallel run); over it -> not linted (VIM092, "too slow").

Usage::

    verdict = screen(text, len(data), "r.py", Limits())   # ParseFailure | Skipped | Screened
    with time_budget(60.0):
        module = parse_module(text)

Python's limits are those of ``compile()`` (Python's ``ast`` module and compiler,
https://docs.python.org/3/library/functions.html#compile).
"""

from __future__ import annotations

import ast
import signal
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from vime_lint.static._model import ParseFailure

__all__ = ["DEFAULT_LIMITS", "PARSE_STACK_BYTES", "Limits", "OverBudget", "Screened", "Skipped",
           "nesting_depth", "parse_module", "screen", "syntax_failure", "time_budget"]

#: The stack of the thread that runs LibCST's native parser (reserved address space; only
#: the part a deep file uses is ever touched).
PARSE_STACK_BYTES = 512 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Limits:
    """The limits of one file's lint (defaults: :data:`DEFAULT_LIMITS`)."""

    #: Larger files are not linted (LibCST lints about 10-40 KB per second, linearly).
    max_bytes: int = 1_000_000
    #: Deeper syntax trees (``ast`` nodes; an ``and``/``or`` chain counts one level per
    #: operand, as LibCST nests it) are not linted: LibCST's visitors recurse per level.
    max_depth: int = 120
    #: Wall-clock seconds for one file (0: no budget).
    seconds: float = 60.0


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True, slots=True)
class Skipped:
    """Why a file was not linted (reported as VIM092 at its first line)."""

    #: ``"too large"``, ``"too deeply nested"``, ``"too slow"``, ``"not parsable by LibCST"``.
    kind: str
    #: The detail: sizes, depths, seconds, LibCST's message.
    detail: str

    def message(self) -> str:
        """The finding's text: ``not linted: too large (...)``."""
        return f"not linted: {self.kind} ({self.detail})"


class OverBudget(BaseException):
    """Raised inside a lint that ran past its time budget (a BaseException, so that no
    ``except Exception`` of a rule or of LibCST swallows it)."""


def syntax_failure(path: str, text: str, exc: SyntaxError) -> ParseFailure:
    """A ParseFailure carrying Python's message, position and source line."""
    line = exc.lineno or 0
    lines = text.splitlines()
    source_line = lines[line - 1] if 0 < line <= len(lines) else (exc.text or "").rstrip("\n")
    return ParseFailure(path, line, exc.offset or 0, f"SyntaxError: {exc.msg}", source_line)


def nesting_depth(tree: ast.AST) -> int:
    """The depth of ``tree`` (a module is 1), walked without recursion; an ``and``/``or``
    chain of ``k`` operands counts ``k - 1`` levels (LibCST nests it pairwise)."""
    best = 0
    stack: list[tuple[ast.AST, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, ast.BoolOp):
            depth += max(len(node.values) - 2, 0)
        if depth > best:
            best = depth
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return best


@dataclass(frozen=True, slots=True)
class Screened:
    """The verdict of :func:`screen` on a file LibCST may lint."""

    #: A SyntaxError Python's compiler (not its parser) raises, such as ``'await' outside
    #: async function``: the file is linted anyway, so that a rule can say what is wrong in
    #: the contract's words; the error is reported when the lint finds nothing.
    compile_error: ParseFailure | None = None


#: What ``python file.py`` says of a file nested past the compiler's limit.
_TOO_DEEP = ("SyntaxError: Python cannot compile this file: maximum recursion depth exceeded "
             "during compilation (nested too deeply)")


def screen(text: str, size: int, path: str, limits: Limits = DEFAULT_LIMITS
           ) -> ParseFailure | Skipped | Screened:
    """Python's verdict and the size and depth limits for one file, before LibCST.

    Args:
        text: the decoded source.
        size: its size in bytes (as read).
        path: the name to report.
        limits: the limits to apply.

    Returns:
        A :class:`ParseFailure` when Python's parser rejects the file, or its compiler runs
        out of depth (what the interpreter would say); a :class:`Skipped` when it is over a
        limit; else a :class:`Screened` (LibCST may lint it).
    """
    if size > limits.max_bytes:
        return Skipped("too large", f"{size:,} bytes, the limit is {limits.max_bytes:,}; "
                                    "split the file or exclude it")
    with warnings.catch_warnings():  # SyntaxWarnings (invalid escapes) are not errors here
        warnings.simplefilter("ignore")
        try:
            tree = ast.parse(text, filename=path)
        except SyntaxError as exc:
            return syntax_failure(path, text, exc)
        except (RecursionError, MemoryError):
            return ParseFailure(path, 0, 0, _TOO_DEEP)
        except ValueError as exc:  # NUL bytes (Python 3.11)
            return ParseFailure(path, 0, 0, f"SyntaxError: {exc}")
        late: ParseFailure | None = None
        try:
            compile(tree, path, "exec", dont_inherit=True)
        except SyntaxError as exc:
            late = syntax_failure(path, text, exc)
            if "nested" in (exc.msg or ""):  # too many statically nested blocks: a limit
                return late
        except (RecursionError, MemoryError):
            return ParseFailure(path, 0, 0, _TOO_DEEP)
    depth = nesting_depth(tree)
    if depth > limits.max_depth:
        return Skipped("too deeply nested", f"syntax tree depth {depth}, the limit is "
                                            f"{limits.max_depth}")
    return Screened(late)


def parse_module(text: str) -> Any:
    """``libcst.parse_module(text)`` on a thread with a :data:`PARSE_STACK_BYTES` stack.

    Raises:
        Whatever LibCST raises (``ParserSyntaxError``, RecursionError).
    """
    import libcst as cst

    out: dict[str, Any] = {}

    def work() -> None:
        try:
            out["module"] = cst.parse_module(text)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            out["error"] = exc

    old = threading.stack_size(PARSE_STACK_BYTES)
    try:
        worker = threading.Thread(target=work, name="vime-lint-parse", daemon=True)
        worker.start()
    except RuntimeError:  # no thread of that size (an address-space limit): parse here
        return cst.parse_module(text)
    finally:
        threading.stack_size(old)
    worker.join()
    if "error" in out:
        raise out["error"]
    return out["module"]


def _on_alarm(signum: int, frame: object) -> None:
    raise OverBudget


@contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Raise :class:`OverBudget` in the block after ``seconds`` of wall time.

    Only on the main thread of a platform with ``SIGALRM``. A real-time timer already running
    (a test runner's timeout) is kept: when it would fire first there is no budget, else it
    is set again, less the time spent, with its handler, when the block ends.
    """
    if not (seconds > 0 and hasattr(signal, "setitimer")
            and threading.current_thread() is threading.main_thread()):
        yield
        return
    outer, interval = signal.getitimer(signal.ITIMER_REAL)
    if 0 < outer <= seconds:
        yield
        return
    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer > 0:
            left = max(outer - (time.monotonic() - started), 0.001)
            signal.setitimer(signal.ITIMER_REAL, left, interval)
