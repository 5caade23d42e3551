"""Groups of samples for the rules (VIM013, VIM028): the semantic model's group value flow
(:mod:`vime_lint.static.analysis._groups`) with the hook parameters of this launch, and
:class:`GroupTracker`, the base of the two rules.

Usage::

    flow = group_flow(fn, context)
    flow.group_source(expr)      # "`data_source.get_samples(...)`" when expr holds a group
"""

from __future__ import annotations

import libcst as cst

from vime_lint.static._cst import string_value
from vime_lint.static._rule import FileContext, FunctionTracker
from vime_lint.static.analysis import GROUPS_TYPE, SAMPLE_ATTRIBUTES, GroupFlow, group_params

__all__ = ["GROUPS_TYPE", "GroupFlow", "GroupTracker", "SAMPLE_ATTRIBUTES", "getattr_read",
           "group_flow", "group_params"]


def group_flow(fn: cst.FunctionDef, context: FileContext) -> GroupFlow:
    """The :class:`GroupFlow` of ``fn``; the parameters of every hook of the module that its
    contract types ``list[list[Sample]]`` count (by position)."""
    semantic = context.semantic

    def positions(node: cst.FunctionDef) -> frozenset[int]:
        hit = context.hook_target(node)
        if hit is None:
            return frozenset()
        # The contract's positions are those of vime's call: after `self` and a partial's
        # own arguments (the target's params), mapped to the `def`'s own parameters by name.
        called = [p.name for p in hit[1].params
                  if p.kind in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")]
        own = [p.name.value for p in (*node.params.posonly_params, *node.params.params)]
        return frozenset(own.index(called[i]) for i in group_params(hit[0].spec.dest)
                         if i < len(called) and called[i] in own)

    semantic.group_positions = positions
    return semantic.group_flow(fn)


class GroupTracker(FunctionTracker):
    """A rule that asks the group flow of the enclosing function (``self.group_of(expr)``),
    comprehension targets included."""

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.comp_groups: list[dict[str, str]] = []

    def flow(self) -> GroupFlow | None:
        """The flow of the innermost enclosing ``def`` (inside a lambda too: the flow knows
        the lambda's parameters)."""
        fn = next((f for f in reversed(self.functions) if f is not None), None)
        return group_flow(fn, self.context) if fn is not None else None

    def group_of(self, expr: cst.BaseExpression) -> str | None:
        """How ``expr`` holds a group (list[Sample]), or None."""
        if isinstance(expr, cst.Name):
            for scope in reversed(self.comp_groups):
                if expr.value in scope:
                    return scope[expr.value]
        flow = self.flow()
        return flow.group_source(expr) if flow is not None else None

    def _enter(self, for_in: cst.CompFor) -> None:
        flow = self.flow()
        self.comp_groups.append(flow.comprehension_groups(for_in) if flow is not None else {})

    def visit_ListComp(self, node: cst.ListComp) -> None:
        self._enter(node.for_in)

    def leave_ListComp(self, original_node: cst.ListComp) -> None:
        self.comp_groups.pop()

    def visit_SetComp(self, node: cst.SetComp) -> None:
        self._enter(node.for_in)

    def leave_SetComp(self, original_node: cst.SetComp) -> None:
        self.comp_groups.pop()

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> None:
        self._enter(node.for_in)

    def leave_GeneratorExp(self, original_node: cst.GeneratorExp) -> None:
        self.comp_groups.pop()

    def visit_DictComp(self, node: cst.DictComp) -> None:
        self._enter(node.for_in)

    def leave_DictComp(self, original_node: cst.DictComp) -> None:
        self.comp_groups.pop()


def getattr_read(rule: GroupTracker, node: cst.Call) -> tuple[cst.BaseExpression, str] | None:
    """``(receiver, attribute)`` of ``getattr(x, "attr", ...)`` with a literal name (the
    builtin, resolved by qualified name)."""
    if len(node.args) >= 2 and "builtins.getattr" in rule.qualified(node.func):
        attr = string_value(node.args[1].value)
        if attr is not None:
            return node.args[0].value, attr
    return None
