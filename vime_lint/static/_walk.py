"""Read-only LibCST traversals that do not rebuild the tree.

``CSTNode.visit`` always goes through the node's ``_visit_and_replace_children``, which
constructs a new copy of every node it passes (validated by ``__post_init__``) even for a
``CSTVisitor``, whose result is thrown away: one walk of a 300-line hook module cost about
16 ms, and the linter walks it three times (expression contexts, scopes, the rules) plus the
shared analysis' walks of each function (cProfile: ``_visit_and_replace_children``,
``visit_required``, ``on_visit_attribute`` at the top).

:func:`read_only_visits` makes ``CSTNode.visit`` walk a ``CSTVisitor`` over the children as
they are, with the same calls in the same order as LibCST's walk: ``on_visit``; for each
child field in the order its ``_visit_and_replace_children`` visits it, ``on_visit_attribute``,
the child (each element of a sequence), ``on_leave_attribute``; ``on_leave``; the node itself
returned. The field order is read once per node class from the source of that class's
``_visit_and_replace_children`` (keyword arguments in order); a class whose method does not
have the expected shape, and any ``CSTTransformer``, keeps LibCST's own walk. The attribute
callbacks are skipped only where the visitor is known to have none for that node class (a
visitor with LibCST's stock ``on_visit_attribute`` and no ``visit_<Node>_<field>`` /
``leave_<Node>_<field>`` method, or a batched traversal whose rules define none).

Usage::

    with read_only_visits():
        wrapper.visit_batched(rules)        # same callbacks, no copies

``tests/unit/static/test_walk.py`` checks the callback sequence against LibCST's walk on the
repository's own sources.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import libcst as cst

_BatchedCSTVisitor: type | None
try:
    from libcst._batched_visitor import _BatchedCSTVisitor
except ImportError:  # another LibCST layout: batched traversals make every attribute call
    _BatchedCSTVisitor = None

__all__ = ["child_fields", "read_only_visits"]

_HELPERS = frozenset({"visit_required", "visit_optional", "visit_sentinel", "visit_sequence",
                      "visit_iterable", "visit_body_sequence", "visit_body_iterable"})
_ORIGINAL = cst.CSTNode.visit
#: node class -> ((field, visited only when not None), ...) or None (LibCST's own walk)
_PLANS: dict[type, tuple[tuple[str, bool], ...] | None] = {}
#: (visitor class, node class) -> True when attribute callbacks must be made
_STOCK_ATTRS: dict[tuple[type, type], bool] = {}
_LOCK = threading.Lock()
_DEPTH = 0


def _field_of(arg: ast.expr, aliases: dict[str, str]) -> str | None:
    if (isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name)
            and arg.value.id == "self"):
        return arg.attr
    if isinstance(arg, ast.Name):
        return aliases.get(arg.id)
    return None


def _helper_field(call: ast.expr, aliases: dict[str, str]) -> str | None:
    """The field a ``visit_xxx(self, "field", self.field, visitor)`` call visits, else None."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            and call.func.id in _HELPERS and len(call.args) == 4 and not call.keywords):
        return None
    name = call.args[1]
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
        return None
    if _field_of(call.args[2], aliases) != name.value:
        return None
    return name.value


def _extract(cls: type) -> tuple[tuple[str, bool], ...] | None:
    """The child fields of ``cls`` in visiting order, from its ``_visit_and_replace_children``
    (None when its shape is not the one expected)."""
    owner = next((k for k in cls.__mro__ if "_visit_and_replace_children" in k.__dict__), None)
    if owner is None or owner is cst.CSTNode:
        return None
    try:
        src = textwrap.dedent(inspect.getsource(owner.__dict__["_visit_and_replace_children"]))
        fn = ast.parse(src).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        return None
    if not isinstance(fn, ast.FunctionDef):
        return None
    if (len(fn.body) == 1 and isinstance(fn.body[0], ast.Return)
            and isinstance(fn.body[0].value, ast.Name) and fn.body[0].value.id == "self"):
        return ()                           # a leaf: ``return self``
    aliases: dict[str, str] = {}
    call: ast.expr | None = None
    for stmt in fn.body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)):
            field = _field_of(stmt.value, {})
            if field is not None:           # names = self.names
                aliases[stmt.targets[0].id] = field
            elif call is None:              # ret = Node(...)
                call, aliases[stmt.targets[0].id] = stmt.value, ""
            else:
                return None
        elif isinstance(stmt, ast.Return) and stmt.value is not None:
            if isinstance(stmt.value, ast.Name) and aliases.get(stmt.value.id) == "":
                continue
            if call is not None:
                return None
            call = stmt.value
        else:
            return None
    if not (isinstance(call, ast.Call) and not call.args
            and ((isinstance(call.func, ast.Name) and call.func.id == cls.__name__)
                 or ast.unparse(call.func) == "self.__class__")):
        return None
    if not dataclasses.is_dataclass(cls) or (
            {k.arg for k in call.keywords} != {f.name for f in dataclasses.fields(cls)}):
        return None
    plan: list[tuple[str, bool]] = []
    for kw in call.keywords:
        value = kw.value
        if _field_of(value, aliases) == kw.arg:
            continue                        # passed through, not visited (a str, a flag)
        if kw.arg is None:                  # **kwargs: not a plain field list
            return None
        if _helper_field(value, aliases) == kw.arg:
            plan.append((kw.arg, False))
            continue
        if isinstance(value, ast.IfExp):    # visit_x(...) if cond else visit_y(...) / None
            branches = [b for b in (value.body, value.orelse)
                        if not (isinstance(b, ast.Constant) and b.value is None)]
            if not branches or any(_helper_field(b, aliases) != kw.arg for b in branches):
                return None
            test = value.test
            none_test = (isinstance(test, ast.Compare) and len(test.ops) == 1
                         and isinstance(test.ops[0], ast.IsNot)
                         and isinstance(test.comparators[0], ast.Constant)
                         and test.comparators[0].value is None
                         and _field_of(test.left, aliases) == kw.arg)
            if len(branches) == 1 and not none_test:
                return None
            plan.append((kw.arg, len(branches) == 1))
            continue
        return None
    return tuple(plan)


def child_fields(cls: type) -> tuple[tuple[str, bool], ...] | None:
    """``cls``'s child fields in LibCST's visiting order, each with True when it is visited
    only when not None (no attribute callbacks for None); None for a class walked by LibCST's
    own ``visit``."""
    try:
        return _PLANS[cls]
    except KeyError:
        plan = _PLANS[cls] = _extract(cls)
        return plan


_CALL = object()   # "call the visitor's own on_visit / on_leave"
_STOCK = cst.CSTVisitor
#: (visitor class, node class) -> how to walk it (see :func:`_how`)
_HOWS: dict[tuple[type, type], Any] = {}
#: type -> True for LibCST node classes (``isinstance`` against the ABC is slow)
_IS_NODE: dict[type, bool] = {}
_SENTINEL = type(cst.MaybeSentinel.DEFAULT)


def _real(vtype: type, name: str) -> Any:
    """The method ``name`` of ``vtype`` unless it is missing or one of LibCST's no-op stubs."""
    fn = getattr(vtype, name, None)
    return None if fn is None or getattr(fn, "_is_no_op", False) else fn


def _how(visitor: Any, cls: type) -> Any:
    """``(plan, on_visit, on_leave, attribute calls)`` for walking a ``cls`` node with
    ``visitor``, or False for LibCST's own walk. ``on_visit``/``on_leave`` are the visitor
    class's ``visit_<Node>``/``leave_<Node>`` (None: a no-op) when it keeps LibCST's stock
    dispatch, else ``_CALL``."""
    plan = child_fields(cls)
    vtype = type(visitor)
    if plan is None or not issubclass(vtype, cst.CSTVisitor):
        return False
    name = cls.__name__
    if _BatchedCSTVisitor is not None and vtype is _BatchedCSTVisitor:
        methods = visitor.visitor_methods
        attrs = any(f"visit_{name}_{f}" in methods or f"leave_{name}_{f}" in methods
                    for f, _ in plan)
        return plan, _CALL, _CALL, attrs
    on_visit = (_real(vtype, f"visit_{name}") if vtype.on_visit is _STOCK.on_visit
                else _CALL)
    on_leave = (_real(vtype, f"leave_{name}") if vtype.on_leave is _STOCK.on_leave
                else _CALL)
    if (vtype.on_visit_attribute is not _STOCK.on_visit_attribute
            or vtype.on_leave_attribute is not _STOCK.on_leave_attribute):
        attrs = True
    else:
        attrs = any(_real(vtype, f"visit_{name}_{f}") or _real(vtype, f"leave_{name}_{f}")
                    for f, _ in plan)
    return plan, on_visit, on_leave, attrs


def _visit(node: Any, visitor: Any) -> Any:
    vtype = type(visitor)
    if _BatchedCSTVisitor is not None and vtype is _BatchedCSTVisitor:
        hows = visitor.__dict__.setdefault("_vime_hows", {})   # per traversal: its rules
        key: Any = type(node)
    else:
        hows, key = _HOWS, (vtype, type(node))
    how = hows.get(key)
    if how is None:
        how = hows[key] = _how(visitor, type(node))
    if how is False:
        return _ORIGINAL(node, visitor)
    plan, on_visit, on_leave, attrs = how
    if on_visit is _CALL:
        go = visitor.on_visit(node)
    else:
        go = on_visit is None or on_visit(visitor, node) is not False
    if go:
        for name, only_set in plan:
            value = getattr(node, name)
            if only_set and value is None:
                continue
            if attrs:
                visitor.on_visit_attribute(node, name)
            t = type(value)
            if t is tuple or t is list:
                for child in value:
                    _visit(child, visitor)
            elif value is not None and t is not _SENTINEL:
                known = _IS_NODE.get(t)
                if known is None:
                    known = _IS_NODE[t] = issubclass(t, cst.CSTNode)
                if known:
                    _visit(value, visitor)  # never a Module (the one class with its own visit)
            if attrs:
                visitor.on_leave_attribute(node, name)
    if on_leave is _CALL:
        visitor.on_leave(node)
    elif on_leave is not None:
        on_leave(visitor, node)
    return node


@contextmanager
def read_only_visits() -> Iterator[None]:
    """Within this block, ``CSTNode.visit`` walks a ``CSTVisitor`` without copying the tree
    (the same callbacks in the same order; see the module docstring). Re-entrant; other
    threads see the same (equivalent) walk while any thread is inside."""
    global _DEPTH
    with _LOCK:
        if _DEPTH == 0:
            cst.CSTNode.visit = _visit  # type: ignore[method-assign,assignment]
        _DEPTH += 1
    try:
        yield
    finally:
        with _LOCK:
            _DEPTH -= 1
            if _DEPTH == 0:
                cst.CSTNode.visit = _ORIGINAL  # type: ignore[method-assign]
