"""Where one function of the module invokes the module's own functions and lambdas, and with what.

An *invocation* is a call the code shows, whatever its spelling:

- ``helper(x)``, ``self.method(x)`` (the method's ``self`` is not given), ``(lambda g: ...)(x)``;
- through ``functools.partial``: ``partial(helper, a, k=1)(x)``, or ``fill = partial(helper, a)``
  then ``fill(x)``; a partial that leaves the function (returned, handed to an executor) is an
  invocation with only its own arguments (``complete`` is False: the rest are not shown);
- a local name bound once to a lambda, then called (``score = lambda gs: ...; score(groups)``);
- callbacks given each element of an iterable: ``map(f, xs)``, ``filter(f, xs)``, the ``key=`` of
  ``sorted(xs, ...)``, ``min``/``max(xs, ...)`` and ``xs.sort(...)`` (:attr:`Arg.each`).

Calls inside the function's lambdas count as the function's own (their arguments are read in the
function's flow); nested ``def`` statements are functions of their own.

Usage::

    for inv in invocations(semantic, fn, owner):
        inv.callee, inv.argument(0, "groups")     # Arg(value=Name('groups'), each=False)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    from vime_lint.static.analysis import Semantic

__all__ = ["Arg", "AttrWrite", "Invocation", "Invocations", "ModuleAttributes", "invocations",
           "is_bound_method", "lambdas_of", "module_attributes"]

FunctionNode = cst.FunctionDef | cst.Lambda

#: Builtins that call their first argument with each element of their second (and later) ones.
_EACH_CALLS = frozenset({"builtins.map", "builtins.filter"})
#: Builtins whose ``key=`` gets each element of their (one) positional iterable.
_KEY_CALLS = frozenset({"builtins.sorted", "builtins.min", "builtins.max"})
_MAX_NESTING = 4


@dataclass(frozen=True, slots=True)
class Arg:
    """One argument: ``value``, or (``each``) every element of ``value`` in turn."""

    value: cst.BaseExpression
    each: bool = False


@dataclass(frozen=True, slots=True)
class Invocation:
    """One call of ``callee`` that ``caller``'s body shows (see the module docstring)."""

    caller: cst.FunctionDef
    callee: FunctionNode
    positional: tuple[Arg, ...]
    keywords: tuple[tuple[str, Arg], ...]
    #: The callee's first parameter is the instance (``self.method(...)``), not an argument.
    bound: bool = False
    #: ``*args``/``**kwargs`` at the call: which argument lands where is not known.
    starred: bool = False
    #: False for a partial that leaves the function: only its own positional arguments are known.
    complete: bool = True
    #: The comprehensions around the call (outermost first): their targets shadow the names
    #: of the function.
    comps: tuple[cst.CompFor, ...] = ()

    def argument(self, index: int, name: str) -> Arg | None:
        """What the callee's positional parameter ``index`` (``name``; the instance counts as
        parameter 0 of a bound method) is given, else None (not shown, a default, unknown)."""
        if self.starred:
            return None
        pos = index - 1 if self.bound else index
        if pos < 0:
            return None
        if pos < len(self.positional):
            return self.positional[pos]
        if not self.complete:
            return None
        return next((a for k, a in self.keywords if k == name), None)


def is_bound_method(fn: cst.FunctionDef) -> bool:
    """A ``def`` in a class body that is not a ``staticmethod``: its first parameter is bound."""
    return not any(isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod"
                   for d in fn.decorators)


def lambdas_of(semantic: Semantic, fn: FunctionNode) -> Iterator[cst.Lambda]:
    """The lambdas of ``fn``'s body, those nested in lambdas included (outermost first)."""
    todo = list(semantic.facts(fn).lambdas)
    i = 0
    while i < len(todo) and i < 256:
        yield todo[i]
        todo += semantic.facts(todo[i]).lambdas
        i += 1


@dataclass(frozen=True, slots=True)
class _Target:
    callee: FunctionNode
    positional: tuple[Arg, ...] = ()
    keywords: tuple[tuple[str, Arg], ...] = ()
    bound: bool = False
    starred: bool = False
    #: The local name the callable was reached through (a bound partial or lambda), if any.
    via: str | None = None


class _Finder:
    def __init__(self, semantic: Semantic, fn: cst.FunctionDef,
                 owner: cst.ClassDef | None) -> None:
        self.semantic = semantic
        self.fn = fn
        self.owner = owner
        self.facts = semantic.facts(fn)
        #: Local names bound once to a partial or a lambda: name -> its value.
        self.bound_callables: dict[str, cst.BaseExpression] = {}
        for name, values in self.facts.values.items():
            if len(values) == 1 and isinstance(values[0], (cst.Lambda, cst.Call)) \
                    and name not in self.facts.nested:
                value = values[0]
                if isinstance(value, cst.Lambda) or self._is_partial(value):
                    self.bound_callables[name] = value
        #: Uses of those names that are calls or callbacks (counted against all their uses).
        self.consumed: dict[str, int] = {}
        #: ``partial(...)`` calls consumed (called at once, given to map, bound to a name).
        self.used_partials: set[int] = set()
        #: Bound lambdas and partials whose name is also used otherwise.
        self.escaped: set[int] = set()
        #: ``x.method`` attributes resolved to a function: id(attribute) -> the function.
        self.resolved_attrs: dict[int, FunctionNode] = {}
        #: Names resolved to a function of the module (called, partial'd, a callback): ids.
        self.resolved_names: set[int] = set()
        #: The comprehensions around the call being read (see :attr:`Invocation.comps`).
        self.comps: tuple[cst.CompFor, ...] = ()

    def _is_partial(self, call: cst.Call) -> bool:
        return bool(call.args) and "functools.partial" in self.semantic.qualified(call.func)

    def resolve(self, func: cst.BaseExpression, depth: int = 0) -> _Target | None:
        """What calling ``func`` runs, with the arguments a partial binds."""
        if depth > _MAX_NESTING:
            return None
        if isinstance(func, cst.Lambda):
            return _Target(func)
        if isinstance(func, cst.Call) and self._is_partial(func):
            inner = self.resolve(func.args[0].value, depth + 1)
            if inner is None or func.args[0].star:
                return None
            self.used_partials.add(id(func))
            rest = func.args[1:]
            return _Target(
                inner.callee,
                inner.positional + tuple(Arg(a.value) for a in rest
                                         if a.keyword is None and not a.star),
                inner.keywords + tuple((a.keyword.value, Arg(a.value)) for a in rest
                                       if a.keyword is not None),
                inner.bound, inner.starred or any(a.star for a in rest), inner.via)
        if isinstance(func, cst.Name) and func.value in self.bound_callables:
            inner = self.resolve(self.bound_callables[func.value], depth + 1)
            if inner is None:
                return None
            return _Target(inner.callee, inner.positional, inner.keywords, inner.bound,
                           inner.starred, func.value)
        if isinstance(func, (cst.Name, cst.Attribute)):
            target = self.semantic.callee_of(func, self.fn, self.owner)
            if target is None:
                return None
            bound = isinstance(func, cst.Attribute) and is_bound_method(target)
            if isinstance(func, cst.Attribute):
                self.resolved_attrs[id(func)] = target
            else:
                self.resolved_names.add(id(func))
            return _Target(target, bound=bound)
        return None

    def _invocation(self, target: _Target, args: tuple[Arg, ...],
                    keywords: tuple[tuple[str, Arg], ...], starred: bool) -> Invocation:
        if target.via is not None:
            self.consumed[target.via] = self.consumed.get(target.via, 0) + 1
        return Invocation(self.fn, target.callee, target.positional + args,
                          target.keywords + keywords, target.bound, target.starred or starred,
                          comps=self.comps)

    def of_call(self, call: cst.Call) -> Iterator[Invocation]:
        target = self.resolve(call.func)
        if target is not None:
            yield self._invocation(
                target, tuple(Arg(a.value) for a in call.args if a.keyword is None and not a.star),
                tuple((a.keyword.value, Arg(a.value)) for a in call.args if a.keyword is not None),
                any(a.star for a in call.args))
        qualified = self.semantic.qualified(call.func)
        plain = [a for a in call.args if a.keyword is None]
        if qualified & _EACH_CALLS and len(plain) >= 2 and not any(a.star for a in call.args):
            target = self.resolve(plain[0].value)
            if target is not None:
                yield self._invocation(target, tuple(Arg(a.value, True) for a in plain[1:]),
                                       (), False)
        key = next((a.value for a in call.args if a.keyword is not None
                    and a.keyword.value == "key"), None)
        if key is None:
            return
        iterable: cst.BaseExpression | None = None
        if qualified & _KEY_CALLS and len(plain) == 1 and not plain[0].star:
            iterable = plain[0].value
        elif isinstance(call.func, cst.Attribute) and call.func.attr.value == "sort" \
                and not plain:
            iterable = call.func.value
        if iterable is not None:
            target = self.resolve(key)
            if target is not None:
                yield self._invocation(target, (Arg(iterable, True),), (), False)

    def run(self) -> list[Invocation]:
        out: list[Invocation] = []
        sites = list(self.facts.calls)
        for lam in lambdas_of(self.semantic, self.fn):
            sites += self.semantic.facts(lam).calls
        for site in sites:
            self.comps = tuple(p.for_in for p in reversed(site.parents)
                               if isinstance(p, (cst.ListComp, cst.SetComp, cst.GeneratorExp,
                                                 cst.DictComp)))
            out += self.of_call(site.node)
        self.comps = ()
        # A bound partial whose name is also used otherwise, or a partial that is never
        # consumed here: an invocation with only its own arguments.
        for site in sites:
            call = site.node
            if not self._is_partial(call) or id(call) in self.used_partials:
                continue
            target = self.resolve(call)
            if target is not None:
                out.append(Invocation(self.fn, target.callee, target.positional,
                                      target.keywords, target.bound, target.starred,
                                      complete=False))
        for name, value in self.bound_callables.items():
            if self.consumed.get(name, 0) < self._uses(name):
                self.escaped.add(id(value))
                if isinstance(value, cst.Call):
                    target = self.resolve(value)
                    if target is not None:
                        out.append(Invocation(self.fn, target.callee, target.positional,
                                              target.keywords, target.bound, target.starred,
                                              complete=False))
        return out

    def _uses(self, name: str) -> int:
        """Reads of ``name`` in the function and its lambdas (a nested ``def`` that mentions
        it counts as many)."""
        reads = len(self.facts.name_uses.get(name, [])) - len(self.facts.values.get(name, []))
        for lam in lambdas_of(self.semantic, self.fn):
            reads += len(self.semantic.facts(lam).name_uses.get(name, []))
        if any(self.semantic.mentions(d, name) for d in self.facts.nested.values()):
            reads += 1 << 16
        return reads


@dataclass(frozen=True, slots=True)
class Invocations:
    """What :func:`invocations` finds in one function."""

    found: list[Invocation]
    #: Lambdas and partials bound to a local name that is also used otherwise (they leave the
    #: function: their parameters may get anything): their ids.
    escaped: frozenset[int]
    #: ``self.method`` attributes resolved to a method of the module: id(attribute) -> method.
    resolved_attrs: dict[int, FunctionNode]
    #: Ids of the ``Name`` nodes resolved to a function of the module.
    resolved_names: frozenset[int]
    finder: _Finder

    def callable_of(self, func: cst.BaseExpression) -> FunctionNode | None:
        """The module's function or lambda that calling ``func`` runs, else None."""
        target = self.finder.resolve(func)
        return target.callee if target is not None else None


def invocations(semantic: Semantic, fn: cst.FunctionDef,
                owner: cst.ClassDef | None) -> Invocations:
    """The invocations ``fn``'s body (its lambdas included) shows: see the module docstring."""
    finder = _Finder(semantic, fn, owner)
    found = finder.run()
    return Invocations(found, frozenset(finder.escaped), dict(finder.resolved_attrs),
                       frozenset(finder.resolved_names), finder)


@dataclass(frozen=True, slots=True)
class AttrWrite:
    """One write of an attribute ``obj.attr`` anywhere in the module: ``kind`` is ``"store"``
    (``=``, ``setattr``: ``value``), ``"grow"`` (``+=``, ``.extend(value)``), ``"add"``
    (``.append(value)``, ``.insert(i, value)``) or ``"other"`` (an element store, a ``for``
    target, another operator: the value is not shown); ``fn`` is the innermost ``def`` or
    lambda around it (None: a class body or the module)."""

    attr: str
    obj: cst.BaseExpression
    kind: str
    value: cst.BaseExpression | None
    fn: FunctionNode | None


class _Attributes(cst.CSTVisitor):
    """Every ``x.attr`` of the module (how many, by name) and every write of one."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: dict[str, int] = {}
        self.writes: dict[str, list[AttrWrite]] = {}
        self.fns: list[FunctionNode] = []

    def _write(self, target: cst.BaseExpression, kind: str,
               value: cst.BaseExpression | None) -> None:
        fn = self.fns[-1] if self.fns else None
        if isinstance(target, cst.Attribute):
            self.writes.setdefault(target.attr.value, []).append(
                AttrWrite(target.attr.value, target.value, kind, value, fn))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._write(el.value, "other", None)
        elif isinstance(target, cst.StarredElement):
            self._write(target.value, "other", None)
        elif isinstance(target, cst.Subscript):
            self._write(target.value, "other", None)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.fns.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.fns.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.fns.append(node)

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.fns.pop()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.refs[node.attr.value] = self.refs.get(node.attr.value, 0) + 1

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._write(t.target, "store", node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._write(node.target, "store", node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        grow = isinstance(node.operator, cst.AddAssign)
        self._write(node.target, "grow" if grow else "other", node.value if grow else None)

    def visit_For(self, node: cst.For) -> None:
        self._write(node.target, "other", None)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._write(node.target, "other", None)

    def visit_AsName(self, node: cst.AsName) -> None:
        if isinstance(node.name, cst.BaseExpression):
            self._write(node.name, "other", None)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Name) and func.value == "setattr" and len(node.args) >= 3:
            attr = node.args[1].value
            name = attr.evaluated_value if isinstance(attr, cst.SimpleString) else None
            fn = self.fns[-1] if self.fns else None
            if isinstance(name, str):
                self.writes.setdefault(name, []).append(
                    AttrWrite(name, node.args[0].value, "store", node.args[2].value, fn))
            return
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Attribute) \
                and node.args:
            method = func.attr.value
            kind = {"extend": "grow", "append": "add", "insert": "add",
                    "__setitem__": "other", "__iadd__": "grow"}.get(method)
            if kind is not None:
                value = node.args[-1].value if method in ("insert", "__setitem__") \
                    else node.args[0].value
                self._write(func.value, kind, value if kind != "other" else None)


@dataclass(frozen=True, slots=True)
class ModuleAttributes:
    """How many times each attribute name is spelled (``x.name``) in the module, and every
    write of one (:class:`AttrWrite`)."""

    refs: dict[str, int]
    writes: dict[str, list[AttrWrite]]


def module_attributes(module: cst.Module) -> ModuleAttributes:
    """One walk of ``module`` (use :attr:`Semantic.attributes`, which caches it)."""
    walker = _Attributes()
    module.visit(walker)
    return ModuleAttributes(walker.refs, walker.writes)
