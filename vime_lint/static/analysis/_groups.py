"""Which expressions of a function hold groups of samples: a value flow over the semantic model.

A *list of groups* is ``list[list[Sample]]``: what ``data_source.get_samples(n)``,
``RolloutFnTrainOutput(...).samples``, ``asyncio.gather`` over ``generate_and_rm_group(...)``
and the hook parameters the contract types that way return (``groups`` of the sample filter,
``all_groups``, ``buffer``: by position, from ``vime.contract.protocols``). A *group* is
``list[Sample]``: one element of a list of groups (a ``for`` target, ``enumerate``'s second
target, a comprehension target, ``groups[i]``) or the value of ``generate_and_rm_group(...)``,
whatever its name: ``for sample in data_source.get_samples(4)`` binds a group.

The flow follows values, not spellings:

- local names, every binding of which holds one (``groups = []`` then ``groups +=
  ds.get_samples(1)``, ``.extend(...)`` and ``.append(group)`` count), ``await``, slices,
  ``list``/``sorted``/``reversed``/``tuple``, filters and comprehensions whose element is a
  group (``[g for g in groups if ...]``, ``[await generate_and_rm_group(...) for ...]``);
- the module's own functions: a call of a helper whose every return holds one is one, and a
  parameter of a helper that every invocation in the module gives a list of groups (or one
  group) holds one (two calls deep). Invocations are those of
  :mod:`vime_lint.static.analysis._invocations`: ``helper(x)``; ``self.method(x)`` (the
  method's ``self`` left out; a method counts only when every ``x.method`` of the module is
  such a call); ``functools.partial(helper, ...)`` called at once or bound to a name that is
  only called (a partial that leaves the function counts with its own arguments alone); a
  ``map``/``filter`` callback or ``key=`` of ``sorted``/``min``/``max``/``.sort``, given each
  element (one group of a list of groups);
- lambdas of the function: a parameter that every invocation gives one holds one
  (``sorted(groups, key=lambda g: ...)``, ``score = lambda gs: ...; score(groups)``), a call
  of a name bound to a lambda is what its body is (``fetch = lambda n: ds.get_samples(n)``),
  and a lambda's parameters shadow the function's names;
- attributes of the instance in a method: ``self.x`` holds one when every write of ``.x`` in
  the module is through ``self`` in the methods of the same class and gives it one (``None``
  and ``[]`` count as not set yet; ``+=``, ``.extend`` and ``.append`` as for local names).

``semantic.group_positions(fn)`` gives positions in ``fn``'s own parameter list (a hook's
``__call__`` counts ``self``; :func:`vime_lint.static.rules._groups.group_flow` maps the
contract's positions through the hook's binding: ``self`` and a partial's arguments).

Usage::

    semantic.group_positions = lambda fn: ...     # hook parameters typed list[list[Sample]]
    flow = GroupFlow.of(fn, semantic)               # cached per function
    flow.group_source(expr)      # "`data_source.get_samples(...)`" when expr holds a group
    flow.holding(expr)           # ("groups", source), ("group", source) or None
    flow.comprehension_groups(comp)   # {"g": source} for the targets of a comprehension
"""

from __future__ import annotations

import inspect
from functools import cache
from typing import TYPE_CHECKING

import libcst as cst

from vime.contract import HOOKS, SAMPLE_FIELD_NAMES, protocols
from vime_lint.static._cst import code_of
from vime_lint.static.analysis._invocations import Arg, is_bound_method, lambdas_of

if TYPE_CHECKING:
    from vime_lint.static.analysis import Semantic

__all__ = ["GROUPS_TYPE", "GroupFlow", "SAMPLE_ATTRIBUTES", "group_params"]

#: The contract type of a list of groups.
GROUPS_TYPE = "list[list[Sample]]"
#: Attributes a Sample has and a list has not (fields and public methods of the contract's
#: Sample API); ``index`` is also ``list.index`` and only counts when it is set.
SAMPLE_ATTRIBUTES: frozenset[str] = frozenset(
    (SAMPLE_FIELD_NAMES | {"append_response_tokens", "get_reward_value",
                           "effective_response_length", "update_from_meta_info", "to_dict"})
    - set(dir(list)))
_TRAIN_OUTPUT = "RolloutFnTrainOutput"
#: vime's function that generates and scores one group (returns the group).
_GROUP_CALL = "generate_and_rm_group"
#: Builtins whose result holds the same elements.
_KEEP_CALLS = frozenset({"builtins.list", "builtins.sorted", "builtins.reversed",
                         "builtins.tuple"})
#: Wrappers that schedule a coroutine and give back its value when awaited.
_TASKS = frozenset({"asyncio.create_task", "asyncio.ensure_future"})
_GATHER = "asyncio.gather"
_MAX_DEPTH = 2


@cache
def group_params(dest: str) -> frozenset[int]:
    """Positions (0-based, ``self`` left out) of the parameters that the hook ``dest``'s
    Protocol annotates ``list[list[Sample]]``: by position, since the manager passes them
    positionally whatever the user calls them (``data``, ``samples``)."""
    spec = HOOKS.get(dest)
    if spec is None or spec.kind == "class" or not spec.protocol:
        return frozenset()
    protocol = getattr(protocols, spec.protocol, None)
    if protocol is None:
        return frozenset()
    params = [p for name, p in inspect.signature(protocol.__call__).parameters.items()
              if name != "self"]
    return frozenset(i for i, p in enumerate(params) if p.annotation == GROUPS_TYPE)


def _positional(fn: cst.FunctionDef) -> list[str]:
    return [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]


def _element_targets(target: cst.BaseExpression, iterable: cst.BaseExpression,
                     semantic: Semantic) -> tuple[cst.BaseExpression, cst.BaseExpression]:
    """``(target, groups)`` for ``for g in groups`` and ``for i, g in enumerate(groups)``."""
    if isinstance(iterable, cst.Call) and iterable.args and isinstance(target, cst.Tuple) \
            and len(target.elements) == 2 \
            and "builtins.enumerate" in semantic.qualified(iterable.func):
        return target.elements[1].value, iterable.args[0].value
    return target, iterable


def _names(target: cst.BaseExpression) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {n for el in target.elements for n in _names(el.value)}
    return set()


class _NameNodes(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[cst.Name] = []

    def visit_Name(self, node: cst.Name) -> None:
        self.found.append(node)


def _lambda_param_names(lam: cst.Lambda) -> set[str]:
    p = lam.params
    out = {x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)}
    for star in (p.star_arg, p.star_kwarg):
        if isinstance(star, cst.Param):
            out.add(star.name.value)
    return out


def _empty(e: cst.BaseExpression) -> bool:
    """``[]`` or ``list()``: a collection that starts empty."""
    if isinstance(e, cst.List):
        return not e.elements
    return isinstance(e, cst.Call) and not e.args and isinstance(e.func, cst.Name) \
        and e.func.value == "list"


class GroupFlow:
    """Names of one function that hold lists of groups and groups (see the module doc)."""

    def __init__(self, fn: cst.FunctionDef, semantic: Semantic, depth: int = 0) -> None:
        self.fn = fn
        self.semantic = semantic
        self.depth = depth
        facts = semantic.facts(fn)
        self._local_groups: list[dict[str, str]] = []
        #: Names that hold a list of groups (name -> source).
        self.groups: dict[str, str] = {}
        #: Names that hold one group (name -> source).
        self.group_names: dict[str, str] = {}
        #: The class ``fn`` is a method of (its first parameter is the instance), else None.
        self.owner = semantic.owner(fn)
        bound = self.owner is not None and is_bound_method(fn)
        self._self = fn.params.params[0].name.value if bound and fn.params.params else None
        #: Lambdas of ``fn``: which one each ``Name`` node is read in, and around each lambda.
        self._name_lambda: dict[int, cst.Lambda] | None = None
        self._lambda_parent: dict[int, cst.Lambda] = {}
        self._lambda_holdings: dict[int, dict[str, tuple[str, str]]] = {}
        self._pending: set[int] = set()
        positional = _positional(fn)
        given = {i: ("groups", f"the `{positional[i]}` parameter ({GROUPS_TYPE})")
                 for i in semantic.group_positions(fn) if i < len(positional)}
        if depth < _MAX_DEPTH:
            for i, held in semantic.group_arguments(fn, depth).items():
                given.setdefault(i, held)
        for i, (kind, source) in given.items():
            p = positional[i]
            if len(facts.values.get(p, [None])) == 1 and facts.values.get(p, [None])[0] is None:
                (self.groups if kind == "groups" else self.group_names)[p] = source
        self._train_outputs: set[str] = {
            name for name, values in facts.values.items()
            if values and all(isinstance(v, cst.Call) and self._is_train_output(v)
                              for v in values)}
        # In-place growth of local names: `x += e`, `x.extend(e)` (lists), `x.append(e)`.
        grown: dict[str, list[cst.BaseExpression]] = {}
        unbound: dict[str, int] = {}
        for target, value, stmt in facts.bindings:
            if isinstance(stmt, cst.AugAssign) and isinstance(target, cst.Name) \
                    and isinstance(stmt.operator, cst.AddAssign):
                grown.setdefault(target.value, []).append(value)
                if not isinstance(value, (cst.List, cst.ListComp)):
                    unbound[target.value] = unbound.get(target.value, 0) + 1
        added: dict[str, list[cst.BaseExpression]] = {}
        for site in facts.calls:
            func = site.node.func
            if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) \
                    and site.node.args:
                if func.attr.value == "extend":
                    grown.setdefault(func.value.value, []).append(site.node.args[0].value)
                elif func.attr.value in ("append", "insert"):
                    args = site.node.args
                    added.setdefault(func.value.value, []).append(
                        args[-1].value if func.attr.value == "insert" else args[0].value)
        for _ in range(len(facts.values) + 2):
            before = len(self.groups) + len(self.group_names)
            for name, values in facts.values.items():
                if name in self.groups or name in self.group_names or not values:
                    continue
                if self._holds_groups(values, grown.get(name, []), added.get(name, []),
                                      unbound.get(name, 0)):
                    self.groups[name] = next(
                        s for s in (*(self.groups_source(v) for v in values if v is not None),
                                    *(self.groups_source(g) for g in grown.get(name, [])),
                                    *(self.group_source(a) for a in added.get(name, [])))
                        if s)
                    continue
                if any(v is None for v in values) or grown.get(name) or added.get(name):
                    continue
                found = [self.group_source(v) for v in values if v is not None]
                if all(found):
                    self.group_names[name] = found[0] or ""
            if len(self.groups) + len(self.group_names) == before:
                break
        group_fors: dict[str, list[str]] = {}
        other_fors: set[str] = set()
        for loop, _ in facts.statement_loops:
            if not isinstance(loop, cst.For):
                continue
            pair = _element_targets(loop.target, loop.iter, semantic)
            iterated = self.groups_source(pair[1])
            if isinstance(pair[0], cst.Name) and iterated is not None:
                group_fors.setdefault(pair[0].value, []).append(f"an element of {iterated}")
            else:
                other_fors |= _names(loop.target)
        for name, sources in group_fors.items():
            values = facts.values.get(name, [])
            if name not in other_fors and len(values) == len(sources) \
                    and all(v is None for v in values):
                self.group_names[name] = sources[0]

    @classmethod
    def of(cls, fn: cst.FunctionDef, semantic: Semantic, depth: int = 0) -> GroupFlow:
        """The flow of ``fn``, computed once per function (and depth)."""
        return semantic.group_flow(fn, depth)

    def _holds_groups(self, values: list[cst.BaseExpression | None],
                      grown: list[cst.BaseExpression], added: list[cst.BaseExpression],
                      unbound: int) -> bool:
        """Every binding and in-place growth of a name gives it groups (at least one does)."""
        if sum(1 for v in values if v is None) > unbound:
            return False
        known = [v for v in values if v is not None]
        if not all(_empty(v) or self.groups_source(v) for v in known):
            return False
        if not all(self.groups_source(g) for g in grown):
            return False
        if not all(self.group_source(a) for a in added):
            return False
        return bool(grown or added or any(not _empty(v) for v in known))

    def _is_train_output(self, call: cst.Call) -> bool:
        return any(q.startswith("vime.") and q.rpartition(".")[2] == _TRAIN_OUTPUT
                   for q in self.semantic.qualified(call.func))

    def _is_group_call(self, e: cst.BaseExpression) -> bool:
        if isinstance(e, cst.Call) and self.semantic.qualified(e.func) & _TASKS and e.args:
            e = e.args[0].value
        return isinstance(e, cst.Call) and any(
            q.startswith("vime.") and q.endswith("." + _GROUP_CALL)
            for q in self.semantic.qualified(e.func))

    def _helper(self, call: cst.Call) -> GroupFlow | cst.Lambda | None:
        """The flow of the module's function ``call`` runs (directly, ``self.method``, a
        partial), or the lambda it runs; None when not known or too deep."""
        target = self.semantic.invocations(self.fn).callable_of(call.func)
        if isinstance(target, cst.Lambda):
            return target
        if target is None or target is self.fn or self.depth >= _MAX_DEPTH:
            return None
        return self.semantic.group_flow(target, self.depth + 1)

    def _called(self, call: cst.Call, kind: str) -> str | None:
        """How the value of ``call`` (a helper's, a lambda's) holds ``kind``, else None."""
        helper = self._helper(call)
        if isinstance(helper, cst.Lambda):
            if id(helper) in self._pending:
                return None
            self._pending.add(id(helper))
            try:
                found = (self.groups_source if kind == "groups" else self.group_source)(
                    helper.body)
            finally:
                self._pending.discard(id(helper))
            return f"`{code_of(call.func)}(...)`, which returns {found}" if found else None
        return self._returns(helper, kind) if helper is not None else None

    def holding(self, e: cst.BaseExpression, each: bool = False) -> tuple[str, str] | None:
        """``("groups", source)`` when ``e`` holds a list of groups, ``("group", source)`` when
        one group; with ``each``, what each element of ``e`` holds (a group of a list of
        groups); else None."""
        source = self.groups_source(e)
        if each:
            return ("group", f"an element of {source}") if source else None
        if source:
            return "groups", source
        group = self.group_source(e)
        return ("group", group) if group else None

    def argument(self, arg: Arg, comps: tuple[cst.CompFor, ...] = ()) -> tuple[str, str] | None:
        """What an invocation's argument holds (:meth:`holding`), read where the call is:
        inside the comprehensions ``comps`` (outermost first), whose targets shadow the
        function's names (an argument that reads one counts only when it is that target and
        the target iterates a list of groups)."""
        bound: set[str] = set()
        for comp in comps:
            cur: cst.CompFor | None = comp
            while cur is not None:
                bound |= _names(cur.target)
                cur = cur.inner_for_in
        if bound:
            walker = _NameNodes()
            arg.value.visit(walker)
            if any(n.value in bound and not self._lambda_bound(n)[0] for n in walker.found):
                if arg.each or not isinstance(arg.value, cst.Name):
                    return None
                scopes: list[dict[str, str]] = []
                for comp in comps:
                    self._local_groups.append({k: v for d in scopes for k, v in d.items()})
                    try:
                        scopes.append(self.comprehension_groups(comp))
                    finally:
                        self._local_groups.pop()
                merged = {k: v for d in scopes for k, v in d.items()}
                source = merged.get(arg.value.value)
                return ("group", source) if source else None
        return self.holding(arg.value, arg.each)

    def _lambda_of(self, name: cst.Name) -> cst.Lambda | None:
        """The innermost lambda of ``fn`` whose body reads ``name`` (the node), else None."""
        if self._name_lambda is None:
            self._name_lambda = {}
            for lam in lambdas_of(self.semantic, self.fn):
                for inner in self.semantic.facts(lam).lambdas:
                    self._lambda_parent[id(inner)] = lam
                walker = _NameNodes()
                lam.body.visit(walker)
                for n in walker.found:
                    self._name_lambda[id(n)] = lam
        return self._name_lambda.get(id(name))

    def _lambda_bound(self, name: cst.Name) -> tuple[bool, tuple[str, str] | None]:
        """(True, what it holds) when ``name`` is a parameter of a lambda around it."""
        lam = self._lambda_of(name)
        while lam is not None:
            if name.value in _lambda_param_names(lam):
                return True, self.lambda_params(lam).get(name.value)
            lam = self._lambda_parent.get(id(lam))
        return False, None

    def lambda_params(self, lam: cst.Lambda) -> dict[str, tuple[str, str]]:
        """Parameters of a lambda of ``fn`` that every invocation gives a list of groups or a
        group (``sorted(groups, key=lambda g: ...)``, ``map``/``filter``, a name bound to the
        lambda and called): name -> (kind, source)."""
        hit = self._lambda_holdings.get(id(lam))
        if hit is not None:
            return hit
        if id(lam) in self._pending:
            return {}
        found = self.semantic.invocations(self.fn)
        sites = [inv for inv in found.found if inv.callee is lam]
        out: dict[str, tuple[str, str]] = {}
        if sites and id(lam) not in found.escaped:
            self._pending.add(id(lam))
            try:
                params = [p.name.value for p in (*lam.params.posonly_params, *lam.params.params)]
                for i, name in enumerate(params):
                    held: list[tuple[str, str] | None] = []
                    for inv in sites:
                        arg = inv.argument(i, name)
                        held.append(self.argument(arg, inv.comps) if arg else None)
                        if held[-1] is None:
                            break
                    if all(held) and len({h[0] for h in held if h}) == 1 and held[0]:
                        out[name] = held[0]
            finally:
                self._pending.discard(id(lam))
        self._lambda_holdings[id(lam)] = out
        return out

    def _attribute(self, e: cst.BaseExpression, kind: str) -> str | None:
        """How ``self.x`` (``x`` an attribute the class's methods set) holds ``kind``."""
        if self._self is None or self.owner is None or self.depth >= _MAX_DEPTH \
                or not isinstance(e, cst.Attribute) or not isinstance(e.value, cst.Name) \
                or e.value.value != self._self:
            return None
        if self._lambda_bound(e.value)[0]:
            return None
        held = self.semantic.group_attribute(self.owner, e.attr.value, self.depth + 1)
        return held[1] if held is not None and held[0] == kind else None

    def _returns(self, flow: GroupFlow, kind: str) -> str | None:
        facts = self.semantic.facts(flow.fn)
        if not facts.returns or facts.yields:
            return None
        found = [(flow.groups_source if kind == "groups" else flow.group_source)(r.value)
                 if r.value is not None else None for r in facts.returns]
        return f"`{flow.fn.name.value}(...)`, which returns {found[0]}" if all(found) \
            else None

    def groups_source(self, e: cst.BaseExpression) -> str | None:
        """How ``e`` is a ``list[list[Sample]]`` (a short description), else None."""
        if isinstance(e, cst.Await):
            return self.groups_source(e.expression)
        if isinstance(e, cst.Call):
            func = e.func
            if isinstance(func, cst.Attribute) and func.attr.value == "get_samples":
                return f"`{code_of(func)}(...)`"
            qualified = self.semantic.qualified(func)
            if e.args and qualified & _KEEP_CALLS:
                return self.groups_source(e.args[0].value)
            if _GATHER in qualified and e.args and all(a.star == "*" for a in e.args):
                arg = e.args[0].value
                if self._coroutines_of_groups(arg):
                    return f"`asyncio.gather` over `{_GROUP_CALL}(...)`"
                return None
            return self._called(e, "groups")
        if isinstance(e, cst.Name):
            bound, held = self._lambda_bound(e)
            if bound:
                return held[1] if held is not None and held[0] == "groups" else None
            return self.groups.get(e.value)
        if isinstance(e, cst.Attribute) and e.attr.value != "samples":
            return self._attribute(e, "groups")
        if isinstance(e, cst.Attribute) and e.attr.value == "samples":
            inner = e.value
            if (isinstance(inner, cst.Name) and inner.value in self._train_outputs) or (
                    isinstance(inner, cst.Call) and self._is_train_output(inner)):
                return "`RolloutFnTrainOutput.samples`"
            return None
        if isinstance(e, cst.Subscript) and len(e.slice) == 1 \
                and isinstance(e.slice[0].slice, cst.Slice):
            return self.groups_source(e.value)
        if isinstance(e, (cst.ListComp, cst.GeneratorExp)):
            self._local_groups.append(self.comprehension_groups(e.for_in))
            try:
                inner_source = self.group_source(e.elt)
            finally:
                self._local_groups.pop()
            return f"a list of groups, each {inner_source}" if inner_source else None
        return None

    def _coroutines_of_groups(self, e: cst.BaseExpression) -> bool:
        """``e`` is a collection of ``generate_and_rm_group(...)`` coroutines or tasks."""
        if isinstance(e, (cst.ListComp, cst.GeneratorExp)):
            return self._is_group_call(e.elt)
        if isinstance(e, (cst.List, cst.Tuple)):
            return bool(e.elements) and all(self._is_group_call(el.value) for el in e.elements)
        if isinstance(e, cst.Name):
            facts = self.semantic.facts(self.fn)
            values = [v for v in facts.values.get(e.value, []) if v is not None]
            adds = facts.appends.get(e.value, [])
            return bool(values or adds) and all(
                _empty(v) or self._coroutines_of_groups(v) for v in values) and all(
                self._is_group_call(a) for a in adds) and bool(
                adds or any(not _empty(v) for v in values))
        return False

    def _indexed(self, e: cst.BaseExpression) -> str | None:
        """How ``e`` is one element of a list of groups (``groups[0]``), else None."""
        if isinstance(e, cst.Subscript) and len(e.slice) == 1 \
                and isinstance(e.slice[0].slice, cst.Index):
            source = self.groups_source(e.value)
            return f"an element of {source}" if source else None
        return None

    def group_source(self, e: cst.BaseExpression) -> str | None:
        """How ``e`` holds one group (``list[Sample]``), else None."""
        if isinstance(e, cst.Await):
            return self.group_source(e.expression)
        if isinstance(e, cst.Name):
            for scope in reversed(self._local_groups):
                if e.value in scope:
                    return scope[e.value]
            bound, held = self._lambda_bound(e)
            if bound:
                return held[1] if held is not None and held[0] == "group" else None
            return self.group_names.get(e.value)
        if isinstance(e, cst.Call):
            if self._is_group_call(e):
                return f"the group `{_GROUP_CALL}(...)` returns"
            return self._called(e, "group")
        if isinstance(e, cst.Attribute):
            return self._attribute(e, "group")
        return self._indexed(e)

    def comprehension_groups(self, comp: cst.CompFor) -> dict[str, str]:
        """Targets of a comprehension chain that iterate a list of groups (name -> source)."""
        out: dict[str, str] = {}
        cur: cst.CompFor | None = comp
        while cur is not None:
            pair = _element_targets(cur.target, cur.iter, self.semantic)
            if isinstance(pair[0], cst.Name):
                self._local_groups.append(out)
                try:
                    source = self.groups_source(pair[1])
                finally:
                    self._local_groups.pop()
                if source is not None:
                    out[pair[0].value] = f"an element of {source}"
                else:
                    out.pop(pair[0].value, None)
            cur = cur.inner_for_in
        return out
