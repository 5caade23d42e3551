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
from libcst.metadata import QualifiedNameProvider

from vime.contract import HOOKS, Invariant, Severity
from vime.contract.hooks import GROUP_RM_SPEC, HookSpec
from vime_lint.static._cst import dotted_text
from vime_lint.static._model import HookBinding, Invalid, LintOptions, Valid

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
    """What rules know about the file being linted (built from its top-level statements)."""

    path: str
    options: LintOptions
    module: cst.Module
    #: Module-level name -> hook bindings, in discovery order (explicit first).
    hooks: Mapping[str, tuple[HookBinding, ...]]
    #: Module-level ``def``/``async def``/``class`` statements by name.
    definitions: Mapping[str, cst.FunctionDef | cst.ClassDef]
    #: Names of module-level ``async def`` functions.
    async_defs: frozenset[str]
    #: Local names bound to ``Sample`` by imports (``Sample``, or an alias).
    sample_names: frozenset[str]
    #: Names imported from ``vime.rollout.base_types`` (name -> local alias).
    base_types_names: Mapping[str, str]
    #: Per-node analyses shared by rules (``id(node) -> facts``), so that a function body is
    #: walked once however many rules ask about it.
    cache: dict[int, object] = field(default_factory=dict)

    def binding(self, fn: str, dests: Sequence[str] | None = None) -> HookBinding | None:
        """The first binding of module-level ``fn`` (limited to ``dests`` if given)."""
        for b in self.hooks.get(fn, ()):
            if dests is None or b.spec.dest in dests:
                return b
        return None


def _import_names(stmt: cst.ImportFrom) -> tuple[str, list[tuple[str, str]]]:
    mod = dotted_text(stmt.module)
    pairs: list[tuple[str, str]] = []
    if isinstance(stmt.names, Sequence):
        for alias in stmt.names:
            name = dotted_text(alias.name)
            local = alias.asname.name.value if (alias.asname is not None and isinstance(
                alias.asname.name, cst.Name)) else name
            pairs.append((name, local))
    return mod, pairs


def _plausible(fn: cst.FunctionDef | cst.ClassDef, spec: HookSpec) -> bool:
    """A conventional name binds only a definition that shares a parameter with the spec."""
    if isinstance(fn, cst.ClassDef):
        return False
    names = {p.name.value for p in (*fn.params.posonly_params, *fn.params.params,
                                    *fn.params.kwonly_params)}
    return bool(names & set(spec.params)) or not names


def _called_locally(source: str, name: str) -> bool:
    """True when the module's text calls ``name(...)`` itself (not just defines it)."""
    calls = re.findall(rf"(?<![\w.]){re.escape(name)}\s*\(", source)
    defs = re.findall(rf"\b(?:def|class)\s+{re.escape(name)}\s*\(", source)
    return len(calls) > len(defs)


def build_context(path: str, module: cst.Module, options: LintOptions,
                  source: str | None = None) -> FileContext:
    """Scan the top-level statements of ``module`` (no traversal) and bind its hooks.

    Discovery order: hooks named by configuration (``options.hooks``), then module-level
    annotations with a contract Protocol (``x: RolloutFunction = fn``), then conventional
    names (``HookSpec.conventional_names``) of definitions sharing a parameter with the spec.
    A conventional name that the module itself calls is a helper of that module (as
    ``eval_rollout`` in the default rollout), not a hook, and is not bound.
    """
    definitions: dict[str, cst.FunctionDef | cst.ClassDef] = {}
    async_defs: set[str] = set()
    sample_names: set[str] = set()
    base_types: dict[str, str] = {}
    annotated: list[tuple[str, HookSpec, str]] = []
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef):
            definitions[stmt.name.value] = stmt
            if stmt.asynchronous is not None:
                async_defs.add(stmt.name.value)
            else:
                async_defs.discard(stmt.name.value)
        elif isinstance(stmt, cst.ClassDef):
            definitions[stmt.name.value] = stmt
        elif isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.ImportFrom):
                    mod, pairs = _import_names(small)
                    for name, local in pairs:
                        if name == "Sample" and (mod.startswith("vime") or mod.startswith("slime")):
                            sample_names.add(local)
                        if mod == "vime.rollout.base_types":
                            base_types[name] = local
                elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                    ann = dotted_text(small.annotation.annotation).rpartition(".")[2]
                    spec = _PROTOCOLS.get(ann)
                    if spec is not None and isinstance(small.value, cst.Name):
                        annotated.append((small.value.value, spec, ann))
    hooks: dict[str, list[HookBinding]] = {}
    for b in options.hooks:
        hooks.setdefault(b.function, []).append(b)
    for fn, spec, ann in annotated:
        if fn not in hooks:
            hooks[fn] = [HookBinding(fn, spec, f"annotation `{ann}`", explicit=False)]
    for name, node in definitions.items():
        spec_c = _CONVENTIONAL.get(name)
        if spec_c is not None and name not in hooks and _plausible(node, spec_c) and not (
                source is not None and _called_locally(source, name)):
            hooks[name] = [HookBinding(name, spec_c, "conventional name", explicit=False)]
    return FileContext(
        path=path, options=options, module=module,
        hooks={k: tuple(v) for k, v in hooks.items()}, definitions=definitions,
        async_defs=frozenset(async_defs), sample_names=frozenset(sample_names),
        base_types_names=base_types,
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
    def slug(cls) -> str:
        """The kebab-case rule name from the class name (``status-string-assignment``)."""
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
        """Qualified names of ``node`` (needs ``QualifiedNameProvider`` in the dependencies)."""
        return {q.name for q in self.get_metadata(QualifiedNameProvider, node, set())}


class FunctionTracker(Rule):
    """A rule that knows the enclosing function: ``self.functions`` (innermost last).

    Lambdas push ``None``; a subclass that overrides ``visit_FunctionDef`` or
    ``leave_FunctionDef`` must call ``super()``.
    """

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.functions: list[cst.FunctionDef | None] = []
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

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.class_depth -= 1

    @property
    def current(self) -> cst.FunctionDef | None:
        """The innermost enclosing ``def`` (None at module level or inside a lambda)."""
        return self.functions[-1] if self.functions else None

    def hook_of(self, node: cst.FunctionDef) -> HookBinding | None:
        """The hook binding of ``node`` if it is a module-level definition with one."""
        if len(self.functions) != 1 or self.class_depth:
            return None
        bindings = self.context.hooks.get(node.name.value)
        return bindings[0] if bindings else None

