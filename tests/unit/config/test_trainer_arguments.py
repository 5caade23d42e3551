"""Nothing is accepted and ignored: every option of vime's parser is read by the run or
rejected; the trainer flags (TIS, mismatch metrics, estimators, trainer hooks) and the
Megatron hooks' rejection at parse time."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from vime.config import parse_args
from vime.config.parser import get_parser
from vime.config.validation import UNSUPPORTED_ARGS, UNSUPPORTED_CHOICES
from vime.contract.hooks import HOOKS

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
BASE = ["--rollout-batch-size", "4", "--num-rollout", "1"]
#: Files that declare arguments: a mention there is not a use (validation.py counts: it applies
#: --custom-config-path and --buffer-sort-by-staleness itself).
_DECLARING = {"vime/config/parser.py", "vime/contract/hooks.py"}


def _sources() -> str:
    return "\n".join(p.read_text() for p in sorted((ROOT / "vime").rglob("*.py"))
                     if p.relative_to(ROOT).as_posix() not in _DECLARING)


def _actions() -> list[argparse.Action]:
    return [a for a in get_parser()._actions
            if a.option_strings and a.dest not in ("help", "config")]


def _rejected(dest: str) -> bool:
    spec = HOOKS.get(dest)
    return dest in UNSUPPORTED_ARGS or (spec is not None and not spec.v1)


def _read_by_the_run(dest: str, sources: str) -> bool:
    """A grep-able read: ``arg(args, "dest")``, ``args.dest``, ``getattr(x, "dest"...)`` or the
    dest as a key (hooks are loaded generically from ``HOOKS`` and looked up by dest)."""
    patterns = (rf'arg\([\w.]+,\s*"{dest}"\)', rf"\bargs\.{dest}\b", rf'getattr\([\w.]+,\s*"{dest}"',
                rf'"{dest}"')
    return any(re.search(p, sources) for p in patterns)


def test_every_option_is_read_by_the_run_or_rejected() -> None:
    sources = _sources()
    unused = [a.option_strings[0] for a in _actions()
              if not _rejected(a.dest) and not _read_by_the_run(a.dest, sources)]
    assert not unused, f"accepted but never read by vime/: {unused}"


def test_every_path_flag_is_a_called_hook_or_rejected() -> None:
    sources = _sources()
    path_flags = [a for a in _actions() if a.option_strings[0].endswith("-path")]
    assert {a.dest for a in path_flags} >= set(HOOKS)
    for action in path_flags:
        spec = HOOKS.get(action.dest)
        if spec is not None and not spec.v1:
            assert spec.rejection, action.option_strings[0]
            continue
        assert _read_by_the_run(action.dest, sources), action.option_strings[0]


def _value(action: argparse.Action) -> list[str]:
    if action.nargs == 0:
        return [action.option_strings[0]]
    if getattr(action.type, "__name__", "").startswith("_json"):
        return [action.option_strings[0], '{"image": "images"}']
    typed = {int: "7", float: "0.5"}.get(action.type, "x")  # type: ignore[arg-type]
    return [action.option_strings[0], typed]


@pytest.mark.parametrize("dest", sorted(UNSUPPORTED_ARGS))
def test_unsupported_options_are_rejected_when_set(dest: str) -> None:
    action = next(a for a in _actions() if a.dest == dest)
    with pytest.raises(NotImplementedError, match=re.escape(action.option_strings[0])):
        parse_args(BASE + _value(action))


@pytest.mark.parametrize("dest", [d for d, s in HOOKS.items() if not s.v1])
def test_megatron_hooks_are_rejected_with_the_torch_equivalent(
        dest: str, capsys: pytest.CaptureFixture[str]) -> None:
    spec = HOOKS[dest]
    assert spec.rejection.startswith("vime's trainer is torch")
    with pytest.raises(SystemExit) as info:
        parse_args(BASE + [spec.arg, "my_pkg.megatron.hook"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {spec.arg}: vime's trainer is torch" in err and "Megatron" in err


def test_help_lists_no_parsed_only_hook() -> None:
    text = get_parser().format_help()
    assert "Parsed;" not in text and "not call" not in text
    assert "Rejected: vime's trainer is torch" in text
    for dest in ("custom_loss_function_path", "custom_advantage_function_path",
                 "custom_tis_function_path", "custom_pg_loss_reducer_function_path"):
        assert HOOKS[dest].v1


def test_trainer_flags_are_implemented() -> None:
    args = parse_args(BASE + ["--use-tis", "--tis-clip", "3", "--tis-clip-low", "0.5",
                              "--get-mismatch-metrics", "--advantage-estimator", "cispo"])
    assert args.use_tis and args.tis_clip == 3.0 and args.tis_clip_low == 0.5
    assert parse_args(BASE + ["--advantage-estimator", "reinforce_plus_plus", "--gamma", "0.9"]
                      ).gamma == 0.9
    assert "ppo" in UNSUPPORTED_CHOICES["advantage_estimator"]
    with pytest.raises(NotImplementedError, match="--advantage-estimator ppo"):
        parse_args(BASE + ["--advantage-estimator", "ppo"])


@pytest.mark.parametrize("extra,needle", [
    (["--loss-type", "custom_loss"], "argument --loss-type: custom_loss needs "
                                     "--custom-loss-function-path"),
    (["--custom-loss-function-path", "m.f"], "argument --custom-loss-function-path: is only "
                                             "called with --loss-type custom_loss"),
    (["--custom-tis-function-path", "m.f"], "argument --custom-tis-function-path: is only called "
                                            "with --use-tis or --get-mismatch-metrics"),
    (["--use-tis", "--loss-type", "sft_loss"], "argument --use-tis: acts on the built-in policy "
                                               "loss"),
    (["--custom-pg-loss-reducer-function-path", "m.f", "--loss-type", "custom_loss",
      "--custom-loss-function-path", "m.g"], "argument --custom-pg-loss-reducer-function-path"),
    (["--custom-advantage-function-path", "m.f", "--loss-type", "sft_loss"],
     "sft_loss uses no advantages"),
    (["--tis-clip", "1", "--tis-clip-low", "2"], "argument --tis-clip-low: needs 0 <= "
                                                  "--tis-clip-low <= --tis-clip"),
    (["--gamma", "1.5"], "argument --gamma: must be in [0, 1], got 1.5"),
])
def test_trainer_flag_combinations_that_would_be_ignored_are_refused(
        capsys: pytest.CaptureFixture[str], extra: list[str], needle: str) -> None:
    with pytest.raises(SystemExit):
        parse_args(BASE + extra)
    assert needle in capsys.readouterr().err
