"""What a function returns, followed through local names, conditional expressions, module
constants and the module's own helpers (module-level, nested, ``self`` methods) whose result
it returns (the values the reward rules
VIM023, VIM024 and VIM030 judge).

A hook's value is rarely a literal in its own ``return``: it is a local name bound on several
paths, a conditional expression, or the result of a helper of the same module
(``return compute_score(...)``). :class:`Returned` resolves those: each expression the function
can return (:class:`Leaf`, with the function whose body holds it), and the functions followed.
With ``elements``, the leaves are the elements of the returned list (a batch reward function:
one reward per sample): of a list display, a comprehension, or a name grown with
``.append(...)``.

Usage::

    found = semantic.returned(fn, elements=False)
    for leaf in found.leaves:
        leaf.value    # an expression fn can return (or an element of its list)
        leaf.fn       # the function whose body holds it (fn or a helper)
        leaf.via      # helpers followed from fn, outermost first
    found.functions   # (fn or helper, helper chain) for each function followed
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    from vime_lint.static.analysis import Semantic

__all__ = ["Leaf", "Returned", "constant_values"]

#: How many helpers deep :class:`Returned` follows calls.
_MAX_DEPTH = 6
_CONSTANT_NAMES = frozenset({"True", "False"})
_LIST_CALLS = frozenset({"builtins.list", "builtins.tuple"})


@dataclass(frozen=True, slots=True)
class Leaf:
    """One expression a function can return."""

    value: cst.BaseExpression
    #: The function whose body holds ``value``.
    fn: cst.FunctionDef
    #: Module-level helpers followed from the function asked about to ``fn``, outermost first.
    via: tuple[str, ...] = ()


def constant_values(module: cst.Module,
                    definitions: dict[str, cst.FunctionDef | cst.ClassDef]
                    ) -> dict[str, cst.BaseExpression]:
    """Module-level names bound once to an expression (``FAIL_SCORE = 0.0``), not also a
    ``def``/``class`` of ``definitions``."""
    counts: dict[str, int] = {}
    values: dict[str, cst.BaseExpression] = {}
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            targets: list[cst.BaseExpression] = []
            value: cst.BaseExpression | None = None
            if isinstance(small, cst.Assign):
                targets, value = [t.target for t in small.targets], small.value
            elif isinstance(small, cst.AnnAssign) and small.value is not None:
                targets, value = [small.target], small.value
            for t in targets:
                if isinstance(t, cst.Name) and value is not None:
                    counts[t.value] = counts.get(t.value, 0) + 1
                    values[t.value] = value
    return {k: v for k, v in values.items() if counts[k] == 1 and k not in definitions}


class Returned:
    """The values ``fn`` can return (:attr:`leaves`) and the functions followed
    (:attr:`functions`); built by :meth:`Semantic.returned`."""

    def __init__(self, semantic: Semantic, fn: cst.FunctionDef, elements: bool) -> None:
        self.semantic = semantic
        self.constants = semantic.constant_values
        self.leaves: list[Leaf] = []
        self.functions: list[tuple[cst.FunctionDef, tuple[str, ...]]] = []
        self._seen: set[tuple[int, str, bool]] = set()
        self._done: set[tuple[int, bool]] = set()
        self.function(fn, (), elements)

    def function(self, fn: cst.FunctionDef, via: tuple[str, ...], elements: bool) -> None:
        if (id(fn), elements) in self._done:
            return
        self._done.add((id(fn), elements))
        self.functions.append((fn, via))
        facts = self.semantic.facts(fn)
        if facts.yields:
            return
        for ret in facts.returns:
            if ret.value is not None:
                self.expr(ret.value, fn, via, elements)

    def _helper(self, expr: cst.BaseExpression, fn: cst.FunctionDef) -> cst.FunctionDef | None:
        """The module's own function whose result ``expr`` is: a module-level ``def`` (also
        through an alias), a ``def`` nested in ``fn``, or a ``self`` method of ``fn``'s class
        (:meth:`~vime_lint.static.analysis.Semantic.callee`)."""
        if isinstance(expr, cst.Await):
            expr = expr.expression
        if isinstance(expr, cst.Call):
            return self.semantic.callee(expr, fn, self.semantic.owner(fn))
        return None

    def expr(self, e: cst.BaseExpression, fn: cst.FunctionDef, via: tuple[str, ...],
             elements: bool) -> None:
        if isinstance(e, cst.IfExp):
            self.expr(e.body, fn, via, elements)
            self.expr(e.orelse, fn, via, elements)
            return
        helper = self._helper(e, fn)
        if helper is not None:
            if helper is not fn and helper.name.value not in via and len(via) < _MAX_DEPTH:
                self.function(helper, (*via, helper.name.value), elements)
            return
        if isinstance(e, cst.Await):
            return
        if isinstance(e, cst.Name) and e.value not in _CONSTANT_NAMES:
            self._name(e, fn, via, elements)
            return
        if elements:
            self._elements(e, fn, via)
            return
        if not (isinstance(e, cst.Name) and e.value == "None"):
            self.leaves.append(Leaf(e, fn, via))

    def _elements(self, e: cst.BaseExpression, fn: cst.FunctionDef,
                  via: tuple[str, ...]) -> None:
        if isinstance(e, (cst.List, cst.Tuple)):
            for el in e.elements:
                if not isinstance(el, cst.StarredElement):
                    self.expr(el.value, fn, via, False)
        elif isinstance(e, (cst.ListComp, cst.GeneratorExp)):
            self.expr(e.elt, fn, via, False)
        elif isinstance(e, cst.Call) and len(e.args) == 1 \
                and self.semantic.qualified(e.func) & _LIST_CALLS:
            self.expr(e.args[0].value, fn, via, True)

    def _name(self, e: cst.Name, fn: cst.FunctionDef, via: tuple[str, ...],
              elements: bool) -> None:
        key = (id(fn), e.value, elements)
        if key in self._seen:
            return
        self._seen.add(key)
        bound = self.semantic.facts(fn).values.get(e.value)
        if bound is None:
            constant = self.constants.get(e.value)
            if constant is not None and not elements:
                self.expr(constant, fn, via, elements)
            return
        for value in bound:
            if value is not None:
                self.expr(value, fn, via, elements)
        if elements:
            for item in self.semantic.facts(fn).appends.get(e.value, ()):
                self.expr(item, fn, via, False)
