"""In-place writes of one module: which objects something changes after they are built.

One walk of the whole module (every scope) records the receiver of each in-place write:
``x[k] = v``, ``x[k] += v``, ``del x[k]``, ``x += [...]``, and calls of mutating methods
(``x.update(...)``, ``x.setdefault(...)``, ``x.append(...)``, ...). A receiver is kept as
written, so both ``meta["k"] = 1`` (receiver ``meta``) and ``sample.train_metadata.update(d)``
(receiver ``sample.train_metadata``) can be asked about.

Writes are matched to *variables*, not spellings: a name is the variable LibCST's scope
analysis binds it to (a local of one function, a module-level name, a parameter), so a
``meta`` written in another function is another object. A variable is written when

- a write's receiver is rooted at it (``meta["k"] = 1``, ``meta.pop("k")``);
- a name bound to it is written (``alias = meta; alias["k"] = 1``), transitively;
- it is passed to a function of the module that writes the matching parameter
  (``mark(meta)`` with ``def mark(d): d["seen"] = True``), up to three calls deep.

Names bound to an attribute (``d = sample.train_metadata``) that are then written count as
writes of that attribute.

Usage::

    writes = InPlaceWrites(module, scopes)
    writes.object_written(name_node)             # the object this Name holds is written
    writes.attribute_written("train_metadata")   # True: `x.train_metadata[...] = ...` somewhere
"""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst
from libcst.metadata import Scope

__all__ = ["MUTATING_METHODS", "InPlaceWrites"]

#: Methods of the builtin containers that change the object they are called on.
MUTATING_METHODS: frozenset[str] = frozenset({
    "update", "setdefault", "pop", "popitem", "clear", "append", "extend", "insert", "remove",
    "sort", "reverse", "add", "discard", "appendleft", "extendleft", "__setitem__",
    "__delitem__", "__ior__"})

#: A variable: (id of the scope that binds it, its name); scope id 0 when nothing binds it.
Variable = tuple[int, str]

_MAX_CALL_DEPTH = 3


def _root(expr: cst.BaseExpression) -> cst.BaseExpression:
    cur = expr
    while isinstance(cur, (cst.Attribute, cst.Subscript)):
        cur = cur.value
    return cur


def _attrs(expr: cst.BaseExpression) -> set[str]:
    """The attribute names along ``expr``'s chain (``a.b[0].c`` -> {"b", "c"})."""
    out: set[str] = set()
    cur = expr
    while isinstance(cur, (cst.Attribute, cst.Subscript)):
        if isinstance(cur, cst.Attribute):
            out.add(cur.attr.value)
        cur = cur.value
    return out


class _Walk(cst.CSTVisitor):
    def __init__(self, out: InPlaceWrites) -> None:
        super().__init__()
        self.out = out
        self.functions: list[cst.FunctionDef] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.functions.pop()

    def _written(self, receiver: cst.BaseExpression) -> None:
        root = _root(receiver)
        if isinstance(root, cst.Name):
            self.out.names.add(root.value)
            self.out.roots.append(root)
        self.out.attributes |= _attrs(receiver)

    def _targets(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Subscript):
            self._written(target.value)
        elif isinstance(target, cst.Attribute):
            self._written(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._targets(el.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._targets(t.target)
            if isinstance(t.target, cst.Name) and isinstance(node.value, cst.Attribute):
                self.out.aliases.setdefault(t.target.value, set()).add(node.value.attr.value)
            if isinstance(t.target, cst.Name) and isinstance(node.value, cst.Name):
                self.out.copies.append((t.target, node.value))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Subscript):
            self._written(node.target.value)
        elif isinstance(node.target, cst.Name) and isinstance(node.operator, (
                cst.AddAssign, cst.BitOrAssign)):
            self._written(node.target)  # `x += [..]`, `d |= {...}` extend in place

    def visit_Del(self, node: cst.Del) -> None:
        self._targets(node.target)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in MUTATING_METHODS:
            self._written(func.value)
        if isinstance(func, cst.Name):
            for i, a in enumerate(node.args):
                if a.star or not isinstance(a.value, cst.Name):
                    continue
                slot: int | str = a.keyword.value if a.keyword is not None else i
                self.out.passed.append((func, slot, a.value))


class InPlaceWrites:
    """The in-place writes of one module (see the module docstring); built by one walk."""

    def __init__(self, module: cst.Module,
                 scopes: Mapping[cst.CSTNode, Scope | None] | None = None) -> None:
        self._scopes: Mapping[cst.CSTNode, Scope | None] = scopes or {}
        #: Root names of written receivers (``meta`` for ``meta["k"] = 1``).
        self.names: set[str] = set()
        #: The root ``Name`` node of each written receiver.
        self.roots: list[cst.Name] = []
        #: Attribute names along written receivers (``train_metadata`` for
        #: ``s.train_metadata["k"] = 1``).
        self.attributes: set[str] = set()
        #: ``name = x.attr`` bindings: name -> attribute names.
        self.aliases: dict[str, set[str]] = {}
        #: ``a = b`` bindings: (target, value).
        self.copies: list[tuple[cst.Name, cst.Name]] = []
        #: Names passed to a called name: (callee, position or keyword, argument).
        self.passed: list[tuple[cst.Name, int | str, cst.Name]] = []
        #: Module-level ``def`` statements by name (the callees a write can go through).
        self.functions: dict[str, cst.FunctionDef] = {
            s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef)}
        module.visit(_Walk(self))
        self._written: set[Variable] | None = None

    def variables(self, name: cst.Name) -> frozenset[Variable]:
        """The variables ``name`` may be, as seen where it is used (several when a name is
        bound in more than one scope that reaches it; ``(0, name)`` when nothing binds it)."""
        scope = self._scopes.get(name)
        if scope is None:
            return frozenset({(0, name.value)})
        try:
            found = frozenset((id(a.scope), a.name) for a in scope[name.value])
        except Exception:  # noqa: BLE001 - LibCST raises on odd nodes; read as unbound
            found = frozenset()
        return found or frozenset({(0, name.value)})

    def _param_variable(self, fn: cst.FunctionDef, slot: int | str) -> Variable | None:
        params = fn.params
        positional = [*params.posonly_params, *params.params]
        param: cst.Param | None = None
        if isinstance(slot, int):
            param = positional[slot] if slot < len(positional) else None
        else:
            param = next((p for p in (*positional, *params.kwonly_params)
                          if p.name.value == slot), None)
        if param is None:
            return None
        scope = self._scopes.get(param.name)
        return (id(scope), param.name.value) if scope is not None else None

    def _compute(self) -> set[Variable]:
        written: set[Variable] = set()
        for root in self.roots:
            written |= self.variables(root)
        # Through callees that write a parameter, then through aliases; to a fixpoint.
        for _ in range(_MAX_CALL_DEPTH + len(self.copies) + 1):
            before = len(written)
            for func, slot, arg in self.passed:
                fn = self.functions.get(func.value)
                if fn is None or self.variables(func) != self.variables(fn.name):
                    continue
                param = self._param_variable(fn, slot)
                if param is not None and param in written:
                    written |= self.variables(arg)
            for target, value in self.copies:  # `a = b`: one object under two names
                if self.variables(target) & written:
                    written |= self.variables(value)
                elif self.variables(value) & written:
                    written |= self.variables(target)
            if len(written) == before:
                break
        return written

    def object_written(self, name: cst.Name) -> bool:
        """True when some scope writes into the object the variable ``name`` holds: directly,
        through a name bound to it, or through a function of the module given it."""
        if self._written is None:
            self._written = self._compute()
        return bool(self.variables(name) & self._written)

    def name_written(self, name: str) -> bool:
        """True when some scope writes into the object a name spelled ``name`` holds (by
        spelling, whatever the scope: prefer :meth:`object_written`)."""
        return name in self.names

    def attribute_written(self, attr: str) -> bool:
        """True when some scope writes into ``<anything>.attr``, directly or through a name
        bound to it."""
        if attr in self.attributes:
            return True
        return any(attr in attrs and name in self.names for name, attrs in self.aliases.items())
