"""``vime.ray.reaper``: a server's whole process group (leader and a child that ignores SIGTERM,
as vLLM's API server and its EngineCore) is killed when the process that started it dies, when
the run's driver dies, and the reaper leaves on its own once the group is empty. Real
processes, no mocks; the engine itself is tested in tests/e2e/test_engine_lifetime.py."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from vime.ray.reaper import driver_marker, group_alive, process_alive

pytestmark = pytest.mark.unit

# a "server": leads its group; its child ignores SIGTERM (as an EngineCore busy in a step)
SERVER = textwrap.dedent("""
    import subprocess, sys, time
    subprocess.Popen([sys.executable, "-c", "import signal, time; "
                      "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)"])
    time.sleep(120)
""")
# the "actor": starts the server in a new session and its reaper, writes both pids, waits
ACTOR = textwrap.dedent("""
    import subprocess, sys, time
    from vime.ray.reaper import start_reaper
    server = subprocess.Popen([sys.executable, "-c", sys.argv[2]], start_new_session=True)
    reaper = start_reaper(server.pid, watch=sys.argv[3:])
    open(sys.argv[1], "w").write(f"{server.pid} {reaper.pid}")
    time.sleep(120)
""")


def _start_actor(tmp_path: Path, *watch: str) -> tuple[subprocess.Popen[bytes], int, int]:
    out = tmp_path / "pids"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    env.pop("VIME_DRIVER", None)
    actor = subprocess.Popen([sys.executable, "-c", ACTOR, str(out), SERVER, *watch], env=env)
    deadline = time.monotonic() + 30
    while not (out.exists() and out.read_text()):
        assert time.monotonic() < deadline and actor.poll() is None, "actor did not start"
        time.sleep(0.05)
    group, reaper = map(int, out.read_text().split())
    deadline = time.monotonic() + 10
    while len(_members(group)) < 2:   # the leader and its child
        assert time.monotonic() < deadline, _members(group)
        time.sleep(0.05)
    return actor, group, reaper


def _members(pgid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getpgid(int(entry)) == pgid:
                    found.append(int(entry))
            except ProcessLookupError:
                continue
    return found


def _gone_within(pgid: int, seconds: float) -> float:
    start = time.monotonic()
    while group_alive(pgid):
        assert time.monotonic() - start < seconds, f"group {pgid} left: {_members(pgid)}"
        time.sleep(0.1)
    return time.monotonic() - start


def test_the_group_dies_with_the_process_that_started_it(tmp_path: Path) -> None:
    actor, group, reaper = _start_actor(tmp_path)
    actor.kill()   # SIGKILL: no atexit, no clean-up of its own
    actor.wait()
    _gone_within(group, 15)   # SIGTERM, 5 s, SIGKILL (the child ignores SIGTERM)
    assert not process_alive(str(reaper)) or _wait_exit(reaper)


def test_the_group_dies_with_the_driver(tmp_path: Path) -> None:
    driver = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        actor, group, _ = _start_actor(tmp_path, driver_marker(driver.pid))
        time.sleep(1.0)
        assert group_alive(group)   # the driver lives: the reaper waits
        driver.kill()
        driver.wait()
        _gone_within(group, 15)
        assert actor.poll() is None   # only the driver died
    finally:
        driver.kill()
        actor.kill()


def test_the_reaper_leaves_once_the_group_is_empty(tmp_path: Path) -> None:
    actor, group, reaper = _start_actor(tmp_path)
    try:
        os.killpg(group, signal.SIGKILL)
        _gone_within(group, 5)
        assert _wait_exit(reaper)
    finally:
        actor.kill()


def test_process_alive_checks_the_start_time_and_the_machine() -> None:
    me = driver_marker()
    assert process_alive(me) and process_alive(str(os.getpid()))
    boot, pid, start = me.split(":")
    assert not process_alive(f"{boot}:{pid}:{int(start) + 1}")   # a reused pid
    assert process_alive(f"other-boot:{pid}:{start}")             # another machine: unknown
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assert not process_alive(str(dead.pid))


def _wait_exit(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not process_alive(str(pid)):
            return True
        time.sleep(0.1)
    return False


def test_leftovers_of_a_dead_driver_are_found_by_session_and_marker(tmp_path: Path) -> None:
    """What a SIGKILLed driver leaves in its own session (Ray's agents, their raylet gone, in
    groups of their own): the processes that carry the run's ``VIME_RUN_ID`` are killed, any
    other one is left."""
    from vime.ray.reaper import kill_run_leftovers

    out = tmp_path / "pids"
    spawn = ("import os, subprocess, sys, time; kids = [subprocess.Popen([sys.executable, '-c', "
             "'import time; time.sleep(120)'], env=dict(os.environ, VIME_RUN_ID=r), "
             "process_group=0) "
             "for r in ('r-1', 'r-2')]; open(sys.argv[1], 'w').write(' '.join(str(k.pid) "
             "for k in kids)); time.sleep(120)")
    leader = subprocess.Popen([sys.executable, "-c", spawn, str(out)], start_new_session=True,
                              env=dict(os.environ, VIME_RUN_ID="r-1"))
    deadline = time.monotonic() + 30
    while not (out.exists() and out.read_text()):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    ours, other = map(int, out.read_text().split())
    try:
        time.sleep(0.5)
        assert sorted(kill_run_leftovers(leader.pid, "r-1")) == sorted([leader.pid, ours])
        assert leader.wait(5) == -signal.SIGKILL and _wait_exit(ours)
        assert process_alive(str(other))
    finally:
        leader.kill()
        for pid in (ours, other):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
