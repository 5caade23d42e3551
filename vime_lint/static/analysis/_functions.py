"""Per-function facts, from one walk of a function's own body (nested scopes are their own).

What one walk records: every ``return`` with the ``evaluation`` side it is on, ``yield``,
whether control can fall off the end, the values assigned to each local name (parameters count
as unknown values), ``x[k] = v`` stores, ``x.append(v)`` collections, the names read, every
call with the chain of nodes around it (to tell ``await f()`` from ``f()`` thrown away) and
its ``evaluation`` side, attribute stores and ``setattr`` calls (with their side) and the
nested ``def`` statements; also every attribute read and constant-key subscript with the nodes
around it, string literals, binding statements, ``await`` expressions, dict entries,
``for``/``while`` statements (with their loop depth) and lambdas.

Usage::

    facts = function_facts(fn)
    [(r.value, r.side) for r in facts.returns]   # [(Call(RolloutFnEvalOutput...), "eval"), ...]
    facts.values["groups"]                        # the expressions assigned to ``groups``
    facts.calls[0].parents                        # (Await, Expr, ...) innermost first
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

import libcst as cst

from vime_lint.static._cst import body_statements, may_fall_through

__all__ = ["AttrStore", "CallSite", "FunctionFacts", "ReturnPath", "Side", "SameScope",
           "block_facts", "evaluation_test", "function_facts", "on_side"]

#: The ``evaluation`` branch a return is on: ``"eval"``, ``"train"``, or None (both/unknown).
Side = Literal["eval", "train"] | None

FunctionNode = cst.FunctionDef | cst.Lambda


class SameScope(cst.CSTVisitor):
    """A visitor that stays in the scope it starts in: it does not descend into nested
    functions, lambdas or classes (the one definition every per-function walk derives from)."""

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class ReturnPath:
    """One ``return`` of a function and the ``evaluation`` side it is on."""

    node: cst.Return
    value: cst.BaseExpression | None
    side: Side


@dataclass(frozen=True, slots=True)
class CallSite:
    """A call in a function's own body and the nodes around it, innermost first, up to the
    statement that holds it."""

    node: cst.Call
    parents: tuple[cst.CSTNode, ...]
    #: The ``evaluation`` branch the call is on (see :class:`ReturnPath`).
    side: Side = None


@dataclass(frozen=True, slots=True)
class AttrStore:
    """``obj.attr = value`` (also ``+=``, ``setattr(obj, "attr", value)``)."""

    node: cst.CSTNode
    obj: cst.BaseExpression
    attr: str
    value: cst.BaseExpression | None
    #: The ``evaluation`` branch the store is on: a field set only under ``if evaluation:``
    #: is not set on the train path.
    side: Side = None


@dataclass(slots=True)
class FunctionFacts:
    """What one function's own body does (see the module docstring)."""

    #: The function (or, for :func:`block_facts`, the loop or comprehension) walked.
    fn: FunctionNode | cst.CSTNode
    returns: list[ReturnPath] = field(default_factory=list)
    yields: bool = False
    falls_through: bool = False
    #: Local name -> assigned expressions (None: bound without a visible value, a parameter).
    values: dict[str, list[cst.BaseExpression | None]] = field(default_factory=dict)
    #: ``name[key] = value`` stores: name -> values.
    subscript_values: dict[str, list[cst.BaseExpression]] = field(default_factory=dict)
    #: Values added to a local collection: ``name.append(v)``, ``.add(v)``, ``.insert(i, v)``,
    #: the elements of ``.extend([...])``: name -> values.
    appends: dict[str, list[cst.BaseExpression]] = field(default_factory=dict)
    #: Names read anywhere in the body.
    names: set[str] = field(default_factory=set)
    calls: list[CallSite] = field(default_factory=list)
    attr_stores: list[AttrStore] = field(default_factory=list)
    #: ``for``/comprehension loops: (target, iterable).
    loops: list[tuple[cst.BaseExpression, cst.BaseExpression]] = field(default_factory=list)
    #: Nested ``def`` statements by name.
    nested: dict[str, cst.FunctionDef] = field(default_factory=dict)
    #: ``try`` statements, and whether anything ``raise``s.
    tries: list[cst.Try] = field(default_factory=list)
    raises: bool = False
    #: ``name = value`` statements with a single plain-name target, in order.
    assigns: list[tuple[str, cst.Assign]] = field(default_factory=list)
    #: Every ``Name`` read, with the nodes around it (innermost first): how a value is used.
    name_uses: dict[str, list[tuple[cst.CSTNode, ...]]] = field(default_factory=dict)
    #: Every ``x.attr`` by attribute name, with the nodes around it (innermost first).
    attributes: dict[str, list[tuple[cst.Attribute, tuple[cst.CSTNode, ...]]]] = field(
        default_factory=dict)
    #: ``x["key"]`` by its constant string key, with the nodes around it (innermost first).
    subscripts: dict[str, list[tuple[cst.Subscript, tuple[cst.CSTNode, ...]]]] = field(
        default_factory=dict)
    #: The values of the string literals.
    strings: set[str] = field(default_factory=set)
    #: Binding statements in source order: ``(target, value, statement)`` for each target of
    #: ``=``, for ``x: T = v`` and for ``x += v`` (the statement tells them apart).
    bindings: list[tuple[cst.BaseExpression, cst.BaseExpression, cst.CSTNode]] = field(
        default_factory=list)
    #: ``await`` expressions, in source order.
    awaits: list[cst.Await] = field(default_factory=list)
    #: Dict display entries ``key: value``, in source order.
    dict_elements: list[cst.DictElement] = field(default_factory=list)
    #: ``for``/``while`` statements, in source order, with how many loops hold each (0: an
    #: outermost loop of the body).
    statement_loops: list[tuple[cst.For | cst.While, int]] = field(default_factory=list)
    #: Lambdas and classes in the body (their bodies are not walked here).
    lambdas: list[cst.Lambda] = field(default_factory=list)
    classes: list[cst.ClassDef] = field(default_factory=list)
    #: Source (pre-)order of the calls, attribute reads and constant-key subscripts:
    #: ``id(node)`` -> index.
    order: dict[int, int] = field(default_factory=dict)

    @property
    def is_async(self) -> bool:
        """True for an ``async def``."""
        return isinstance(self.fn, cst.FunctionDef) and self.fn.asynchronous is not None


_COLLECT = frozenset({"append", "extend", "add", "insert", "appendleft"})


def _elements(method: str, args: Sequence[cst.Arg]) -> list[cst.BaseExpression]:
    """The values a collecting call adds: ``append(x)``/``add(x)``/``appendleft(x)`` -> x,
    ``insert(i, x)`` -> x, ``extend([a, b])`` -> a, b, ``extend([f(y) for y in ys])`` -> f(y)
    (``extend(other)``: nothing the code shows)."""
    if method == "insert":
        return [args[1].value] if len(args) > 1 else []
    arg = args[0].value
    if method != "extend":
        return [arg]
    if isinstance(arg, cst.List):
        return [e.value for e in arg.elements if not isinstance(e, cst.StarredElement)]
    if isinstance(arg, cst.ListComp):
        return [arg.elt]
    return []


#: The node classes :meth:`_Walk.on_visit` records something for (each one's own branch).
_RECORDED = (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.Name, cst.Attribute,
             cst.SimpleString, cst.Subscript, cst.Await, cst.DictElement, cst.Call, cst.Return,
             cst.Yield, cst.Assign, cst.Try, cst.Raise, cst.AnnAssign, cst.AugAssign, cst.For,
             cst.While, cst.CompFor, cst.NamedExpr, cst.AsName)
#: type -> whether it is one of :data:`_RECORDED` (``isinstance``'s answer, kept per class:
#: most nodes of a body are whitespace, commas and operators, which no branch records).
_IS_RECORDED: dict[type, bool] = {}


class _Walk(cst.CSTVisitor):
    def __init__(self, facts: FunctionFacts, sides: dict[int, Side] | None = None) -> None:
        super().__init__()
        self.f = facts
        self.stack: list[cst.CSTNode] = []
        #: ``id(statement)`` -> its ``evaluation`` side (empty: no ``if evaluation:``).
        self.sides: dict[int, Side] = sides or {}

    def _side(self, node: cst.CSTNode | None = None) -> Side:
        """The ``evaluation`` side of the innermost statement around ``node`` (or the
        walk's current position)."""
        sides = self.sides
        if not sides:
            return None
        if node is not None and id(node) in sides:
            return sides[id(node)]
        for n in reversed(self.stack):
            if id(n) in sides:
                return sides[id(n)]
        return None

    def on_visit(self, node: cst.CSTNode) -> bool:
        kind = type(node)
        recorded = _IS_RECORDED.get(kind)
        if recorded is None:
            recorded = _IS_RECORDED[kind] = issubclass(kind, _RECORDED)
        if not recorded:
            self.stack.append(node)
            return True
        f = self.f
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            if isinstance(node, cst.FunctionDef):
                f.nested[node.name.value] = node
                self._bind(node.name, None)
            elif isinstance(node, cst.ClassDef):
                self._bind(node.name, None)
                f.classes.append(node)
            else:
                f.lambdas.append(node)
            return False
        if isinstance(node, cst.Name):
            f.names.add(node.value)
            f.name_uses.setdefault(node.value, []).append(tuple(reversed(self.stack)))
        elif isinstance(node, cst.Attribute):
            f.order[id(node)] = len(f.order)
            f.attributes.setdefault(node.attr.value, []).append(
                (node, tuple(reversed(self.stack))))
        elif isinstance(node, cst.SimpleString):
            value = node.evaluated_value
            if isinstance(value, str):
                f.strings.add(value)
        elif isinstance(node, cst.Subscript):
            key = _constant_key(node)
            if key is not None:
                f.order[id(node)] = len(f.order)
                f.subscripts.setdefault(key, []).append((node, tuple(reversed(self.stack))))
        elif isinstance(node, cst.Await):
            f.awaits.append(node)
        elif isinstance(node, cst.DictElement):
            f.dict_elements.append(node)
        elif isinstance(node, cst.Call):
            f.order[id(node)] = len(f.order)
            f.calls.append(CallSite(node, tuple(reversed(self.stack)), self._side()))
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in _COLLECT \
                    and isinstance(func.value, cst.Name) and node.args:
                f.appends.setdefault(func.value.value, []).extend(_elements(func.attr.value,
                                                                            node.args))
            elif isinstance(func, cst.Name) and func.value == "setattr" and len(node.args) >= 3:
                attr = node.args[1].value
                if isinstance(attr, cst.SimpleString) and isinstance(attr.evaluated_value, str):
                    f.attr_stores.append(AttrStore(node, node.args[0].value,
                                                   attr.evaluated_value, node.args[2].value,
                                                   self._side()))
        elif isinstance(node, cst.Return):
            f.returns.append(ReturnPath(node, node.value, self._side(node)))
        elif isinstance(node, (cst.Yield)):
            f.yields = True
        elif isinstance(node, cst.Assign):
            for t in node.targets:
                self._bind(t.target, node.value, node)
                f.bindings.append((t.target, node.value, node))
                if isinstance(t.target, cst.Name):
                    f.assigns.append((t.target.value, node))
        elif isinstance(node, cst.Try):
            f.tries.append(node)
        elif isinstance(node, cst.Raise):
            f.raises = True
        elif isinstance(node, cst.AnnAssign):
            self._bind(node.target, node.value, node)
            if node.value is not None:
                f.bindings.append((node.target, node.value, node))
        elif isinstance(node, cst.AugAssign):
            f.bindings.append((node.target, node.value, node))
            if isinstance(node.target, cst.Attribute):
                f.attr_stores.append(AttrStore(node, node.target.value, node.target.attr.value,
                                               None, self._side(node)))
            elif isinstance(node.target, cst.Name) \
                    and not isinstance(node.value, (cst.List, cst.ListComp)):
                self._bind(node.target, None)
        elif isinstance(node, cst.For):
            self._bind(node.target, None)
            f.loops.append((node.target, node.iter))
            f.statement_loops.append((node, self._loop_depth()))
        elif isinstance(node, cst.While):
            f.statement_loops.append((node, self._loop_depth()))
        elif isinstance(node, cst.CompFor):
            f.loops.append((node.target, node.iter))
        elif isinstance(node, cst.NamedExpr):
            self._bind(node.target, node.value)
        elif isinstance(node, cst.AsName):
            self._bind(node.name, None)
        self.stack.append(node)
        return True

    def _loop_depth(self) -> int:
        return sum(1 for n in self.stack if isinstance(n, (cst.For, cst.While)))

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if self.stack and self.stack[-1] is original_node:
            self.stack.pop()

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None,
              stmt: cst.CSTNode | None = None) -> None:
        f = self.f
        if isinstance(target, cst.Name):
            f.values.setdefault(target.value, []).append(value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._bind(el.value, None, stmt)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value, None, stmt)
        elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) \
                and value is not None:
            f.subscript_values.setdefault(target.value.value, []).append(value)
        elif isinstance(target, cst.Attribute):
            f.attr_stores.append(AttrStore(target, target.value, target.attr.value, value,
                                           self._side(stmt)))


def _constant_key(node: cst.Subscript) -> str | None:
    """The key of ``x["key"]`` (one constant string index), else None."""
    if len(node.slice) != 1:
        return None
    index = node.slice[0].slice
    if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
        value = index.value.evaluated_value
        return value if isinstance(value, str) else None
    return None


_FLAG = frozenset({"evaluation"})


def evaluation_test(test: cst.BaseExpression, flags: frozenset[str] = _FLAG) -> Side:
    """``"eval"`` for ``if evaluation:`` (``evaluation is True``), ``"train"`` for ``if not
    evaluation:``, else None. ``flags``: the names that hold the flag (``evaluation`` and its
    local aliases, see :func:`_flag_aliases`)."""
    if isinstance(test, cst.Name) and test.value in flags:
        return "eval"
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = evaluation_test(test.expression, flags)
        return None if inner is None else ("train" if inner == "eval" else "eval")
    if isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name) \
            and test.left.value in flags and len(test.comparisons) == 1:
        comp = test.comparisons[0]
        right = comp.comparator
        if isinstance(right, cst.Name) and right.value in ("True", "False") \
                and isinstance(comp.operator, (cst.Is, cst.Equal, cst.IsNot, cst.NotEqual)):
            positive = isinstance(comp.operator, (cst.Is, cst.Equal)) == (right.value == "True")
            return "eval" if positive else "train"
    return None


def on_side(where: Side, side: Side) -> bool:
    """True when something on the ``where`` side runs on the ``side`` path: the same side, or
    either unknown (both paths)."""
    return where is None or side is None or where == side


def _other(side: Side) -> Side:
    return None if side is None else ("train" if side == "eval" else "eval")


def _falls(suite: cst.BaseSuite | cst.If | cst.Else | None) -> bool:
    """True when control can leave ``suite`` (an ``else``/``elif`` one; none at all) at its end."""
    if suite is None or isinstance(suite, cst.If):
        return True
    return may_fall_through(suite.body if isinstance(suite, cst.Else) else suite)


class _Bindings(cst.CSTVisitor):
    """Every binding of a plain name in a function's own body: ``name -> [value or None]``
    (None: bound some other way than ``name = value``)."""

    def __init__(self) -> None:
        self.values: dict[str, list[cst.BaseExpression | None]] = {}

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if isinstance(target, cst.Name):
            self.values.setdefault(target.value, []).append(value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._bind(el.value, None)

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._bind(t.target, node.value if len(node.targets) == 1 else None)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target, None)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target, None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target, None)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind(node.asname.name, None)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # a nested function's names are its own

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


def _flag_aliases(fn: cst.FunctionDef) -> frozenset[str]:
    """``evaluation`` and the local names every binding of which is ``evaluation`` itself
    or ``bool(evaluation)`` (``is_eval = evaluation``), unless ``evaluation`` is rebound."""
    walk = _Bindings()
    fn.body.visit(walk)
    if "evaluation" in walk.values:
        return _FLAG

    def flag(v: cst.BaseExpression | None) -> bool:
        if isinstance(v, cst.Call) and isinstance(v.func, cst.Name) and v.func.value == "bool" \
                and len(v.args) == 1:
            v = v.args[0].value
        return isinstance(v, cst.Name) and v.value == "evaluation"

    return _FLAG | {name for name, values in walk.values.items() if all(map(flag, values))}


def _sided(stmts: Sequence[cst.BaseStatement | cst.BaseSmallStatement],
           side: Side, flags: frozenset[str] = _FLAG) -> Iterator[tuple[cst.CSTNode, Side]]:
    """Each statement under ``stmts`` (compound ones, lines and the small statements on them)
    with its ``evaluation`` side: the body of ``if evaluation:`` is on ``"eval"``, its
    ``else`` on ``"train"``; a branch that cannot fall through (``if evaluation: return
    ...``) puts the rest of the block on the other side."""
    rest = side
    for stmt in stmts:
        yield stmt, rest
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                yield small, rest
        elif isinstance(stmt, cst.If):
            branch = evaluation_test(stmt.test, flags)
            here = rest if branch is None else branch
            there = rest if branch is None else _other(branch)
            yield from _sided(body_statements(stmt.body), here, flags)
            if isinstance(stmt.orelse, cst.Else):
                yield from _sided(body_statements(stmt.orelse.body), there, flags)
            elif isinstance(stmt.orelse, cst.If):
                yield from _sided([stmt.orelse], there, flags)
            if branch is not None:
                body_falls, else_falls = _falls(stmt.body), _falls(stmt.orelse)
                if body_falls != else_falls:
                    rest = here if body_falls else there
        elif isinstance(stmt, (cst.For, cst.While, cst.With)):
            yield from _sided(body_statements(stmt.body), rest, flags)
            if isinstance(stmt, (cst.For, cst.While)) and stmt.orelse is not None:
                yield from _sided(body_statements(stmt.orelse.body), rest, flags)
        elif isinstance(stmt, cst.Try):
            yield from _sided(body_statements(stmt.body), rest, flags)
            for h in stmt.handlers:
                yield from _sided(body_statements(h.body), rest, flags)
            if stmt.orelse is not None:
                yield from _sided(body_statements(stmt.orelse.body), rest, flags)
            if stmt.finalbody is not None:
                yield from _sided(body_statements(stmt.finalbody.body), rest, flags)
        elif isinstance(stmt, cst.Match):
            for case in stmt.cases:
                yield from _sided(body_statements(case.body), rest, flags)


def block_facts(node: cst.CSTNode) -> FunctionFacts:
    """The same facts for one statement or expression (a loop, a comprehension) in its own
    scope: ``values`` names what it binds on each pass, ``nested`` the defs it holds."""
    facts = FunctionFacts(node)
    node.visit(_Walk(facts))
    return facts


def function_facts(fn: FunctionNode) -> FunctionFacts:
    """Walk ``fn``'s own body once (use :meth:`Semantic.facts`, which caches it per file)."""
    facts = FunctionFacts(fn)
    sides: dict[int, Side] = {}
    if isinstance(fn, cst.FunctionDef):
        sides = {id(n): s for n, s in _sided(body_statements(fn.body), None,
                                             _flag_aliases(fn))}
        if not any(sides.values()):
            sides = {}  # no ``if evaluation:`` branch: every statement is on both sides
    walker = _Walk(facts, sides)
    fn.body.visit(walker)
    params = fn.params
    for p in (*params.posonly_params, *params.params, *params.kwonly_params):
        facts.values.setdefault(p.name.value, []).append(None)
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            facts.values.setdefault(star.name.value, []).append(None)
    if isinstance(fn, cst.FunctionDef):
        facts.falls_through = may_fall_through(fn.body)
    return facts
