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
``--config`` file, and of the ``custom_rm_path`` / ``custom_generate_function_path`` of the
``--eval-config`` file's defaults and datasets. A module is imported only when its source
defines ``add_arguments``; one that cannot be found is left to the input check (which names it),
one that defines it and fails to import is an error naming the failure (its options would
otherwise read as unknown). Two modules that declare the same option the same way (flags, dest,
action, type, default, choices, nargs, required) share it; declared differently, or clashing with
a vime option's flag or dest, or a positional argument, it is an error naming the module, the
file and line of the declaration and the fix.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import re
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
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
    #: What makes two declarations the same: ``(field, value)`` of the flags, dest, action
    #: kind, type, default, choices, nargs, required.
    signature: tuple[tuple[str, str], ...]
    #: ``file:line`` of the ``add_argument`` call.
    where: str = ""


_ACTION_NAMES = {v: k for k, v in argparse.ArgumentParser()._registries["action"].items()  # noqa: SLF001
                 if isinstance(k, str)}


def _signature(action: argparse.Action) -> tuple[tuple[str, str], ...]:
    kind = _ACTION_NAMES.get(type(action), type(action).__name__)
    return (("flags", "/".join(action.option_strings)), ("dest", action.dest),
            ("action", str(kind)), ("type", str(getattr(action.type, "__name__", action.type))),
            ("default", repr(action.default)), ("choices", repr(action.choices)),
            ("nargs", repr(action.nargs)), ("required", str(action.required)))


def _difference(one: DeclaredOption, other: DeclaredOption) -> str:
    """``type float vs int, default 0.1 vs 1``: the fields where two declarations differ."""
    theirs = dict(other.signature)
    return ", ".join(f"{field} {mine} vs {theirs[field]}" for field, mine in one.signature
                     if theirs.get(field) != mine)


def _show_default(action: argparse.Action) -> None:
    """Say a declared option's default in ``--help`` (as argparse's
    ``ArgumentDefaultsHelpFormatter`` does), unless its help already does or it has none; a
    required option says ``(required)``, as vime's own do."""
    if action.help == argparse.SUPPRESS:
        return
    if action.required:
        action.help = f"{action.help} (required)" if action.help else "required"
        return
    if action.default in (None, argparse.SUPPRESS) or "%(default)" in (action.help or ""):
        return
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):  # noqa: SLF001
        return
    action.help = f"{action.help} (default: %(default)s)" if action.help \
        else "default: %(default)s"


def hook_paths(argv: Sequence[str], config: dict[str, Any] | None) -> list[tuple[str, str]]:
    """``(hook argument, dotted path)`` of every hook given on the command line, else in the
    ``--config`` document (a mapping of argument names to values), in order; then the
    ``custom_rm_path`` / ``custom_generate_function_path`` of the ``--eval-config`` file's
    defaults and datasets (an unreadable file is left to ``vime.config.eval_config``)."""
    from vime.contract.hooks import HOOKS

    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    for spec in HOOKS.values():
        pre.add_argument(spec.arg, dest=spec.dest, action="append", default=None)
    pre.add_argument("--eval-config", default=None)
    known, _ = pre.parse_known_args(list(argv))
    by_key = {str(k).lstrip("-").replace("_", "-"): v for k, v in (config or {}).items()}
    out: list[tuple[str, str]] = []
    for spec in HOOKS.values():
        values = getattr(known, spec.dest)
        if values is None:
            given = by_key.get(spec.arg.lstrip("-"))
            values = given if isinstance(given, list) else ([given] if given else [])
        out += [(spec.arg, str(v)) for v in values if isinstance(v, str) and "." in v]
    eval_config = known.eval_config or by_key.get("eval-config")
    if isinstance(eval_config, str) and eval_config:
        out += _eval_config_paths(eval_config)
    return out


#: The hook keys an ``--eval-config`` entry may set (``vime.config.eval_config``).
_EVAL_HOOK_KEYS = ("custom_rm_path", "custom_generate_function_path")


def _eval_config_paths(path: str) -> list[tuple[str, str]]:
    """The hooks an ``--eval-config`` file names, each with where it names it
    (``--eval-config run_eval.yaml (eval.datasets[0].custom_rm_path)``)."""
    from vime.config.yaml_file import YamlFileError, read_yaml

    try:
        doc = read_yaml(Path(path)) if Path(path).is_file() else None
    except YamlFileError:
        return []
    section = doc.get("eval") if isinstance(doc, dict) else None
    if not isinstance(section, dict):
        return []
    entries: list[tuple[str, Any]] = [("eval.defaults", section.get("defaults"))]
    datasets = section.get("datasets")
    if isinstance(datasets, list):
        entries += [(f"eval.datasets[{i}]", e) for i, e in enumerate(datasets)]
    out: list[tuple[str, str]] = []
    for where, entry in entries:
        if not isinstance(entry, dict):
            continue
        for key in _EVAL_HOOK_KEYS:
            value = entry.get(key)
            if isinstance(value, str) and "." in value:
                out.append((f"--eval-config {path} ({where}.{key})", value))
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


def _recording(group: argparse._ArgumentGroup | argparse._MutuallyExclusiveGroup,
               where: dict[int, str] | None = None) -> dict[int, str]:
    """Make ``group.add_argument`` (and that of each group made from it) note where each call
    is: ``file:line`` by the action's id."""
    where = {} if where is None else where
    add = group.add_argument

    def add_argument(*names: Any, **kwargs: Any) -> argparse.Action:
        action = add(*names, **kwargs)
        caller = sys._getframe(1)  # noqa: SLF001 - the declaring line, for the messages
        where[id(action)] = f"{caller.f_code.co_filename}:{caller.f_lineno}"
        return action

    def making(make: Any) -> Any:
        def made(*args: Any, **kwargs: Any) -> Any:
            sub = make(*args, **kwargs)
            _recording(sub, where)
            return sub
        return made

    group.add_argument = add_argument  # type: ignore[method-assign]
    for name in ("add_argument_group", "add_mutually_exclusive_group"):
        setattr(group, name, making(getattr(group, name)))
    return where


def _raised_at(exc: BaseException, module_name: str) -> str:
    """`` at FILE:LINE`` of ``exc``: its innermost frame in the module's own file, else its
    innermost frame ("" without a traceback)."""
    frames = traceback.extract_tb(exc.__traceback__)
    try:
        spec = importlib.util.find_spec(module_name)
    except (ImportError, ValueError):
        spec = None
    own = [f for f in frames if spec is not None and spec.origin
           and os.path.abspath(f.filename) == os.path.abspath(spec.origin)]
    if not (own or frames):
        return ""
    frame = (own or frames)[-1]
    return f" at {frame.filename}:{frame.lineno}"


def _add(parser: argparse.ArgumentParser,
         paths: Sequence[tuple[str, str]]) -> list[DeclaredOption]:
    vime_options = set(parser._option_string_actions)  # noqa: SLF001 - argparse's own table
    vime_dests = {a.dest for a in parser._actions}  # noqa: SLF001
    declared: dict[str, DeclaredOption] = {}     # flag or dest -> its first declaration
    seen: set[str] = set()
    for via, path in paths:
        module_name = path.rpartition(".")[0]
        if module_name in seen or not _declares(module_name):
            continue
        seen.add(module_name)
        origin = f"{module_name}.{FUNCTION} (the module of {via} {path})"
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # noqa: BLE001 - its options would read as unknown ones
            raise HookOptionsError(
                f"{module_name} defines {FUNCTION} (the module of {via} {path}) but cannot be "
                f"imported: {type(exc).__name__}: {exc}{_raised_at(exc, module_name)}; fix the "
                "import (its options are unknown until it loads)") from exc
        fn = getattr(module, FUNCTION, None)
        if not callable(fn):
            continue
        scratch = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
        scratch_group = scratch.add_argument_group()
        where = _recording(scratch_group)
        try:
            fn(scratch_group)
        except Exception as exc:  # noqa: BLE001 - reported with the module's name
            raise HookOptionsError(f"{origin} raised {type(exc).__name__}: {exc}"
                                   f"{_raised_at(exc, module_name)}") from exc
        group = parser.add_argument_group(
            f"options of {module_name} (declared by its {FUNCTION}; the module of {via})")
        for action in scratch._actions:  # noqa: SLF001 - moving actions between parsers
            _add_one(group, action, DeclaredOption(
                module_name, via, action.dest, tuple(action.option_strings), _signature(action),
                where.get(id(action), getattr(module, "__file__", None) or module_name)),
                vime_options, vime_dests, declared)
        # a mutually exclusive group of the module's options stays exclusive
        parser._mutually_exclusive_groups.extend(scratch._mutually_exclusive_groups)  # noqa: SLF001
    unique = {id(o): o for o in declared.values()}
    return list(unique.values())


def _add_one(group: argparse._ArgumentGroup, action: argparse.Action, option: DeclaredOption,
             vime_options: set[str], vime_dests: set[str],
             declared: dict[str, DeclaredOption]) -> None:
    """Add one declared option to ``group`` unless another module declared it alike (shared).

    Raises:
        HookOptionsError: a positional argument; a vime option's flag or dest; declared
            differently by another module (by flag or by dest).
    """
    decl = f"{option.module}.{FUNCTION} ({option.where})"
    if not action.option_strings:
        raise HookOptionsError(
            f"{decl} declares the positional argument {action.dest!r}; a hook module declares "
            f"options only: name it --{action.dest.replace('_', '-')}")
    for flag in action.option_strings:
        if flag in vime_options:
            raise HookOptionsError(
                f"{decl} declares {flag}, which is a vime option; rename it (e.g. with the "
                "module's name as a prefix)")
    if action.dest in vime_dests:
        raise HookOptionsError(
            f"{decl} declares {'/'.join(action.option_strings)} with dest {action.dest!r}, "
            f"which is a vime option's (args.{action.dest}); give it a dest of its own")
    others = {id(o): o for key in (*action.option_strings, action.dest)
              if (o := declared.get(key)) is not None}
    for other in others.values():
        if other.signature != option.signature:
            raise HookOptionsError(
                f"{'/'.join(action.option_strings)} (args.{action.dest}) is declared "
                f"differently by {other.module}.{FUNCTION} ({other.where}) and {decl}: "
                f"{_difference(other, option)}; declare it the same way in both or rename one")
    if others:
        return   # the same option from another module: shared
    _show_default(action)
    group._add_action(action)  # noqa: SLF001 - argparse has no public move
    for key in (*action.option_strings, action.dest):
        declared[key] = option
