"""vime_lint.static._walk: the read-only walk makes LibCST's callbacks in LibCST's order, and
the linter's findings are the same with it as with LibCST's own (copying) walk."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import libcst as cst
import pytest

from vime_lint.static import _engine
from vime_lint.static._engine import lint_source
from vime_lint.static._model import LintOptions, options_from_mapping
from vime_lint.static._walk import child_fields, read_only_visits
from vime_lint.static.rules import ALL_RULES

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]

#: Syntax the repository's files may not all use: every kind of child field (optional,
#: sentinel, sequence, the conditional ``format_spec``, ``import *``, PEP 695 parameters).
SYNTAX = '''
from __future__ import annotations
import os.path as p, sys
from . import a as b, c
from .x import *
from y import (d, e,)
type Alias[T: int = str, *Ts, **P] = list[T]
@dec(1)
@other
async def f[T](a, /, b: int = 1, *args: T, c, d=2, **kw) -> T:
    global g
    x = lambda q, *r, s=1, **t: q
    async with open(a) as h, ctx():
        async for i in h:
            yield i
    await x
    nonlocal_ = [j async for j in h if j]
    y = {k: v for k, v in kw.items()}
    z = {*args, *b}
    w = {**kw, "a": 1}
    print(f"{a!r:>{b}} {c=} {d:{e}.{f}}", t"{a}")
    if (n := len(args)) > 1: pass
    elif n: ...
    else: del x, y[0], z.w
    try:
        raise ValueError from None
    except* (TypeError, ValueError) as err:
        pass
    try: pass
    except Exception: pass
    else: pass
    finally: return
    match a:
        case [1, 2, *rest] | {"k": v, **others} if rest: pass
        case Point(x=0, y=_) as pt: pass
        case None | True | -1 | 1 + 2j | "s" "t": pass
    assert a, "msg"
    a += 1; b @= c; c **= 2; d //= 3; e >>= 1; f <<= 1; g ^= 1; h |= 1; i &= 1; j %= 1
    k = not a and b or c is not d in e not in f != g <= h >= i < j > k == l
    l = ~a + -b - +c * d / e // f % g ** h @ i << j >> k & l | m ^ n
    m = a if b else c
    n = a[1:2:3, ..., ::]
    o: int
    p_: "str" = 'x' 'y'
    while True:
        break
    for q in r:
        continue
    else:
        pass
class C(Base, metaclass=M):
    """doc"""
    def method(self): return self
'''


class _Recorder(cst.CSTVisitor):
    """Records every callback (node, attribute) in order; does not descend into a ``return``
    (a visitor that returns False)."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.events.append(("visit", type(node).__name__, id(node)))
        return not isinstance(node, cst.Return)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.events.append(("leave", type(original_node).__name__, id(original_node)))

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.events.append(("visit_attr", type(node).__name__, attribute))

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        self.events.append(("leave_attr", type(original_node).__name__, attribute))


class _Stock(cst.CSTVisitor):
    """LibCST's stock dispatch with typed methods, attribute ones included."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []

    def visit_Name(self, node: cst.Name) -> None:
        self.events.append(("Name", id(node)))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.events.append(("def", id(node)))
        return node.name.value != "method"      # skip one body

    def leave_Call(self, original_node: cst.Call) -> None:
        self.events.append(("Call", id(original_node)))

    def visit_Call_func(self, node: cst.Call) -> None:
        self.events.append(("Call.func", id(node)))

    def leave_Attribute_attr(self, original_node: cst.Attribute) -> None:
        self.events.append(("Attribute.attr", id(original_node)))


def _sources() -> list[tuple[str, str]]:
    files = sorted([*(ROOT / "examples").rglob("*.py"), *(ROOT / "vime_lint" / "static").rglob("*.py"),
                    *(ROOT / "tests" / "unit" / "static" / "corpus").glob("*.py")])
    out = [("syntax", SYNTAX)]
    for f in files:
        text = f.read_text()
        if text.count("\n") < 5:
            continue                           # an empty __init__.py
        try:
            cst.parse_module(text)
        except cst.ParserSyntaxError:
            continue                           # examples/broken: not parsable on purpose
        out.append((str(f.relative_to(ROOT)), text))
    return out


SOURCES = _sources()


def test_every_node_class_has_a_plan() -> None:
    """Each concrete node class of this LibCST is walked without copies (none falls back)."""
    module = cst.parse_module(SYNTAX)
    seen: set[type] = set()

    class Types(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            seen.add(type(node))
            return True

    module.visit(Types())
    assert len(seen) > 100
    assert [c.__name__ for c in seen if child_fields(c) is None] == []
    assert child_fields(cst.FormattedStringExpression)[-1] == ("format_spec", True)


@pytest.mark.parametrize("visitor", [_Recorder, _Stock])
@pytest.mark.parametrize(("name", "text"), SOURCES, ids=[n for n, _ in SOURCES])
def test_same_callbacks_in_the_same_order(name: str, text: str, visitor: type) -> None:
    module = cst.parse_module(text)
    slow = visitor()
    assert module.visit(slow) is module
    fast = visitor()
    with read_only_visits():
        assert module.visit(fast) is module
        assert cst.CSTNode.visit is not cst.Module.visit
    assert fast.events == slow.events
    assert len(slow.events) > 10


def test_transformers_keep_libcsts_walk() -> None:
    class Rename(cst.CSTTransformer):
        def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
            return updated_node.with_changes(value=updated_node.value.upper())

    module = cst.parse_module("x = y + z\n")
    with read_only_visits():
        assert module.visit(Rename()).code == "X = Y + Z\n"
    original = cst.CSTNode.visit
    with read_only_visits(), read_only_visits():   # re-entrant, restored on the way out
        pass
    assert cst.CSTNode.visit is original


def _lint_both(text: str, options: LintOptions, fix: bool = False) -> tuple[Any, Any]:
    fast = lint_source(text, "case.py", options, rules=ALL_RULES, fix=fix, unsafe_fixes=fix)
    saved = _engine.read_only_visits
    _engine.read_only_visits = contextlib.nullcontext  # type: ignore[assignment]
    try:
        slow = lint_source(text, "case.py", options, rules=ALL_RULES, fix=fix,
                           unsafe_fixes=fix)
    finally:
        _engine.read_only_visits = saved  # type: ignore[assignment]
    return fast, slow


@pytest.mark.parametrize(("name", "text"), SOURCES, ids=[n for n, _ in SOURCES])
def test_same_findings_on_files(name: str, text: str) -> None:
    fast, slow = _lint_both(text, LintOptions())
    assert fast == slow


def test_same_findings_and_fixes_on_every_rule_case() -> None:
    compared = 0
    for rule in ALL_RULES:
        for case in [*rule.VALID, *rule.INVALID]:
            fast, slow = _lint_both(case.code, options_from_mapping(case.options), fix=True)
            assert fast == slow, (rule.code(), case.code)
            compared += 1
    assert compared > 100
