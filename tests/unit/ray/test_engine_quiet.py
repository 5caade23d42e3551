"""Engine logs by default: no HTTP access lines, a drained shutdown (no EngineDeadError); a
--vllm-<flag> turns each back (vime.ray.engine_command.QUIET_DEFAULTS, stop_process_group)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vime.config import parse_args
from vime.ray._process import stop_process_group
from vime.ray.engine_command import SHUTDOWN_DRAIN_S, build_server_command, extra_args_to_cli

pytestmark = pytest.mark.unit


def _engine_cmd(*vllm_flags: str) -> list[str]:
    args = parse_args(["--rollout-batch-size", "1", *vllm_flags], training=False)
    return build_server_command("/m", 1, extra_args=extra_args_to_cli(args.vllm_extra_args))


def test_default_server_has_no_access_log_and_drains_at_shutdown() -> None:
    cmd = _engine_cmd()
    assert "--disable-uvicorn-access-log" in cmd
    assert cmd[cmd.index("--shutdown-timeout") + 1] == str(SHUTDOWN_DRAIN_S)


def test_vllm_flags_turn_them_back() -> None:
    cmd = _engine_cmd("--vllm-no-disable-uvicorn-access-log", "--vllm-shutdown-timeout", "0")
    assert "--disable-uvicorn-access-log" not in cmd
    assert "--no-disable-uvicorn-access-log" in cmd
    assert cmd.count("--shutdown-timeout") == 1 and cmd[-2:] == ["--shutdown-timeout", "0"]


LEADER = r'''
import os, signal, subprocess, sys, time
log = sys.argv[1]
child = subprocess.Popen([sys.executable, "-c", """
import signal, sys, time
def term(*_):
    open(sys.argv[1], "a").write("child: SIGTERM\\n"); sys.exit(0)
signal.signal(signal.SIGTERM, term)
open(sys.argv[1], "a").write("child: up\\n")
time.sleep(60)
""", log])
def term(*_):
    open(log, "a").write("leader: SIGTERM\n")
    time.sleep(0.3)          # a server would stop its child itself here
    child.kill(); child.wait(); sys.exit(0)
signal.signal(signal.SIGTERM, term)
time.sleep(60)
'''


def _group(tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path]:
    log = tmp_path / "signals.log"
    proc = subprocess.Popen([sys.executable, "-c", LEADER, str(log)], start_new_session=True)
    deadline = time.monotonic() + 20
    while "child: up" not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline, "child did not start"
        time.sleep(0.05)
    return proc, log


def test_leader_first_signals_only_the_server(tmp_path: Path) -> None:
    proc, log = _group(tmp_path)
    stop_process_group(proc, 10.0, leader_first=True)
    assert log.read_text().splitlines() == ["child: up", "leader: SIGTERM"]
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)


def test_whole_group_signals_every_process(tmp_path: Path) -> None:
    proc, log = _group(tmp_path)
    stop_process_group(proc, 10.0)
    assert "child: SIGTERM" in log.read_text()
