"""The rule base class, the fix record and the per-file context every rule reads.

A rule is a :class:`libcst.BatchableCSTVisitor`: all enabled rules run in one traversal of a
file. Each rule class names its invariant (``INVARIANT = INVARIANTS["VIM007"]``), the metadata
it needs (``METADATA_DEPENDENCIES``), its VALID and INVALID examples (its tests and its docs),
and calls :meth:`Rule.report`.

Usage::

    class StatusStringAssignment(Rule):
        INVARIANT = INVARIANTS["VIM007"]
        VALID = [Valid("s.status = Sample.Status.TRUNCATED")]
        INVALID = [Invalid('s.status = "truncated"', line=1, col=0)]

        def visit_Assign(self, node: cst.Assign) -> None:
            ...
            self.report(node, "`status` set from a string")

Follows Fixit's ``LintRule`` (one class per rule, examples as tests).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, cast

import libcst as cst

from vime.contract import HOOKS, Invariant, Severity
from vime.contract.hooks import GROUP_RM_SPEC, HookSpec
from vime_lint.static._cst import dotted_text
from vime_lint.static._model import (
    CONVENTIONAL_NAME,
    ROLLOUT_DESTS,
    HookBinding,
    Invalid,
    LintOptions,
    Valid,
)
from vime_lint.static.analysis import HookTarget, Semantic

__all__ = ["FileContext", "Fix", "FunctionTracker", "Report", "Rule", "build_context"]

#: Protocol class name -> spec (``RolloutFunction`` -> the rollout spec), from the contract.
_PROTOCOLS: dict[str, HookSpec] = {}
for _spec in (*HOOKS.values(), GROUP_RM_SPEC):
    if _spec.protocol and _spec.protocol not in _PROTOCOLS:
        _PROTOCOLS[_spec.protocol] = _spec
#: Conventional function name -> spec (``generate_rollout`` -> the rollout spec).
_CONVENTIONAL: dict[str, HookSpec] = {}
for _spec in (*HOOKS.values(), GROUP_RM_SPEC):
    for _name in _spec.conventional_names:
        _CONVENTIONAL.setdefault(_name, _spec)


@dataclass(frozen=True, slots=True)
class Fix:
    """A fix: replace CST nodes (by identity) and add ``from module import name`` lines."""

    #: One line saying what the fix does.
    title: str
    #: Safe fixes keep the program's meaning (``--fix``); unsafe ones may not (``--unsafe-fixes``).
    safe: bool
    #: (original node, replacement) pairs; the original must be a node of the linted module.
    replacements: tuple[tuple[cst.CSTNode, cst.CSTNode], ...]
    #: ``(module, name)`` imports the fixed code needs.
    imports: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Report:
    """What a rule reported, before positions are resolved."""

    rule: type[Rule]
    node: cst.CSTNode
    message: str
    severity: Severity
    fix_hint: str
    fix: Fix | None


@dataclass(frozen=True, slots=True)
class FileContext:
    """What rules know about the file being linted: its semantic model and its hooks."""

    path: str
    options: LintOptions
    module: cst.Module
    #: The module's semantic model (names, bindings, per-function facts), built once.
    semantic: Semantic
    #: Module-level name -> hook bindings, in discovery order (explicit first).
    hooks: Mapping[str, tuple[HookBinding, ...]]
    #: ``id(function node)`` -> (binding, target) for every function that runs as a hook
    #: (a ``def``, the ``__call__`` of a bound instance, a partial's or alias's function).
    targets: Mapping[int, tuple[HookBinding, HookTarget]] = field(default_factory=dict)
    #: Per-node analyses shared by rules (``id(node) -> facts``), so that a function body is
    #: walked once however many rules ask about it.
    cache: dict[int, object] = field(default_factory=dict)

    @property
    def definitions(self) -> Mapping[str, cst.FunctionDef | cst.ClassDef]:
        """Module-level ``def``/``async def``/``class`` statements by name."""
        return self.semantic.definitions

    @property
    def async_defs(self) -> frozenset[str]:
        """Names of module-level ``async def`` functions."""
        return self.semantic.async_defs

    def binding(self, fn: str, dests: Sequence[str] | None = None) -> HookBinding | None:
        """The first binding of module-level ``fn`` (limited to ``dests`` if given)."""
        for b in self.hooks.get(fn, ()):
            if dests is None or b.spec.dest in dests:
                return b
        return None

    def hook_target(self, node: cst.CSTNode) -> tuple[HookBinding, HookTarget] | None:
        """(binding, target) when ``node`` is a function that runs as a hook, else None."""
        return self.targets.get(id(node))


def _plausible(target: HookTarget | None, spec: HookSpec) -> bool:
    """A conventional name binds only a function that resembles the hook: it shares a
    parameter with the spec, and has the spec's call mode or takes its positional arguments
    (an ``async def eval_rollout(args, rollout_id)`` helper has neither)."""
    if target is None or target.function is None:
        return False
    names = {p.name for p in target.params if p.kind not in ("VAR_POSITIONAL", "VAR_KEYWORD")}
    if names and not names & set(spec.params):
        return False
    mode_fits = spec.mode == "either" or (spec.mode == "async") == target.is_async
    positional = sum(p.kind in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD") for p in target.params)
    takes_all = positional >= len(spec.positional) or any(
        p.kind == "VAR_POSITIONAL" for p in target.params)
    return mode_fits or takes_all


def _loose(target: HookTarget | None, spec: HookSpec) -> bool:
    """Whether a function bound by a conventional name alone takes a parameter the hook does
    not pass by that name (``HookBinding.loose``); never for the rollout and eval functions,
    whose name is what every rollout module is written under. The keywords the call site
    passes when declared (``HookSpec.optional_kwargs``: the agent's and generate's
    ``evaluation``) are the hook's own parameters, not extra ones."""
    if target is None or spec.dest in ROLLOUT_DESTS:
        return False
    passed = {*spec.params, *spec.optional_kwargs}
    return any(p.name not in passed for p in target.params
               if p.kind not in ("VAR_POSITIONAL", "VAR_KEYWORD"))


def build_context(path: str, module: cst.Module, options: LintOptions,
                  semantic: Semantic) -> FileContext:
    """Bind the hooks of ``module`` and resolve what code each one runs.

    Discovery order: hooks named by configuration (``options.hooks``, whatever the name),
    then module-level annotations with a contract Protocol (``x: RolloutFunction = fn``), then
    conventional names (``HookSpec.conventional_names``) bound to a function sharing a
    parameter with the spec. A conventional name that the module itself uses is a helper of
    that module (as ``eval_rollout`` in the default rollout), not a hook, and is not bound.
    """
    annotated: list[tuple[str, HookSpec, str]] = []
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                    ann = dotted_text(small.annotation.annotation).rpartition(".")[2]
                    spec = _PROTOCOLS.get(ann)
                    if spec is not None and small.value is not None:
                        fn = small.value.value if isinstance(small.value, cst.Name) \
                            else small.target.value
                        annotated.append((fn, spec, ann))
    hooks: dict[str, list[HookBinding]] = {}
    for b in options.hooks:
        hooks.setdefault(b.function, []).append(b)
    for fn, spec, ann in annotated:
        if fn not in hooks:
            hooks[fn] = [HookBinding(fn, spec, f"annotation `{ann}`", explicit=False)]
    for name in semantic.symbols:
        spec_c = _CONVENTIONAL.get(name)
        if spec_c is not None and name not in hooks and not semantic.referenced(name) \
                and _plausible(target := semantic.target(name), spec_c):
            hooks[name] = [HookBinding(name, spec_c, CONVENTIONAL_NAME, explicit=False,
                                       loose=_loose(target, spec_c))]
    targets: dict[int, tuple[HookBinding, HookTarget]] = {}
    for name, bindings in hooks.items():
        for b in bindings:
            t = semantic.target(name, class_hook=b.spec.kind == "class")
            if t is not None and t.function is not None and id(t.function) not in targets:
                targets[id(t.function)] = (b, t)
    return FileContext(
        path=path, options=options, module=module, semantic=semantic,
        hooks={k: tuple(v) for k, v in hooks.items()}, targets=targets,
    )


def _kebab(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


class Rule(cst.BatchableCSTVisitor):
    """Base class of every vime-lint rule.

    Class attributes: ``INVARIANT`` (the ``vime.contract`` record: code, severity, template),
    ``METADATA_DEPENDENCIES`` (LibCST providers the rule reads), ``VALID`` and ``INVALID``
    (examples run as tests), ``NEEDS_HOOKS`` (skip files without hook bindings).
    """

    INVARIANT: ClassVar[Invariant]
    VALID: ClassVar[Sequence[Valid]] = ()
    INVALID: ClassVar[Sequence[Invalid]] = ()
    NEEDS_HOOKS: ClassVar[bool] = False
    #: Codes this rule had before it got its own (still accepted by ``noqa`` and ``--ignore``).
    ALIASES: ClassVar[tuple[str, ...]] = ()
    #: Produced by the engine (suppression findings), not by a traversal.
    ENGINE_ONLY: ClassVar[bool] = False

    def __init__(self, context: FileContext) -> None:
        super().__init__()
        self.context = context
        self.reports: list[Report] = []

    @classmethod
    def _visitor_names(cls) -> tuple[str, ...]:
        cached = cls.__dict__.get("_VISITOR_NAMES")
        if cached is None:
            cached = tuple(
                name for name in dir(cls)
                if (name.startswith("visit_") or name.startswith("leave_"))
                and callable(getattr(cls, name))
                and not getattr(getattr(cls, name), "_is_no_op", False))
            cls._VISITOR_NAMES = cached  # type: ignore[attr-defined]
        return cast(tuple[str, ...], cached)

    def get_visitors(self) -> Mapping[str, Callable[[cst.CSTNode], None]]:
        """The non-stub ``visit_*``/``leave_*`` methods, found once per class.

        LibCST's default scans every member with ``inspect.getmembers`` for every instance,
        which cost about a third of a lint run; the names only depend on the class.
        """
        return {name: getattr(self, name) for name in self._visitor_names()}

    @classmethod
    def code(cls) -> str:
        """The invariant id, ``"VIM###"``."""
        return cls.INVARIANT.id

    @classmethod
    def codes(cls) -> tuple[str, ...]:
        """The rule's code, then its aliases."""
        return (cls.INVARIANT.id, *cls.ALIASES)

    @classmethod
    def slug(cls) -> str:
        """The rule's one name: its invariant's slug in ``vime.contract`` (``stale-status-api``),
        in every output format, ``--select`` and the docs."""
        return cls.INVARIANT.slug

    @classmethod
    def class_slug(cls) -> str:
        """The kebab-case class name (``status-string``): a former name, still accepted by
        ``vime-lint rule``."""
        return _kebab(cls.__name__)

    @classmethod
    def applies(cls, context: FileContext) -> bool:
        """False when the rule cannot fire on this file (it is then not run)."""
        return not cls.NEEDS_HOOKS or bool(context.hooks)

    def report(
        self,
        node: cst.CSTNode,
        message: str,
        *,
        severity: Severity | None = None,
        fix_hint: str | None = None,
        fix: Fix | None = None,
    ) -> None:
        """Record a finding at ``node`` (positions are resolved after the traversal)."""
        self.reports.append(Report(type(self), node, message,
                                   severity or self.INVARIANT.severity,
                                   self.INVARIANT.fix if fix_hint is None else fix_hint, fix))

    def qualified(self, node: cst.CSTNode) -> set[str]:
        """Qualified names of ``node`` (a ``Call``: of its callee), from the semantic model."""
        return set(self.context.semantic.qualified(node))


class FunctionTracker(Rule):
    """A rule that knows the enclosing function: ``self.functions`` (innermost last).

    Lambdas push ``None``; a subclass that overrides ``visit_FunctionDef`` or
    ``leave_FunctionDef`` must call ``super()``.
    """

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.functions: list[cst.FunctionDef | None] = []
        self.classes: list[cst.ClassDef] = []
        self.class_depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.functions.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.functions.append(None)

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.functions.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.class_depth += 1
        self.classes.append(node)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.class_depth -= 1
        self.classes.pop()

    @property
    def current(self) -> cst.FunctionDef | None:
        """The innermost enclosing ``def`` (None at module level or inside a lambda)."""
        return self.functions[-1] if self.functions else None

    def hook_of(self, node: cst.FunctionDef) -> HookBinding | None:
        """The hook binding of ``node`` when it runs as a hook (a module-level ``def``, the
        ``__call__`` of a bound instance, the function behind a partial, alias or decorator)."""
        hit = self.context.hook_target(node)
        return hit[0] if hit else None

    @property
    def owner(self) -> cst.ClassDef | None:
        """The innermost enclosing class (None outside classes)."""
        return self.classes[-1] if self.classes else None

