"""What a reward function returns, followed through local names and module-level helpers
(shared by the reward rules VIM023, VIM024 and VIM030).

A reward hook's value is rarely a literal in its own ``return``: it is a local name bound on
several paths, a conditional expression, or the result of a helper of the same module
(``return compute_score(...)``). :func:`reward_leaves` resolves those and yields each
expression the hook can return, with the function whose body holds it. For a batch reward
function (``--group-rm``: ``(args, samples)`` -> one reward per sample) the leaves are the
elements of the returned list: of a list display, a comprehension, or a name grown with
``.append(...)``.

Usage::

    for leaf in reward_leaves(fn, binding, context, rule.qualified):
        leaf.value    # an expression the hook can return (or an element of its list)
        leaf.fn       # the function whose body holds it (the hook or a helper)
        leaf.via      # helpers followed from the hook, outermost first
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import libcst as cst

from vime.contract.hooks import GROUP_RM_SPEC
from vime_lint.static._model import HookBinding
from vime_lint.static._rule import FileContext

__all__ = ["Leaf", "is_batched_reward", "module_constants", "reward_functions", "reward_leaves"]

#: How many helpers deep :func:`reward_leaves` follows calls.
_MAX_DEPTH = 6
_CONSTANT_NAMES = frozenset({"True", "False"})
_LIST_CALLS = frozenset({"builtins.list", "builtins.tuple"})

#: Qualified names of a node (``Rule.qualified``).
Qualified = Callable[[cst.CSTNode], set[str]]


@dataclass(frozen=True, slots=True)
class Leaf:
    """One expression a reward hook can return."""

    value: cst.BaseExpression
    #: The function whose body holds ``value``.
    fn: cst.FunctionDef
    #: Module-level helpers followed from the hook to ``fn``, outermost first.
    via: tuple[str, ...] = ()


def is_batched_reward(binding: HookBinding, fn: cst.FunctionDef, context: FileContext) -> bool:
    """True for a ``--group-rm`` reward function: its spec says so, the launch configuration
    sets ``--group-rm``, or its second parameter is ``samples``."""
    if binding.spec is GROUP_RM_SPEC or "--group-rm" in context.options.launch_flags:
        return True
    params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
    return len(params) >= 2 and params[1] == "samples"


def module_constants(context: FileContext) -> dict[str, cst.BaseExpression]:
    """Module-level names bound once to an expression (``FAIL_SCORE = 0.0``), cached per file."""
    key = id(context.module)
    hit = context.cache.get(key)
    if isinstance(hit, dict):
        return hit
    counts: dict[str, int] = {}
    values: dict[str, cst.BaseExpression] = {}
    for stmt in context.module.body:
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
    out = {k: v for k, v in values.items() if counts[k] == 1 and k not in context.definitions}
    context.cache[key] = out
    return out


class _Resolver:
    def __init__(self, context: FileContext, qualified: Qualified) -> None:
        self.context = context
        self.qualified = qualified
        self.constants = module_constants(context)
        self.leaves: list[Leaf] = []
        self.functions: list[tuple[cst.FunctionDef, tuple[str, ...]]] = []
        self._seen: set[tuple[int, str, bool]] = set()
        self._done: set[tuple[int, bool]] = set()

    def function(self, fn: cst.FunctionDef, via: tuple[str, ...], elements: bool) -> None:
        if (id(fn), elements) in self._done:
            return
        self._done.add((id(fn), elements))
        self.functions.append((fn, via))
        facts = self.context.semantic.facts(fn)
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
            semantic = self.context.semantic
            return semantic.callee(expr, fn, semantic.owner(fn))
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
                and self.qualified(e.func) & _LIST_CALLS:
            self.expr(e.args[0].value, fn, via, True)

    def _name(self, e: cst.Name, fn: cst.FunctionDef, via: tuple[str, ...],
              elements: bool) -> None:
        key = (id(fn), e.value, elements)
        if key in self._seen:
            return
        self._seen.add(key)
        bound = self.context.semantic.facts(fn).values.get(e.value)
        if bound is None:
            constant = self.constants.get(e.value)
            if constant is not None and not elements:
                self.expr(constant, fn, via, elements)
            return
        for value in bound:
            if value is not None:
                self.expr(value, fn, via, elements)
        if elements:
            for item in self.context.semantic.facts(fn).appends.get(e.value, ()):
                self.expr(item, fn, via, False)


def _resolve(fn: cst.FunctionDef, binding: HookBinding, context: FileContext,
             qualified: Qualified) -> _Resolver:
    key = id(fn.name)
    hit = context.cache.get(key)
    if isinstance(hit, _Resolver):
        return hit
    resolver = _Resolver(context, qualified)
    resolver.function(fn, (), is_batched_reward(binding, fn, context))
    context.cache[key] = resolver
    return resolver


def reward_leaves(fn: cst.FunctionDef, binding: HookBinding, context: FileContext,
                  qualified: Qualified) -> list[Leaf]:
    """The expressions reward hook ``fn`` can return (the rewards of its list for a batch
    reward function), following local names (all their bindings), conditional expressions,
    module constants and calls of the module's own helpers (module-level, nested, ``self``
    methods; ``await`` too, at most six deep).
    Parameters, loop variables and calls the linter cannot see are left out. ``qualified``
    resolves builtins (``list(...)``); the result is cached per file."""
    return _resolve(fn, binding, context, qualified).leaves


def reward_functions(fn: cst.FunctionDef, binding: HookBinding, context: FileContext,
                     qualified: Qualified) -> Iterator[tuple[cst.FunctionDef, tuple[str, ...]]]:
    """``fn`` and the module-level helpers whose result it returns, with the helper chain."""
    yield from _resolve(fn, binding, context, qualified).functions
