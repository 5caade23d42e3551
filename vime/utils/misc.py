"""Loading user hooks by dotted path, with the load-time contract check (VIM100).

Usage::

    fn = load_function("my_pkg.rollout.generate_rollout", hook="rollout_function_path")
    cls = load_function("vime.rollout.data_source.RolloutDataSourceWithBuffer",
                        hook="data_source_path")

Follows upstream slime's ``slime/utils/misc.py`` (``load_function``, there without a check); see
``docs/contract.md`` §4.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
import warnings
from collections.abc import Callable
from typing import Any

from vime.contract.errors import ContractError, ContractWarning
from vime.contract.hooks import HookSpec, hook_spec
from vime.contract.signature import check_signature, params_from_callable, render_params

__all__ = ["load_function", "check_hook"]

_CACHE: dict[tuple[str, str | None, bool], Any] = {}


def _arg_label(hook: str | None, spec: HookSpec | None) -> str:
    return f" ({spec.arg})" if spec is not None else (f" ({hook})" if hook else "")


def load_function(path: str, *, hook: str | None = None, group_rm: bool = False) -> Any:
    """Import ``path`` (``"pkg.module.attr"``) and return the attribute, cached per path.

    With ``hook=<argparse dest>`` the target is checked once against ``HOOKS[hook]``: errors
    raise, name-only mismatches warn (``ContractWarning``). ``group_rm`` selects the batched
    ``--custom-rm-path`` form.

    Raises:
        ContractError: ``path`` is not a dotted path; the module is not found; the module was
            found but has no such attribute; importing the module raised (the original
            exception chained); VIM100 signature errors. Each names the argument and path.
        KeyError: ``hook`` is not a known hook dest.
    """
    key = (path, hook, group_rm)
    if key in _CACHE:
        return _CACHE[key]
    spec = hook_spec(hook, group_rm=group_rm) if hook else None
    label = _arg_label(hook, spec)
    if not isinstance(path, str) or "." not in path.strip(".") or path != path.strip():
        raise ContractError(f"{label.strip(' ()') or 'load_function'}: {path!r} is not a dotted "
                            "path; expected 'package.module.function'")
    module_name, _, attr = path.rpartition(".")
    try:
        found = module_name in sys.modules or importlib.util.find_spec(module_name) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ContractError(
            f"cannot load{label} {path!r}: module {module_name!r} not found; check the spelling "
            "and that its directory is on sys.path (PYTHONPATH) of every process that loads it"
        )
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise ContractError(
            f"cannot load{label} {path!r}: importing module {module_name!r} raised "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    try:
        obj = getattr(module, attr)
    except AttributeError:
        public = sorted(n for n in vars(module) if not n.startswith("_"))
        hint = f"; it defines {', '.join(public[:12])}{' ...' if len(public) > 12 else ''}" if public else ""
        raise ContractError(
            f"cannot load{label} {path!r}: module {module_name!r} has no attribute {attr!r}{hint}"
        ) from None
    if spec is not None:
        check_hook(obj, spec, path=path)
    _CACHE[key] = obj
    return obj


def check_hook(obj: Callable[..., Any], spec: HookSpec, *, path: str) -> None:
    """Check ``obj`` against ``spec`` (VIM100): raise on errors, warn on name mismatches
    (``DeprecationWarning`` for a stale parameter name such as ``data_buffer``).

    Raises:
        ContractError: the target is not callable, is a function where a class is expected (or
            the reverse), or its signature has errors; the message names the argument, the
            target, the expected and the actual signature.
    """
    if spec.kind == "class" and not inspect.isclass(obj):
        raise ContractError(f"{spec.arg} {path!r} is a {type(obj).__name__}, expected a class "
                            f"(`{spec.render(path.rpartition('.')[2])}`)")
    if not callable(obj):
        raise ContractError(f"{spec.arg} {path!r} is a {type(obj).__name__}, not callable; "
                            f"expected `{spec.render(path.rpartition('.')[2])}`")
    try:
        params, is_async = params_from_callable(obj)
    except (TypeError, ValueError):
        return  # builtins and C callables have no readable signature: nothing to check
    violations = check_signature(params, is_async, spec, where=path)
    if not violations:
        return
    name = path.rpartition(".")[2]
    actual = render_params(params, is_async, name)
    errors = [v for v in violations if v.severity == "error"]
    header = (f"{spec.arg} {path}: signature does not match the contract\n"
              f"  expected: {spec.render(name)}\n  actual:   {actual}")
    if errors:
        raise ContractError(violations, header=header)
    stale = [p.name for p in params if p.name in spec.renames]
    for v in violations:
        # A stale parameter name (``data_buffer``) still works when passed positionally: it is
        # deprecated, so it warns with DeprecationWarning rather than refusing to load.
        category: type[Warning] = DeprecationWarning if any(
            f"`{name}`" in v.message for name in stale) else ContractWarning
        warnings.warn(f"{header}\n{v.format()}", category, stacklevel=3)
