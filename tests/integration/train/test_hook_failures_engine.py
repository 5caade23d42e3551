"""Hook failures on the real engine and real Ray (issue 15): a reward that raises on every fifth
sample, a reward that sleeps past --rm-timeout, a generate that hangs on one sample, each with
--hook-failure raise (a clear error, quickly, no hook task left) and fail-sample (the step
finishes, the failed counts are exact, the failed rows train nothing); and the hook preflight
in a Ray worker for a module importable only from the driver's directory."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from vime.utils.arguments import parse_args

pytestmark = pytest.mark.integration

HOOKS = Path(__file__).resolve().parents[2] / "fixtures" / "failing_hooks"
MOD = "vime_failing_hooks"


@pytest.fixture(autouse=True)
def _hooks_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(HOOKS))


def _args(tiny_model_dir: Path, vllm_server: Any, tmp_path: Path, *extra: str) -> Any:
    tmp_path.mkdir(parents=True, exist_ok=True)
    data = tmp_path / "prompts.jsonl"
    data.write_text("".join(json.dumps({"input": f"{a}+1=", "label": str(a + 1)}) + "\n"
                            for a in range(10, 18)))
    return parse_args(["--hf-checkpoint", str(tiny_model_dir), "--prompt-data", str(data),
                       "--label-key", "label", "--rollout-batch-size", "2",
                       "--n-samples-per-prompt", "5", "--rollout-max-response-len", "6",
                       "--micro-batch-size", "5", "--lr", "1e-3", "--num-rollout", "1",
                       "--run-dir", str(tmp_path / "run"),
                       "--rollout-external-engine-addrs", vllm_server.url, *extra])


def _manager(args: Any) -> Any:
    from vime.ray.rollout import RolloutManagerCore

    return RolloutManagerCore(args)


def _hook_tasks_left() -> list[str]:
    from vime.utils.async_utils import run

    async def tasks() -> list[str]:
        me = asyncio.current_task()
        return [repr(t.get_coro()) for t in asyncio.all_tasks() if t is not me]

    return [t for t in run(tasks()) if MOD in t or "call_hook" in t]


def test_reward_raising_on_every_fifth_sample(tiny_model_dir: Path, vllm_server: Any,
                                              tmp_path: Path) -> None:
    from vime.backends.trainer import Trainer

    rm = f"{MOD}.reward_fails_every_fifth"
    manager = _manager(_args(tiny_model_dir, vllm_server, tmp_path, "--custom-rm-path", rm,
                             "--hook-failure", "fail-sample"))
    try:
        data, metrics = manager.generate(0)
        assert data is not None
        assert metrics["rollout/failed/count"] == 2.0          # indices 0 and 5 of 0..9
        assert metrics["rollout/failed/ratio"] == pytest.approx(0.2)
        assert metrics["rollout/failed/reward/ValueError"] == 2.0
        failed = [i for i, f in enumerate(data["failed"]) if f]
        assert sorted(data["sample_indices"][i] for i in failed) == [0, 5]
        assert all(not any(data["loss_masks"][i]) for i in failed)
        assert all(data["rewards"][i] == 0.0 for i in failed)
        out = Trainer(manager.args).train(0, data)
        assert out["train/num_steps"] == 1.0
    finally:
        manager.shutdown()
    raising = _manager(_args(tiny_model_dir, vllm_server, tmp_path / "r", "--custom-rm-path", rm))
    try:
        start = time.monotonic()
        with pytest.raises(ValueError, match="judge could not parse sample") as info:
            raising.generate(0)
        assert time.monotonic() - start < 60
        assert "--hook-failure raise stops the run" in "\n".join(info.value.__notes__)
        assert _hook_tasks_left() == []
    finally:
        raising.shutdown()


def test_reward_sleeping_past_rm_timeout(tiny_model_dir: Path, vllm_server: Any,
                                         tmp_path: Path) -> None:
    rm = f"{MOD}.reward_sleeps_on_index_3"
    manager = _manager(_args(tiny_model_dir, vllm_server, tmp_path, "--custom-rm-path", rm,
                             "--rm-timeout", "2", "--hook-failure", "fail-sample"))
    try:
        start = time.monotonic()
        data, metrics = manager.generate(0)
        assert time.monotonic() - start < 60
        assert metrics["rollout/failed/count"] == 1.0
        assert metrics["rollout/failed/reward/TimeoutError"] == 1.0
        assert data is not None
        assert [data["sample_indices"][i] for i, f in enumerate(data["failed"]) if f] == [3]
    finally:
        manager.shutdown()
    raising = _manager(_args(tiny_model_dir, vllm_server, tmp_path / "r", "--custom-rm-path", rm,
                             "--rm-timeout", "2"))
    try:
        with pytest.raises(TimeoutError, match="over --rm-timeout 2 s"):
            raising.generate(0)
        assert _hook_tasks_left() == []
    finally:
        raising.shutdown()


def test_generate_hanging_on_one_sample(tiny_model_dir: Path, vllm_server: Any,
                                        tmp_path: Path) -> None:
    extra = ["--custom-generate-function-path", f"{MOD}.generate_hangs_on_index_2",
             "--custom-rm-path", f"{MOD}.reward_ok", "--custom-generate-timeout", "3"]
    manager = _manager(_args(tiny_model_dir, vllm_server, tmp_path, *extra,
                             "--hook-failure", "fail-sample"))
    try:
        data, metrics = manager.generate(0)
        assert metrics["rollout/failed/generate/TimeoutError"] == 1.0
        assert data is not None
        row = data["sample_indices"].index(2)
        assert data["failed"][row] == 1 and data["loss_masks"][row] == [0]
        assert data["response_lengths"][row] == 1      # the prompt plus one placeholder
    finally:
        manager.shutdown()
    raising = _manager(_args(tiny_model_dir, vllm_server, tmp_path / "r", *extra))
    try:
        with pytest.raises(TimeoutError, match="over --custom-generate-timeout 3 s"):
            raising.generate(0)
        assert _hook_tasks_left() == []
    finally:
        raising.shutdown()


def test_preflight_in_a_ray_worker_names_a_driver_only_module(ray_cluster: Any, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    from vime.ray.preflight import HookPreflightError, preflight_hooks

    driver_dir = tmp_path / "driver_dir"
    driver_dir.mkdir()
    (driver_dir / "driver_only_rm_i15.py").write_text(
        "async def reward(args, sample, **kwargs):\n    return 1.0\n")
    monkeypatch.syspath_prepend(str(driver_dir))   # importable here, in the driver, only
    args = parse_args(["--rollout-batch-size", "2", "--num-rollout", "1",
                       "--custom-rm-path", "driver_only_rm_i15.reward"])
    start = time.monotonic()
    with pytest.raises(HookPreflightError) as info:
        preflight_hooks(args, env_vars={})
    assert time.monotonic() - start < 60
    text = str(info.value)
    assert ("--custom-rm-path driver_only_rm_i15.reward: ContractError: cannot load "
            "(--custom-rm-path) 'driver_only_rm_i15.reward': module 'driver_only_rm_i15' not "
            "found") in text
    assert "worker sys.path: " in text and str(driver_dir) not in text.split("sys.path: ")[1]
    # the driver's folder handed to the worker the way create_rollout_manager does it
    preflight_hooks(args, env_vars={"VIME_DRIVER_CWD": str(driver_dir)})
