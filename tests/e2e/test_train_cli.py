"""`vime train` end to end through the console entry point (a subprocess per run)."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

HOOKS_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "train_hooks"
SFT = "vime.rollout.sft_rollout.generate_rollout"


@pytest.fixture(scope="module")
def sft_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """64 two-turn conversations ``"a+b="`` -> ``"The answer is c."`` as message lists."""
    rng = random.Random(0)
    path = tmp_path_factory.mktemp("sft") / "sft.jsonl"
    with path.open("w") as fh:
        for _ in range(64):
            a, b = rng.randint(10, 99), rng.randint(10, 99)
            fh.write(json.dumps({"input": [{"role": "user", "content": f"{a}+{b}="},
                                           {"role": "assistant",
                                            "content": f"The answer is {a + b}."}]}) + "\n")
    return path


def vime_train(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HOOKS_DIR),
                                                       os.environ.get("PYTHONPATH", "")]),
               COLUMNS="120")
    return subprocess.run([sys.executable, "-m", "vime.cli", "train", *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


def metrics(run_dir: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def sft_args(model: Path, data: Path, run_dir: Path, *extra: str) -> list[str]:
    return ["--hf-checkpoint", str(model), "--prompt-data", str(data),
            "--rollout-function-path", SFT, "--loss-type", "sft_loss", "--rollout-batch-size", "8",
            "--micro-batch-size", "4", "--lr", "3e-3", "--run-dir", str(run_dir), *extra]


def test_sft_run_with_ray_actors(tiny_model_dir: Path, sft_data: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    # a short progress interval: the plain lines (stderr is a pipe) include what a step is
    # doing while it runs longer than the interval
    proc = vime_train(*sft_args(tiny_model_dir, sft_data, run_dir, "--num-rollout", "4",
                                "--progress-interval-secs", "0.05"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert re.search(r"^vime train: step [1-4]/4: (rollout|training|weight sync) for \d:\d\d  "
                     r"elapsed \d+:\d\d$", proc.stderr, re.M), proc.stderr[-3000:]
    records = metrics(run_dir)
    assert [r["rollout_id"] for r in records] == [0, 1, 2, 3]
    losses = [float(r["train/sft_loss"]) for r in records]  # type: ignore[arg-type]
    assert losses[-1] < losses[0] - 0.5
    assert all(r["train/num_steps"] == 1.0 for r in records)
    assert "vime train: summary" in proc.stderr and "metrics.jsonl" in proc.stderr


def test_resume_sees_the_same_samples_and_losses(tiny_model_dir: Path, sft_data: Path,
                                                 tmp_path: Path) -> None:
    common = ["--rollout-shuffle", "--lr-warmup-steps", "4", "--single-process"]
    full, first, second = tmp_path / "full", tmp_path / "first", tmp_path / "second"
    dump = "{dir}/dump_{{rollout_id}}.pt"
    proc = vime_train(*sft_args(tiny_model_dir, sft_data, full, "--num-rollout", "6", *common,
                                "--save-debug-rollout-data", dump.format(dir=full)))
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = vime_train(*sft_args(tiny_model_dir, sft_data, first, "--num-rollout", "3", *common,
                                "--save", str(tmp_path / "ckpt"), "--save-interval", "3"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "ckpt" / "latest_checkpointed_iteration.txt").read_text().strip() == "2"
    proc = vime_train(*sft_args(tiny_model_dir, sft_data, second, "--num-rollout", "6", *common,
                                "--load", str(tmp_path / "ckpt"),
                                "--save-debug-rollout-data", dump.format(dir=second)))
    assert proc.returncode == 0, proc.stderr[-3000:]

    import torch

    for rid in (3, 4, 5):
        a = torch.load(full / f"dump_{rid}.pt", weights_only=False)["samples"]
        b = torch.load(second / f"dump_{rid}.pt", weights_only=False)["samples"]
        assert [(s["index"], s["tokens"]) for s in a] == [(s["index"], s["tokens"]) for s in b]
    assert not (second / "dump_2.pt").exists()
    resumed = {r["rollout_id"]: r for r in metrics(second)}
    assert sorted(resumed) == [3, 4, 5]
    for r in metrics(full)[3:]:
        assert resumed[r["rollout_id"]]["train/loss"] == r["train/loss"]
        assert resumed[r["rollout_id"]]["train/lr"] == r["train/lr"]


def test_contract_violation_stops_before_the_optimiser_step(tiny_model_dir: Path,
                                                            tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc = vime_train("--hf-checkpoint", str(tiny_model_dir), "--rollout-function-path",
                      "vime_toy_rollout.broken_at_step_one", "--no-rollout-engines",
                      "--rollout-batch-size", "2", "--n-samples-per-prompt", "2",
                      "--num-rollout", "3", "--micro-batch-size", "2", "--lr", "1e-3",
                      "--save", str(tmp_path / "ckpt"), "--save-interval", "1",
                      "--run-dir", str(run_dir))
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "contract violation, stopped before the optimiser step" in proc.stderr
    assert "VIM108 error: samples[0][1].loss_mask" in proc.stderr
    assert "vime_toy_rollout.broken_at_step_one" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert [r["rollout_id"] for r in metrics(run_dir)] == [0]
    assert (tmp_path / "ckpt" / "iter_0000000").is_dir()
    assert not (tmp_path / "ckpt" / "iter_0000001").exists()


def grpo_on_session_engine(model: Path, engine: object, tmp_path: Path, n_prompts: int,
                           *extra: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    """A short GRPO `vime train` (Ray actors) on the session engine, attached as an external
    engine; its weights and version tag are put back afterwards (the engine is shared)."""
    from vime.ray.engine_control import sync_weights

    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"input": f"{a}+1=", "label": str(a + 1)}) + "\n"
                               for a in range(10, 10 + n_prompts)))
    run_dir = tmp_path / "run"
    url = engine.url  # type: ignore[attr-defined]
    try:
        proc = vime_train("--hf-checkpoint", str(model), "--prompt-data", str(prompts),
                          "--label-key", "label", "--rm-type", "f1", "--rollout-batch-size", "2",
                          "--n-samples-per-prompt", "4", "--rollout-max-response-len", "8",
                          "--micro-batch-size", "4", "--lr", "1e-3", *extra,
                          "--rollout-external-engine-addrs", url, "--run-dir", str(run_dir))
    finally:
        sync_weights([url], str(model), version="default")
    return proc, run_dir


def test_async_rollout_trains_on_samples_one_version_behind(tiny_model_dir: Path,
                                                            vllm_server: object,
                                                            tmp_path: Path) -> None:
    """--async-rollout: rollout k+1 is generated while step k trains, so from the second step
    on every sample was produced by the weights one version behind the trainer's. A checkpoint
    keeps the rollout generated ahead: the resumed run trains on it first (the same loss as
    the uninterrupted run) and then takes the next prompts, skipping none."""
    import torch

    ckpt, first, second = tmp_path / "ckpt", tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    common = ("--num-rollout", "4", "--async-rollout", "--use-rollout-logprobs")
    proc, run_dir = grpo_on_session_engine(
        tiny_model_dir, vllm_server, first, 12, *common, "--save", str(ckpt),
        "--save-interval", "2", "--save-debug-rollout-data", str(first / "dump_{rollout_id}.pt"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    train = [r for r in metrics(run_dir) if "train/loss" in r]
    assert [r["rollout_id"] for r in train] == [0, 1, 2, 3]
    assert [r["rollout/staleness/lag_max"] for r in train] == [0.0, 1.0, 1.0, 1.0]
    assert all(r["rollout/staleness/dropped_groups"] == 0.0 for r in train)
    assert sorted(p.name for p in (run_dir / "weights").iterdir()) == ["v000003", "v000004"]
    assert (ckpt / "iter_0000001" / "ahead_rollout.pt").is_file()
    assert not (ckpt / "iter_0000003" / "ahead_rollout.pt").exists()   # nothing ahead of the end

    (ckpt / "latest_checkpointed_iteration.txt").write_text("1\n")   # resume after step 1
    proc, resumed_dir = grpo_on_session_engine(
        tiny_model_dir, vllm_server, second, 12, *common, "--load", str(ckpt),
        "--save-debug-rollout-data", str(second / "dump_{rollout_id}.pt"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "resuming with rollout 2, generated ahead before the checkpoint of step 1" in proc.stdout
    resumed = {r["rollout_id"]: r for r in metrics(resumed_dir) if "train/loss" in r}
    assert sorted(resumed) == [2, 3]
    assert resumed[2]["train/loss"] == train[2]["train/loss"]
    assert resumed[2]["rollout/raw_reward"] == train[2]["rollout/raw_reward"]
    assert not (second / "dump_2.pt").exists()   # trained from the checkpoint, not regenerated

    def indices(path: Path) -> list[int]:
        return [s["index"] for s in torch.load(path, weights_only=False)["samples"]]

    assert indices(second / "dump_3.pt") == indices(first / "dump_3.pt")


def test_an_external_engine_gets_the_trainers_weights_before_the_first_rollout(
        tiny_model_dir: Path, vllm_server: object, tmp_path: Path) -> None:
    """An engine vime did not start may hold other weights (an earlier run's): here the
    session engine is given another model's (the tiny model of seed 1). The run pushes its
    trainer's weights before its first rollout, so the sampler's log probs equal the trainer's
    at step 0; without the push they would be the other model's."""
    from vime.ray.engine_control import sync_weights
    from vime.utils.tiny_model import build_tiny_model

    url = vllm_server.url  # type: ignore[attr-defined]
    other = build_tiny_model(tmp_path / "other", seed=1)
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"input": f"{a}+1=", "label": str(a + 1)}) + "\n"
                               for a in range(10, 14)))
    try:
        sync_weights([url], str(other), version="default")
        proc = vime_train("--hf-checkpoint", str(tiny_model_dir), "--prompt-data", str(prompts),
                          "--label-key", "label", "--rm-type", "f1", "--rollout-batch-size", "4",
                          "--n-samples-per-prompt", "4", "--rollout-max-response-len", "8",
                          "--micro-batch-size", "16", "--lr", "1e-6", "--num-rollout", "1",
                          "--rollout-external-engine-addrs", url, "--get-mismatch-metrics",
                          "--use-rollout-logprobs", "--run-dir", str(tmp_path / "run"))
    finally:
        sync_weights([url], str(tiny_model_dir), version="default")
    assert proc.returncode == 0, proc.stderr[-3000:]
    step0 = next(r for r in metrics(tmp_path / "run") if "train/loss" in r)
    assert float(step0["train/mismatch_logprob_abs_diff"]) < 1e-3, step0  # type: ignore[arg-type]


def test_grpo_run_with_network_engines(tiny_model_dir: Path, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """--rollout-host 0.0.0.0: vime's engine listens on every interface with the run's key
    (fixed here through VIME_ENGINE_API_KEY) and its guard; the rollout sends the key, the
    weight syncs and version tags go through the engine's Ray actor, and the key appears in
    none of the run's files."""
    key = "e2e-key-" + os.urandom(8).hex()
    monkeypatch.setenv("VIME_ENGINE_API_KEY", key)
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"input": f"{a}+1=", "label": str(a + 1)}) + "\n"
                               for a in range(10, 14)))
    run_dir = tmp_path / "run"
    proc = vime_train("--hf-checkpoint", str(tiny_model_dir), "--prompt-data", str(prompts),
                      "--label-key", "label", "--rm-type", "f1", "--rollout-batch-size", "2",
                      "--n-samples-per-prompt", "2", "--rollout-max-response-len", "4",
                      "--micro-batch-size", "2", "--lr", "1e-3", "--num-rollout", "2",
                      "--rollout-host", "0.0.0.0", "--vllm-enforce-eager",
                      "--run-dir", str(run_dir), timeout=420)
    assert proc.returncode == 0, proc.stderr[-3000:]
    train = [r for r in metrics(run_dir) if "train/loss" in r]
    assert [r["rollout_id"] for r in train] == [0, 1]
    assert all(float(r["perf/weight_sync_time"]) > 0 for r in train)  # type: ignore[arg-type]
    assert all(r["rollout/staleness/max"] == 0.0 for r in train)   # tags set by the actor
    log = (run_dir / "logs" / "engine-0.log").read_text()
    assert "--host 0.0.0.0" in log and "--middleware vime.ray.engine_guard.EngineGuard" in log
    for path in run_dir.rglob("*"):
        if path.is_file() and path.suffix in ("", ".log", ".jsonl", ".json", ".txt"):
            assert key not in path.read_text(errors="replace"), path


def test_grpo_with_two_trainer_ranks_syncs_weights_into_the_engine(
        tiny_model_dir: Path, vllm_server: object, tmp_path: Path) -> None:
    """GRPO through `vime train` (Ray actors) on the session engine, with eval every step, and
    --actor-num-gpus-per-node 2 on the CPU: two trainer ranks (Ray actors, gloo, FSDP2) train
    two GRPO steps, rank 0 writes the weights the engine reloads before each step and a
    checkpoint that a one-rank trainer loads. (One run for both: a one-rank GRPO run through
    `vime train` syncs weights the same way, and several tests here and the demo's run one.)"""
    from vime.backends.trainer import Trainer
    from vime.config import parse_args

    ckpt = tmp_path / "ckpt"
    proc, run_dir = grpo_on_session_engine(
        tiny_model_dir, vllm_server, tmp_path, 8, "--num-rollout", "2",
        "--actor-num-gpus-per-node", "2", "--balance-data", "--save", str(ckpt),
        "--eval-prompt-data", "toy", str(tmp_path / "prompts.jsonl"), "--eval-interval", "1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = metrics(run_dir)
    train = [r for r in records if "train/loss" in r]
    assert [r["rollout_id"] for r in train] == [0, 1]
    assert all(r["train/num_steps"] == 1.0 for r in train)
    assert all(float(r["perf/weight_sync_time"]) > 0 for r in train)  # type: ignore[arg-type]
    assert all("eval/toy" in r for r in records)
    # the engine tags its tokens with the version synced before each step: one per step
    assert all(r["rollout/staleness/max"] == 0.0 for r in train)
    assert "rollout/staleness/lag_max" not in train[0]   # synchronous: nothing to bound
    assert sorted(p.name for p in (run_dir / "weights").iterdir()) == ["v000001", "v000002"]
    assert (ckpt / "latest_checkpointed_iteration.txt").read_text().strip() == "1"
    one = Trainer(parse_args(["--hf-checkpoint", str(tiny_model_dir), "--rollout-batch-size",
                              "2", "--n-samples-per-prompt", "4", "--num-rollout", "3"]))
    one.load(str(ckpt), 1)
    assert one.global_step == 2


@pytest.mark.parametrize(("signame", "status", "said"), [("SIGINT", 130, "interrupted")])
def test_a_signal_saves_a_checkpoint_and_leaves_no_engine_behind(
        tiny_model_dir: Path, tmp_path: Path, signame: str, status: int, said: str) -> None:
    """Ctrl-C mid-run: a checkpoint of the last finished step, no vLLM process left (Ray's own
    SIGTERM handler used to exit at once and orphan vLLM's EngineCore). ``kill`` (SIGTERM) is
    the same run in tests/e2e/test_engine_lifetime.py: the driver runs in a session of its own
    (vime.supervisor), so a SIGTERM to the supervisor's process group, as that test sends it,
    reaches the supervisor alone, exactly as one to its pid; that test asserts what this one
    did for SIGTERM (exit 143, "terminated", the checkpoint, no process of the run left)."""
    import signal
    import time

    import psutil

    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"input": f"{a}+1=", "label": str(a + 1)}) + "\n"
                               for a in range(10, 18)))
    run_dir, ckpt = tmp_path / "run", tmp_path / "ckpt"
    env = dict(os.environ, COLUMNS="120")
    proc = subprocess.Popen(
        [sys.executable, "-m", "vime.cli", "train", "--hf-checkpoint", str(tiny_model_dir),
         "--prompt-data", str(prompts), "--label-key", "label", "--rm-type", "f1",
         "--rollout-batch-size", "2", "--n-samples-per-prompt", "2",
         "--rollout-max-response-len", "4", "--micro-batch-size", "2", "--lr", "1e-4",
         "--num-rollout", "1000", "--save", str(ckpt), "--run-dir", str(run_dir),
         "--vllm-enforce-eager"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        metrics_file = run_dir / "metrics.jsonl"
        while time.monotonic() < deadline and proc.poll() is None:
            if metrics_file.exists() and metrics_file.read_text().count("\n") >= 1:
                break
            time.sleep(0.5)
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        family = psutil.Process(proc.pid).children(recursive=True)
        assert any("vllm.entrypoints" in " ".join(_cmdline(p)) for p in family)
        proc.send_signal(getattr(signal, signame))
        t_signal = time.monotonic()
        _, stderr = proc.communicate(timeout=120)
        print(f"{signame}: exited {time.monotonic() - t_signal:.1f} s after the signal")
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == status, stderr[-3000:]
    assert f"vime train: {said}" in stderr and "saved a checkpoint of step" in stderr
    step = int((ckpt / "latest_checkpointed_iteration.txt").read_text())
    assert step >= 0 and (ckpt / f"iter_{step:07d}").is_dir()
    _, alive = psutil.wait_procs(family, timeout=30)
    # vLLM's EngineCore renames itself VLLM::EngineCore
    assert not [p for p in alive if "vllm" in " ".join(_cmdline(p)).lower()], alive


def _cmdline(p: object) -> list[str]:
    import psutil

    try:
        return p.cmdline()  # type: ignore[attr-defined,no-any-return]
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return []
