"""In-place writes of one module: which objects something changes after they are built.

One walk of the whole module (every scope) records the receiver of each in-place write:
``x[k] = v``, ``x[k] += v``, ``del x[k]``, and calls of mutating methods (``x.update(...)``,
``x.setdefault(...)``, ``x.append(...)``, ...). A receiver is kept as written, so both
``meta["k"] = 1`` (receiver ``meta``) and ``sample.train_metadata.update(d)`` (receiver
``sample.train_metadata``) can be asked about. Names bound to an attribute
(``d = sample.train_metadata``) that are then written count as writes of that attribute.

Usage::

    writes = InPlaceWrites(module)
    writes.name_written("meta")            # True: some scope writes into the object `meta` holds
    writes.attribute_written("train_metadata")   # True: `x.train_metadata[...] = ...` somewhere
"""

from __future__ import annotations

import libcst as cst

__all__ = ["MUTATING_METHODS", "InPlaceWrites"]

#: Methods of the builtin containers that change the object they are called on.
MUTATING_METHODS: frozenset[str] = frozenset({
    "update", "setdefault", "pop", "popitem", "clear", "append", "extend", "insert", "remove",
    "sort", "reverse", "add", "discard", "appendleft", "extendleft", "__setitem__",
    "__delitem__", "__ior__"})


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

    def _written(self, receiver: cst.BaseExpression) -> None:
        root = _root(receiver)
        if isinstance(root, cst.Name):
            self.out.names.add(root.value)
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

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Subscript):
            self._written(node.target.value)
        elif isinstance(node.target, cst.Name) and isinstance(node.operator, (
                cst.AddAssign, cst.BitOrAssign)):
            self.out.names.add(node.target.value)  # `x += [..]`, `d |= {...}` extend in place

    def visit_Del(self, node: cst.Del) -> None:
        self._targets(node.target)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in MUTATING_METHODS:
            self._written(func.value)


class InPlaceWrites:
    """The in-place writes of one module (see the module docstring); built by one walk."""

    def __init__(self, module: cst.Module) -> None:
        #: Root names of written receivers (``meta`` for ``meta["k"] = 1``).
        self.names: set[str] = set()
        #: Attribute names along written receivers (``train_metadata`` for
        #: ``s.train_metadata["k"] = 1``).
        self.attributes: set[str] = set()
        #: ``name = x.attr`` bindings: name -> attribute names.
        self.aliases: dict[str, set[str]] = {}
        module.visit(_Walk(self))

    def name_written(self, name: str) -> bool:
        """True when some scope writes into the object a name spelled ``name`` holds."""
        return name in self.names

    def attribute_written(self, attr: str) -> bool:
        """True when some scope writes into ``<anything>.attr``, directly or through a name
        bound to it."""
        if attr in self.attributes:
            return True
        return any(attr in attrs and name in self.names for name, attrs in self.aliases.items())
