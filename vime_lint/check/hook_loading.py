"""Import the hooks a ``vime-lint check`` run names, with their load-time signature check (VIM100).

:func:`load_hooks` loads each given hook as training loads it (``vime.utils.misc.load_function``)
and records where its ``def`` is; :func:`located` leads a finding about one of those hooks with
that ``FILE:LINE``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import warnings
from typing import Any

from vime.config.inputs import hook_module_problem
from vime.contract.checks.settings import CheckContext
from vime.contract.errors import ContractError, Violation
from vime.contract.hooks import HOOKS
from vime_lint.check.calls import (
    HarnessError,
    defined_at,
    loaded_object,
    raised_at,
    warning_findings,
)
from vime_lint.check.report import Report

__all__ = ["load_hooks", "located"]


def load_hooks(ns: argparse.Namespace, report: Report
               ) -> tuple[dict[str, Any], dict[tuple[str, str], str]]:
    """Import every hook given on ``ns`` with its load-time signature check (VIM100), whose
    findings go into ``report``.

    Returns:
        ``{hook dest: (path, fn)}`` (a list of them for a hook given more than once), and
        ``{(hook dest, dotted path): FILE:LINE}`` of each hook's ``def``.

    Raises:
        HarnessError: a module cannot be imported or an attribute is missing.
    """
    from vime.utils.misc import load_function

    hooks: dict[str, Any] = {}
    sources: dict[tuple[str, str], str] = {}
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    for spec in HOOKS.values():
        value = getattr(ns, spec.dest, None)
        if not spec.v1 or not value:
            continue
        paths = value if isinstance(value, list) else [value]
        loaded = []
        for path in paths:
            missing = hook_module_problem(path, spec.arg) if isinstance(path, str) else None
            if missing:
                raise HarnessError(f"{spec.arg}: {missing}")
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    obj = load_function(path, hook=spec.dest,
                                        group_rm=bool(ns.group_rm)
                                        and spec.dest == "custom_rm_path")
                except ContractError as exc:
                    if not exc.violations:
                        raise HarnessError(str(exc)) from exc
                    report.add(exc.violations, ["VIM100"])
                    report.notes.append(f"{spec.arg} `{path}` has signature errors; "
                                        "the stages that call it were skipped")
                    obj = None
                except Exception as exc:  # import-time crash inside load_function
                    raise HarnessError(f"cannot load {spec.arg} {path!r}: "
                                       f"{type(exc).__name__}: {exc}{raised_at(exc)}") from exc
            report.add(warning_findings(caught, f"{spec.arg} {path}"), ["VIM100"])
            at = defined_at(obj if obj is not None else loaded_object(path)) \
                if isinstance(path, str) else None
            if at is not None:
                sources[(spec.dest, path)] = at
            if obj is not None:
                loaded.append((path, obj))
        if loaded:
            hooks[spec.dest] = loaded if spec.multiple else loaded[0]
    report.checked.add("VIM100")
    return hooks, sources


def located(v: Violation, sources: dict[tuple[str, str], str]) -> Violation:
    """``v`` with the ``FILE:LINE`` of the hook's ``def`` (``sources``, from
    :func:`load_hooks`) leading its context when it concerns one of the user's hooks: its
    context names the hook (`` `pkg.mod.fn` (--arg)``), or it is about the hook itself
    (``where`` is its dotted path, as for the load-time signature check). The dotted path and
    argument stay in the text."""
    for (dest, path), at in sources.items():
        arg = HOOKS[dest].arg
        at = _shown(dest, path, at)
        if v.context:
            if f"`{path}` ({arg})" in v.context and not v.context.startswith(at):
                return dataclasses.replace(v, context=f"{at}: {v.context}")
        elif v.where in (path, f"{arg} {path}"):
            return dataclasses.replace(
                v, context=f"{at}: {CheckContext.for_hook(dest, path).describe()}")
    return v


def _shown(dest: str, path: str, at: str) -> str:
    """How a finding names where hook ``path`` is: ``FILE:LINE`` of its ``def`` in the user's
    code; vime's own hook (the default rollout, whose findings are about no user hook: those
    go to the user's reward or generate, ``vime_lint.check.finding_owners``) by name, not by a
    file inside vime."""
    from pathlib import Path

    import vime

    root = Path(vime.__file__).resolve().parent
    file = Path(at.rpartition(":")[0]).resolve()
    if root not in file.parents:        # not vime's (the user's, an installed package's)
        return at
    if dest == "rollout_function_path" and path == HOOKS[dest].default:
        return "vime's default rollout"
    return f"vime's own {HOOKS[dest].arg}"
