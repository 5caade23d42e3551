"""Which stages of ``make demo-real`` run after an earlier one failed: a failed set-up or a
failed ``vime-lint check`` skips GRPO and the control (training on hooks that the check found
wrong is hours spent on nothing), and the summary says why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vime.demo import cli
from vime.demo.config import StageResult

pytestmark = pytest.mark.unit


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, setup_ok: bool = True,
         check_ok: bool = True) -> tuple[int, dict[str, StageResult], list[str]]:
    calls: list[str] = []
    shown: dict[str, StageResult] = {}

    def stage(name: str, ok: bool = True) -> Any:
        def run(*args: Any, **kwargs: Any) -> StageResult:
            label = "control" if kwargs.get("control") else name
            calls.append(label)
            return StageResult(label, ok=ok)
        return run

    monkeypatch.setattr(cli, "stage_setup_real", stage("set-up", setup_ok))
    monkeypatch.setattr(cli, "stage_lint", stage("lint"))
    monkeypatch.setattr(cli, "stage_check", stage("check", check_ok))
    monkeypatch.setattr(cli, "stage_grpo", stage("GRPO"))
    monkeypatch.setattr(cli, "report", lambda paths, stages, **kw: shown.update(
        {s.name: s for s in stages}))
    monkeypatch.setattr(cli, "apply_quiet_env", lambda: None)
    rc = cli.main(["--model", "smollm2-135m-instruct", "--out", str(tmp_path)])
    return rc, shown, calls


def test_a_clean_check_goes_on_to_grpo_and_the_control(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    rc, shown, calls = _run(tmp_path, monkeypatch)
    assert rc == 0 and calls == ["set-up", "lint", "check", "GRPO", "control"]
    assert not shown["GRPO"].skipped and not shown["control"].skipped


def test_a_failed_check_skips_grpo_and_the_control(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    rc, shown, calls = _run(tmp_path, monkeypatch, check_ok=False)
    assert rc == 1 and calls == ["set-up", "lint", "check"]
    for name in ("GRPO", "control"):
        assert shown[name].skipped and shown[name].detail == "check failed"


def test_a_failed_set_up_skips_the_check_and_training(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    rc, shown, calls = _run(tmp_path, monkeypatch, setup_ok=False)
    assert rc == 1 and calls == ["set-up", "lint"]
    assert shown["check"].detail == "set-up failed" and shown["GRPO"].detail == "set-up failed"
