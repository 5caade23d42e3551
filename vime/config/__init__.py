"""vime's configuration: the command-line flags, config files, checks, argument defaults.

Usage::

    from vime.config import arg, get_parser, parse_args

    args = parse_args(["--rollout-batch-size", "8", "--num-rollout", "10"])
    arg(args, "rollout_seed")     # args.rollout_seed, else the parser's default (42)

Modules: :mod:`~vime.config.parser` (flag declarations, :func:`get_parser`),
:mod:`~vime.config.config_file` (``--config`` YAML files), :mod:`~vime.config.command_line`
(:func:`parse_args`: flags, ``--vllm-*`` passthrough), :mod:`~vime.config.validation` (checks
after parsing), :mod:`~vime.config.eval_config` (the eval datasets),
:mod:`~vime.config.defaults` (:func:`arg`). Only the standard library and
``vime.contract`` are imported (YAML is read lazily).
"""

from __future__ import annotations

from vime.config.command_line import collect_passthrough, parse_args, parse_command_line
from vime.config.config_file import load_config
from vime.config.defaults import UnknownArgumentError, arg, parser_defaults
from vime.config.parser import (
    PROG,
    SFT_ROLLOUT_PATH,
    VLLM_PASSTHROUGH_PREFIX,
    add_arguments,
    add_config_argument,
    add_hook_arguments,
    add_trainer_arguments,
    get_parser,
)
from vime.config.validation import UNSUPPORTED_ARGS, UNSUPPORTED_CHOICES, validate_args

__all__ = [
    "PROG",
    "SFT_ROLLOUT_PATH",
    "UNSUPPORTED_ARGS",
    "UNSUPPORTED_CHOICES",
    "VLLM_PASSTHROUGH_PREFIX",
    "UnknownArgumentError",
    "add_arguments",
    "add_config_argument",
    "add_hook_arguments",
    "add_trainer_arguments",
    "arg",
    "collect_passthrough",
    "get_parser",
    "load_config",
    "parse_args",
    "parse_command_line",
    "parser_defaults",
    "validate_args",
]
