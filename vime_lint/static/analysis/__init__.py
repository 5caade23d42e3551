"""The semantic model of one linted module: computed once per file, read by every rule.

Rules ask it questions instead of walking the tree for themselves:

- names: qualified names through imports and aliases (:meth:`Semantic.refers_to`);
- hooks: what code a hook name runs (:meth:`Semantic.target`, :class:`HookTarget`), for every
  binding form (``def``, ``__call__`` instances, lambdas, ``functools.partial``, decorators,
  aliases) and names known only from the launch configuration;
- functions: per-function facts, walked once and cached (:meth:`Semantic.facts`), the helpers a
  function reaches (:meth:`Semantic.closure`) and where a returned value comes from
  (:meth:`Semantic.origins`);
- classes: the attributes a class assigns itself (:meth:`Semantic.owned_attributes`);
- generate functions: what one does with the engine's finish reason and ``status``
  (:meth:`Semantic.finish_reason_use`);
- values: the integer a name holds and the iteration count of a ``range`` loop
  (:meth:`Semantic.int_value`, :meth:`Semantic.range_count`);
- hook options: what the module's ``add_arguments(parser)`` declares
  (:attr:`Semantic.declared_options`) and which ``args`` attributes it reads
  (:attr:`Semantic.args_reads`);
- in-place writes: which names and attributes something writes into (:attr:`Semantic.writes`);
- turn loops: the loops of a function that carry a trajectory from turn to turn
  (:meth:`Semantic.turn_loops`) and its tokenizer calls that encode generated text again
  (:meth:`Semantic.retokenised_calls`);
- returned values: what a function can return, through local names, module constants and the
  module's helpers (:meth:`Semantic.returned`, :class:`Leaf`), and the kinds of a rollout
  function's returned value (:meth:`Semantic.returned_kinds`: train or eval output, a bare list).

Usage::

    sem = Semantic(module, wrapper.resolve(ScopeProvider))
    sem.refers_to(call.func, "RolloutFnTrainOutput")
    for path in sem.facts(fn).returns: ...

Built on LibCST's ``ScopeProvider`` and qualified names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

import libcst as cst
from libcst.metadata import Assignment, Scope

from vime_lint.static.analysis._bindings import (
    HookTarget,
    Symbol,
    method,
    module_symbols,
    resolve_target,
)
from vime_lint.static.analysis._coroutines import SCHEDULERS, unawaited_calls
from vime_lint.static.analysis._fields import (
    GENERATED_FIELDS,
    REQUIRED_FIELDS,
    FieldsSet,
    fields_set,
    sample_names,
)
from vime_lint.static.analysis._finish_reason import FinishReasonUse, finish_reason_use
from vime_lint.static.analysis._functions import (
    AttrStore,
    CallSite,
    FunctionFacts,
    ReturnPath,
    SameScope,
    Side,
    block_facts,
    evaluation_test,
    function_facts,
    on_side,
)
from vime_lint.static.analysis._groups import (
    GROUPS_TYPE,
    SAMPLE_ATTRIBUTES,
    GroupFlow,
    group_params,
)
from vime_lint.static.analysis._invocations import (
    AttrWrite,
    Invocation,
    Invocations,
    ModuleAttributes,
    invocations,
    is_bound_method,
    module_attributes,
)
from vime_lint.static.analysis._mutations import MUTATING_METHODS, InPlaceWrites
from vime_lint.static.analysis._names import UPSTREAM_PACKAGES, Names, is_upstream, spelled
from vime_lint.static.analysis._options import ArgsReads, Declared, declaration_of
from vime_lint.static.analysis._outputs import (
    EVAL_OUT,
    FINALIZE,
    TRAIN_OUT,
    classify,
    is_output_call,
)
from vime_lint.static.analysis._returns import Leaf, Returned, constant_values
from vime_lint.static.analysis._samples import is_sample_name
from vime_lint.static.analysis._turn_loops import (
    TurnLoop,
    is_tokenizer,
    retokenised_calls,
    tokenize_false,
    turn_loops,
)
from vime_lint.static.analysis._values import int_value, range_count

__all__ = [
    "GENERATED_FIELDS", "GROUPS_TYPE", "MUTATING_METHODS", "SAMPLE_ATTRIBUTES", "GroupFlow", "group_params", "REQUIRED_FIELDS", "SCHEDULERS", "AttrStore", "FieldsSet", "CallSite", "FunctionFacts", "HookTarget", "InPlaceWrites", "ReturnPath",
    "AttrWrite", "Invocation", "SameScope", "Semantic", "Side", "UPSTREAM_PACKAGES", "evaluation_test", "fields_set", "is_upstream", "on_side", "sample_names",
    "spelled", "ArgsReads", "FinishReasonUse", "Declared", "EVAL_OUT", "FINALIZE", "TRAIN_OUT", "is_output_call", "Leaf", "Returned", "TurnLoop", "is_sample_name", "is_tokenizer", "tokenize_false",
]

FunctionNode = cst.FunctionDef | cst.Lambda

_MAX_CLOSURE = 64

#: Calls that run a coroutine to completion and return its value.
_RUNNERS = frozenset({"asyncio.run", "vime.utils.async_utils.run", "asyncio.runners.run"})


def _blank(e: cst.BaseExpression) -> bool:
    """``None``, ``[]`` or ``list()``: an attribute not set to anything yet."""
    return (isinstance(e, cst.Name) and e.value == "None") or (
        isinstance(e, cst.List) and not e.elements) or (
        isinstance(e, cst.Call) and not e.args and isinstance(e.func, cst.Name)
        and e.func.value == "list")


class Semantic:
    """Names, bindings and per-function facts of one module (see the module docstring)."""

    def __init__(self, module: cst.Module, scopes: Mapping[cst.CSTNode, Scope | None]) -> None:
        self.module = module
        self.names = Names(module, scopes)
        #: Module-level name -> def, class or assigned value.
        self.symbols: dict[str, Symbol] = module_symbols(module)
        #: Module-level ``def``/``class`` statements by name.
        self.definitions: dict[str, cst.FunctionDef | cst.ClassDef] = {
            k: v for k, v in self.symbols.items() if isinstance(v, (cst.FunctionDef, cst.ClassDef))}
        self._facts: dict[int, FunctionFacts] = {}
        self._targets: dict[tuple[str, bool], HookTarget | None] = {}
        self._owned: dict[int, frozenset[str]] = {}
        self._writes: InPlaceWrites | None = None
        global_scope = scopes.get(module)
        self._global: Scope | None = global_scope
        self._scopes = scopes
        self._group_flows: dict[tuple[int, int], GroupFlow] = {}
        self._callers: list[FunctionNode] | None = None
        self._owners: dict[int, cst.ClassDef] = {}
        self._invocations: dict[int, Invocations] = {}
        self._invoked: dict[int, list[Invocation]] | None = None
        self._resolved_attrs: dict[int, int] = {}
        self._resolved_names: set[int] = set()
        self._attributes: ModuleAttributes | None = None
        self._group_attributes: dict[tuple[int, str, int], tuple[str, str] | None] = {}
        self._turn_loops: dict[int, list[TurnLoop]] = {}
        self._retokenised: dict[int, list[cst.Call]] = {}
        self._returned: dict[tuple[int, bool], Returned] = {}
        self._constant_values: dict[str, cst.BaseExpression] | None = None
        self._declared: Declared | None = None
        self._declared_read = False
        self._args_reads: ArgsReads | None = None
        self._finish_reason: dict[int, FinishReasonUse] = {}
        #: Positions in ``fn``'s own positional parameters (``self`` included) of those the
        #: contract types ``list[list[Sample]]`` (a hook's: set by the rules, which know the
        #: launch's hook bindings).
        self.group_positions: Callable[[cst.FunctionDef], frozenset[int]] = \
            lambda fn: frozenset()

    # ---- names -------------------------------------------------------------------------------

    def qualified(self, node: cst.CSTNode) -> frozenset[str]:
        """Qualified names of a ``Name``/``Attribute`` (a ``Call``: of its callee)."""
        return self.names.qualified(node)

    def refers_to(self, node: cst.CSTNode, name: str, *, package: str = "vime") -> bool:
        """True when ``node`` names ``package``'s ``name`` (see :meth:`Names.refers_to`)."""
        return self.names.refers_to(node, name, package=package)

    def is_bound(self, node: cst.BaseExpression) -> bool:
        """True when the root name of ``node`` is bound (assigned, imported, builtin)."""
        return self.names.is_bound(node)

    def imported_as(self, name: str, *, package: str = "vime") -> str | None:
        """How the module spells ``package``'s ``name`` through its own imports: ``"Sample"``
        (also an ``as`` alias) for ``from vime.utils.types import Sample``, ``"bt.Name"`` for
        ``import vime.rollout.base_types as bt`` when that module defines ``name``; None when
        no import brings it in."""
        for stmt in self.module.body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                if isinstance(small, cst.ImportFrom) and not isinstance(small.names,
                                                                        cst.ImportStar):
                    mod = spelled(small.module) if small.module is not None else None
                    if mod is None or not (mod.startswith(package + ".")
                                           or (is_upstream(mod) and "." in mod)):
                        continue
                    for alias in small.names:
                        if spelled(alias.name) == name:
                            asname = alias.asname
                            if asname is not None and isinstance(asname.name, cst.Name):
                                return asname.name.value
                            return name
        return None

    @property
    def async_defs(self) -> frozenset[str]:
        """Names of module-level ``async def`` functions."""
        return frozenset(k for k, v in self.definitions.items()
                         if isinstance(v, cst.FunctionDef) and v.asynchronous is not None)

    def referenced(self, name: str) -> bool:
        """True when the module itself uses module-level ``name`` (calls it, passes it on),
        beyond defining it (``__all__`` strings do not count)."""
        if self._global is None:
            return False
        return any(a.references for a in self._global.assignments[name])

    # ---- hooks -------------------------------------------------------------------------------

    def target(self, name: str, *, class_hook: bool = False) -> HookTarget | None:
        """What module-level ``name`` runs when called (None: not visible in the module)."""
        key = (name, class_hook)
        if key not in self._targets:
            self._targets[key] = resolve_target(name, self.symbols, self.names, class_hook)
        return self._targets[key]

    # ---- functions ---------------------------------------------------------------------------

    def facts(self, fn: FunctionNode) -> FunctionFacts:
        """Facts of ``fn``'s own body, walked once per file."""
        hit = self._facts.get(id(fn))
        if hit is None:
            hit = self._facts[id(fn)] = function_facts(fn)
        return hit

    def block(self, node: cst.CSTNode) -> FunctionFacts:
        """Facts of one loop or comprehension (what it binds on each pass), walked once."""
        hit = self._facts.get(id(node))
        if hit is None:
            hit = self._facts[id(node)] = block_facts(node)
        return hit

    def mentions(self, node: FunctionNode | cst.ClassDef, name: str, _depth: int = 0) -> bool:
        """True when ``name`` is spelled anywhere in ``node``: bound, read, an attribute or a
        keyword, in its own body or in the functions, lambdas and classes nested in it."""
        facts = self.block(node.body) if isinstance(node, cst.ClassDef) else self.facts(node)
        if name in facts.names or name in facts.values:
            return True
        if isinstance(node, cst.FunctionDef) and node.name.value == name:
            return True
        inner: list[FunctionNode | cst.ClassDef] = [*facts.nested.values(), *facts.lambdas,
                                                    *facts.classes]
        return _depth < 16 and any(self.mentions(i, name, _depth + 1) for i in inner)

    @property
    def constant_values(self) -> dict[str, cst.BaseExpression]:
        """Module-level names bound once to an expression (``FAIL_SCORE = 0.0``), walked once."""
        if self._constant_values is None:
            self._constant_values = constant_values(self.module, self.definitions)
        return self._constant_values

    def returned(self, fn: cst.FunctionDef, *, elements: bool = False) -> Returned:
        """What ``fn`` can return (with ``elements``: the elements of the list it returns),
        following local names (all their bindings), conditional expressions, module constants
        and calls of the module's own helpers (module-level, nested, ``self`` methods; ``await``
        too, at most six deep); parameters, loop
        variables and calls the module does not show are left out (see
        :mod:`vime_lint.static.analysis._returns`). Computed once per function."""
        key = (id(fn), elements)
        hit = self._returned.get(key)
        if hit is None:
            hit = self._returned[key] = Returned(self, fn, elements)
        return hit

    def returned_kinds(self, fn: cst.FunctionDef, expr: cst.BaseExpression | None,
                       owner: cst.ClassDef | None = None
                       ) -> list[tuple[str, cst.BaseExpression | None]]:
        """The kinds ``expr``, returned by ``fn``, can have (``TRAIN_OUT``, ``EVAL_OUT``,
        ``"None"``, ``"a tuple"``, ``"a bare list"``, ``"a bare dict"``), each with the leaf it
        comes from; empty when any leaf is unknown (see
        :func:`vime_lint.static.analysis._outputs.classify`)."""
        return classify(fn, expr, self, owner)

    def module_constants(self) -> list[FunctionFacts]:
        """Facts of each module-level statement other than ``def``/``class`` (constants,
        mapping tables), walked once."""
        return [self.block(stmt) for stmt in self.module.body
                if not isinstance(stmt, (cst.FunctionDef, cst.ClassDef))]

    def callee(self, call: cst.Call, within: FunctionNode | None = None,
               owner: cst.ClassDef | None = None) -> cst.FunctionDef | None:
        """The module's own function ``call`` calls: a nested ``def`` of ``within``, a
        module-level ``def`` (also through an alias or a ``__call__`` instance), or
        ``self.method`` of ``owner``; else None."""
        return self.callee_of(call.func, within, owner)

    def callee_of(self, func: cst.BaseExpression, within: FunctionNode | None = None,
                  owner: cst.ClassDef | None = None) -> cst.FunctionDef | None:
        """The module's own function that calling ``func`` runs (see :meth:`callee`)."""
        if isinstance(func, cst.Name):
            if within is not None:
                nested = self.facts(within).nested.get(func.value)
                if nested is not None:
                    return nested
                if func.value in self.facts(within).values:
                    return None  # a local name shadows the module-level one
            t = self.target(func.value)
            return t.function if t is not None and isinstance(t.function, cst.FunctionDef) \
                else None
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) \
                and func.value.value == "self" and owner is not None:
            return method(owner, func.attr.value)
        return None

    def closure(self, fn: cst.FunctionDef, owner: cst.ClassDef | None = None,
                limit: int = _MAX_CLOSURE, *, side: Side = None) -> list[cst.FunctionDef]:
        """``fn`` and the module's own functions it calls, transitively: nested ``def``s,
        module-level functions, ``self.method`` of ``owner`` (discovery order, at most
        ``limit``). With ``side`` (``"train"``/``"eval"``), only the calls of ``fn`` on that
        ``evaluation`` path count: a helper called only under ``if evaluation:`` is not in
        the train closure."""
        out: list[cst.FunctionDef] = [fn]
        seen = {id(fn)}
        i = 0
        while i < len(out) and len(out) < limit:
            cur = out[i]
            for site in self.facts(cur).calls:
                if i == 0 and not on_side(site.side, side):
                    continue
                target = self.callee(site.node, cur, owner)
                if target is not None and id(target) not in seen:
                    seen.add(id(target))
                    out.append(target)
            i += 1
        return out

    def origins(self, fn: FunctionNode, expr: cst.BaseExpression | None, depth: int = 0,
                owner: cst.ClassDef | None = None
                ) -> Iterator[tuple[cst.BaseExpression | None, FunctionNode]]:
        """Where the value of ``expr`` in ``fn`` comes from: ``(expression, its function)``
        leaves, following local names, conditional expressions, ``await``, the coroutine
        ``asyncio.run(...)`` / vime's ``run(...)`` runs, and calls of the module's own
        functions (their return values), two calls deep. A leaf of None is an
        unknown value (a parameter, a loop variable)."""
        if isinstance(expr, cst.Await):
            yield from self.origins(fn, expr.expression, depth, owner)
            return
        if isinstance(expr, cst.IfExp):
            yield from self.origins(fn, expr.body, depth, owner)
            yield from self.origins(fn, expr.orelse, depth, owner)
            return
        if isinstance(expr, cst.Name) and expr.value not in ("None", "True", "False") \
                and depth < 4:
            values = self.facts(fn).values.get(expr.value)
            if values:
                for v in values:
                    if v is None:
                        yield None, fn
                    else:
                        yield from self.origins(fn, v, depth + 1, owner)
                return
        if isinstance(expr, cst.Call) and expr.args and expr.args[0].keyword is None \
                and self.names.qualified(expr.func) & _RUNNERS and depth < 4:
            # asyncio.run(coro(...)) / vime's run(...): the value the coroutine returns
            yield from self.origins(fn, expr.args[0].value, depth + 1, owner)
            return
        if isinstance(expr, cst.Call) and depth < 4:
            target = self.callee(expr, fn, owner)
            if target is not None and target is not fn and depth < 3:
                facts = self.facts(target)
                if facts.returns or facts.falls_through:
                    for r in facts.returns:
                        yield from self.origins(target, r.value, depth + 2, owner)
                    return
        yield expr, fn

    def coroutine_callee(self, call: cst.Call, within: FunctionNode,
                         owner: cst.ClassDef | None, known: frozenset[str]) -> str | None:
        """The name of the async function ``call`` calls (``"fetch"``, ``"self.fetch"``, a
        ``known`` qualified name), or None when the callee is not known to be async."""
        func = call.func
        if isinstance(func, cst.Name):
            facts = self.facts(within)
            nested = facts.nested.get(func.value)
            if nested is not None:
                return func.value if nested.asynchronous is not None else None
            if func.value in facts.values:
                # a local name shadows the module-level one: an alias (f = _fetch) of one
                # async function of the module is that function
                values = facts.values[func.value]
                names = {v.value for v in values if isinstance(v, cst.Name)}
                if len(names) == 1 and len(values) == 1 and func.value not in names:
                    alias = next(iter(names))
                    t = self.target(alias) if alias not in facts.values else None
                    if t is not None and t.function is not None and t.is_async:
                        return alias
                return None
            t = self.target(func.value)
            if t is not None and t.function is not None:
                return func.value if t.is_async else None
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) \
                and func.value.value == "self" and owner is not None:
            m = method(owner, func.attr.value)
            if m is not None:
                return f"self.{func.attr.value}" if m.asynchronous is not None else None
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            # a method of an instance of the module's own class (judge = Judge(); judge.x())
            cls = self.instance_class(func.value, within, owner)
            m = method(cls, func.attr.value) if cls is not None else None
            if m is not None:
                return (f"{func.value.value}.{func.attr.value}" if m.asynchronous is not None
                        else None)
        hit = self.names.qualified_in(func, known)
        return hit

    def unawaited(self, fn: FunctionNode, owner: cst.ClassDef | None,
                  known: frozenset[str]) -> list[tuple[cst.Call, str, str]]:
        """``(call, callee, problem)`` for each coroutine call in ``fn``'s own body whose
        coroutine never runs (see :mod:`vime_lint.static.analysis._coroutines`)."""
        return unawaited_calls(self.facts(fn),
                               lambda c: self.coroutine_callee(c, fn, owner, known),
                               self.names.qualified)

    # ---- groups of samples -------------------------------------------------------------------

    def group_flow(self, fn: cst.FunctionDef, depth: int = 0) -> GroupFlow:
        """Which names of ``fn`` hold lists of groups and groups (see
        :mod:`vime_lint.static.analysis._groups`), computed once per function and depth."""
        key = (id(fn), depth)
        hit = self._group_flows.get(key)
        if hit is None:
            hit = self._group_flows[key] = GroupFlow(fn, self, depth)
        return hit

    def functions(self) -> list[FunctionNode]:
        """Every ``def`` of the module: module-level, methods of module-level classes, and
        the ``def``s nested in those (discovery order)."""
        if self._callers is None:
            out: list[FunctionNode] = []
            for stmt in self.module.body:
                if isinstance(stmt, cst.FunctionDef):
                    out.append(stmt)
                elif isinstance(stmt, cst.ClassDef) and isinstance(stmt.body, cst.IndentedBlock):
                    for s in stmt.body.body:
                        if isinstance(s, cst.FunctionDef):
                            out.append(s)
                            self._owners[id(s)] = stmt
            i = 0
            while i < len(out) and len(out) < 4 * _MAX_CLOSURE:
                out += self.facts(out[i]).nested.values()
                i += 1
            self._callers = out
        return self._callers

    def owner(self, fn: FunctionNode) -> cst.ClassDef | None:
        """The module-level class whose body defines ``fn`` (a method), else None."""
        self.functions()
        return self._owners.get(id(fn))

    def invocations(self, fn: cst.FunctionDef) -> Invocations:
        """Where ``fn``'s body (its lambdas included) invokes the module's own functions and
        lambdas (see :mod:`vime_lint.static.analysis._invocations`), walked once."""
        hit = self._invocations.get(id(fn))
        if hit is None:
            hit = self._invocations[id(fn)] = invocations(self, fn, self.owner(fn))
        return hit

    @property
    def attributes(self) -> ModuleAttributes:
        """Every ``x.name`` of the module, counted by name, and every write of one."""
        if self._attributes is None:
            self._attributes = module_attributes(self.module)
        return self._attributes

    def _invoked_by(self, fn: FunctionNode) -> list[Invocation]:
        if self._invoked is None:
            self._invoked = {}
            for caller in self.functions():
                if not isinstance(caller, cst.FunctionDef):
                    continue
                found = self.invocations(caller)
                for inv in found.found:
                    if inv.callee is not caller:
                        self._invoked.setdefault(id(inv.callee), []).append(inv)
                for target in found.resolved_attrs.values():
                    self._resolved_attrs[id(target)] = self._resolved_attrs.get(id(target), 0) + 1
                self._resolved_names |= found.resolved_names
        return self._invoked.get(id(fn), [])

    def group_arguments(self, fn: cst.FunctionDef, depth: int) -> dict[int, tuple[str, str]]:
        """Positions of ``fn``'s parameters that every invocation of ``fn`` in the module
        (direct, ``self.method(...)``, through ``functools.partial``, a ``map``/``key=``
        callback) gives a list of groups (``"groups"``) or one group (``"group"``): position ->
        (kind, how the argument is one). A method counts only when every ``x.name`` of the
        module is one of those invocations (no caller the module does not show), a function
        only when every read of its name is (not also handed on where the module does not show
        what it is given)."""
        sites = self._invoked_by(fn)
        if not sites:
            return {}
        if self.owner(fn) is not None and is_bound_method(fn):
            if self._resolved_attrs.get(id(fn), 0) != self.attributes.refs.get(fn.name.value, 0):
                return {}
        elif any(id(node) not in self._resolved_names for node in self._name_reads(fn)):
            return {}
        params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
        out: dict[int, tuple[str, str]] = {}
        for i, name in enumerate(params):
            found: list[tuple[str, str] | None] = []
            for inv in sites:
                arg = inv.argument(i, name)
                if arg is None:
                    found.append(None)
                    break
                found.append(self.group_flow(inv.caller, depth + 1).argument(arg, inv.comps))
                if found[-1] is None:
                    break
            if found and all(found) and len({f[0] for f in found if f}) == 1:
                kind, source = found[0] or ("", "")
                out[i] = (kind, f"{source}, passed to `{fn.name.value}`")
        return out

    def _name_reads(self, fn: cst.FunctionDef) -> list[cst.CSTNode]:
        """The nodes that read the name ``fn``'s ``def`` binds (its scope's references)."""
        scope = self._scopes.get(fn)
        if scope is None:
            return []
        return [access.node for a in scope.assignments[fn.name.value]
                if isinstance(a, Assignment) and a.node is fn for access in a.references]

    def group_attribute(self, cls: cst.ClassDef, attr: str, depth: int) -> tuple[str, str] | None:
        """``(kind, source)`` when ``self.attr`` holds a list of groups (``"groups"``) or a
        group (``"group"``) in the methods of ``cls``: every write of ``.attr`` in the module
        is one through ``self`` in a method of ``cls`` and gives it one (``None`` and ``[]``
        count as not set yet; ``+=``, ``.extend`` and ``.append`` as for local names), and no
        class-level value other than those."""
        key = (id(cls), attr, depth)
        if key in self._group_attributes:
            return self._group_attributes[key]
        self._group_attributes[key] = None
        found = self._group_attribute(cls, attr, depth)
        self._group_attributes[key] = found
        return found

    def _group_attribute(self, cls: cst.ClassDef, attr: str,
                         depth: int) -> tuple[str, str] | None:
        writes = self.attributes.writes.get(attr, [])
        if not writes or not isinstance(cls.body, cst.IndentedBlock):
            return None
        for stmt in cls.body.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) \
                        else [small.target] if isinstance(small, cst.AnnAssign) else []
                    value = getattr(small, "value", None)
                    if any(isinstance(t, cst.Name) and t.value == attr for t in targets) \
                            and value is not None and not _blank(value):
                        return None
            elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) and stmt.name.value == attr:
                return None
        kinds: list[tuple[str, str | None]] = []
        for w in writes:
            fn = w.fn
            if not isinstance(fn, cst.FunctionDef) or self.owner(fn) is not cls \
                    or not is_bound_method(fn) or w.kind == "other" or w.value is None:
                return None
            params = (*fn.params.posonly_params, *fn.params.params)
            if not params or not isinstance(w.obj, cst.Name) or w.obj.value != params[0].name.value:
                return None
            flow = self.group_flow(fn, depth)
            if w.kind == "store" and _blank(w.value):
                kinds.append(("blank", None))
            elif w.kind == "add":
                kinds.append(("add", flow.group_source(w.value)))
            elif w.kind == "grow":
                kinds.append(("groups", flow.groups_source(w.value)))
            else:
                held = flow.holding(w.value)
                kinds.append(held if held is not None else ("none", None))
        sources = [s for k, s in kinds if k != "blank"]
        if not sources or not all(sources):
            return None
        if all(k in ("blank", "groups", "add") for k, _ in kinds):
            return "groups", f"`self.{attr}`, set to {sources[0]}"
        if all(k in ("blank", "group") for k, _ in kinds):
            return "group", f"`self.{attr}`, set to {sources[0]}"
        return None

    # ---- turn loops --------------------------------------------------------------------------

    def turn_loops(self, fn: cst.FunctionDef) -> list[TurnLoop]:
        """The loops of ``fn`` that grow a trajectory and send it again (see
        :func:`vime_lint.static.analysis._turn_loops.turn_loops`), computed once per function."""
        hit = self._turn_loops.get(id(fn))
        if hit is None:
            hit = self._turn_loops[id(fn)] = turn_loops(self, fn)
        return hit

    def retokenised_calls(self, fn: cst.FunctionDef) -> list[cst.Call]:
        """The tokenizer calls in ``fn``'s loops that encode text the model generated there (see
        :func:`vime_lint.static.analysis._turn_loops.retokenised_calls`), once per function."""
        hit = self._retokenised.get(id(fn))
        if hit is None:
            hit = self._retokenised[id(fn)] = retokenised_calls(self, fn)
        return hit

    # ---- generate functions ------------------------------------------------------------------

    def finish_reason_use(self, fn: cst.FunctionDef) -> FinishReasonUse:
        """What generate function ``fn`` (with the module's functions it calls) does with the
        finish reason and ``status`` (see :mod:`vime_lint.static.analysis._finish_reason`),
        computed once per function."""
        hit = self._finish_reason.get(id(fn))
        if hit is None:
            hit = self._finish_reason[id(fn)] = finish_reason_use(self, fn)
        return hit

    # ---- values ------------------------------------------------------------------------------

    def int_value(self, expr: cst.BaseExpression, fn: cst.FunctionDef) -> int | None:
        """The value of an integer literal, of a parameter of ``fn`` with one as its default,
        or of a module-level constant bound once to one; else None."""
        return int_value(self, expr, fn)

    def range_count(self, loop: cst.For, fn: cst.FunctionDef) -> int | None:
        """How many times ``for ... in range(...)`` in ``fn`` runs, when its bounds are known
        integers (:meth:`int_value`); else None."""
        return range_count(self, loop, fn)

    # ---- hook options ------------------------------------------------------------------------

    @property
    def declared_options(self) -> Declared | None:
        """The options the module's ``add_arguments(parser)`` declares (None without one; see
        :mod:`vime_lint.static.analysis._options`), walked once."""
        if not self._declared_read:
            self._declared = declaration_of(self.module)
            self._declared_read = True
        return self._declared

    @property
    def args_reads(self) -> ArgsReads:
        """Every ``args.NAME`` read and ``getattr``/``hasattr(args, "NAME", ...)`` of the
        module, walked once."""
        if self._args_reads is None:
            reads = ArgsReads()
            self.module.visit(reads)
            self._args_reads = reads
        return self._args_reads

    # ---- in-place writes ---------------------------------------------------------------------

    @property
    def writes(self) -> InPlaceWrites:
        """The module's in-place writes (``x[k] = v``, ``x.update(...)``, ...), walked once
        (see :mod:`vime_lint.static.analysis._mutations`)."""
        if self._writes is None:
            self._writes = InPlaceWrites(self.module, self._scopes)
        return self._writes

    # ---- classes -----------------------------------------------------------------------------

    def owned_attributes(self, cls: cst.ClassDef) -> frozenset[str]:
        """Attributes ``cls`` gives its instances: ``self.x = ...`` in its methods, class-level
        assignments and annotations, and its method names."""
        hit = self._owned.get(id(cls))
        if hit is not None:
            return hit
        out: set[str] = set()
        if isinstance(cls.body, cst.IndentedBlock):
            for stmt in cls.body.body:
                if isinstance(stmt, cst.FunctionDef):
                    out.add(stmt.name.value)
                    first = stmt.params.params[0].name.value if stmt.params.params else "self"
                    for store in self.facts(stmt).attr_stores:
                        if isinstance(store.obj, cst.Name) and store.obj.value == first:
                            out.add(store.attr)
                elif isinstance(stmt, cst.SimpleStatementLine):
                    for small in stmt.body:
                        if isinstance(small, cst.Assign):
                            out.update(t.target.value for t in small.targets
                                       if isinstance(t.target, cst.Name))
                        elif isinstance(small, cst.AnnAssign) and isinstance(small.target,
                                                                              cst.Name):
                            out.add(small.target.value)
        result = self._owned[id(cls)] = frozenset(out)
        return result

    def class_owns(self, cls: cst.ClassDef, attr: str, _depth: int = 0) -> bool:
        """True when ``cls`` or one of its module-level base classes assigns ``attr``."""
        if attr in self.owned_attributes(cls):
            return True
        for base in cls.bases:
            b = self.definitions.get(base.value.value) if isinstance(base.value, cst.Name) \
                else None
            if isinstance(b, cst.ClassDef) and b is not cls and _depth < 8 \
                    and self.class_owns(b, attr, _depth + 1):
                return True
        return False

    def instance_class(self, expr: cst.BaseExpression, fn: FunctionNode | None,
                       owner: cst.ClassDef | None,
                       enclosing: Sequence[FunctionNode | None] = ()) -> cst.ClassDef | None:
        """The module's own class whose instance ``expr`` holds, as far as the code shows:
        ``self`` in a method of ``owner``; a name assigned ``Cls(...)`` (locally or at module
        level); a parameter annotated ``Cls``. None when unknown or not the module's class.

        ``enclosing`` lists the functions around ``fn`` (outermost first, ``fn`` last): a name
        that ``fn`` does not bind is looked up in the innermost one that does (a closure
        over a method's ``self``)."""
        if not isinstance(expr, cst.Name):
            return None
        if fn is not None and expr.value not in self.facts(fn).values:
            for outer in reversed([f for f in enclosing if f is not None and f is not fn]):
                if expr.value in self.facts(outer).values:
                    return self.instance_class(expr, outer, owner)
        if fn is not None and isinstance(fn, cst.FunctionDef) and owner is not None:
            params = fn.params.params
            if params and params[0].name.value == expr.value and expr.value in ("self", "cls"):
                return owner
        candidates: list[cst.BaseExpression | None] = []
        if fn is not None and expr.value in self.facts(fn).values:
            candidates = list(self.facts(fn).values[expr.value])
            for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params):
                if p.name.value == expr.value and p.annotation is not None:
                    candidates = [p.annotation.annotation]
        elif expr.value in self.symbols:
            sym = self.symbols[expr.value]
            candidates = [sym] if not isinstance(sym, (cst.FunctionDef, cst.ClassDef)) else []
        found: cst.ClassDef | None = None
        for c in candidates:
            callee = c.func if isinstance(c, cst.Call) else c
            cls = self.definitions.get(callee.value) if isinstance(callee, cst.Name) else None
            if not isinstance(cls, cst.ClassDef) or (found is not None and found is not cls):
                return None
            found = cls
        return found

