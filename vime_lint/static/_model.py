"""Records shared by the linter: findings, fixes, test cases, hook bindings, options.

Every record is a frozen slotted dataclass. Positions are 1-based lines and 0-based columns,
like LibCST's ``CodeRange``; the output formats add 1 to columns.

Usage::

    Finding(code="VIM007", slug="stale-status-api", severity="error",
            message="...", path="r.py", line=3, col=4, end_line=3, end_col=30)

The shape follows Fixit's ``LintViolation`` and Ruff's JSON output.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vime.contract import GROUP_RM_SPEC, HookSpec, Severity

__all__ = [
    "Edit", "Finding", "HookBinding", "Invalid", "LintOptions", "LintResult", "ParseFailure",
    "Valid",
]


@dataclass(frozen=True, slots=True)
class Edit:
    """One text replacement: ``content`` replaces ``[start, end)`` (1-based lines, 0-based cols)."""

    #: New text.
    content: str
    #: Start line (1-based) and column (0-based).
    line: int
    col: int
    #: End line (1-based) and column (0-based), exclusive.
    end_line: int
    end_col: int


@dataclass(frozen=True, slots=True)
class Finding:
    """One rule violation at a position of a file."""

    #: The invariant id, ``"VIM###"``.
    code: str
    #: The rule's slug (``"stale-status-api"``, the invariant's).
    slug: str
    #: ``"error"`` or ``"warning"``.
    severity: Severity
    #: What is wrong, with expected vs actual.
    message: str
    #: The file, as given on the command line (``"-"``-input uses ``--stdin-filename``).
    path: str
    #: Start position: 1-based line, 0-based column.
    line: int
    col: int
    #: End position: 1-based line, 0-based column (exclusive).
    end_line: int
    end_col: int
    #: How to fix it, one line.
    fix_hint: str = ""
    #: The fix's one-line title, or "" when the rule offers none.
    fix_title: str = ""
    #: True for a safe fix (applied by ``--fix``), False for an unsafe one (``--unsafe-fixes``).
    fix_safe: bool = True
    #: The fix as text edits of this file (empty when no fix is offered).
    edits: tuple[Edit, ...] = ()

    @property
    def fixable(self) -> bool:
        """True when a fix is offered."""
        return bool(self.edits)


@dataclass(frozen=True, slots=True)
class ParseFailure:
    """A file that could not be linted: not Python, not decodable, unreadable."""

    path: str
    #: 1-based line and column of the problem (0 when unknown).
    line: int
    col: int
    message: str
    #: The source line at ``line`` (syntax errors), shown with a caret under ``col``.
    source_line: str = ""


@dataclass(frozen=True, slots=True)
class LintResult:
    """The outcome of linting one source text."""

    path: str
    findings: tuple[Finding, ...] = ()
    failure: ParseFailure | None = None
    #: The source text after fixes (None: no fix was applied).
    fixed_source: str | None = None
    #: Number of fixes applied.
    fixes_applied: int = 0
    #: The source text as read (for the ``full`` format and ``--diff``).
    source: str = ""


#: The hooks whose conventional names bind as firmly as a launch would (``generate_rollout``:
#: the name every rollout module is written under); see :attr:`HookBinding.loose`.
ROLLOUT_DESTS = ("rollout_function_path", "eval_function_path")
#: :attr:`HookBinding.source` of a hook found by its conventional name.
CONVENTIONAL_NAME = "conventional name"


@dataclass(frozen=True, slots=True)
class HookBinding:
    """A function (or class) of a module that is a vime hook, and how it was found."""

    #: The module-level name (``"generate_rollout"``).
    function: str
    #: The hook's contract.
    spec: HookSpec
    #: How it was found: ``"scripts/run.sh:12 (--rollout-function-path)"``, ``"pyproject.toml
    #: [tool.vime_lint] hooks"``, ``"annotation `RolloutFunction`"``, ``"conventional name"``.
    source: str
    #: True when configuration names it (launch scripts, pyproject), False when guessed.
    explicit: bool = True
    #: The launch scripts/configs naming it (root-relative paths, keys of
    #: ``LintOptions.launch_files``); empty when no launch file names it.
    launches: tuple[str, ...] = ()
    #: Bound by its conventional name alone (nothing configures or annotates it) to a hook
    #: other than the rollout and eval functions, and it takes a parameter that the hook does
    #: not pass by that name: perhaps not a hook at all, but a framework's own function under
    #: the same name (slime's ``log_rollout_data(rollout_id, args, rollout_data)`` in
    #: ``megatron_utils/data.py``, which no launch passes). A clash with the hook's contract is
    #: then a warning: it fails at run time only once a launch names it, and the load-time
    #: check (VIM100) stops that launch before any engine starts.
    loose: bool = False

    def loose_note(self) -> str:
        """The words a finding on a :attr:`loose` binding ends with."""
        return (f" (a warning: `{self.function}` is taken for {self.spec.arg} by its "
                "conventional name alone, and it has parameters that hook does not pass; "
                "no launch, `[tool.vime_lint] hooks` or Protocol annotation names it)")


#: The flags that configure evaluation steps (VIM002's severity).
_EVAL_FLAGS = frozenset({"--eval-interval", "--eval-prompt-data", "--eval-config"})


@dataclass(frozen=True, slots=True)
class LintOptions:
    """What the linter knows about the run configuration of the file it lints.

    Usage::

        LintOptions(hooks=(HookBinding("my_rollout", HOOKS["rollout_function_path"], "test"),),
                    launch_flags=frozenset({"--eval-interval"}))
    """

    #: Hooks named by configuration for this file (discovery steps a and b).
    hooks: tuple[HookBinding, ...] = ()
    #: ``--flags`` seen in the repository's launch scripts and configs.
    launch_flags: frozenset[str] = frozenset()
    #: True when launch scripts were found (config-aware rules stay quiet otherwise).
    launch_found: bool = False
    #: Codes of enabled rules (None: all).
    select: frozenset[str] | None = None
    #: Launch configurations (root-relative path) -> the ``--flags`` they set (with the config
    #: files they name); hooks point here through ``HookBinding.launch``.
    launch_files: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def launches_of(self, binding: HookBinding) -> list[tuple[str, frozenset[str]]]:
        """``[(launch file, its flags)]`` for each launch file that names ``binding`` (empty
        when no launch script or config names the hook)."""
        return [(f, self.launch_files[f]) for f in binding.launches if f in self.launch_files]

    def group_rm(self, binding: HookBinding) -> bool:
        """True when ``binding`` runs as a ``--group-rm`` reward: its spec is the group
        reward's (discovery found a launch naming it that sets ``--group-rm``), or a launch
        file naming it sets ``--group-rm``. A ``--group-rm`` of a launch that does not name
        the function (another module's reward) does not count."""
        return binding.spec is GROUP_RM_SPEC or any(
            "--group-rm" in flags for _, flags in self.launches_of(binding))

    def eval_configured(self, binding: HookBinding) -> bool:
        """True when the run of ``binding`` configures evaluation (VIM002 is then an error): a
        launch file naming it sets ``--eval-interval``, ``--eval-prompt-data`` or
        ``--eval-config``; for a hook that ``[tool.vime_lint] hooks`` names and no launch
        does, any launch file. A function found by its conventional name or an annotation
        alone is in no launch's run: another launch's evaluation does not count."""
        if binding.launches:
            return any(flags & _EVAL_FLAGS for _, flags in self.launches_of(binding))
        return binding.explicit and bool(self.launch_flags & _EVAL_FLAGS)


def dedent_case(code: str) -> str:
    """A test case's code as the rule sees it: ``textwrap.dedent``-ed, less one leading newline.

    A case is written as an indented triple-quoted block that opens with a newline (Fixit's
    style): ``Valid(\"\"\"<newline>    x = 1<newline>\"\"\")`` reads ``"x = 1\\n"``. Code
    without common indentation and without a leading newline is unchanged."""
    code = textwrap.dedent(code)
    return code[1:] if code.startswith("\n") else code


@dataclass(frozen=True, slots=True)
class Valid:
    """A snippet a rule must accept (a rule's test case and documentation example)."""

    code: str
    #: Options for the snippet (hooks, launch flags), as :class:`LintOptions` fields.
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "code", dedent_case(self.code))


@dataclass(frozen=True, slots=True)
class Invalid:
    """A snippet a rule must report at ``line``/``col`` (1-based line, 0-based column).

    ``fixed`` is the text after applying the rule's fixes (safe and unsafe), or None when the
    rule offers no fix for this case.
    """

    code: str
    line: int
    col: int
    fixed: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    #: Expected severity (None: the invariant's default).
    severity: Severity | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "code", dedent_case(self.code))
        if self.fixed is not None:
            object.__setattr__(self, "fixed", dedent_case(self.fixed))


def options_from_mapping(data: Mapping[str, Any]) -> LintOptions:
    """Build :class:`LintOptions` from a test case's ``options`` mapping.

    Keys: ``hooks`` (``{function: dest}``), ``launch_flags`` (list of ``--flags``). With
    ``launch_flags`` (even empty) the hooks are named by one launch script, ``run.sh``, that
    sets those flags; without it they come from ``[tool.vime_lint] hooks`` (no launch file).

    Raises:
        KeyError: an unknown key or hook dest.
    """
    from vime.contract import hook_spec

    unknown = set(data) - {"hooks", "launch_flags"}
    if unknown:
        raise KeyError(f"unknown option(s) {sorted(unknown)}; known: hooks, launch_flags")
    launches = ("run.sh",) if "launch_flags" in data else ()
    hooks = tuple(HookBinding(fn, hook_spec(dest), "test case options", launches=launches)
                  for fn, dest in dict(data.get("hooks", {})).items())
    flags = frozenset(data.get("launch_flags", ()))
    files = dict.fromkeys(launches, flags)
    return LintOptions(hooks=hooks, launch_flags=flags, launch_found=bool(flags or hooks),
                       launch_files=files)
