"""Coroutines that never run: calls of async functions whose result nobody awaits.

A call of an ``async def`` returns a coroutine; its body runs only when something awaits it
or schedules it (``asyncio.gather``, ``create_task``, ``asyncio.run``, vime's ``run``). The
call is *consumed* when it sits under ``await``, inside the arguments of a scheduler (also
through a list, a comprehension, ``*args``), is returned or yielded, is passed to a function
the module does not show (which may await it), or is bound to a name (or collected into a
list with ``.append``) that is consumed in one of those ways later in the function. It is
*lost* when it is a bare statement (also as a comprehension statement), is used as a value
(``f().x``, ``f()[0]``, ``f() + 1``, ``if f():``, ``print(f())``), or is bound or collected
into a name that is never consumed.

Usage::

    for call, callee, problem in unawaited_calls(semantic, fn, owner):
        ...
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import libcst as cst

from vime.contract import SAMPLE_FIELD_NAMES
from vime_lint.static.analysis._functions import FunctionFacts

__all__ = ["SCHEDULERS", "unawaited_calls"]

#: Callables that run or schedule the coroutines they are given, by qualified name.
SCHEDULERS = frozenset({
    "asyncio.gather", "asyncio.create_task", "asyncio.ensure_future", "asyncio.wait",
    "asyncio.wait_for", "asyncio.shield", "asyncio.as_completed", "asyncio.run",
    "asyncio.run_coroutine_threadsafe", "asyncio.timeout", "asyncio.TaskGroup",
    "vime.utils.async_utils.run", "asyncio.tasks.gather", "asyncio.tasks.create_task",
})
#: Method names that schedule a coroutine on a loop or task group (``loop.create_task``).
_SCHEDULER_METHODS = frozenset({"create_task", "run_until_complete", "ensure_future",
                                "start_soon", "submit", "gather", "run"})
#: Builtins that use a value without running it.
_NON_CONSUMING = frozenset({"print", "len", "str", "repr", "bool", "int", "float", "list",
                            "tuple", "set", "dict", "sorted", "isinstance", "type", "id",
                            "hash", "format", "sum", "min", "max", "any", "all"})
_COLLECT = frozenset({"append", "extend", "add", "insert", "appendleft"})
_VIEWS = frozenset({"values", "items", "copy", "keys"})
_PASS_THROUGH = (cst.Arg, cst.List, cst.Tuple, cst.Set, cst.Element, cst.StarredElement,
                 cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp, cst.Dict,
                 cst.DictElement, cst.IfExp, cst.Comma, cst.LeftParen, cst.RightParen)
_VALUE_USE = (cst.Attribute, cst.Subscript, cst.BinaryOperation, cst.Comparison, cst.If,
              cst.While, cst.UnaryOperation, cst.BooleanOperation, cst.FormattedStringExpression,
              cst.Assert)

Qualifier = Callable[[cst.CSTNode], frozenset[str]]


def _call_kind(call: cst.Call, qualified: Qualifier) -> str:
    """``"scheduler"``, ``"collect:<name>"``, ``"builtin:<name>"`` or ``"unknown"``."""
    func = call.func
    if qualified(func) & SCHEDULERS:
        return "scheduler"
    if isinstance(func, cst.Attribute):
        if func.attr.value in _SCHEDULER_METHODS:
            return "scheduler"
        if func.attr.value in _COLLECT and isinstance(func.value, cst.Name):
            return f"collect:{func.value.value}"
        return "unknown"
    if isinstance(func, cst.Name):
        if func.value in ("gather", "create_task", "ensure_future", "run", "wait"):
            return "scheduler"
        if func.value in _NON_CONSUMING and qualified(func) <= {func.value,
                                                                "builtins." + func.value}:
            return f"builtin:{func.value}"
    return "unknown"


def _fate(node: cst.CSTNode, parents: Sequence[cst.CSTNode], qualified: Qualifier
          ) -> tuple[str, str]:
    """What happens to the value of ``node``: ``("ok", "")``, ``("lost", problem)``, or
    ``("bound", name)`` / ``("collected", name)`` when its fate depends on a name."""
    child = node
    for p in parents:
        if isinstance(p, (cst.Await, cst.Return, cst.Yield)):
            return "ok", ""
        if isinstance(p, cst.Call):
            if child is p.func:
                return "lost", "called as a function"
            kind = _call_kind(p, qualified)
            if kind == "scheduler" or kind == "unknown":
                return "ok", ""
            if kind.startswith("collect:"):
                return "collected", kind.partition(":")[2]
            return "lost", f"passed to `{kind.partition(':')[2]}()`, which does not await it"
        if isinstance(p, cst.Assign):
            targets = [t.target for t in p.targets]
            if len(targets) == 1 and isinstance(targets[0], cst.Name):
                return "bound", targets[0].value
            if len(targets) == 1 and isinstance(targets[0], cst.Attribute) \
                    and targets[0].attr.value in SAMPLE_FIELD_NAMES:
                return "lost", (f"stored in the Sample field `.{targets[0].attr.value}` without "
                                "`await`: the field holds a coroutine object, not the value")
            return "ok", ""
        if isinstance(p, (cst.AnnAssign, cst.NamedExpr)):
            t = p.target
            return ("bound", t.value) if isinstance(t, cst.Name) else ("ok", "")
        if isinstance(p, cst.Expr):
            return "lost", ("called without `await`: the coroutine is created and dropped, so "
                            "its body never runs")
        if isinstance(p, _VALUE_USE):
            return "lost", ("used as a value without `await`: the code gets a coroutine object, "
                            "not the result, and the body never runs")
        if isinstance(p, _PASS_THROUGH):
            child = p
            continue
        return "ok", ""
    return "ok", ""


def _name_consumed(name: str, facts: FunctionFacts, qualified: Qualifier, depth: int = 0) -> bool:
    """True when local ``name`` is awaited, scheduled, returned, iterated or handed on."""
    for parents in facts.name_uses.get(name, ()):
        if not parents:
            continue
        first = parents[0]
        if isinstance(first, cst.AssignTarget):
            continue  # the binding itself
        if isinstance(first, (cst.For, cst.CompFor)):
            return True  # iterated: each element may be awaited in the loop
        if isinstance(first, cst.Attribute):
            # coros.values() / tasks.copy() hand the coroutines on; tasks.append(...) does not
            if len(parents) > 2 and isinstance(parents[1], cst.Call) \
                    and parents[1].func is first and first.attr.value in _VIEWS:
                if _fate(parents[1], parents[2:], qualified)[0] == "ok":
                    return True
            continue
        state, other = _fate(cst.Name(name), parents, qualified)
        if state == "ok":
            return True
        if state in ("bound", "collected") and other != name and depth < 2 \
                and _name_consumed(other, facts, qualified, depth + 1):
            return True
    return False


#: Attributes of a list, dict or coroutine object: reading them is not using the result.
_OWN_ATTRS = _COLLECT | _VIEWS | frozenset({"clear", "pop", "remove", "close", "send", "throw",
                                            "cr_frame", "cr_running", "cr_code", "cr_await"})


def _attribute_read(name: str, facts: FunctionFacts) -> str:
    """``"x.status"`` when ``name``'s attributes are read as if it held the awaited result."""
    for parents in facts.name_uses.get(name, ()):
        if parents and isinstance(parents[0], cst.Attribute) \
                and parents[0].attr.value not in _OWN_ATTRS:
            return f"{name}.{parents[0].attr.value}"
    return ""


def unawaited_calls(facts: FunctionFacts, is_coroutine: Callable[[cst.Call], str | None],
                    qualified: Qualifier) -> list[tuple[cst.Call, str, str]]:
    """``(call, callee, problem)`` for each coroutine call in ``facts.fn`` that never runs.

    ``is_coroutine(call)`` names the async callee (``"fetch"``, ``"self.fetch"``) or is None.
    """
    out = []
    for site in facts.calls:
        callee = is_coroutine(site.node)
        if callee is None:
            continue
        state, detail = _fate(site.node, site.parents, qualified)
        if state == "lost":
            out.append((site.node, callee, detail))
        elif state == "bound" and _attribute_read(detail, facts):
            out.append((site.node, callee,
                        f"bound to `{detail}` and then read as the result "
                        f"(`{_attribute_read(detail, facts)}`) without `await`: it is a "
                        "coroutine object, and the body never runs"))
        elif state in ("bound", "collected") and not _name_consumed(detail, facts, qualified):
            how = "bound to" if state == "bound" else "collected into"
            out.append((site.node, callee,
                        f"{how} `{detail}`, which is never awaited or gathered, so the "
                        "coroutine never runs"))
    return out
