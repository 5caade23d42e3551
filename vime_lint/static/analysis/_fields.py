"""Which Sample fields a rollout's code sets, on any path (for the required-fields rule).

Looked at over a function and the module's own helpers it reaches (:meth:`Semantic.closure`):

- attribute stores ``x.reward = ...`` (also ``+=`` and ``setattr(x, "reward", ...)``);
- ``Sample(...)`` keywords, ``dataclasses.replace(x, reward=...)``;
- calls that set fields: vime's callables in ``vime.contract.hooks.FIELD_SETTERS`` (the
  generate, ``generate_and_rm``, the default rollout function, ``rm_hub``),
  ``Sample.append_response_tokens`` (``tokens``, ``response_length``; ``status`` with
  ``meta_info``), ``update_from_meta_info`` (``status``), ``Sample.from_dict`` (all);
- where samples come from: ``*.get_samples(...)`` or ``Sample(...)``.

A call the module does not show (an imported helper, a method of another object) that is given
a name holding samples may set anything: the answer is then "unknown" and nothing is reported.

Usage::

    found = fields_set(semantic, semantic.closure(fn, owner, side="train"), owner,
                       side="train")
    found.fields, found.opaque, found.sources
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from vime.contract.hooks import FIELD_SETTERS
from vime.contract.sample import GENERATED_FIELDS, REQUIRED_TRAIN_FIELDS
from vime_lint.static.analysis._functions import Side, on_side
from vime_lint.static.analysis._names import spelled

if TYPE_CHECKING:
    from vime_lint.static.analysis import Semantic

__all__ = ["GENERATED_FIELDS", "REQUIRED_FIELDS", "FieldsSet", "fields_set", "sample_names"]

#: Fields every sample of a train output needs, and those a generate step sets (the contract's).
REQUIRED_FIELDS = REQUIRED_TRAIN_FIELDS
_ALL = frozenset(REQUIRED_TRAIN_FIELDS)
#: vime callables by qualified-name tail -> the fields they set on the samples they get.
_SETTERS: tuple[tuple[str, frozenset[str]], ...] = tuple(
    (tail, frozenset(fields)) for tail, fields in FIELD_SETTERS)
#: Methods that grow a field in place (``sample.tokens.extend(ids)``).
_GROW_IN_PLACE = frozenset({"append", "extend", "insert"})
#: Calls that never set a sample's fields (builtins, containers, logging, copies).
_INERT = frozenset({
    "len", "range", "enumerate", "zip", "print", "list", "dict", "tuple", "set", "sorted",
    "reversed", "min", "max", "sum", "any", "all", "isinstance", "getattr", "hasattr", "iter",
    "next", "str", "int", "float", "bool", "repr", "id", "map", "filter", "type",
})
_INERT_PREFIXES = ("asyncio.", "copy.", "itertools.", "functools.", "logging.", "math.",
                   "random.", "json.", "time.", "re.", "os.", "collections.", "builtins.",
                   "vime.")
_INERT_METHODS = frozenset({"append", "extend", "insert", "pop", "get", "items", "values",
                            "keys", "update", "setdefault", "copy", "info", "debug", "warning",
                            "error", "format", "join", "split", "strip", "encode", "decode",
                            "get_samples", "add_samples", "apply_chat_template", "tolist"})
_SAMPLEISH = ("sample", "samples", "group", "groups", "batch", "s", "item", "leaf")


@dataclass
class FieldsSet:
    """What the code shows about the required fields."""

    #: Required fields set somewhere (on any path).
    fields: set[str] = field(default_factory=set)
    #: A call that may set fields the linter cannot see (its source text), else "".
    opaque: str = ""
    #: True when samples come from ``get_samples`` or ``Sample(...)`` in this code.
    sources: bool = False
    #: True when the code builds samples itself (``Sample(...)``): none of their fields is
    #: set yet. Samples from ``get_samples`` may come back complete from a custom data
    #: source (a replay buffer), so they count only once the code starts filling them.
    constructed: bool = False


def _sampleish_name(name: str) -> bool:
    return name in _SAMPLEISH or name.endswith(("_sample", "_samples", "_group", "_groups"))


def fields_set(semantic: Semantic, closure: Sequence[cst.FunctionDef],
               owner: cst.ClassDef | None, samples: frozenset[str] = frozenset(),
               side: Side = None) -> FieldsSet:
    """The required fields ``closure`` sets (see the module docstring).

    ``semantic`` is the file's :class:`~vime_lint.static.analysis.Semantic`; ``samples`` names
    parameters of ``closure[0]`` that hold a sample whatever they are called (a generate
    function's second parameter). With ``side`` (``"train"``/``"eval"``), what ``closure[0]``
    does only on the other ``evaluation`` path does not count (pair it with
    ``semantic.closure(fn, owner, side=side)``).
    """
    out = FieldsSet()
    for i, fn in enumerate(closure):
        facts = semantic.facts(fn)
        held = sample_names(semantic, fn) | (samples if i == 0 else frozenset())
        for store in facts.attr_stores:
            if store.attr in _ALL and (i > 0 or on_side(store.side, side)):
                out.fields.add(store.attr)
        for site in facts.calls:
            if i == 0 and not on_side(site.side, side):
                continue
            call = site.node
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in _GROW_IN_PLACE \
                    and isinstance(func.value, cst.Attribute) and func.value.attr.value in _ALL:
                out.fields.add(func.value.attr.value)  # sample.tokens.extend(ids)
                continue
            keywords = {a.keyword.value for a in call.args if a.keyword is not None}
            if semantic.refers_to(func, "Sample"):
                out.sources = out.constructed = True
                out.fields |= keywords & _ALL
                continue
            if isinstance(func, cst.Attribute):
                attr = func.attr.value
                if attr == "get_samples":
                    out.sources = True
                    continue
                if attr == "append_response_tokens":
                    out.fields |= {"tokens", "response_length"}
                    if "meta_info" in keywords:
                        out.fields.add("status")
                    continue
                if attr in ("update_from_meta_info", "_apply_meta_info"):
                    out.fields.add("status")
                    continue
            qualified = semantic.qualified(func)
            hit = next((fs for tail, fs in _SETTERS
                        if any(q.startswith("vime.") and q.endswith(tail) for q in qualified)),
                       None)
            if hit is not None:
                out.fields |= hit
                continue
            if "dataclasses.replace" in qualified:
                out.fields |= keywords & _ALL
                continue
            if semantic.callee(call, fn, owner) is not None:
                continue  # the module's own helper: in the closure
            if _inert(func, qualified, semantic):
                continue
            if not out.opaque and _gets_samples(call, held):
                out.opaque = spelled(func) or "a call"
    return out


def _inert(func: cst.BaseExpression, qualified: frozenset[str], semantic: Semantic) -> bool:
    if any(q.startswith(_INERT_PREFIXES) for q in qualified):
        return True
    if isinstance(func, cst.Name):
        return func.value in _INERT and not qualified - {func.value, "builtins." + func.value}
    if isinstance(func, cst.Attribute):
        return func.attr.value in _INERT_METHODS
    return False


def _gets_samples(call: cst.Call, held: set[str]) -> bool:
    for arg in call.args:
        v = arg.value
        while isinstance(v, (cst.Subscript, cst.Attribute)) and not (
                isinstance(v, cst.Attribute) and v.attr.value in ("prompt", "label", "metadata")):
            v = v.value
        if isinstance(v, cst.Name) and (v.value in held or _sampleish_name(v.value)):
            return True
    func = call.func
    return isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) \
        and func.value.value in held and func.attr.value not in _INERT_METHODS


def sample_names(semantic: Semantic, fn: cst.FunctionDef) -> set[str]:
    """Local names that hold samples or groups: assigned from ``get_samples``/``Sample(...)``
    or copies and items of such names, and loop variables over them (two passes)."""
    facts = semantic.facts(fn)
    held = {p.name.value for p in fn.params.params if _sampleish_name(p.name.value)}
    for _ in range(2):
        for name, values in facts.values.items():
            for v in values:
                if v is not None and _holds(v, held, semantic):
                    held.add(name)
        for target, iterable in facts.loops:
            if _holds(iterable, held, semantic):
                for t in _target_names(target):
                    held.add(t)
    return held


def _holds(expr: cst.BaseExpression, held: set[str], semantic: Semantic) -> bool:
    if isinstance(expr, cst.Await):
        return _holds(expr.expression, held, semantic)
    if isinstance(expr, cst.Name):
        return expr.value in held
    if isinstance(expr, cst.Subscript):
        return _holds(expr.value, held, semantic)
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value == "get_samples":
            return True
        if semantic.refers_to(func, "Sample"):
            return True
        return any(_holds(a.value, held, semantic) for a in expr.args)
    if isinstance(expr, (cst.List, cst.Tuple)):
        return any(_holds(e.value, held, semantic) for e in expr.elements)
    if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
        return any(_holds(f.iter, held, semantic) for f in _fors(expr.for_in))
    return False


def _fors(comp: cst.CompFor) -> list[cst.CompFor]:
    out = [comp]
    while comp.inner_for_in is not None:
        comp = comp.inner_for_in
        out.append(comp)
    return out


def _target_names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in _target_names(el.value)]
    return []
