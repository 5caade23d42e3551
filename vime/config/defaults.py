"""Argument defaults from the parser only: :func:`arg` reads ``args.<name>`` or its default.

Usage::

    from vime.config import arg

    n = arg(args, "n_samples_per_prompt")   # args.n_samples_per_prompt, else the parser's 1
    arg(args, "n_sample_per_prompt")        # UnknownArgumentError naming the dest
    parser_defaults()["rollout_seed"]       # 42: every dest of get_parser() -> its default

Code that reads an argument from ``args`` (a parsed namespace, or any object a test or a tool
builds with some attributes) calls :func:`arg` instead of repeating the default as
``getattr(args, "name", <literal>)``. The defaults are computed once, on the first call, from
:func:`vime.config.parser.get_parser`; a call is a dict lookup and a ``getattr``.
"""

from __future__ import annotations

import argparse
import copy
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from vime.config.parser import get_parser

__all__ = ["DERIVED_ARGS", "UnknownArgumentError", "arg", "option_names", "parser_defaults"]

_MISSING = object()
_DEFAULTS: Mapping[str, Any] | None = None


class UnknownArgumentError(AttributeError):
    """``arg`` was asked for a name that no vime argument has as its dest."""


#: Attributes vime sets on ``args`` besides its options' dests (``parse_command_line``:
#: ``vllm_extra_args``; ``validate_args``: ``eval_datasets``).
DERIVED_ARGS: frozenset[str] = frozenset({"vllm_extra_args", "eval_datasets"})


def option_names() -> frozenset[str]:
    """Every attribute vime's own ``args`` has: each option's dest and :data:`DERIVED_ARGS`."""
    return frozenset(a.dest for a in get_parser()._actions if a.dest != "help") | DERIVED_ARGS


def parser_defaults() -> Mapping[str, Any]:
    """Every dest of :func:`get_parser` -> its default (read-only; computed once)."""
    global _DEFAULTS
    if _DEFAULTS is None:
        _DEFAULTS = MappingProxyType({
            action.dest: action.default for action in get_parser()._actions
            if action.dest != "help" and action.default is not argparse.SUPPRESS})
    return _DEFAULTS


def arg(args: Any, name: str) -> Any:
    """``args.<name>`` when ``args`` has it, else the parser's default for dest ``name``.

    A mutable default (``[]`` of a multiple hook, ``{}``) is copied, never shared.

    Raises:
        UnknownArgumentError: ``name`` is not the dest of a vime argument (the message names
            it); attributes the runtime sets on ``args`` are read with ``getattr``.
    """
    defaults = _DEFAULTS if _DEFAULTS is not None else parser_defaults()
    default = defaults.get(name, _MISSING)
    if default is _MISSING:
        raise UnknownArgumentError(f"arg(args, {name!r}): {name!r} is not the dest of a vime "
                                   "argument (see `vime --help`); read attributes that the "
                                   "runtime sets with getattr")
    value = getattr(args, name, _MISSING)
    if value is _MISSING:
        return copy.copy(default) if isinstance(default, (list, dict, set)) else default
    return value
