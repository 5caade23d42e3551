"""Every bad input `vime train` finds after parsing ends with one line naming the argument and
the fix, and exit status 2 (vime.config.inputs, run by vime.train.main before Ray starts)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from vime.train import main

pytestmark = pytest.mark.unit

# (extra arguments, the argument named, words of the reason); {d} is a scratch folder
CASES = [
    (["--prompt-data", "{d}/missing.jsonl"], "--prompt-data", "does not exist"),
    (["--prompt-data", "{d}/data.csv"], "--prompt-data", "unsupported format '.csv'"),
    (["--prompt-data", "{d}/data"], "--prompt-data", "no suffix"),
    (["--prompt-data", "{d}/folder.jsonl"], "--prompt-data", "is a folder"),
    (["--prompt-data", "{d}/ok.jsonl@[a:b]"], "--prompt-data", "malformed row slice"),
    (["--eval-prompt-data", "held_out", "{d}/missing.parquet", "--eval-interval", "5"],
     "--eval-prompt-data", "eval dataset 'held_out': dataset"),
    (["--hf-checkpoint", "{d}/empty_model"], "--hf-checkpoint", "has no config.json"),
    (["--hf-checkpoint", "{d}/no/such/model"], "--hf-checkpoint", "does not exist"),
    (["--hf-checkpoint", "{d}/ok.jsonl"], "--hf-checkpoint", "is a file"),
    (["--custom-rm-path", "no_such_module_h18.reward"], "--custom-rm-path",
     "'no_such_module_h18.reward': module 'no_such_module_h18' not found"),
    (["--rollout-function-path", "h18pkg.nope.generate_rollout"], "--rollout-function-path",
     "module 'h18pkg.nope'"),
    (["--custom-config-path", "{d}/missing.yaml"], "--custom-config-path", "cannot read"),
    (["--config", "{d}/missing.yaml"], "--config", "does not exist"),
    (["--rollout-function-path", "h18pkk.generate_rollout"], "--rollout-function-path",
     "(did you mean 'h18pkg'?)"),
    (["--rollout-function-path", "generate_rollout"], "--rollout-function-path",
     "is not a dotted path"),
    # the engines' key (vime.ray.engine_guard.engine_auth_problem)
    (["--vllm-host", "0.0.0.0", "--engine-auth", "disabled"], "--vllm-host",
     "0.0.0.0 listens beyond the loopback, and --engine-auth disabled"),
    (["--rollout-host", "0.0.0.0", "--engine-auth", "disabled"], "--rollout-host",
     "drop --engine-auth disabled"),
    (["--vllm-host", "10.1.2.3"], "--vllm-host", "10.1.2.3: give 127.0.0.1 or 0.0.0.0"),
    (["--vllm-api-key", "s3cret"], "--vllm-api-key", "set VIME_ENGINE_API_KEY=<key>"),
]


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "ok.jsonl").write_text(json.dumps({"input": "1+1", "label": "2"}) + "\n")
    (tmp_path / "data.csv").write_text("input,label\n")
    (tmp_path / "data").write_text("")
    (tmp_path / "folder.jsonl").mkdir()
    (tmp_path / "empty_model").mkdir()
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    (tmp_path / "h18pkg").mkdir()
    (tmp_path / "h18pkg" / "__init__.py").write_text("")
    monkeypatch.chdir(tmp_path)
    for key in ("VLLM_NO_USAGE_STATS", "DO_NOT_TRACK", "HF_HUB_OFFLINE",
                "RAY_USAGE_STATS_ENABLED", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH"):
        monkeypatch.setenv(key, os.environ.get(key, "1"))
    return tmp_path


def _argv(d: Path, extra: list[str]) -> list[str]:
    base = {"--hf-checkpoint": str(d / "model"), "--prompt-data": str(d / "ok.jsonl"),
            "--rollout-batch-size": "2", "--num-rollout": "1", "--run-dir": str(d / "run")}
    extra = [a.replace("{d}", str(d)) for a in extra]
    for flag in [a for a in extra if a in base]:
        del base[flag]
    return [*(x for kv in base.items() for x in kv), *extra]


@pytest.mark.parametrize(("extra", "argument", "reason"), CASES,
                         ids=[f"{c[1]}:{c[2][:24]}" for c in CASES])
def test_bad_input_is_one_line_and_exit_2(scratch: Path, capsys: pytest.CaptureFixture[str],
                                          extra: list[str], argument: str,
                                          reason: str) -> None:
    status = main(_argv(scratch, extra))
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert status == 2, err
    assert len(lines) == 2 and lines[0].startswith("usage: vime train "), err
    assert lines[1].startswith(f"vime train: error: argument {argument}: "), err
    assert reason in lines[1], err
    assert not (scratch / "run").exists()   # nothing started


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files without read permission")
def test_unreadable_prompt_data(scratch: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (scratch / "ok.jsonl").chmod(0)
    assert main(_argv(scratch, [])) == 2
    assert "is not readable" in capsys.readouterr().err


def test_hub_id_is_left_to_the_loader() -> None:
    from vime.config.inputs import hf_checkpoint_problem

    assert hf_checkpoint_problem("Qwen/Qwen2.5-0.5B") is None
    assert hf_checkpoint_problem("./Qwen/Qwen2.5-0.5B") is not None


# Ray's authentication (vime.ray.auth.auth_problem), set by the environment: (variables, words)
AUTH_CASES = [
    ({"RAY_AUTH_MODE": "disabled"}, "unset RAY_AUTH_MODE, or pass --ray-auth disabled"),
    ({"RAY_AUTH_TOKEN_PATH": "{d}/no_token"}, "RAY_AUTH_TOKEN_PATH={d}/no_token: cannot read"),
    ({"RAY_AUTH_TOKEN_PATH": "{d}/data"}, "the file is empty"),
    ({"RAY_ADDRESS": "127.0.0.1:1", "RAY_AUTH_TOKEN_PATH": None, "HOME": "{d}"},
     "joining a Ray cluster needs its token"),
]


@pytest.mark.parametrize(("env", "reason"), AUTH_CASES, ids=[c[1][:24] for c in AUTH_CASES])
def test_bad_ray_auth_is_one_line_and_exit_2(scratch: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch,
                                             env: dict[str, str | None], reason: str) -> None:
    for key, value in env.items():
        if value is None:
            monkeypatch.delenv(key, raising=False)
        else:
            monkeypatch.setenv(key, value.replace("{d}", str(scratch)))
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    status = main(_argv(scratch, []))
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.strip().splitlines()[1].startswith("vime train: error: argument --ray-auth: "), err
    assert reason.replace("{d}", str(scratch)) in err, err
    assert not (scratch / "run").exists()   # nothing started


def test_ray_auth_disabled_passes_the_input_check(scratch: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from vime.config.command_line import parse_args
    from vime.config.inputs import input_problem

    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    args = parse_args(_argv(scratch, ["--ray-auth", "disabled"]))
    assert input_problem(args) is None
