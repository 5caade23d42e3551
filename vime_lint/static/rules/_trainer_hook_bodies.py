"""What the trainer-hook rules (VIM055, VIM056) read of a hook's own body: the semantic
model's facts of the function the hook binding names (its own statements, not nested
functions), and how a returned value is described.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from vime_lint.static.analysis import Semantic

__all__ = ["_Body", "_body", "_describe", "_tensor_like"]


@dataclass(slots=True)
class _Body:
    """The returns, name assignments, subscript stores and call arguments of one function's
    own body (nested functions and lambdas left out), read from the semantic model."""

    returns: list[cst.Return] = field(default_factory=list)
    assigned: dict[str, list[cst.BaseExpression]] = field(default_factory=dict)
    stored_keys: set[str] = field(default_factory=set)
    call_args: set[str] = field(default_factory=set)


def _body(semantic: Semantic, node: cst.FunctionDef) -> _Body:
    facts = semantic.facts(node)
    body = _Body([r.node for r in facts.returns])
    for target, value, stmt in facts.bindings:
        if isinstance(stmt, cst.AugAssign):
            continue
        if isinstance(target, cst.Name):
            body.assigned.setdefault(target.value, []).append(value)
        elif isinstance(target, cst.Subscript) and len(target.slice) == 1:
            index = target.slice[0].slice
            if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString) \
                    and isinstance(index.value.evaluated_value, str):
                body.stored_keys.add(index.value.evaluated_value)
    for site in facts.calls:
        for a in site.node.args:
            if isinstance(a.value, cst.Name):
                body.call_args.add(a.value.value)
        func = site.node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("update", "setdefault"):
            body.call_args.add("<update>")
    return body


def _tensor_like(value: cst.BaseExpression) -> bool:
    """Arithmetic, a method call (``x.mean()``) or an attribute call (``torch.sum(...)``,
    ``F.cross_entropy(...)``): a tensor, never a ``(loss, log_dict)`` pair."""
    if isinstance(value, (cst.BinaryOperation, cst.UnaryOperation)):
        return True
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)


def _describe(value: cst.BaseExpression | None) -> str | None:
    """Why a returned expression is not a pair, or None when it may be one."""
    if value is None or (isinstance(value, cst.Name) and value.value == "None"):
        return "None"
    if isinstance(value, cst.Tuple):
        n = len(value.elements)
        starred = any(isinstance(e, cst.StarredElement) for e in value.elements)
        return None if n == 2 or starred else f"a {n}-tuple"
    if _tensor_like(value):
        return "a bare tensor"
    return None
