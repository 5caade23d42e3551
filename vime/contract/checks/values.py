"""Pure value predicates shared by several invariants: rewards, finite reals, JSON paths.

Usage::

    reward_problem(0.5, None)                  # None (valid)
    reward_problem({"acc": 1.0}, None)         # ("error", "is a dict with keys ['acc'] but ...")
    reward_problem(True, None)                 # ("warning", "is a bool (True); ...")
    json_problem({"x": {1, 2}})                # "['x'] is a set, not JSON-serialisable"

See ``docs/contract.md`` §2 (``get_reward_value``) and §6b.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Mapping
from typing import Any

from vime.contract.checks.typecheck import describe_value
from vime.contract.errors import Severity
from vime.contract.reward import reward_read_problem

__all__ = ["array_number", "is_finite_real", "json_problem", "real_problem", "reward_problem"]

#: Top-level packages whose tensors, arrays and scalars are not Python numbers (VIM122).
ARRAY_PACKAGES: frozenset[str] = frozenset({"numpy", "torch", "jax", "jaxlib"})


def is_finite_real(value: Any) -> bool:
    """True for a finite ``numbers.Real`` that is not a bool (numpy scalars included)."""
    if type(value) is float:
        return math.isfinite(value)
    if type(value) is int:
        return True
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError, OverflowError):
        return False


def array_number(value: Any) -> tuple[str, int | None] | None:
    """``(description, elements)`` when ``value`` is a numpy/torch/jax tensor, array or scalar,
    else None; read from ``type(value).__module__``, ``.shape`` and ``.dtype`` without importing
    numpy or torch. ``numpy.float64`` is a ``float`` subclass and gives None (tolerated).

    Usage::

        array_number(torch.tensor([0.5]))   # ("a torch.Tensor of shape (1,), dtype torch.float32", 1)
        array_number(np.float32(0.5))       # ("a numpy.float32 scalar", 1)
        array_number(np.float64(0.5)), array_number(0.5)   # None, None
    """
    cls = type(value)
    if cls is float or cls is int or cls is bool or value is None:
        return None
    package = cls.__module__.partition(".")[0]
    if package not in ARRAY_PACKAGES or isinstance(value, float):
        return None
    name = f"{package}.{cls.__name__}"
    shape = getattr(value, "shape", None)
    try:
        dims = tuple(int(d) for d in shape) if shape is not None else None
    except (TypeError, ValueError):
        dims = None
    if dims is None:
        return f"a {name}", None
    if not dims and package == "numpy" and cls.__name__ != "ndarray":
        return f"a {name} scalar", 1
    elements = math.prod(dims)
    return f"a {name} of shape {dims}, dtype {getattr(value, 'dtype', '?')}", elements


def real_problem(value: Any) -> tuple[Severity, str] | None:
    """Why ``value`` is not a finite real (bool: a warning), or None if it is one."""
    if is_finite_real(value):
        return None
    if isinstance(value, bool):
        return "warning", f"is a bool ({value}); store a float (1.0 / 0.0)"
    if isinstance(value, numbers.Real):
        return "error", f"is {value!r}, expected a finite real"
    hint = "; call .item() on tensors and numpy arrays" if hasattr(value, "item") else ""
    return "error", f"is {describe_value(value)}, expected a finite real{hint}"


def reward_problem(value: Any, reward_key: str | None, *,
                   key_arg: str = "--reward-key") -> tuple[Severity, str] | None:
    """Why ``value`` is not a valid reward (docs/contract.md §2 ``get_reward_value``), or None.

    Valid: a finite real, or a dict holding a finite real under ``reward_key``. What cannot be
    read at all (:func:`vime.contract.reward.reward_read_problem`: None, a dict without
    ``reward_key`` set or without the key) and a non-finite value are errors; a bool is a
    warning. The text reads after the reward's location.
    """
    unreadable = reward_read_problem(value, reward_key, key_arg=key_arg)
    if unreadable is not None:
        return "error", unreadable
    if isinstance(value, Mapping):
        inner = real_problem(value[reward_key])
        if inner is None:
            return None
        return inner[0], f"[{reward_key!r}] {inner[1]}"
    return real_problem(value)


_JSON_SCALARS = (str, int, float, bool, type(None))


def json_problem(value: Any) -> str | None:
    """None if ``json.dumps(value)`` works, else the first bad path and its type.

    Returns e.g. ``"['scores'][2] is a ndarray, not JSON-serialisable"`` (the caller prefixes
    the field name).
    """
    try:
        json.dumps(value)
        return None
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:
        path = _first_bad_path(value, "", set())
        if path is None:
            return f"does not pass json.dumps ({type(exc).__name__}: {exc})"
        where, bad = path
        return f"{where} is a {type(bad).__name__}, not JSON-serialisable".lstrip()


def _first_bad_path(value: Any, path: str, seen: set[int]) -> tuple[str, Any] | None:
    # ``seen``: the ids of the containers on the path from the top down to ``value`` (a cycle,
    # which json.dumps refuses); a container met again elsewhere (shared, not a cycle) is fine
    if isinstance(value, _JSON_SCALARS):
        return None
    if id(value) in seen:
        return path, value
    if isinstance(value, dict):
        seen.add(id(value))
        for key, item in value.items():
            if not isinstance(key, _JSON_SCALARS):
                return f"{path}[{key!r}] (key)", key
            found = _first_bad_path(item, f"{path}[{key!r}]", seen)
            if found is not None:
                return found
        seen.discard(id(value))
        return None
    if isinstance(value, (list, tuple)):
        seen.add(id(value))
        for i, item in enumerate(value):
            found = _first_bad_path(item, f"{path}[{i}]", seen)
            if found is not None:
                return found
        seen.discard(id(value))
        return None
    return path, value


def keyed_reward(reward: Any, key: str | None) -> Any:
    """The scalar a reward stands for: ``reward[key]`` of a dict reward when ``key``
    (``--reward-key``) is set (None when the key is missing), else the reward itself."""
    if isinstance(reward, Mapping) and key:
        return reward.get(key)
    return reward
