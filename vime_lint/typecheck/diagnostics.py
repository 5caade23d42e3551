"""mypy's messages on an annotated copy, mapped back to ``VIM2xx`` findings at the user's lines.

Only errors inside a hook or a helper that got contract types are kept (the rest of the module
is the user's own business); notes are dropped. Each message keeps mypy's text, prefixed by the
contract type it came from::

    `sample.prompt` is `str | list[dict[str, Any]]` (Sample.prompt); Item "list[dict[str, Any]]"
    of "str | list[dict[str, Any]]" has no attribute "lower"

Classification: ``return``/``return-value`` errors are VIM200; a wrong value stored in a field
of ``Sample`` or given to a contract dataclass is VIM202; a failing pair of annotation probes
is VIM203; every other error is VIM201.

Usage::

    findings = findings_for(path, source, plan, messages)
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path

from vime.contract import INVARIANTS, SAMPLE_FIELD_NAMES
from vime_lint.static._model import Finding
from vime_lint.typecheck.annotate import AnnotationPlan, TypedFunction
from vime_lint.typecheck.codes import rule_for
from vime_lint.typecheck.contract_types import field_hint, type_sources
from vime_lint.typecheck.run import MypyMessage

__all__ = ["contract_class_fields", "findings_for", "wider_annotations"]

_RETURN_CODES = frozenset({"return", "return-value", "empty-body"})
#: Statements with a body: the position's context is never a whole block.
_COMPOUND = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.AsyncFor,
             ast.While, ast.With, ast.AsyncWith, ast.Try, ast.Match)
_FIELD_CODES = frozenset({"assignment", "arg-type", "dict-item", "list-item", "call-arg",
                          "misc"})


@cache
def contract_class_fields(name: str) -> dict[str, str]:
    """``{field: annotation text}`` of a contract dataclass (``RolloutFnTrainOutput``), read
    from its module's source (nothing imported); empty for a name that is no class there."""
    module = type_sources().get(name)
    if module is None or not module.startswith("vime"):
        return {}
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin:
        return {}
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return {s.target.id: ast.unparse(s.annotation) for s in node.body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
    return {}


def _within(node: ast.AST, line: int, col: int) -> bool:
    start = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
    end = (getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0)
    return start <= (line, col) < end or start == (line, col)


def _root(node: ast.expr) -> tuple[ast.Name | None, list[ast.Attribute]]:
    """The Name a chain ``a[0].b.c`` starts from, and its attributes, innermost first."""
    attrs: list[ast.Attribute] = []
    while True:
        if isinstance(node, ast.Attribute):
            attrs.append(node)
            node = node.value
        elif isinstance(node, (ast.Subscript, ast.Call)):
            node = node.value if isinstance(node, ast.Subscript) else node.func
        else:
            break
    return (node if isinstance(node, ast.Name) else None), attrs[::-1]


def _chain_text(node: ast.Attribute) -> str:
    return ast.unparse(node)


class _Index:
    """The user's module parsed once: the nodes at each position."""

    def __init__(self, source: str) -> None:
        try:
            self.tree: ast.AST | None = ast.parse(source)
        except SyntaxError:
            self.tree = None
        self.nodes: list[ast.AST] = list(ast.walk(self.tree)) if self.tree is not None else []

    def at(self, line: int, col: int) -> list[ast.AST]:
        """Nodes whose span holds the position, outermost first."""
        found = [n for n in self.nodes if isinstance(n, (ast.expr, ast.stmt)) and
                 not isinstance(n, _COMPOUND) and _within(n, line, col)]
        return sorted(found, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0),
                                            -(getattr(n, "end_lineno", 0) or 0),
                                            -(getattr(n, "end_col_offset", 0) or 0)))


def _field_context(fn: TypedFunction, attr: ast.Attribute, message: str) -> str | None:
    """``"`x.f` is `T` (Sample.f)"`` for a Sample field read through a contract value."""
    if attr.attr not in SAMPLE_FIELD_NAMES:
        return None
    root, _ = _root(attr)
    hint = field_hint(attr.attr)
    if hint is None:
        return None
    typed = root is not None and root.id in fn.params and "Sample" in fn.params[root.id].type
    if typed or hint.replace("Sample.", "") in message or f'"{attr.attr}"' in message:
        return f"`{_chain_text(attr)}` is `{hint}` (Sample.{attr.attr})"
    return None


def _param_context(fn: TypedFunction, name: str) -> str | None:
    p = fn.params.get(name)
    if p is None:
        return None
    return f"`{name}` is `{p.type}` ({p.origin})"


def _contract_call(nodes: Sequence[ast.AST], line: int, col: int) -> str | None:
    """``"`RolloutFnTrainOutput.metrics` is `dict[str, float] | None`"`` when the position is
    inside a keyword argument of a call to a contract dataclass."""
    for node in reversed(nodes):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else (
            func.id if isinstance(func, ast.Name) else "")
        name = name.removeprefix("_vime_t_")
        fields = contract_class_fields(name)
        if not fields:
            continue
        for kw in node.keywords:
            if kw.arg in fields and _within(kw.value, line, col):
                return f"`{name}.{kw.arg}` is `{fields[kw.arg]}` ({name})"
        for i, arg in enumerate(node.args):
            names = list(fields)
            if i < len(names) and _within(arg, line, col):
                return f"`{name}.{names[i]}` is `{fields[names[i]]}` ({name})"
    return None


def _assigned_field(nodes: Sequence[ast.AST]) -> ast.Attribute | None:
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Attribute) and t.attr in SAMPLE_FIELD_NAMES:
                    return t
    return None


def _context(fn: TypedFunction, nodes: Sequence[ast.AST], msg: MypyMessage) -> str:
    """The contract type the error came from, looked for in the innermost node at the error's
    position first: a Sample field read, else a contract-typed parameter."""
    inner = list(reversed(nodes))
    for node in inner:  # a field read that spans the error's position
        if isinstance(node, ast.Attribute) and node.attr in SAMPLE_FIELD_NAMES:
            hint = field_hint(node.attr)
            return f"`{ast.unparse(node)}` is `{hint}` (Sample.{node.attr})" + _via(fn)
    for node in inner:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute):
                ctx = _field_context(fn, sub, msg.message)
                if ctx is not None:
                    return ctx + _via(fn)
    for node in inner:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name):
                ctx = _param_context(fn, sub.id)
                if ctx is not None:
                    return ctx
    return f"in `{fn.name}` (types from {fn.protocol})"


def _via(fn: TypedFunction) -> str:
    """For a helper: which hook gave it its types (``", in _score via reward_func(sample)"``)."""
    if fn.spec is not None:
        return ""
    return f", in `{fn.name}` (types from {fn.protocol})"


def _innermost(functions: Iterable[TypedFunction], line: int) -> TypedFunction | None:
    best = None
    for fn in functions:
        if fn.start_line <= line <= fn.end_line and (
                best is None or fn.start_line >= best.start_line):
            best = fn
    return best


def _finding(code: str, path: str, line: int, col: int, end_line: int, end_col: int,
             context: str, detail: str) -> Finding:
    rule = rule_for(code)
    inv = INVARIANTS[code]
    return Finding(code=code, slug=rule.slug(), severity=inv.severity,
                   message=inv.render(context=context, detail=detail), path=path, line=line,
                   col=col, end_line=end_line, end_col=end_col, fix_hint=inv.fix)


def wider_annotations(plan: AnnotationPlan,
                      messages: Iterable[MypyMessage]) -> frozenset[tuple[str, str]]:
    """``(function, parameter or "return")`` of the user annotations that the probes found
    wider than the contract's type (the "narrower" probe fails, the "wider" one passes)."""
    failed = {m.line for m in messages if m.severity == "error" and m.line > plan.user_lines}
    return frozenset((p.function, p.what) for p in plan.probes
                     if p.narrower_line in failed and p.wider_line not in failed)


def findings_for(path: str, source: str, plan: AnnotationPlan,
                 messages: Iterable[MypyMessage]) -> list[Finding]:
    """The ``VIM2xx`` findings of one user file (unsuppressed, unselected), sorted.

    Args:
        path: the user's file, as reported.
        source: the user's text (positions refer to it).
        plan: how the copy was annotated.
        messages: mypy's messages about this file's copy.
    """
    index = _Index(source)
    errors = [m for m in messages if m.severity == "error"]
    probe_errors = {m.line for m in errors if m.line > plan.user_lines}
    out: dict[tuple[int, int, str], Finding] = {}
    for probe in plan.probes:
        if probe.narrower_line in probe_errors and probe.wider_line in probe_errors:
            what = "returns" if probe.what == "return" else f"`{probe.what}` is"
            ctx = f"`{probe.function}` {what} `{probe.contract}` ({probe.protocol})"
            f = _finding("VIM203", path, probe.line, probe.col, probe.end_line, probe.end_col,
                         ctx, f"the annotation `{probe.user}` is neither that type nor "
                              "narrower or wider than it")
            out[(f.line, f.col, f.code)] = f
    for m in errors:
        if m.line > plan.user_lines:
            continue
        fn = _innermost(plan.functions, m.line)
        if fn is None:
            continue
        nodes = index.at(m.line, m.col)
        line, col, end_line, end_col = m.line, m.col, m.end_line, m.end_col
        if m.code in _RETURN_CODES and fn.returns is not None:
            code = "VIM200"
            user = fn.spec is None or fn.returns != _spec_returns(fn)
            ctx = f"`{fn.name}` returns `{fn.returns}` ({fn.protocol}" + (
                ", the hook's own annotation)" if user else ")")
            if m.code == "return" and m.line in (fn.start_line, fn.def_line):
                line, col = fn.def_line, fn.name_col
                end_line, end_col = line, col + len(fn.name)
        else:
            call = _contract_call(nodes, m.line, m.col) if m.code in _FIELD_CODES else None
            target = _assigned_field(nodes) if m.code == "assignment" else None
            if call is not None:
                code, ctx = "VIM202", call
            elif target is not None:
                hint = field_hint(target.attr) or "?"
                code = "VIM202"
                ctx = f"`{ast.unparse(target)}` is `{hint}` (Sample.{target.attr})"
            else:
                code, ctx = "VIM201", _context(fn, nodes, m)
        key = (line, col, code)
        if key in out:
            prev = out[key]
            out[key] = _finding(code, path, line, col, end_line, end_col, ctx,
                                prev.message.partition("; ")[2] + "; " + m.message)
            continue
        out[key] = _finding(code, path, line, col, max(end_line, line),
                            end_col if end_line >= line else col + 1, ctx, m.message)
    return sorted(out.values(), key=lambda f: (f.line, f.col, f.code))


def _spec_returns(fn: TypedFunction) -> str:
    from vime_lint.typecheck.contract_types import hook_types

    assert fn.spec is not None
    return hook_types(fn.spec).returns
