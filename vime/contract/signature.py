"""Checks one callable's parameters against a :class:`~vime.contract.hooks.HookSpec`.

The same function serves the load-time check (parameters from ``inspect.signature``) and the
linter (parameters read from the CST), so both say the same thing about the same definition.

Usage::

    params = params_from_callable(my_fn)        # or built from a libcst FunctionDef
    for v in check_signature(params, is_async=False, spec=HOOKS["rollout_function_path"]):
        print(v.id, v.severity, v.message)

See ``docs/contract.md`` §4 (load-time rules) and §12 (the definitions it rejects).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from vime.contract.errors import Violation
from vime.contract.hooks import HookSpec
from vime.contract.invariants import INVARIANTS

__all__ = ["Param", "accepts_keyword", "check_signature", "optional_kwargs", "params_from_callable",
           "render_params"]

POSITIONAL_ONLY = "POSITIONAL_ONLY"
POSITIONAL_OR_KEYWORD = "POSITIONAL_OR_KEYWORD"
VAR_POSITIONAL = "VAR_POSITIONAL"
KEYWORD_ONLY = "KEYWORD_ONLY"
VAR_KEYWORD = "VAR_KEYWORD"


class Param(NamedTuple):
    """One parameter: ``kind`` is an ``inspect.Parameter.kind`` name (``"KEYWORD_ONLY"``)."""

    name: str
    kind: str
    has_default: bool = False
    default_repr: str = ""


def params_from_callable(obj: Callable[..., Any]) -> tuple[list[Param], bool]:
    """``(params, is_async)`` of a function, or of a class's ``__init__`` without ``self``.

    Raises:
        TypeError: ``inspect.signature`` cannot read the object (a builtin, say).
    """
    target: Any = obj
    if inspect.isclass(obj):
        target = obj.__init__
    sig = inspect.signature(target)
    params = [
        Param(
            p.name,
            p.kind.name,
            p.default is not inspect.Parameter.empty,
            repr(p.default) if p.default is not inspect.Parameter.empty else "",
        )
        for p in sig.parameters.values()
    ]
    if inspect.isclass(obj) and params and params[0].name in ("self", "cls"):
        params = params[1:]
    is_async = inspect.iscoroutinefunction(target) or inspect.isasyncgenfunction(target)
    return params, is_async


def render_params(params: Sequence[Param], is_async: bool, name: str = "fn") -> str:
    """Source-like rendering: ``async def fn(args, sample, *, evaluation=False)``."""
    parts: list[str] = []
    star_done = False
    for i, p in enumerate(params):
        if p.kind == KEYWORD_ONLY and not star_done:
            parts.append("*")
            star_done = True
        if p.kind == VAR_POSITIONAL:
            star_done = True
            parts.append(f"*{p.name}")
        elif p.kind == VAR_KEYWORD:
            parts.append(f"**{p.name}")
        else:
            parts.append(f"{p.name}={p.default_repr}" if p.has_default else p.name)
        if p.kind == POSITIONAL_ONLY and (i + 1 == len(params) or params[i + 1].kind != POSITIONAL_ONLY):
            parts.append("/")
    return f"{'async def' if is_async else 'def'} {name}({', '.join(parts)})"


def check_signature(
    params: Sequence[Param],
    is_async: bool,
    spec: HookSpec,
    *,
    where: str = "",
    invariant: str = "VIM100",
) -> list[Violation]:
    """Compare a definition with ``spec``; return one Violation per problem (empty: it fits).

    Errors (the call fails): wrong sync/async mode; fewer positional slots than the call site
    passes; a required default missing (``evaluation=False``); a keyword the call site passes
    that the hook cannot take; an extra parameter without a default. Warnings (the call works):
    a positional parameter under a stale API's name (``data_buffer``, deprecated); another
    default value. Other names of positional parameters are not reported: the call site
    passes those arguments by position (``HookSpec.positional``), whatever they are called.

    Args:
        params: the parameters in order (``self`` already removed for classes).
        is_async: the definition is ``async def``.
        spec: the hook's contract.
        where: the location to report (dotted path or ``file:line:col``).
        invariant: ``"VIM100"`` (load time) or the linter's ``"VIM001"``/``"VIM004"``.
    """
    inv = INVARIANTS[invariant]
    out: list[Violation] = []
    expected_def = spec.render(where.rpartition(".")[2].rpartition(":")[2] or None)

    def add(problem: str, severity: str = "error", fix: str | None = None) -> None:
        out.append(inv.violation(where, severity="error" if severity == "error" else "warning",
                                 problem=problem, expected=expected_def, name=where,
                                 hook=spec.arg, fix=fix if fix is not None
                                 else f"change the definition to `{expected_def}`"))

    if spec.kind == "function":
        if spec.mode == "sync" and is_async:
            add(f"is an async def, but {spec.arg} hooks are called synchronously "
                f"({spec.call_site}); declare it with plain `def` and run async work through "
                "vime.utils.async_utils.run(coro)" if spec.protocol == "RolloutFunction" else
                f"is an async def, but {spec.arg} hooks are called synchronously "
                f"({spec.call_site}); declare it with plain `def`")
        elif spec.mode == "async" and not is_async:
            add(f"is a plain def, but {spec.arg} hooks are awaited ({spec.call_site}); "
                "declare it with `async def`")

    by_name = {p.name: (i, p) for i, p in enumerate(params)}
    has_var_pos = any(p.kind == VAR_POSITIONAL for p in params)
    has_var_kw = any(p.kind == VAR_KEYWORD for p in params)
    positional = [p for p in params if p.kind in (POSITIONAL_ONLY, POSITIONAL_OR_KEYWORD)]
    passed_pos = spec.positional

    # Positional slots and names.
    if len(positional) < len(passed_pos) and not has_var_pos:
        missing = passed_pos[len(positional):]
        add(f"takes {len(positional)} positional parameter(s) but is called with "
            f"{len(passed_pos)} ({', '.join(passed_pos)}); missing {', '.join(missing)}")
    for i, expected in enumerate(passed_pos):
        if i >= len(positional):
            break
        actual = positional[i].name
        if actual == expected:
            continue
        if spec.renames.get(actual) == expected:
            # Passed positionally, so the stale name still works: deprecated, not broken.
            add(f"names parameter {i + 1} `{actual}`: did you mean `{expected}`? "
                f"(`{actual}` is the deprecated name; the argument is passed positionally, so "
                "it still works)", severity="warning", fix=f"rename `{actual}` to `{expected}`")
        # Any other name binds by position, which is how the call site passes it: nothing to
        # report (a group reward's `samples`, a generate's `params`).

    # Keywords the call site passes by name.
    for kw in spec.keyword_passed:
        hit = by_name.get(kw)
        if hit is None:
            if not has_var_kw:
                add(f"does not accept the keyword `{kw}` that the call site passes")
            continue
        idx, p = hit
        if p.kind in (POSITIONAL_ONLY, VAR_POSITIONAL, VAR_KEYWORD):
            add(f"declares `{kw}` positional-only, but the call site passes it by keyword")
        elif p.kind == POSITIONAL_OR_KEYWORD and idx < len(passed_pos):
            add(f"binds `{kw}` to positional slot {idx + 1}, where the call site passes "
                f"`{passed_pos[idx]}`; `{kw}` would be given twice")

    # Required defaults.
    for name, default in spec.param_defaults.items():
        hit = by_name.get(name)
        if hit is None:
            continue
        p = hit[1]
        if not p.has_default:
            add(f"declares `{name}` without a default; expected `{name}={default}`",
                fix=f"add the default: `{name}={default}`")
        elif p.default_repr != default:
            add(f"declares `{name}={p.default_repr}`, expected `{name}={default}`",
                severity="warning", fix=f"use `{name}={default}`")

    # Extra parameters without defaults.
    supplied = set(spec.params) | set(spec.optional_kwargs)
    for i, p in enumerate(params):
        if p.kind in (VAR_POSITIONAL, VAR_KEYWORD) or p.has_default:
            continue
        if p.kind in (POSITIONAL_ONLY, POSITIONAL_OR_KEYWORD) and i < len(passed_pos):
            continue  # filled positionally
        if p.name in spec.keyword_passed:
            continue
        if p.kind == KEYWORD_ONLY and p.name in supplied and p.name not in spec.optional_kwargs:
            continue
        add(f"has an extra required parameter `{p.name}` that the call site never passes; "
            "give it a default or remove it")
    return out


def accepts_keyword(fn: Callable[..., Any], name: str) -> bool:
    """True if ``fn`` takes a parameter ``name`` (or ``**kwargs``); False when its signature
    cannot be read."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == name or p.kind is p.VAR_KEYWORD for p in params)


def optional_kwargs(fn: Callable[..., Any], spec: HookSpec, **values: Any) -> dict[str, Any]:
    """The keywords among ``values`` that ``spec.optional_kwargs`` lists and ``fn`` accepts:
    what a caller passes a hook on top of its positional parameters.

    Usage::

        kwargs = optional_kwargs(fn, HOOKS["rollout_sample_hook_path"], rollout_id=7,
                                 evaluation=False)
        fn(args, sample, **kwargs)

    Raises:
        ValueError: a name in ``values`` that the spec does not list (a caller's typo).
    """
    unknown = sorted(set(values) - set(spec.optional_kwargs))
    if unknown:
        raise ValueError(f"{spec.arg}: {unknown} are not optional keywords of this hook "
                         f"(known: {list(spec.optional_kwargs)})")
    return {k: v for k, v in values.items() if accepts_keyword(fn, k)}
