"""What annotating a module gives: the annotated copy, the functions it types and the probes it appends.

Read by :mod:`vime_lint.typecheck.diagnostics` to map mypy's messages back (without LibCST);
written by :func:`vime_lint.typecheck.annotate.annotate`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from vime.contract import HookSpec

__all__ = ["AnnotationPlan", "Probe", "TypedFunction", "TypedParam"]


@dataclass(frozen=True, slots=True)
class TypedParam:
    """A parameter's type in the copy and where it came from."""

    name: str
    #: The annotation text in force (the contract's, or the user's when kept).
    type: str
    #: Where it came from: ``"RewardFunction"`` (a hook's Protocol), ``"user annotation"``, or
    #: ``"RewardFunction, via reward_func(sample)"`` for a helper.
    origin: str


@dataclass(frozen=True, slots=True)
class TypedFunction:
    """A hook or helper whose definition the copy annotates."""

    name: str
    #: The hook's spec (None for a helper that got types by propagation).
    spec: HookSpec | None
    #: 1-based first line (decorators included) and last line of the definition.
    start_line: int
    end_line: int
    #: Position of the ``def`` keyword's line and the name (1-based line, 0-based column).
    def_line: int
    name_col: int
    params: Mapping[str, TypedParam]
    #: The return type in force (None: not annotated by the contract, e.g. a helper).
    returns: str | None
    #: The Protocol the types come from.
    protocol: str
    #: For a helper: the hooks that pass it their samples (directly or through helpers).
    reached_from: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Probe:
    """Two appended functions that compare a user annotation with the contract's type."""

    #: 1-based lines, in the copy, of the "user type is narrower" and "user type is wider" checks.
    narrower_line: int
    wider_line: int
    function: str
    #: The parameter name, or ``"return"``.
    what: str
    user: str
    contract: str
    protocol: str
    #: The user's annotation in the original file (1-based line, 0-based columns).
    line: int
    col: int
    end_line: int
    end_col: int


@dataclass(frozen=True, slots=True)
class AnnotationPlan:
    """The annotated copy and what was annotated."""

    text: str
    functions: tuple[TypedFunction, ...]
    probes: tuple[Probe, ...]
    #: Number of lines of the user's text (lines after it are the appended tail).
    user_lines: int = 0
