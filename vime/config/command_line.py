"""Parse a vime command line: ``--config``, the flags, ``--vllm-*`` passthrough, validation.

Usage::

    args = parse_args(["--rollout-batch-size", "8", "--num-rollout", "10",
                       "--vllm-max-model-len", "512"])
    args.over_sampling_batch_size      # 8 (defaults to the rollout batch size)
    args.global_batch_size             # 8 = rollout_batch_size * n_samples_per_prompt // steps
    args.vllm_extra_args               # {"max-model-len": "512"}: passed to every vLLM server
    args.eval_datasets                 # list[EvalDatasetConfig]
    args = parse_args(["--config", "run.yaml", "--rollout-seed", "7"])   # the command line wins
    args = parse_args([...], training=False)   # tools: no --num-rollout/--num-epoch needed

Unknown ``--vllm-<flag> [VALUE]`` arguments are collected into ``args.vllm_extra_args``
(``{"<flag>": "VALUE"}``, a bare flag -> ``True``) and passed to the vLLM servers as
``--<flag> VALUE``; any other unknown argument is an error naming it.

Errors are argparse's: usage, then ``vime train: error: argument --rollout-temperature: must be > 0,
got 0`` on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vime.config.config_file import load_config
from vime.config.parser import VLLM_PASSTHROUGH_PREFIX, get_parser
from vime.config.validation import validate_args

__all__ = ["collect_passthrough", "parse_args", "parse_command_line"]


def collect_passthrough(parser: argparse.ArgumentParser,
                        unknown: Sequence[str]) -> dict[str, str | bool]:
    """The ``--vllm-<flag> [VALUE]`` tokens of ``unknown`` -> ``{"<flag>": "VALUE" or True}``.

    Any other token is an error (``parser.error``, exit status 2) naming it.
    """
    extra: dict[str, str | bool] = {}
    i = 0
    while i < len(unknown):
        token = unknown[i]
        if not token.startswith(VLLM_PASSTHROUGH_PREFIX) or token == VLLM_PASSTHROUGH_PREFIX:
            parser.error(f"unrecognized argument {token!r}; only --vllm-<flag> arguments are "
                         f"passed through (see `{parser.prog} --help`)")
        name, eq, inline = token[len(VLLM_PASSTHROUGH_PREFIX):].partition("=")
        if eq:
            extra[name] = inline
            i += 1
        elif i + 1 < len(unknown) and not unknown[i + 1].startswith("--"):
            extra[name] = unknown[i + 1]
            i += 2
        else:
            extra[name] = True
            i += 1
    return extra


def _add_hook_options(parser: argparse.ArgumentParser, argv: Sequence[str],
                      config: str | None) -> None:
    """The options the configured hooks' modules declare (:mod:`vime.config.hook_options`),
    added to ``parser`` before anything is parsed; a clash is ``parser.error`` (exit 2)."""
    from vime.config.hook_options import HookOptionsError, add_hook_options, hook_paths

    doc: dict[str, Any] | None = None
    if config and Path(config).is_file():
        from vime.config.yaml_file import YamlFileError, read_yaml

        try:
            raw = read_yaml(Path(config))
        except YamlFileError:
            raw = None   # load_config reports it
        doc = raw if isinstance(raw, dict) else None
    try:
        add_hook_options(parser, hook_paths(argv, doc))
    except HookOptionsError as exc:
        parser.error(str(exc))


def parse_command_line(parser: argparse.ArgumentParser,
                       argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse ``argv`` (default ``sys.argv[1:]``) with ``parser`` after applying its ``--config``
    file as defaults; ``args.vllm_extra_args`` holds the passthrough. Nothing is validated.

    ``parser`` is :func:`get_parser`'s or one that extends it (``vime-lint check``); config keys
    are the names of its arguments.

    Raises:
        SystemExit: status 2 (``parser.error``) for a bad value, an unknown argument or config
            key (named with the file).
    """
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--config", type=str, default=None)
    known, _ = pre.parse_known_args(argv)
    config_extra: dict[str, str | bool] = {}
    _add_hook_options(parser, sys.argv[1:] if argv is None else argv, known.config)
    if known.config:
        values, config_extra = load_config(parser, known.config)
        parser.set_defaults(**values)
        for action in parser._actions:  # noqa: SLF001 - a required option the file sets
            if action.required and action.dest in values:
                action.required = False
    args, unknown = parser.parse_known_args(argv)
    args.vllm_extra_args = {**config_extra, **collect_passthrough(parser, unknown)}
    return args


def parse_args(argv: list[str] | None = None, *, training: bool = True) -> argparse.Namespace:
    """Parse ``argv`` (default ``sys.argv[1:]``), apply ``--config``, then :func:`validate_args`.

    ``training=False`` (tools) skips the ``--num-rollout`` / ``--num-epoch`` requirement.

    Raises:
        SystemExit: status 2 with ``vime train: error: argument --<name>: ...`` on stderr for a bad
            value, an unknown argument or config key (named with the file), or a failed check.
        NotImplementedError: a P argument (``UNSUPPORTED_ARGS``/``UNSUPPORTED_CHOICES``) set to
            a value v1 does not implement; the message names the argument.
    """
    args = parse_command_line(get_parser(), argv)
    return validate_args(args, training=training)
