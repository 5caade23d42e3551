"""`vime-lint check` arguments (vime_lint.check.arguments): vime's flags with vime's defaults."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from vime.config import parser_defaults
from vime.contract.hooks import HOOKS
from vime_lint import cli
from vime_lint.check.arguments import DRY_RUN_DEFAULTS, build_parser, make_args, parse_check_args
from vime_lint.runtime.harness import main

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runtime_hooks"
ROLLOUT = ["--rollout-function-path", "vime_ref_good.generate_rollout"]


def test_check_help_lists_vime_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check", "--help"]) == 0
    out = capsys.readouterr().out
    for flag in ("--hf-checkpoint", "--rollout-batch-size", "--config", "--eval-datasets",
                 "--custom-rm-path", "--lr"):
        assert flag in out, flag


def test_check_help_says_the_dry_run_defaults_not_vimes_required(
        capsys: pytest.CaptureFixture[str]) -> None:
    # `vime-lint check --help` said "--rollout-batch-size ... (required)"; the check runs
    # without it (DRY_RUN_DEFAULTS)
    from vime_lint.check.arguments import DRY_RUN_DEFAULTS, build_parser

    helps = {a.dest: " ".join((a.help or "").split()) for a in build_parser()._actions}
    assert helps["rollout_batch_size"] == ("Prompt groups per rollout step (vime-lint check "
                                           "default: 2; `vime train` requires it).")
    for dest, value in DRY_RUN_DEFAULTS.items():
        assert f"(vime-lint check default: {value}" in helps[dest], helps[dest]
        assert "(required)" not in helps[dest]
    assert cli.main(["check", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "(required)" not in out.split("--rollout-batch-size")[1].split("--n-samples")[0]
    from vime.config.parser import get_parser as vime_parser

    train = {a.dest: a.help for a in vime_parser()._actions}
    assert "(required)" in (train["rollout_batch_size"] or "")   # vime train's help unchanged


def test_every_vime_option_is_accepted() -> None:
    from vime.config import get_parser

    vime = {o for a in get_parser()._actions for o in a.option_strings}
    check = {o for a in build_parser()._actions for o in a.option_strings}
    assert vime <= check
    assert check - vime == {"--eval-datasets", "--max-violations", "--dry-run-engine",
                            "--no-probe", "--probe-max-calls", "--probe-responses-path"}


def test_defaults_are_vimes_except_the_dry_run_ones() -> None:
    ns = parse_check_args(ROLLOUT)
    for dest, default in parser_defaults().items():
        if dest in DRY_RUN_DEFAULTS or dest in HOOKS:
            continue
        assert getattr(ns, dest) == default, dest
    for dest, default in DRY_RUN_DEFAULTS.items():
        assert getattr(ns, dest) == default, dest
    assert {d for d in HOOKS if getattr(ns, d) is not None} == {"rollout_function_path"}
    assert ns.eval_datasets is None and ns.vllm_extra_args == {}


def test_config_file_and_passthrough(tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("n_samples_per_prompt: 4\nhf-checkpoint: /models/m\n")
    ns = parse_check_args([*ROLLOUT, "--config", str(config), "--rollout-seed", "7",
                           "--vllm-max-model-len", "512"])
    assert (ns.n_samples_per_prompt, ns.hf_checkpoint, ns.rollout_seed) == (4, "/models/m", 7)
    assert ns.vllm_extra_args == {"max-model-len": "512"}


def test_rollout_function_path_defaults_to_the_default_rollout() -> None:
    # a `vime train` launch without --rollout-function-path runs the default rollout
    assert parse_check_args(["--n-samples-per-prompt", "2"]).rollout_function_path == \
        "vime.rollout.vllm_rollout.generate_rollout"
    assert parse_check_args(ROLLOUT).rollout_function_path == "vime_ref_good.generate_rollout"


def test_eval_prompt_data_is_resolved_as_vime_train_does(tmp_path: Path) -> None:
    data = tmp_path / "held.jsonl"
    data.write_text('{"input": "What is 1+1?", "label": "2"}\n')
    args = make_args(parse_check_args([*ROLLOUT, "--eval-prompt-data", "held", str(data)]))
    assert [(c.name, c.path) for c in args.eval_datasets] == [("held", str(data))]
    assert main([*ROLLOUT, "--eval-prompt-data", "x", "y", "z"]) == 2   # not name/path pairs


def test_unknown_argument_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ROLLOUT, "--no-such-flag"]) == 2
    assert "'--no-such-flag'" in capsys.readouterr().err


@pytest.mark.parametrize(("extra", "line"), [
    (["--rollout-batch-size", "0"], "argument --rollout-batch-size: must be >= 1, got 0"),
    (["--n-samples-per-prompt", "-1"], "argument --n-samples-per-prompt: must be >= 1, got -1"),
    (["--rollout-max-response-len", "0"],
     "argument --rollout-max-response-len: must be >= 1, got 0"),
])
def test_a_count_below_one_is_an_argument_error_not_the_rollouts(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        extra: list[str], line: str) -> None:
    monkeypatch.syspath_prepend(str(FIXTURES))
    assert main([*ROLLOUT, *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"vime-lint check: error: {line}", err
    assert not any("VIM" in x or "rollout function" in x for x in err), err


def test_a_vime_launch_flag_runs_clean(monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.syspath_prepend(str(FIXTURES))
    code = main([*ROLLOUT, "--hf-checkpoint", "/models/unused", "--num-rollout", "3",
                 "--lr", "1e-5"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "vime-lint check: clean" in out


def test_check_arguments_import_nothing_heavy() -> None:
    heavy = ["torch", "ray", "vllm", "transformers", "httpx", "aiohttp"]
    code = (f"import sys, vime_lint.check.arguments; "
            f"print(','.join(m for m in {heavy!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
