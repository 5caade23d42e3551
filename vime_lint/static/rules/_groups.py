"""Which expressions of a function hold groups of samples, by type flow (shared by VIM013 and
VIM028).

``data_source.get_samples(n)`` and ``RolloutFnTrainOutput(...).samples`` are
``list[list[Sample]]``, and so are the hook parameters the contract types that way
(``groups`` of the sample filter, ``all_groups``, ``buffer``; read from
``vime.contract.protocols``). The flow follows them through local names (every binding of the
name must be one), slices, ``list``/``sorted``/``reversed``; an element of such a list (a ``for``
target, ``enumerate``'s second target, a comprehension target, ``groups[i]``) is a *group*,
``list[Sample]``, whatever its name: ``for sample in data_source.get_samples(4)`` binds a group.

Usage::

    flow = group_flow(fn, context, qualified)
    flow.group_source(expr)      # "`data_source.get_samples(...)`" when expr holds a group
    flow.comprehension_groups(comp)   # {"g": source} for the targets of a comprehension
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import cache

import libcst as cst

from vime.contract import HOOKS, SAMPLE_FIELD_NAMES, protocols
from vime_lint.static._cst import code_of
from vime_lint.static._rule import FileContext

__all__ = ["GROUPS_TYPE", "GroupFlow", "SAMPLE_ATTRIBUTES", "group_flow", "group_params"]

#: The contract type of a list of groups.
GROUPS_TYPE = "list[list[Sample]]"
#: Attributes a Sample has and a list has not (fields and public methods of the contract's
#: Sample API); ``index`` is also ``list.index`` and only counts when it is set.
SAMPLE_ATTRIBUTES: frozenset[str] = frozenset(
    (SAMPLE_FIELD_NAMES | {"append_response_tokens", "get_reward_value",
                           "effective_response_length", "update_from_meta_info", "to_dict"})
    - set(dir(list)))
_TRAIN_OUTPUT = ("RolloutFnTrainOutput",)
#: Builtins whose result holds the same elements.
_KEEP_CALLS = frozenset({"builtins.list", "builtins.sorted", "builtins.reversed",
                         "builtins.tuple"})

Qualified = Callable[[cst.CSTNode], set[str]]


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


def _element_targets(target: cst.BaseExpression, iterable: cst.BaseExpression,
                     qualified: Qualified) -> tuple[cst.BaseExpression, cst.BaseExpression]:
    """``(target, groups)`` for ``for g in groups`` and ``for i, g in enumerate(groups)``."""
    if isinstance(iterable, cst.Call) and iterable.args and isinstance(target, cst.Tuple) \
            and len(target.elements) == 2 and "builtins.enumerate" in qualified(iterable.func):
        return target.elements[1].value, iterable.args[0].value
    return target, iterable


class GroupFlow:
    """Names of one function that hold lists of groups and groups (see the module doc)."""

    def __init__(self, fn: cst.FunctionDef, context: FileContext, qualified: Qualified,
                 positions: frozenset[int]) -> None:
        self._qualified = qualified
        facts = context.semantic.facts(fn)
        self.groups: dict[str, str] = {}
        positional = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
        for p in (positional[i] for i in sorted(positions) if i < len(positional)):
            if all(v is None for v in facts.values.get(p, [None])) \
                    and len(facts.values.get(p, [None])) == 1:
                self.groups[p] = f"the `{p}` parameter ({GROUPS_TYPE})"
        self._train_outputs: set[str] = set()
        for name, values in facts.values.items():
            if values and all(isinstance(v, cst.Call) and self._is_train_output(v)
                              for v in values):
                self._train_outputs.add(name)
        for _ in range(len(facts.values) + 1):
            before = len(self.groups)
            for name, values in facts.values.items():
                if name in self.groups or not values or any(v is None for v in values):
                    continue
                found = [self.groups_source(v) for v in values if v is not None]
                if all(found):
                    self.groups[name] = found[0] or ""
            if len(self.groups) == before:
                break
        group_fors: dict[str, list[str]] = {}
        other_fors: set[str] = set()
        for loop, _ in facts.statement_loops:
            if not isinstance(loop, cst.For):
                continue
            target, iterable = loop.target, loop.iter
            pair = _element_targets(target, iterable, self._qualified)
            source = self.groups_source(pair[1])
            if isinstance(pair[0], cst.Name) and source is not None:
                group_fors.setdefault(pair[0].value, []).append(source)
            else:
                other_fors |= _names(target)
        #: Names bound only by ``for`` loops over lists of groups (name -> source).
        self.group_names: dict[str, str] = {}
        for name, sources in group_fors.items():
            values = facts.values.get(name, [])
            if name not in other_fors and len(values) == len(sources) \
                    and all(v is None for v in values):
                self.group_names[name] = sources[0]
        for name, values in facts.values.items():
            if name in self.group_names or name in self.groups or not values \
                    or any(v is None for v in values):
                continue
            indexed = [self._indexed(v) for v in values if v is not None]
            if all(indexed):
                self.group_names[name] = indexed[0] or ""

    def _is_train_output(self, call: cst.Call) -> bool:
        return any(q.rpartition(".")[2] in _TRAIN_OUTPUT
                   and q.split(".")[0] == "vime"
                   for q in self._qualified(call.func))

    def groups_source(self, e: cst.BaseExpression) -> str | None:
        """How ``e`` is a ``list[list[Sample]]`` (a short description), else None."""
        if isinstance(e, cst.Call):
            func = e.func
            if isinstance(func, cst.Attribute) and func.attr.value == "get_samples":
                return f"`{code_of(func)}(...)`"
            if e.args and self._qualified(func) & _KEEP_CALLS:
                return self.groups_source(e.args[0].value)
            return None
        if isinstance(e, cst.Name):
            return self.groups.get(e.value)
        if isinstance(e, cst.Attribute) and e.attr.value == "samples":
            inner = e.value
            if (isinstance(inner, cst.Name) and inner.value in self._train_outputs) or (
                    isinstance(inner, cst.Call) and self._is_train_output(inner)):
                return "`RolloutFnTrainOutput.samples`"
            return None
        if isinstance(e, cst.Subscript) and len(e.slice) == 1 \
                and isinstance(e.slice[0].slice, cst.Slice):
            return self.groups_source(e.value)
        if isinstance(e, cst.ListComp) and isinstance(e.elt, cst.Name) \
                and e.for_in.inner_for_in is None and isinstance(e.for_in.target, cst.Name) \
                and e.for_in.target.value == e.elt.value:
            return self.groups_source(e.for_in.iter)  # a filter: [g for g in groups if ...]
        return None

    def _indexed(self, e: cst.BaseExpression) -> str | None:
        """How ``e`` is one element of a list of groups (``groups[0]``), else None."""
        if isinstance(e, cst.Subscript) and len(e.slice) == 1 \
                and isinstance(e.slice[0].slice, cst.Index):
            return self.groups_source(e.value)
        return None

    def group_source(self, e: cst.BaseExpression) -> str | None:
        """How ``e`` holds one group (``list[Sample]``), else None."""
        if isinstance(e, cst.Name):
            return self.group_names.get(e.value)
        return self._indexed(e)

    def comprehension_groups(self, comp: cst.CompFor) -> dict[str, str]:
        """Targets of a comprehension chain that iterate a list of groups (name -> source)."""
        out: dict[str, str] = {}
        cur: cst.CompFor | None = comp
        while cur is not None:
            pair = _element_targets(cur.target, cur.iter, self._qualified)
            if isinstance(pair[0], cst.Name):
                source = self.groups_source(pair[1])
                if source is not None:
                    out[pair[0].value] = source
                else:
                    out.pop(pair[0].value, None)
            cur = cur.inner_for_in
        return out


def _names(target: cst.BaseExpression) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {n for el in target.elements for n in _names(el.value)}
    return set()


def group_flow(fn: cst.FunctionDef, context: FileContext, qualified: Qualified,
               dest: str | None = None) -> GroupFlow:
    """The :class:`GroupFlow` of ``fn`` (``dest``: its hook, whose typed parameters count),
    cached per file."""
    key = id(fn.params)
    hit = context.cache.get(key)
    if isinstance(hit, GroupFlow):
        return hit
    flow = GroupFlow(fn, context, qualified, group_params(dest) if dest else frozenset())
    context.cache[key] = flow
    return flow
