"""Type checks of ``Sample`` fields against the contract's hints, with typeguard as the authority.

Each field's hint comes from ``vime.contract.SAMPLE_FIELDS`` (source text) and is resolved once
against the namespace of ``vime.utils.types``. A value is checked in two steps:

1. a *fast accept* predicate compiled from the resolved hint, built on C-level builtins
   (``type(v) is int``, ``set(map(type, xs)) <= {int}``): it never rejects, it only proves the
   common case right without a per-item Python loop;
2. when the predicate cannot prove the value right, typeguard's ``check_type`` decides, with
   ``CollectionCheckStrategy.ALL_ITEMS`` (every item of every collection) and a checker lookup
   function (``typeguard.checker_lookup_functions``) that checks the fields of dataclass
   instances (typeguard alone only runs ``isinstance``). Its message names the bad item.

Usage::

    from vime.contract.checks.typecheck import field_type_problem, type_problem
    field_type_problem("weight_versions", [1])   # "list (item 0 of list is not an instance of str)"
    field_type_problem("weight_versions", ["v1"])   # None
    type_problem({"a": 1}, dict[str, int])           # None

The dataclass extension is active only inside this module's calls (a context variable), so
other typeguard users in the same process see typeguard's own behaviour.

See ``docs/contract.md`` §6b and, for typeguard's defaults, ``docs/environment.md``.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Callable
from contextvars import ContextVar
from functools import cache
from inspect import isclass
from typing import Any

from typeguard import (
    CollectionCheckStrategy,
    TypeCheckerCallable,
    TypeCheckError,
    TypeCheckMemo,
    check_type,
    check_type_internal,
    checker_lookup_functions,
)

from vime.contract.sample import FIELDS_BY_NAME

__all__ = [
    "describe_value",
    "fast_accept",
    "field_hint",
    "field_type_problem",
    "type_problem",
]

#: A predicate that returns True only for values it can prove match the hint.
Predicate = Callable[[Any], bool]

_DATACLASS_FIELDS_ACTIVE: ContextVar[bool] = ContextVar("vime_dataclass_fields", default=False)


# ---- typeguard extension: dataclass fields --------------------------------------------------


@cache
def _dataclass_hints(cls: type) -> tuple[tuple[str, Any], ...]:
    """(field name, resolved hint) of a dataclass, resolved against its module, cached."""
    hints = typing.get_type_hints(cls)
    return tuple((f.name, hints.get(f.name, Any)) for f in dataclasses.fields(cls))


def _check_dataclass(value: Any, origin_type: Any, args: tuple[Any, ...], memo: TypeCheckMemo) -> None:
    if not isinstance(value, origin_type):
        raise TypeCheckError(f"is not an instance of {origin_type.__qualname__}")
    cls: type = type(value)
    for name, hint in _dataclass_hints(cls):
        try:
            check_type_internal(getattr(value, name), hint, memo)
        except TypeCheckError as exc:
            exc.append_path_element(f"field {name!r}")
            raise


def _dataclass_lookup(
    origin_type: Any, args: tuple[Any, ...], extras: tuple[Any, ...]
) -> TypeCheckerCallable | None:
    """typeguard lookup: check dataclass fields, only inside this module's checks."""
    if (_DATACLASS_FIELDS_ACTIVE.get() and isclass(origin_type)
            and dataclasses.is_dataclass(origin_type)):
        return _check_dataclass
    return None


if _dataclass_lookup not in checker_lookup_functions:
    checker_lookup_functions.insert(0, _dataclass_lookup)


def type_problem(value: Any, hint: Any) -> str | None:
    """typeguard's verdict on ``value`` against ``hint``: None if it matches, else the reason.

    Every item of every collection is checked and dataclass instances are checked field by
    field. Returns typeguard's message (e.g. ``"list is not an instance of str"`` with the path
    of the bad item) prefixed by nothing; the caller adds the location.
    """
    token = _DATACLASS_FIELDS_ACTIVE.set(True)
    try:
        check_type(value, hint, collection_check_strategy=CollectionCheckStrategy.ALL_ITEMS)
    except TypeCheckError as exc:
        return str(exc)
    finally:
        _DATACLASS_FIELDS_ACTIVE.reset(token)
    return None


# ---- hints of Sample fields -----------------------------------------------------------------


@cache
def _namespace() -> dict[str, Any]:
    import vime.utils.types as sample_types

    return {**vars(typing), **vars(sample_types)}


@cache
def field_hint(name: str) -> Any:
    """The resolved type of ``Sample.<name>`` from ``SAMPLE_FIELDS[name].hint``.

    Raises:
        KeyError: ``name`` is not a contract field.
    """
    return eval(FIELDS_BY_NAME[name].hint, _namespace())  # noqa: S307 - contract source text


# ---- fast accept predicates -----------------------------------------------------------------

_NONE_TYPE = type(None)


def _always(value: Any) -> bool:
    return True


def _never(value: Any) -> bool:
    return False


def _class_types(cls: type) -> frozenset[type]:
    """Exact runtime types proven to match ``cls`` (``float`` admits ``int``, PEP 484)."""
    if cls is float:
        return frozenset({float, int})
    if cls is complex:
        return frozenset({complex, float, int})
    return frozenset({cls})


def _simple_types(hint: Any) -> frozenset[type] | None:
    """The exact types matching ``hint`` if it is a plain class or a union of them."""
    if hint is None or hint is _NONE_TYPE:
        return frozenset({_NONE_TYPE})
    if isclass(hint) and not dataclasses.is_dataclass(hint) and typing.get_origin(hint) is None:
        if hint in (list, dict, tuple, set):
            return None
        return _class_types(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        out: set[type] = set()
        for arg in typing.get_args(hint):
            sub = _simple_types(arg)
            if sub is None:
                return None
            out |= sub
        return frozenset(out)
    return None


def exact_types(hint: Any) -> frozenset[type] | None:
    """The exact runtime types that :func:`fast_accept` proves for ``hint`` with one
    ``type(v) in types`` test (a plain class or a union of them), else None (``Any`` too)."""
    return None if hint is Any else _simple_types(hint)


@cache
def fast_accept(hint: Any) -> Predicate:
    """A predicate that is True only for values provably matching ``hint``.

    Built from C-level builtins: exact ``type()`` membership for classes and unions,
    ``set(map(type, xs)) <= allowed`` for homogeneous lists, key/value type sets for dicts and
    field-by-field predicates for dataclasses. False means "not proven": ask typeguard.
    """
    if hint is Any:
        return _always
    simple = _simple_types(hint)
    if simple is not None:
        if len(simple) == 1:
            (only,) = simple
            return lambda v: type(v) is only
        return lambda v: type(v) in simple
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        preds = tuple(fast_accept(a) for a in args if a is not _NONE_TYPE)
        if len(preds) < len(args):      # Optional: None first, without a generator
            if len(preds) == 1:
                (only_pred,) = preds
                return lambda v: v is None or only_pred(v)
            return lambda v: v is None or any(p(v) for p in preds)
        return lambda v: any(p(v) for p in preds)
    if origin is list:
        item = args[0] if args else Any
        if item is Any:
            return lambda v: type(v) is list
        item_types = _simple_types(item)
        if item_types is not None:
            return lambda v: type(v) is list and set(map(type, v)) <= item_types
        item_pred = fast_accept(item)
        return lambda v: type(v) is list and all(map(item_pred, v))
    if origin is dict:
        key, val = (args + (Any, Any))[:2] if args else (Any, Any)
        key_types = _simple_types(key) if key is not Any else None
        val_pred = fast_accept(val)

        def dict_pred(v: Any) -> bool:
            if type(v) is not dict:
                return False
            if key_types is not None and not set(map(type, v)) <= key_types:
                return False
            return val is Any or all(map(val_pred, v.values()))

        return dict_pred
    if isclass(hint) and dataclasses.is_dataclass(hint):
        cls = hint
        preds_by_name = tuple((n, fast_accept(h)) for n, h in _dataclass_hints(cls))
        return lambda v: type(v) is cls and all(p(getattr(v, n)) for n, p in preds_by_name)
    if isclass(hint) and issubclass(hint, enum.Enum):
        return lambda v: type(v) is hint
    return _never


def field_type_problem(name: str, value: Any) -> str | None:
    """None if ``value`` matches the contract type of ``Sample.<name>``, else why not.

    The fast predicate proves the common case; typeguard (every item, dataclass fields)
    decides the rest and names the bad item. The result reads after the value's location,
    e.g. ``"list (item 3 of list is not an instance of str)"``.
    """
    hint = field_hint(name)
    if fast_accept(hint)(value):
        return None
    problem = type_problem(value, hint)
    if problem is None:
        return None
    return f"{describe_value(value)} ({problem})"


def describe_value(value: Any, limit: int = 40) -> str:
    """A short description: ``'completed' (str)``, ``a list of 3 items``, ``a ndarray``."""
    if isinstance(value, (list, tuple, dict, set)):
        return f"a {type(value).__name__} of {len(value)} item(s)"
    text = repr(value)
    if len(text) > limit:
        return f"a {type(value).__name__}"
    return f"{text} ({type(value).__name__})"
