"""The contract type a mypy message on a hook came from, in vime's words.

A Sample field read (`` `sample.prompt` is `str | list[dict[str, Any]]` (Sample.prompt)``), a
contract-typed parameter, a keyword of a contract dataclass, a field stored; and, for a
helper, which hook gave it its types (:func:`via`, :func:`reached`). :func:`involved` says
whether a message is about a contract value at all.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from vime.contract import FIELDS_BY_NAME, SAMPLE_FIELD_NAMES
from vime_lint.typecheck.contract_types import (
    LAUNCH_FIELDS,
    field_hint,
    launch_sample,
    type_sources,
)
from vime_lint.typecheck.plan import TypedFunction
from vime_lint.typecheck.run import MypyMessage
from vime_lint.typecheck.source_index import chain_root, within

__all__ = ["assigned_field", "context_of", "contract_call", "contract_class_fields",
           "contract_names", "involved", "reached", "sample_field_type", "via"]


@cache
def contract_names() -> frozenset[str]:
    return frozenset({n for n, mod in type_sources().items() if mod.startswith("vime")}
                     | {"Status"})


@cache
def _long_hints() -> tuple[str, ...]:
    """Sample field types distinctive enough to name the field in a message."""
    return tuple(sorted({f.hint for f in FIELDS_BY_NAME.values()
                         if " | " in f.hint and len(f.hint) >= 12}))


def involved(fn: TypedFunction, focus: ast.AST | None, message: str) -> bool:
    """Whether the error is about a contract value: the message names a contract type or a
    Sample field's type, or the expression mypy points at reads a contract-typed parameter or
    a Sample field."""
    names = contract_names()
    for quoted in re.findall(r'"([^"]*)"', message):
        if set(re.findall(r"\b\w+\b", quoted)) & names:
            return True
    if any(h in message for h in _long_hints()):
        return True
    if focus is None:
        return False
    for sub in ast.walk(focus):
        if isinstance(sub, ast.Name) and sub.id in fn.params and \
                fn.params[sub.id].type not in ("Any", "object"):
            return True
        if isinstance(sub, ast.Attribute) and _field_context(fn, sub, message) is not None:
            return True
    return False


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


def _chain_text(node: ast.Attribute) -> str:
    return ast.unparse(node)


def _field_context(fn: TypedFunction, attr: ast.Attribute, message: str) -> str | None:
    """``"`x.f` is `T` (Sample.f)"`` for a Sample field read through a contract value."""
    if attr.attr not in SAMPLE_FIELD_NAMES:
        return None
    root, _ = chain_root(attr)
    hint = sample_field_type(fn, attr)
    if hint is None:
        return None
    typed = root is not None and root.id in fn.params and "Sample" in fn.params[root.id].type
    if typed or hint.replace("Sample.", "") in message or f'"{attr.attr}"' in message:
        return f"`{_chain_text(attr)}` is `{hint}` (Sample.{attr.attr})"
    return None


def sample_field_type(fn: TypedFunction, attr: ast.Attribute) -> str | None:
    """``Sample.<attr>``'s type, as narrowed by the launch (``contract_types.LAUNCH_FIELDS``) when the
    chain starts at a parameter typed with a launch subclass of ``Sample``."""
    root, _ = chain_root(attr)
    param = fn.params.get(root.id) if root is not None else None
    typed = param.type if param is not None else ""
    for kind, (name, hint, _why) in LAUNCH_FIELDS.items():
        if name == attr.attr and typed.startswith(launch_sample(frozenset())) and \
                kind.replace("-", "_") in typed:
            return hint
    return field_hint(attr.attr)


def _param_context(fn: TypedFunction, name: str) -> str | None:
    p = fn.params.get(name)
    if p is None:
        return None
    return f"`{name}` is `{p.type}` ({p.origin})"


def contract_call(nodes: Sequence[ast.AST], line: int, col: int) -> str | None:
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
            if kw.arg in fields and within(kw.value, line, col):
                return f"`{name}.{kw.arg}` is `{fields[kw.arg]}` ({name})"
        for i, arg in enumerate(node.args):
            names = list(fields)
            if i < len(names) and within(arg, line, col):
                return f"`{name}.{names[i]}` is `{fields[names[i]]}` ({name})"
    return None


def assigned_field(nodes: Sequence[ast.AST]) -> ast.Attribute | None:
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Attribute) and t.attr in SAMPLE_FIELD_NAMES:
                    return t
    return None


def context_of(fn: TypedFunction, nodes: Sequence[ast.AST], msg: MypyMessage) -> str:
    """The contract type the error came from, looked for in the innermost node at the error's
    position first: a Sample field read, else a contract-typed parameter."""
    inner = list(reversed(nodes))
    for node in inner:  # a field read that spans the error's position
        if isinstance(node, ast.Attribute) and node.attr in SAMPLE_FIELD_NAMES:
            hint = sample_field_type(fn, node)
            return f"`{ast.unparse(node)}` is `{hint}` (Sample.{node.attr})" + via(fn)
    for node in inner:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute):
                ctx = _field_context(fn, sub, msg.message)
                if ctx is not None:
                    return ctx + via(fn)
    for node in inner:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name):
                ctx = _param_context(fn, sub.id)
                if ctx is not None:
                    return ctx
    return f"in `{fn.name}` (types from {fn.protocol})"


def via(fn: TypedFunction) -> str:
    """For a helper: which hook gave it its types (``", in _score via reward_func(sample)"``)."""
    if fn.spec is not None:
        return ""
    return f", in `{fn.name}` (types from {fn.protocol})"


def reached(fn: TypedFunction) -> str:
    """For a helper typed because hooks reach it: which hooks (``", reached from reward_func"``)."""
    if fn.spec is not None or not fn.reached_from:
        return ""
    return f", reached from {', '.join(f'`{h}`' for h in fn.reached_from)}"
