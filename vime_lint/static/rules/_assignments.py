"""What a function body binds and returns, walked once per file (shared by rule families).

Used by the rollout-return rules (VIM002, VIM003), the eval-data rule (VIM020) and the
reward-return rule (VIM011).

Usage::

    local = assignments(fn, context)
    local.values["groups"]      # the expressions assigned to ``groups`` (None: unknown)
    local.returns, local.yields, local.names
"""

from __future__ import annotations

import libcst as cst

from vime_lint.static._cst import ReturnCollector
from vime_lint.static._rule import FileContext

__all__ = ["Assignments", "assignments"]


class Assignments(ReturnCollector):
    """One walk of a function body: local assignments (None: bound some other way), its own
    ``return`` statements, whether it yields, and the names it reads."""

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[str, list[cst.BaseExpression | None]] = {}
        self.subscript_values: dict[str, list[cst.BaseExpression]] = {}
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if isinstance(target, cst.Name):
            self.values.setdefault(target.value, []).append(value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._bind(el.value, None)
        elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) \
                and value is not None:
            self.subscript_values.setdefault(target.value.value, []).append(value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._bind(t.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Name) and not isinstance(node.value, (cst.List, cst.ListComp)):
            self._bind(node.target, None)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target, None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target, node.value)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._bind(node.name, None)


def assignments(fn: cst.FunctionDef, context: FileContext | None = None) -> Assignments:
    """Facts about ``fn``'s body, walked once per file (cached in ``context``).

    Parameters count as assignments of unknown value.
    """
    if context is not None:
        hit = context.cache.get(id(fn))
        if isinstance(hit, Assignments):
            return hit
    a = Assignments()
    fn.body.visit(a)
    if context is not None:
        context.cache[id(fn)] = a
    for p in (*fn.params.params, *fn.params.posonly_params, *fn.params.kwonly_params):
        a.values.setdefault(p.name.value, []).append(None)
    return a
