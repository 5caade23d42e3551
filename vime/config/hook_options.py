"""Options a hook module declares for itself: ``add_arguments(parser)`` in the module of a hook.

Usage (in a hook module)::

    def add_arguments(parser):              # an argparse argument group
        parser.add_argument("--judge-url", type=str, required=True)
        parser.add_argument("--format-bonus", type=float, default=0.1)

    async def reward_func(args, sample):
        ... args.judge_url ... args.format_bonus ...

``vime train --custom-rm-path my_pkg.rewards.reward_func --judge-url http://...`` then parses,
type-checks and documents ``--judge-url`` like any vime option (``vime train --help`` lists it
under the module's name; ``--config`` files may set it; the trackers log it). Used by
:func:`vime.config.command_line.parse_command_line`, so ``vime-lint check`` takes the same
options.

Which modules: the modules of every ``--*-path`` hook given on the command line or in the
``--config`` file. A module is imported only when its source defines ``add_arguments``; one that
cannot be found is left to the input check (which names it). Two modules that declare the same
option the same way share it; declared differently, or clashing with a vime option, it is an
error naming both.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["HookOptionsError", "DeclaredOption", "add_hook_options", "hook_paths"]

#: The function a hook module defines to declare its options.
FUNCTION = "add_arguments"
_DEFINES = re.compile(rf"^def {FUNCTION}\s*\(", re.MULTILINE)


class HookOptionsError(ValueError):
    """A hook module's options cannot be added (a clash, or ``add_arguments`` raised)."""


@dataclass(frozen=True)
class DeclaredOption:
    """One option a hook module declared."""

    module: str
    #: The hook argument that named the module (``--custom-rm-path``).
    via: str
    dest: str
    option_strings: tuple[str, ...]
    #: What makes two declarations the same: action kind, type, default, choices, nargs,
    #: required.
    signature: tuple[Any, ...]


def _signature(action: argparse.Action) -> tuple[Any, ...]:
    return (type(action).__name__, getattr(action.type, "__name__", action.type),
            repr(action.default), repr(action.choices), action.nargs, action.required)


def _show_default(action: argparse.Action) -> None:
    """Say a declared option's default in ``--help`` (as argparse's
    ``ArgumentDefaultsHelpFormatter`` does), unless its help already does or it has none."""
    if not action.option_strings or action.default in (None, argparse.SUPPRESS) \
            or action.help == argparse.SUPPRESS or "%(default)" in (action.help or ""):
        return
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):  # noqa: SLF001
        return
    action.help = f"{action.help} (default: %(default)s)" if action.help \
        else "default: %(default)s"


def hook_paths(argv: Sequence[str], config: dict[str, Any] | None) -> list[tuple[str, str]]:
    """``(hook argument, dotted path)`` of every hook given on the command line, else in the
    ``--config`` document (a mapping of argument names to values), in order."""
    from vime.contract.hooks import HOOKS

    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    for spec in HOOKS.values():
        pre.add_argument(spec.arg, dest=spec.dest, action="append", default=None)
    known, _ = pre.parse_known_args(list(argv))
    by_key = {str(k).lstrip("-").replace("_", "-"): v for k, v in (config or {}).items()}
    out: list[tuple[str, str]] = []
    for spec in HOOKS.values():
        values = getattr(known, spec.dest)
        if values is None:
            given = by_key.get(spec.arg.lstrip("-"))
            values = given if isinstance(given, list) else ([given] if given else [])
        out += [(spec.arg, str(v)) for v in values if isinstance(v, str) and "." in v]
    return out


def _declares(module: str) -> bool:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return False
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return False
    try:
        with open(spec.origin, encoding="utf-8") as fh:
            return bool(_DEFINES.search(fh.read()))
    except (OSError, UnicodeDecodeError):
        return False


def add_hook_options(parser: argparse.ArgumentParser,
                     paths: Sequence[tuple[str, str]]) -> list[DeclaredOption]:
    """Add the options of each module in ``paths`` that defines ``add_arguments`` to
    ``parser``, one argument group per module (titled with the module and its hook argument).

    Returns:
        Every option added (a shared one once).

    Raises:
        HookOptionsError: ``add_arguments`` raised; an option clashes with one of vime's, or two
            modules declare the same option differently (names both modules and the option).
    """
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:  # found as the input check finds hook modules (vime.config.inputs)
        sys.path.insert(0, cwd)
    try:
        return _add(parser, paths)
    finally:
        if added:
            sys.path.remove(cwd)


def _add(parser: argparse.ArgumentParser,
         paths: Sequence[tuple[str, str]]) -> list[DeclaredOption]:
    vime_options = set(parser._option_string_actions)  # noqa: SLF001 - argparse's own table
    declared: dict[str, DeclaredOption] = {}
    seen: set[str] = set()
    for via, path in paths:
        module_name = path.rpartition(".")[0]
        if module_name in seen or not _declares(module_name):
            continue
        seen.add(module_name)
        try:
            module = importlib.import_module(module_name)
        except Exception:  # noqa: BLE001 - the input check reports an import failure
            continue
        fn = getattr(module, FUNCTION, None)
        if not callable(fn):
            continue
        scratch = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
        scratch_group = scratch.add_argument_group()
        try:
            fn(scratch_group)
        except Exception as exc:  # noqa: BLE001 - reported with the module's name
            raise HookOptionsError(f"{module_name}.{FUNCTION} (the module of {via} {path}) "
                                   f"raised {type(exc).__name__}: {exc}") from exc
        group = parser.add_argument_group(
            f"options of {module_name} (declared by its {FUNCTION}; the module of {via})")
        for action in scratch._actions:  # noqa: SLF001 - moving actions between parsers
            option = DeclaredOption(module_name, via, action.dest,
                                    tuple(action.option_strings), _signature(action))
            for flag in action.option_strings:
                if flag in vime_options:
                    raise HookOptionsError(
                        f"{module_name}.{FUNCTION} declares {flag}, which is a vime option; "
                        "rename it (e.g. with the module's name as a prefix)")
                other = declared.get(flag)
                if other is not None and other.signature != option.signature:
                    raise HookOptionsError(
                        f"{flag} is declared differently by {other.module}.{FUNCTION} "
                        f"({other.signature}) and {module_name}.{FUNCTION} "
                        f"({option.signature}); declare it the same way in both or rename one")
            if any(flag in declared for flag in action.option_strings):
                continue   # the same option from another module: shared
            _show_default(action)
            group._add_action(action)  # noqa: SLF001 - argparse has no public move
            for flag in action.option_strings:
                declared[flag] = option
    unique = {id(o): o for o in declared.values()}
    return list(unique.values())
