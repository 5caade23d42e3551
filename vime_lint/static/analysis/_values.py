"""Which integer a name or expression holds, as far as the module shows it, and how many times a
``for ... in range(...)`` loop runs (:meth:`Semantic.int_value`, :meth:`Semantic.range_count`;
read by VIM005 for CPU-bound loops inside ``async def``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    from vime_lint.static.analysis import Semantic

__all__ = ["int_value", "range_count"]


def int_value(semantic: Semantic, expr: cst.BaseExpression, fn: cst.FunctionDef) -> int | None:
    """The value of an integer literal, of a parameter of ``fn`` with one as its default, or
    of a module-level constant bound once to one; else None."""
    if isinstance(expr, cst.Integer):
        value = expr.evaluated_value
        return value if isinstance(value, int) else None
    if not isinstance(expr, cst.Name):
        return None
    params = (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)
    for p in params:
        if p.name.value == expr.value:
            return int_value(semantic, p.default, fn) \
                if isinstance(p.default, cst.Integer) else None
    if expr.value in semantic.facts(fn).values:
        return None  # a local name
    bound = [stmt for stmt in semantic.module.body
             if isinstance(stmt, cst.SimpleStatementLine) for a in stmt.body
             if isinstance(a, (cst.Assign, cst.AnnAssign)) and any(
                 isinstance(t, cst.Name) and t.value == expr.value
                 for t in ([x.target for x in a.targets] if isinstance(a, cst.Assign)
                           else [a.target]))]
    if len(bound) == 1:
        a = bound[0].body[0]
        bound_value = a.value if isinstance(a, (cst.Assign, cst.AnnAssign)) else None
        if isinstance(bound_value, cst.Integer):
            n = bound_value.evaluated_value
            return n if isinstance(n, int) else None
    return None


def range_count(semantic: Semantic, loop: cst.For, fn: cst.FunctionDef) -> int | None:
    """The iteration count of ``for ... in range(stop)`` / ``range(start, stop)`` (the
    builtin, by qualified name) when both bounds are known integers (:func:`int_value`);
    else None."""
    it = loop.iter
    if not isinstance(it, cst.Call) or "builtins.range" not in semantic.qualified(it.func):
        return None
    args = [a for a in it.args if a.keyword is None and not a.star]
    if not 1 <= len(args) <= 2 or len(args) != len(it.args):
        return None
    stop = int_value(semantic, args[-1].value, fn)
    start = int_value(semantic, args[0].value, fn) if len(args) == 2 else 0
    if stop is None or start is None:
        return None
    return stop - start
