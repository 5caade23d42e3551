"""What code runs when vime calls a hook: the binding of a module-level name, resolved.

A hook name may be bound by ``def``/``async def``, by an instance of a class with
``__call__`` (plain or async), by a module-level ``lambda``, by ``functools.partial(f, ...)``,
by a decorated function (the decorator's wrapper, with or without ``functools.wraps``), by a
call of a decorator (``hook = timed(_impl)``), by a method of an instance
(``generate_rollout = Runner().run``, or of a module-level name bound to one), or by an alias
(``generate_rollout = _impl``).
:func:`resolve_target` follows those forms (up to five steps) to the function whose parameters
vime's call binds and whose body runs.

Usage::

    target = resolve_target("generate_rollout", symbols, names)
    target.function, target.params, target.is_async, target.via
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import libcst as cst

from vime.contract import Param
from vime_lint.static._cst import params_of
from vime_lint.static.analysis._functions import function_facts
from vime_lint.static.analysis._names import Names, spelled

__all__ = ["HookTarget", "has_wraps", "module_symbols", "resolve_target", "wrapper_of"]

_MAX_STEPS = 5

#: Module-level name -> its binding statement: a def/class, or the value of ``name = value``.
Symbol = cst.FunctionDef | cst.ClassDef | cst.BaseExpression


@dataclass(frozen=True, slots=True)
class HookTarget:
    """The code a hook name runs, and how the name reaches it."""

    #: The module-level name.
    name: str
    #: The function whose body runs (a ``def``, a ``__call__``/``__init__`` method, a lambda),
    #: or None when the module does not show it (an import, an unknown factory).
    function: cst.FunctionDef | cst.Lambda | None
    #: Where to report problems with the binding (the ``def`` name, the assignment's value).
    node: cst.CSTNode
    #: The parameters vime's call binds (``self`` and ``functools.partial``'s arguments removed).
    params: tuple[Param, ...]
    #: True when the callable vime gets returns a coroutine.
    is_async: bool
    #: How the name reaches ``function``: ``""`` for a plain ``def``, else e.g. "an instance of
    #: `Runner` (its `__call__`)", "functools.partial of `_impl`", "an alias of `_impl`".
    via: str = ""
    #: A lambda or partial: not importable by qualified name (VIM015).
    unpicklable: str = ""
    #: The class whose method ``function`` is (``__call__``/``__init__``), else None.
    owner: cst.ClassDef | None = None


def module_symbols(module: cst.Module) -> dict[str, Symbol]:
    """Module-level names bound by ``def``, ``class`` or a single-target assignment (the last
    binding wins, as at import time)."""
    out: dict[str, Symbol] = {}
    for stmt in module.body:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            out[stmt.name.value] = stmt
        elif isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1 \
                        and isinstance(small.targets[0].target, cst.Name):
                    out[small.targets[0].target.value] = small.value
                elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) \
                        and small.value is not None:
                    out[small.target.value] = small.value
    return out


def method(cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    """The ``def name`` in ``cls``'s own body, else None."""
    if isinstance(cls.body, cst.IndentedBlock):
        for stmt in cls.body.body:
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value == name:
                return stmt
    return None


def _is_partial(call: cst.Call, names: Names) -> bool:
    return "functools.partial" in names.qualified(call.func) or (
        not names.is_bound(call.func) and spelled(call.func) in ("partial", "functools.partial"))


def wrapper_of(decorator: cst.FunctionDef) -> cst.FunctionDef | None:
    """The nested function a decorator ``def deco(fn): def wrapper(...): ...; return wrapper``
    returns, else None."""
    facts = function_facts(decorator)
    for r in facts.returns:
        if isinstance(r.value, cst.Name) and r.value.value in facts.nested:
            return facts.nested[r.value.value]
    return None


def has_wraps(fn: cst.FunctionDef, names: Names) -> bool:
    for d in fn.decorators:
        expr = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
        if "functools.wraps" in names.qualified(expr) or spelled(expr) in ("wraps",
                                                                           "functools.wraps"):
            return True
    return False


def _forwards(wrapper: cst.FunctionDef) -> bool:
    """True when the wrapper takes ``*args``/``**kwargs`` (it forwards whatever it gets)."""
    return isinstance(wrapper.params.star_arg, cst.Param) or wrapper.params.star_kwarg is not None


def _decorated(name: str, fn: cst.FunctionDef, node: cst.CSTNode, decorators: list[
        cst.BaseExpression], symbols: Mapping[str, Symbol], names: Names) -> HookTarget:
    params = tuple(params_of(fn))
    is_async = fn.asynchronous is not None
    via = ""
    for expr in reversed(decorators):  # the decorator nearest the def applies first
        callee = expr.func if isinstance(expr, cst.Call) else expr
        label = spelled(callee) or "a decorator"
        deco = symbols.get(label) if isinstance(callee, cst.Name) else None
        if isinstance(deco, cst.FunctionDef) and not isinstance(expr, cst.Call):
            wrapper = wrapper_of(deco)
            if wrapper is not None:
                wraps = has_wraps(wrapper, names)
                is_async = wrapper.asynchronous is not None
                if not _forwards(wrapper):
                    params = tuple(params_of(wrapper))
                via = (f"decorated by `{label}` (vime calls its wrapper `{wrapper.name.value}`"
                       f"{', with functools.wraps' if wraps else ', without functools.wraps'})")
                continue
        via = via or f"decorated by `{label}`"
    return HookTarget(name, fn, node, params, is_async, via)


def _instance_of(expr: cst.BaseExpression, symbols: Mapping[str, Symbol]) -> cst.ClassDef | None:
    """The module's class ``expr`` is an instance of: ``Cls(...)``, or a module-level name
    bound to one; else None."""
    if isinstance(expr, cst.Name):
        bound = symbols.get(expr.value)
        expr = bound if isinstance(bound, cst.Call) else expr
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name):
        cls = symbols.get(expr.func.value)
        return cls if isinstance(cls, cst.ClassDef) else None
    return None


def _decorated_static(fn: cst.FunctionDef) -> bool:
    """True when ``fn`` is a ``staticmethod``/``classmethod``/``property`` (its first
    parameter is not the instance)."""
    return any(isinstance(d.decorator, cst.Name)
               and d.decorator.value in ("staticmethod", "classmethod", "property")
               for d in fn.decorators)


def resolve_target(name: str, symbols: Mapping[str, Symbol], names: Names,
                   class_hook: bool = False) -> HookTarget | None:
    """The code that module-level ``name`` runs when called (None: not bound in the module).

    With ``class_hook`` a class resolves to its ``__init__`` (a class hook is instantiated);
    otherwise an instance resolves to its class's ``__call__``.
    """
    sym = symbols.get(name)
    if sym is None:
        return None
    return _resolve(name, sym, symbols, names, class_hook, 0)


def _resolve(name: str, sym: Symbol, symbols: Mapping[str, Symbol], names: Names,
             class_hook: bool, steps: int) -> HookTarget | None:
    if steps > _MAX_STEPS:
        return None
    if isinstance(sym, cst.FunctionDef):
        if sym.decorators:
            return _decorated(name, sym, sym.name, [d.decorator for d in sym.decorators],
                              symbols, names)
        return HookTarget(name, sym, sym.name, tuple(params_of(sym)), sym.asynchronous is not None)
    if isinstance(sym, cst.ClassDef):
        if not class_hook:
            return None
        init = method(sym, "__init__")
        if init is None:
            return None
        return HookTarget(name, init, init.name, tuple(params_of(init, drop_self=True)), False,
                          f"class `{sym.name.value}` (its `__init__`)", owner=sym)
    if isinstance(sym, cst.Lambda):
        return HookTarget(name, sym, sym, tuple(params_of(sym)), False, "a lambda",
                          unpicklable="a lambda")
    if isinstance(sym, cst.Name):
        inner = symbols.get(sym.value)
        if inner is None or inner is sym:
            return None
        t = _resolve(sym.value, inner, symbols, names, class_hook, steps + 1)
        if t is None:
            return None
        return HookTarget(name, t.function, sym, t.params, t.is_async,
                          f"an alias of `{sym.value}`" + (f", {t.via}" if t.via else ""),
                          t.unpicklable, t.owner)
    if isinstance(sym, cst.Attribute) and not sym.attr.value.startswith("__"):
        cls = _instance_of(sym.value, symbols)
        meth = method(cls, sym.attr.value) if cls is not None else None
        if cls is None or meth is None or _decorated_static(meth):
            return None
        return HookTarget(name, meth, sym, tuple(params_of(meth, drop_self=True)),
                          meth.asynchronous is not None,
                          f"the method `{sym.attr.value}` of a `{cls.name.value}` instance",
                          owner=cls)
    if isinstance(sym, cst.Call):
        if _is_partial(sym, names) and sym.args and sym.args[0].keyword is None:
            first = sym.args[0].value
            label = spelled(first) or "a callable"
            inner_sym = symbols.get(first.value) if isinstance(first, cst.Name) else None
            t = _resolve(label, inner_sym, symbols, names, class_hook, steps + 1) \
                if inner_sym is not None else None
            if t is None:
                return HookTarget(name, None, sym, (), False, "a functools.partial",
                                  unpicklable="a functools.partial")
            n_pos = sum(1 for a in sym.args[1:] if a.keyword is None and not a.star)
            kws = {a.keyword.value for a in sym.args[1:] if a.keyword is not None}
            positional = [p for p in t.params if p.kind in ("POSITIONAL_ONLY",
                                                           "POSITIONAL_OR_KEYWORD")]
            dropped = {id(p) for p in positional[:n_pos]}
            params = tuple(p for p in t.params if id(p) not in dropped and p.name not in kws)
            return HookTarget(name, t.function, sym, params, t.is_async,
                              f"functools.partial of `{label}`", "a functools.partial",
                              t.owner)
        callee = symbols.get(sym.func.value) if isinstance(sym.func, cst.Name) else None
        if isinstance(callee, cst.ClassDef):
            call = method(callee, "__call__")
            if call is None:
                return None
            return HookTarget(name, call, sym, tuple(params_of(call, drop_self=True)),
                              call.asynchronous is not None,
                              f"an instance of `{callee.name.value}` (its "
                              f"{'async ' if call.asynchronous else ''}`__call__`)", owner=callee)
        if isinstance(callee, cst.FunctionDef) and len(sym.args) == 1 \
                and isinstance(sym.args[0].value, cst.Name):
            wrapped = symbols.get(sym.args[0].value.value)
            if isinstance(wrapped, cst.FunctionDef):
                t = _decorated(name, wrapped, sym, [sym.func], symbols, names)
                return t
    return None
