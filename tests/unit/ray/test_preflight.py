"""Checks before any engine starts (vime.ray.preflight): the hook import and load check as a
Ray worker runs it (here in-process), the flags of the failure policy, and inert-hook warnings."""

from __future__ import annotations

import sys
from argparse import Namespace
from pathlib import Path

import pytest

from vime.ray.preflight import check_hooks_here, hook_paths, inert_hook_warnings
from vime.utils.arguments import parse_args

pytestmark = pytest.mark.unit

BASE = ["--rollout-batch-size", "4", "--num-rollout", "3"]


def _module(folder: Path, name: str, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(text)


def test_hook_paths_lists_every_configured_hook() -> None:
    args = parse_args(BASE + ["--custom-rm-path", "m.rm", "--rollout-sample-hook-path", "m.a",
                              "--rollout-sample-hook-path", "m.b"])
    pairs = hook_paths(args)
    assert ("custom_rm_path", "m.rm") in pairs
    assert [p for d, p in pairs if d == "rollout_sample_hook_path"] == ["m.a", "m.b"]
    assert ("rollout_function_path", "vime.rollout.vllm_rollout.generate_rollout") in pairs


def test_check_names_a_module_the_worker_cannot_import(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    _module(tmp_path / "elsewhere", "only_on_driver_i15", "async def rm(args, sample, **kw):\n"
            "    return 1.0\n")
    args = parse_args(BASE + ["--custom-rm-path", "only_on_driver_i15.rm"])
    monkeypatch.delenv("VIME_DRIVER_CWD", raising=False)
    result = check_hooks_here(args, hook_paths(args))
    assert [(p["arg"], p["path"]) for p in result["problems"]] == [
        ("--custom-rm-path", "only_on_driver_i15.rm")]
    assert "only_on_driver_i15" in result["problems"][0]["error"]
    assert result["sys_path"] == sys.path
    # the driver's folder handed over in VIME_DRIVER_CWD makes it importable
    monkeypatch.setenv("VIME_DRIVER_CWD", str(tmp_path / "elsewhere"))
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert check_hooks_here(args, hook_paths(args))["problems"] == []


def test_check_runs_the_load_time_signature_check(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _module(tmp_path, "bad_sig_i15", "async def rm(sample):\n    return 1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    args = parse_args(BASE + ["--custom-rm-path", "bad_sig_i15.rm"])
    problems = check_hooks_here(args, hook_paths(args))["problems"]
    assert len(problems) == 1
    assert "signature does not match the contract" in problems[0]["error"]
    assert "VIM100" in problems[0]["error"]


@pytest.mark.parametrize("argv, message", [
    (["--rm-timeout", "0"], "argument --rm-timeout: must be a number of seconds > 0, got 0"),
    (["--custom-generate-timeout", "-1"], "--custom-generate-timeout: must be a number"),
    (["--rollout-watchdog-secs", "nan"], "--rollout-watchdog-secs: must be a number"),
    (["--max-failed-ratio", "1"], "argument --max-failed-ratio: must be in [0, 1), got 1"),
    (["--hook-failure", "ignore"], "invalid choice: 'ignore'"),
])
def test_failure_flags_are_validated(capsys: pytest.CaptureFixture[str], argv: list[str],
                                     message: str) -> None:
    with pytest.raises(SystemExit):
        parse_args(BASE + argv)
    assert message in capsys.readouterr().err


def test_failure_flag_defaults() -> None:
    args = parse_args(BASE)
    assert (args.hook_failure, args.max_failed_ratio, args.rm_timeout,
            args.custom_generate_timeout, args.rollout_watchdog_secs) == \
        ("raise", 0.5, None, None, None)


def test_inert_hooks_are_named_with_their_flag(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    _module(tmp_path, "own_rollout_i15", "def generate_rollout(args, rollout_id, data_source, "
            "evaluation=False):\n    return None\n")
    _module(tmp_path, "uses_default_i15", "from vime.rollout.vllm_rollout import generate_and_rm"
            "\n\ndef generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
            "    return None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ns = Namespace(rollout_function_path="own_rollout_i15.generate_rollout",
                   custom_generate_function_path="m.gen", custom_rm_path="m.rm",
                   rm_timeout=5.0, custom_generate_timeout=None)
    found = inert_hook_warnings(ns)
    assert len(found) == 3
    assert found[0].startswith("--custom-generate-function-path is set but "
                               "--rollout-function-path own_rollout_i15.generate_rollout never "
                               "runs vime's default generate/reward path")
    assert any(m.startswith("--rm-timeout is set") for m in found)
    assert any(m.startswith("--custom-rm-path is set") for m in found)
    ns.rollout_function_path = "uses_default_i15.generate_rollout"
    assert inert_hook_warnings(ns) == []
    ns.rollout_function_path = "vime.rollout.vllm_rollout.generate_rollout"
    ns.custom_generate_function_path, ns.custom_generate_timeout = None, 3.0
    assert inert_hook_warnings(ns) == [
        "--custom-generate-timeout is set but --custom-generate-function-path is not: the "
        "timeout limits only a custom generate function (the built-in one has "
        "--rollout-engine-retry-secs)"]
