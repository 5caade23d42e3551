"""Calling user hooks in the dry run: await async ones, turn a crash into one message.

A hook that raises a ``ContractError`` with findings ends its stage (:class:`StageFindings`);
any other exception ends its stage as :class:`HarnessError`, naming the hook, the exception and
the file and line it came from: the dry run reports it as an error in the user's code (exit
status 1); raised while loading, it is exit status 2.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import traceback
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from vime.contract.checks.settings import CheckContext
from vime.contract.errors import ContractError, ContractWarning, Violation
from vime.contract.hooks import HOOKS

__all__ = ["HarnessError", "StageFindings", "call_hook", "contract_findings", "hook_label",
           "in_context", "raised_at", "warning_findings"]

_ID_RE = re.compile(r"\bVIM\d{3}\b")


class HarnessError(Exception):
    """A hook cannot be loaded (exit status 2) or raised while it ran (reported, status 1);
    the message says why."""


class StageFindings(Exception):
    """User code raised a ``ContractError`` with findings: the stage stops, the run goes on."""

    def __init__(self, violations: Sequence[Violation], label: str) -> None:
        super().__init__(label)
        self.violations = list(violations)
        self.label = label


def raised_at(exc: BaseException) -> str:
    """`` at FILE:LINE in NAME`` of the innermost frame of ``exc``'s traceback, or ``""``."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    last = frames[-1]
    return f" at {last.filename}:{last.lineno} in {last.name}"


def call_hook(label: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call a user hook (running it to completion on vime's background event loop,
    :func:`vime.utils.async_utils.run`, when it is async).

    Raises:
        StageFindings: the hook raised a ``ContractError`` with findings.
        HarnessError: it raised anything else (message: ``label``, the error, where).
    """
    from vime.utils.async_utils import run

    try:
        result = fn(*args, **kwargs)
        if inspect.iscoroutinefunction(fn) and inspect.isawaitable(result):
            # vime's background loop, as in training: what a hook starts on it (the agent
            # endpoint, the shared HTTP client) outlives the call
            result = run(_await(result))
        return result
    except ContractError as exc:
        if not exc.violations:
            raise HarnessError(f"{label} raised ContractError: {exc}{raised_at(exc)}") from exc
        raise StageFindings(exc.violations, label) from exc
    except Exception as exc:
        raise HarnessError(f"{label} raised {type(exc).__name__}: {exc}{raised_at(exc)}") from exc


async def _await(awaitable: Any) -> Any:
    return await awaitable


def hook_label(dest: str, path: str) -> str:
    """``--custom-rm-path `my.mod.fn``` for messages."""
    return f"{HOOKS[dest].arg} `{path}`"


def contract_findings(exc: ContractError) -> list[Violation]:
    """The findings of ``exc``.

    Raises:
        HarnessError: ``exc`` carries a message but no findings.
    """
    if exc.violations:
        return list(exc.violations)
    raise HarnessError(str(exc)) from exc


def warning_findings(caught: Sequence[warnings.WarningMessage], where: str) -> list[Violation]:
    """ContractWarnings raised while user code ran, as findings (id read from the text)."""
    out = []
    for w in caught:
        if issubclass(w.category, ContractWarning):
            text = str(w.message)
            match = _ID_RE.search(text)
            out.append(Violation(match.group(0) if match else "VIM100", "warning", where,
                                 f"ContractWarning: {text}"))
    return out


def in_context(found: Sequence[Violation], dest: str, path: str) -> list[Violation]:
    """``found`` with the hook, its argument and "(vime-lint check dry run)" as context."""
    text = CheckContext(dest, path, 0).describe() + " (vime-lint check dry run)"
    return [dataclasses.replace(v, context=v.context or text) for v in found]
