"""Former home of vime's command-line arguments, now :mod:`vime.config`; re-exports its names.

Usage::

    from vime.utils.arguments import get_parser, parse_args   # same objects as vime.config's
"""

from __future__ import annotations

from vime.config import (
    SFT_ROLLOUT_PATH,
    UNSUPPORTED_ARGS,
    UNSUPPORTED_CHOICES,
    VLLM_PASSTHROUGH_PREFIX,
    add_hook_arguments,
    add_trainer_arguments,
    get_parser,
    parse_args,
    validate_args,
)

__all__ = [
    "SFT_ROLLOUT_PATH",
    "UNSUPPORTED_ARGS",
    "UNSUPPORTED_CHOICES",
    "VLLM_PASSTHROUGH_PREFIX",
    "add_hook_arguments",
    "add_trainer_arguments",
    "get_parser",
    "parse_args",
    "validate_args",
]
