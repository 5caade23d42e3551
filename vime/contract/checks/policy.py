"""What to do with findings: ``--contract-check`` (off / warn / raise) and its interval.

- ``off``: nothing is checked (B0/B1 live in ``load_function`` and ``call_rollout_fn``).
- ``warn``: every finding is logged (logger ``vime.contract.checks``) and warned as a
  ``LoggedContractWarning`` (a ``ContractWarning`` that vime's own processes do not display:
  the log line is the one copy) once per (id, call site) per step; every sample is kept.
- ``raise`` (default): a step's errors raise one ``ContractError`` listing up to ``limit`` of
  them (before any optimiser step); its warnings are logged and warned as in ``warn``.

``--contract-check-interval N`` runs the checks at B2-B6 on every N-th step (``rollout_id %
N == 0``; an unknown step is always checked); B0/B1 run always.

Usage::

    if should_check(args, rollout_id):                 # B5 by default
        ...
    enforce(findings, "raise", ctx)                    # raises ContractError on errors

See ``docs/contract.md`` §0.2 (severities) and §6b (modes, interval).
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Sequence
from typing import Any

from vime.contract.checks.settings import CheckContext, CheckSettings, Mode
from vime.contract.errors import (
    ContractError,
    LoggedContractWarning,
    Violation,
    format_violations,
)
from vime.contract.invariants import INVARIANTS

__all__ = ["ALWAYS_CHECKED", "WarnOnce", "enforce", "order_findings", "should_check",
           "should_check_settings"]

logger = logging.getLogger("vime.contract.checks")

#: Boundaries checked on every step whatever the interval (docs/contract.md §6b).
ALWAYS_CHECKED: frozenset[str] = frozenset({"B0", "B1"})

#: How many findings a ContractError lists before "... and N more".
ERROR_LIMIT = 20

_ID_ORDER = {inv_id: i for i, inv_id in enumerate(INVARIANTS)}


def should_check_settings(s: CheckSettings, rollout_id: int | None, boundary: str = "B5") -> bool:
    """:func:`should_check` on already-read settings."""
    if s.mode == "off":
        return False
    if boundary in ALWAYS_CHECKED or rollout_id is None:
        return True
    return rollout_id % s.interval == 0


def should_check(args: Any, rollout_id: int | None, boundary: str = "B5") -> bool:
    """True when ``boundary`` (``"B0"``..``"B6"``) is checked at step ``rollout_id``.

    Honours ``--contract-check`` (``off`` checks nothing) and ``--contract-check-interval``
    (B2-B6 on every N-th step; B0/B1 always; ``rollout_id=None`` always).

    Raises:
        ValueError: an invalid ``--contract-check`` or ``--contract-check-interval``.
    """
    return should_check_settings(CheckSettings.from_args(args), rollout_id, boundary)


class WarnOnce:
    """Remembers which (id, call site) pairs already warned at each step (the last few
    steps only, so memory stays bounded). Thread-safe."""

    def __init__(self, keep_steps: int = 4) -> None:
        self._keep = keep_steps
        self._seen: dict[int | None, set[tuple[str, str]]] = {}
        self._lock = threading.Lock()

    def first(self, step: int | None, inv_id: str, site: str) -> bool:
        """True the first time (``inv_id``, ``site``) is seen at ``step``."""
        with self._lock:
            seen = self._seen.get(step)
            if seen is None:
                while len(self._seen) >= self._keep:
                    self._seen.pop(next(iter(self._seen)))
                seen = self._seen[step] = set()
            key = (inv_id, site)
            if key in seen:
                return False
            seen.add(key)
            return True


_DEFAULT_REGISTRY = WarnOnce()


def order_findings(violations: Sequence[Violation]) -> list[Violation]:
    """Errors first, then by invariant id; locations keep their order within an id."""
    return sorted(violations, key=lambda v: (v.severity != "error", _ID_ORDER.get(v.id, 10**6)))


def enforce(violations: Sequence[Violation], mode: Mode, ctx: CheckContext, *,
            registry: WarnOnce | None = None, limit: int = ERROR_LIMIT) -> list[Violation]:
    """Apply ``mode`` to a step's findings at ``ctx`` and return them (ordered).

    Raises:
        ContractError: ``mode == "raise"`` and at least one finding is an error; it carries
            the errors (``.violations``) and lists up to ``limit`` of them after a header
            naming the hook, its ``--*-path`` argument and the step.
    """
    found = order_findings(violations)
    if mode == "off" or not found:
        return found
    errors = [v for v in found if v.severity == "error"]
    if mode == "raise" and errors:
        _report([v for v in found if v.severity == "warning"], ctx, registry)
        header = (f"{ctx.describe()}: {len(errors)} contract error(s) "
                  "(--contract-check raise; --contract-check warn logs them and keeps the samples)")
        raise ContractError(errors, header=header, limit=limit)
    _report(found if mode == "warn" else [v for v in found if v.severity == "warning"], ctx,
            registry)
    return found


def _report(findings: Sequence[Violation], ctx: CheckContext, registry: WarnOnce | None) -> None:
    if not findings:
        return
    level = logging.ERROR if any(v.severity == "error" for v in findings) else logging.WARNING
    logger.log(level, "%s: %d contract finding(s)\n%s", ctx.describe(), len(findings),
               format_violations(findings, limit=len(findings)))
    reg = registry or _DEFAULT_REGISTRY
    for v in findings:
        if reg.first(ctx.rollout_id, v.id, ctx.call_site):
            warnings.warn(v.format(), LoggedContractWarning, stacklevel=4)
