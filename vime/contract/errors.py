"""Errors and findings of the rollout contract.

Exception tree::

    TypeError, ValueError
     └── ContractError        a contract violation that must stop the run (severity "error")
    UserWarning
     └── ContractWarning      a finding that is logged, never raised (severity "warning")

A :class:`Violation` is one finding: the load-time check, the runtime checker and the linter
all produce them, and :class:`ContractError` carries a list of them.

See ``docs/contract.md`` §0.2 and §1.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["ContractError", "ContractWarning", "LoggedContractWarning", "Severity", "Violation",
           "format_violations", "show_logged_warnings_once"]

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Violation:
    """One finding against an invariant of the contract.

    Usage::

        Violation("VIM108", "error", "samples[3][1].loss_mask",
                  "has 17 entries, expected response_length=18",
                  fix="extend loss_mask for every appended token")
    """

    #: The invariant id, ``"VIM###"`` (a key of ``vime.contract.INVARIANTS``).
    id: str
    #: ``"error"`` or ``"warning"``.
    severity: Severity
    #: Where: ``samples[g][e].field``, ``file:line:col`` or a hook's dotted path.
    where: str
    #: What happened, with expected vs actual.
    message: str
    #: One line that says how to fix it ("" when the invariant's own fix applies).
    fix: str = ""
    #: Extra context: the user function and its ``--*-path`` argument, the rollout step.
    context: str = ""

    def format(self) -> str:
        """Render as ``VIM108 error: <where> <message>`` with context and fix lines."""
        head = f"{self.id} {self.severity}: {self.where} {self.message}".rstrip()
        lines = [head]
        if self.context:
            lines.append(f"  in {self.context}")
        if self.fix:
            lines.append(f"  fix: {self.fix}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


def format_violations(violations: Sequence[Violation], *, limit: int = 20, header: str = "") -> str:
    """Render up to ``limit`` violations, then a count of the rest."""
    shown = [v.format() for v in violations[:limit]]
    rest = len(violations) - len(shown)
    if rest > 0:
        shown.append(f"... and {rest} more violation(s)")
    body = "\n".join(shown)
    return f"{header}\n{body}" if header else body


class ContractError(TypeError, ValueError):
    """Raised when user code breaks the rollout contract with severity "error".

    Raised by ``load_function(..., hook=)`` (VIM100), ``call_rollout_fn`` (VIM101),
    ``Sample.get_reward_value`` (VIM110), the runtime checker in ``raise`` mode (VIM1xx) and
    anywhere the contract is enforced. Subclasses both ``TypeError`` and ``ValueError`` so that
    code written against upstream (which raised either) still catches it.

    ``violations`` holds the findings; ``str(error)`` lists up to ``limit`` of them.
    """

    def __init__(
        self,
        message: str | Iterable[Violation],
        *,
        violations: Iterable[Violation] = (),
        header: str = "",
        limit: int = 20,
    ) -> None:
        if isinstance(message, str):
            self.violations: list[Violation] = list(violations)
            text = message
        else:
            self.violations = list(message) + list(violations)
            text = format_violations(self.violations, limit=limit, header=header)
        super().__init__(text)

    @property
    def ids(self) -> list[str]:
        """The invariant ids of the carried violations, in order (duplicates kept)."""
        return [v.id for v in self.violations]


class ContractWarning(UserWarning):
    """Warned (never raised) for a contract finding with severity "warning"."""


class LoggedContractWarning(ContractWarning):
    """A runtime finding that was also logged (``vime.contract.checks.policy``): code that
    records warnings (``pytest.warns(ContractWarning)``, the ``vime-lint check`` dry run) sees
    it, while vime's own processes, whose log already shows the finding, do not print it a
    second time (:func:`show_logged_warnings_once`)."""


def show_logged_warnings_once() -> None:
    """In a vime process (``vime train``, its Ray actors): do not display
    :class:`LoggedContractWarning` (its finding is already in the log). Recording contexts
    (``warnings.catch_warnings(record=True)`` with their own filter) still get it."""
    import warnings

    warnings.filterwarnings("ignore", category=LoggedContractWarning)
