"""Options a hook module declares with ``add_arguments``: parsed, type-checked and listed like
vime's own, from the command line and from ``--config``, shared when declared alike, and a clash
is one error naming both modules."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from vime.config.command_line import parse_command_line
from vime.config.parser import get_parser

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]

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
DEST_CLASH = '''
    def add_arguments(parser):
        parser.add_argument("--my-batch", dest="rollout_batch_size", type=int)

    async def reward_func(args, sample):
        return 0.0
'''
SAME_DEST = '''
    def add_arguments(parser):
        parser.add_argument("--bonus", dest="format_bonus", type=float, default=0.1)

    def dynamic_sampling_filter(args, samples, **kwargs):
        return True
'''
POSITIONAL = '''
    def add_arguments(parser):
        parser.add_argument("judge")

    async def reward_func(args, sample):
        return 0.0
'''
BROKEN_IMPORT = '''
    import hookopts_missing_dependency

    def add_arguments(parser):
        parser.add_argument("--judge-url")

    async def reward_func(args, sample):
        return 0.0
'''
EXCLUSIVE = '''
    def add_arguments(parser):
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--strict", action="store_true")
        mode.add_argument("--lenient", action="store_true")

    async def reward_func(args, sample):
        return float(args.strict or args.lenient)
'''
EXCLUSIVE_CLASH = '''
    def add_arguments(parser):
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--strict", action="store_true")
        mode.add_argument("--seed", type=int)

    async def reward_func(args, sample):
        return 0.0
'''
GENERATE = '''
    def add_arguments(parser):
        parser.add_argument("--tool-budget", type=int, default=3)

    async def generate(args, sample, sampling_params):
        return sample
'''


@pytest.fixture
def hooks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    pkg = tmp_path / "hookopts"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name, text in (("judge", JUDGE), ("filter_same", FILTER_SAME),
                       ("filter_other", FILTER_OTHER), ("clash", CLASH), ("raises", RAISES),
                       ("dest_clash", DEST_CLASH), ("same_dest", SAME_DEST),
                       ("positional", POSITIONAL), ("broken_import", BROKEN_IMPORT),
                       ("exclusive", EXCLUSIVE), ("exclusive_clash", EXCLUSIVE_CLASH),
                       ("generate", GENERATE)):
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


@pytest.mark.parametrize(("lines", "message"), [
    ("judge-url: u\njudge-mode: loose\n",
     "key 'judge-mode' in run.yaml: invalid choice 'loose' (choose from strict, lenient)"),
    ("judge-url: u\nformat-bonus: [1, 2]\n", "key 'format-bonus' in run.yaml: expected one value"),
    ("judge_url: u\nformat_bonus: lots\n", "key 'format_bonus' in run.yaml: could not convert"),
    ("format-bonus: 1\n", "the following arguments are required: --judge-url"),
    ("judge-url: u\njudge-urll: v\n",
     "unknown key 'judge-urll' in run.yaml; did you mean 'judge-url'?"),
])
def test_a_config_file_is_checked_like_the_command_line(
        hooks: Path, capsys: pytest.CaptureFixture[str], lines: str, message: str) -> None:
    (hooks / "run.yaml").write_text("custom-rm-path: hookopts.judge.reward_func\n" + lines)
    with pytest.raises(SystemExit) as exc:
        parse(["--config", "run.yaml"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and message in err, err


def test_help_lists_them_under_the_module(hooks: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse(["--custom-rm-path", "hookopts.judge.reward_func", "--help"])
    out = capsys.readouterr().out
    assert "options of hookopts.judge (declared by its add_arguments; the module of " \
           "--custom-rm-path)" in out
    assert "--judge-url JUDGE_URL\n                        required" in out
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
     "--format-bonus (args.format_bonus) is declared differently by hookopts.judge.add_arguments"
     " ({h}/judge.py:4) and hookopts.filter_other.add_arguments ({h}/filter_other.py:3): "
     "type float vs int, default 0.1 vs 1; declare it the same way in both or rename one"),
    # the same dest under another flag is a different declaration too (args.format_bonus)
    (["--custom-rm-path", "hookopts.judge.reward_func", "--dynamic-sampling-filter-path",
      "hookopts.same_dest.dynamic_sampling_filter"],
     "--bonus (args.format_bonus) is declared differently by hookopts.judge.add_arguments "
     "({h}/judge.py:4) and hookopts.same_dest.add_arguments ({h}/same_dest.py:3): "
     "flags --format-bonus vs --bonus"),
    (["--custom-rm-path", "hookopts.clash.reward_func"],
     "hookopts.clash.add_arguments ({h}/clash.py:3) declares --rollout-batch-size, which is a "
     "vime option; rename it"),
    (["--custom-rm-path", "hookopts.exclusive_clash.reward_func"],   # line of a nested group's
     "hookopts.exclusive_clash.add_arguments ({h}/exclusive_clash.py:5) declares --seed, which "
     "is a vime option"),
    (["--custom-rm-path", "hookopts.dest_clash.reward_func"],
     "hookopts.dest_clash.add_arguments ({h}/dest_clash.py:3) declares --my-batch with dest "
     "'rollout_batch_size', which is a vime option's (args.rollout_batch_size); give it a dest "
     "of its own"),
    (["--custom-rm-path", "hookopts.positional.reward_func"],
     "hookopts.positional.add_arguments ({h}/positional.py:3) declares the positional argument "
     "'judge'; a hook module declares options only: name it --judge"),
    (["--custom-rm-path", "hookopts.raises.reward_func"],
     "hookopts.raises.add_arguments (the module of --custom-rm-path hookopts.raises.reward_func)"
     " raised RuntimeError: no judge configured at {h}/raises.py:3"),
    # without this, its --judge-url would read as an unknown argument
    (["--custom-rm-path", "hookopts.broken_import.reward_func", "--judge-url", "u"],
     "hookopts.broken_import defines add_arguments (the module of --custom-rm-path "
     "hookopts.broken_import.reward_func) but cannot be imported: ModuleNotFoundError: No "
     "module named 'hookopts_missing_dependency' at {h}/broken_import.py:2; fix the import"),
])
def test_a_clash_is_one_error_naming_both(hooks: Path, capsys: pytest.CaptureFixture[str],
                                          argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as exc:
        parse(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert message.format(h=hooks / "hookopts") in err, err


def test_a_mutually_exclusive_group_stays_exclusive(hooks: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    args = parse(["--custom-rm-path", "hookopts.exclusive.reward_func", "--strict"])
    assert (args.strict, args.lenient) == (True, False)
    with pytest.raises(SystemExit) as exc:
        parse(["--custom-rm-path", "hookopts.exclusive.reward_func", "--strict", "--lenient"])
    assert exc.value.code == 2
    assert "argument --lenient: not allowed with argument --strict" in capsys.readouterr().err


EVAL_CONFIG = """\
eval:
  defaults:
    custom_generate_function_path: hookopts.generate.generate
  datasets:
    - name: held_out
      path: held_out.jsonl
      custom_rm_path: hookopts.judge.reward_func
"""


@pytest.mark.parametrize("where", ["command line", "config file"])
def test_the_hooks_of_an_eval_config_declare_options_too(
        hooks: Path, capsys: pytest.CaptureFixture[str], where: str) -> None:
    (hooks / "eval.yaml").write_text(EVAL_CONFIG)
    (hooks / "run.yaml").write_text("eval-config: eval.yaml\n")
    given = ["--eval-config", "eval.yaml"] if where == "command line" else ["--config", "run.yaml"]
    args = parse([*given, "--judge-url", "u", "--tool-budget", "5"])
    assert (args.judge_url, args.tool_budget, args.format_bonus) == ("u", 5, 0.1)
    with pytest.raises(SystemExit):
        parse([*given, "--help"])
    out = capsys.readouterr().out
    assert "options of hookopts.judge (declared by its add_arguments; the module of " \
           "--eval-config eval.yaml (eval.datasets[0].custom_rm_path))" in out
    assert "options of hookopts.generate (declared by its add_arguments; the module of " \
           "--eval-config eval.yaml (eval.defaults.custom_generate_function_path))" in out


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


def test_the_trackers_get_them(hooks: Path) -> None:
    from vime.tracking import Trackers

    class Backend:
        config: dict[str, object] = {}

        def log_config(self, config: dict[str, object]) -> None:
            self.config = config

    backend = Backend()
    args = parse(["--custom-rm-path", "hookopts.judge.reward_func", "--judge-url", "http://j",
                  "--judge-mode", "lenient"])
    Trackers([backend]).log_config(args)
    assert {k: backend.config[k] for k in ("judge_url", "format_bonus", "judge_mode")} == \
        {"judge_url": "http://j", "format_bonus": 0.1, "judge_mode": "lenient"}


def test_option_names_are_exactly_what_args_holds() -> None:
    from vime.config.command_line import parse_args
    from vime.config.defaults import option_names

    args = parse_args(["--rollout-batch-size", "4", "--num-rollout", "1"])
    assert set(vars(args)) == set(option_names())


# ---- end to end: the commands a user types, on one hook module ----------------------------

USER_HOOKS = '''\
def add_arguments(parser):
    parser.add_argument("--judge-url", type=str, required=True, help="the judge's URL")
    parser.add_argument("--judge-mode", choices=["strict", "lenient"], default="strict")
    parser.add_argument("--format-bonus", type=float, default=0.1)


async def reward_func(args, sample):
    assert (args.judge_url, args.judge_mode) == ("http://j", "lenient"), args.judge_url
    right = str(sample.label) in sample.response
    return float(right) + 0.0 * args.format_bonus if args.judge_ur else 0.0
'''


def _vime(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``python -m vime ARGV`` in ``cwd`` (where the hook module is), on this checkout."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(cwd)])}
    return subprocess.run([sys.executable, "-m", "vime", *argv], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120)


def test_vime_train_end_to_end(tmp_path: Path) -> None:
    (tmp_path / "user_hooks.py").write_text(USER_HOOKS)
    hook = ["train", "--custom-rm-path", "user_hooks.reward_func"]
    proc = _vime(tmp_path, *hook, "--help")
    assert proc.returncode == 0, proc.stderr
    assert "options of user_hooks (declared by its add_arguments; the module of " \
           "--custom-rm-path):\n  --judge-url JUDGE_URL\n                        the judge's " \
           "URL (required)" in proc.stdout
    # --help lists vime's own options as before
    assert "--rollout-batch-size" in proc.stdout
    for extra, message in (
            ([], "vime train: error: the following arguments are required: --judge-url"),
            (["--judge-url", "u", "--judge-mode", "loose"],
             "vime train: error: argument --judge-mode: invalid choice: 'loose'"),
            (["--judge-url", "u", "--judge-urll", "v"],
             "vime train: error: unrecognized argument '--judge-urll'")):
        proc = _vime(tmp_path, *hook, "--num-rollout", "1", *extra)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    # without the hook, its option is unknown, as any other; --help says where such options are
    proc = _vime(tmp_path, "train", "--num-rollout", "1", "--judge-url", "u")
    assert proc.returncode == 2 and "unrecognized argument '--judge-url'" in proc.stderr
    proc = _vime(tmp_path, "train", "--help")
    assert proc.returncode == 0 and "options of user_hooks" not in proc.stdout
    assert "A hook module's own options (its add_arguments(parser)) are listed, under the " \
           "module's name, when its --*-path is given" in " ".join(proc.stdout.split())


def test_vime_lint_check_end_to_end(hooks: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vime_lint.runtime.harness import main

    (hooks / "hookopts" / "user_hooks.py").write_text(USER_HOOKS.replace("judge_ur ", "judge_url "))
    argv = ["--custom-rm-path", "hookopts.user_hooks.reward_func", "--no-probe"]
    assert main(argv) == 2
    assert "vime-lint check: error: the following arguments are required: --judge-url" in \
        capsys.readouterr().err
    # the hook sees the values given (its assert fails on any other)
    assert main([*argv, "--judge-url", "http://j", "--judge-mode", "lenient"]) == 0, \
        capsys.readouterr().out
    assert main([*argv, "--judge-url", "http://other", "--judge-mode", "lenient"]) == 1
    assert "reward_func` raised AssertionError: http://other" in capsys.readouterr().out


def test_vime_lint_rollout_end_to_end(tmp_path: Path) -> None:
    (tmp_path / "user_hooks.py").write_text(USER_HOOKS.replace(
        '    parser.add_argument("--format-bonus"', '    parser.add_argument("--unused-bonus"'))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "vime_lint", "rollout", "user_hooks.py",
                           "--select", "VIM038,VIM039"], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=120)
    assert proc.returncode == 1, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("user_hooks.py:")]
    assert lines == [
        "user_hooks.py:4:5: VIM039 `--unused-bonus` is declared by add_arguments but "
        "`args.unused_bonus` is never read in this module",
        "user_hooks.py:10:33: VIM038 `args.format_bonus` in `reward_func` is neither a vime "
        "option nor declared by this module's add_arguments",
        "user_hooks.py:10:54: VIM038 `args.judge_ur` in `reward_func` is neither a vime option "
        "nor declared by this module's add_arguments (did you mean `judge_url`?)",
    ], proc.stdout
