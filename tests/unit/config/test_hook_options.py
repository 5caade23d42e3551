"""Options a hook module declares with ``add_arguments``: parsed, type-checked and listed like
vime's own, from the command line and from ``--config``, shared when declared alike, and a clash
is one error naming both modules."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from vime.config.command_line import parse_command_line
from vime.config.parser import get_parser

pytestmark = pytest.mark.unit

JUDGE = '''
    def add_arguments(parser):
        parser.add_argument("--judge-url", type=str, required=True)
        parser.add_argument("--format-bonus", type=float, default=0.1)
        parser.add_argument("--judge-mode", choices=["strict", "lenient"], default="strict")

    async def reward_func(args, sample):
        return float(bool(args.judge_url)) + args.format_bonus
'''
FILTER_SAME = '''
    def add_arguments(parser):
        parser.add_argument("--format-bonus", type=float, default=0.1)

    def dynamic_sampling_filter(args, samples, **kwargs):
        return True
'''
FILTER_OTHER = '''
    def add_arguments(parser):
        parser.add_argument("--format-bonus", type=int, default=1)

    def dynamic_sampling_filter(args, samples, **kwargs):
        return True
'''
CLASH = '''
    def add_arguments(parser):
        parser.add_argument("--rollout-batch-size", type=int)

    async def reward_func(args, sample):
        return 0.0
'''
RAISES = '''
    def add_arguments(parser):
        raise RuntimeError("no judge configured")

    async def reward_func(args, sample):
        return 0.0
'''


@pytest.fixture
def hooks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    pkg = tmp_path / "hookopts"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name, text in (("judge", JUDGE), ("filter_same", FILTER_SAME),
                       ("filter_other", FILTER_OTHER), ("clash", CLASH), ("raises", RAISES)):
        (pkg / f"{name}.py").write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("hookopts")]:
        del sys.modules[name]


def parse(argv: list[str]) -> object:
    return parse_command_line(get_parser(), argv)


def test_declared_options_are_parsed_and_typed(hooks: Path) -> None:
    args = parse(["--custom-rm-path", "hookopts.judge.reward_func", "--judge-url", "http://j",
                  "--format-bonus", "0.5"])
    assert (args.judge_url, args.format_bonus, args.judge_mode) == ("http://j", 0.5, "strict")


@pytest.mark.parametrize(("extra", "message"), [
    ([], "the following arguments are required: --judge-url"),
    (["--judge-url", "u", "--format-bonus", "x"], "argument --format-bonus: invalid float value"),
    (["--judge-url", "u", "--judge-mode", "loose"], "argument --judge-mode: invalid choice"),
    (["--judge-url", "u", "--judge-urll", "v"], "unrecognized argument '--judge-urll'"),
])
def test_declared_options_are_checked_like_vimes(hooks: Path, capsys: pytest.CaptureFixture[str],
                                                 extra: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as exc:
        parse(["--custom-rm-path", "hookopts.judge.reward_func", *extra])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_a_config_file_names_the_hook_and_sets_its_options(hooks: Path) -> None:
    (hooks / "run.yaml").write_text("custom-rm-path: hookopts.judge.reward_func\n"
                                    "judge-url: http://from-config\nformat-bonus: 2.5\n")
    args = parse(["--config", "run.yaml"])
    assert (args.judge_url, args.format_bonus) == ("http://from-config", 2.5)


def test_help_lists_them_under_the_module(hooks: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse(["--custom-rm-path", "hookopts.judge.reward_func", "--help"])
    out = capsys.readouterr().out
    assert "options of hookopts.judge (declared by its add_arguments; the module of " \
           "--custom-rm-path)" in out
    assert "--judge-url" in out
    # each declared default is said, as a user of the module needs it
    assert "--format-bonus FORMAT_BONUS" in out and "default: 0.1" in out
    assert "default: strict" in out


def test_an_option_declared_alike_by_two_modules_is_shared(hooks: Path) -> None:
    args = parse(["--custom-rm-path", "hookopts.judge.reward_func", "--judge-url", "u",
                  "--dynamic-sampling-filter-path",
                  "hookopts.filter_same.dynamic_sampling_filter", "--format-bonus", "1.5"])
    assert args.format_bonus == 1.5


@pytest.mark.parametrize(("argv", "message"), [
    (["--custom-rm-path", "hookopts.judge.reward_func", "--dynamic-sampling-filter-path",
      "hookopts.filter_other.dynamic_sampling_filter"],
     "--format-bonus is declared differently by hookopts.judge.add_arguments"),
    (["--custom-rm-path", "hookopts.clash.reward_func"],
     "hookopts.clash.add_arguments declares --rollout-batch-size, which is a vime option"),
    (["--custom-rm-path", "hookopts.raises.reward_func"],
     "hookopts.raises.add_arguments (the module of --custom-rm-path hookopts.raises.reward_func)"
     " raised RuntimeError: no judge configured"),
])
def test_a_clash_is_one_error_naming_both(hooks: Path, capsys: pytest.CaptureFixture[str],
                                          argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as exc:
        parse(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_a_module_without_add_arguments_is_not_imported(hooks: Path) -> None:
    (hooks / "hookopts" / "plain.py").write_text(
        "raise RuntimeError('imported')\nasync def reward_func(args, sample):\n    return 0.0\n")
    args = parse(["--custom-rm-path", "hookopts.plain.reward_func"])
    assert args.custom_rm_path == "hookopts.plain.reward_func"
    assert "hookopts.plain" not in sys.modules


def test_vime_lint_check_takes_them_too(hooks: Path) -> None:
    from vime_lint.check.arguments import build_parser

    args = parse_command_line(build_parser(), [
        "--rollout-function-path", "vime.rollout.sft_rollout.generate_rollout",
        "--custom-rm-path", "hookopts.judge.reward_func", "--judge-url", "u"])
    assert args.judge_url == "u"


def test_they_reach_the_logged_configuration(hooks: Path) -> None:
    from vime.tracking import public_config

    args = parse(["--custom-rm-path", "hookopts.judge.reward_func", "--judge-url", "http://j"])
    config = public_config(args)
    assert config["judge_url"] == "http://j" and config["format_bonus"] == 0.1


def test_option_names_are_exactly_what_args_holds() -> None:
    from vime.config.command_line import parse_args
    from vime.config.defaults import option_names

    args = parse_args(["--rollout-batch-size", "4", "--num-rollout", "1"])
    assert set(vars(args)) == set(option_names())
