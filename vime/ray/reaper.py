"""A reaper per child server: kills the server's whole process group when the process that
started it, or the run's driver, is gone.

Usage::

    reaper = start_reaper(server.pid)     # right after Popen(..., preexec_fn=setsid + pdeathsig)
    ...
    reaper.terminate()                    # once the server was stopped the normal way

    $ python -m vime.ray.reaper PGID [WATCH ...]   # what start_reaper runs

A vLLM server is three kinds of processes: the API server (which vime starts in a new session,
so it leads its own process group, with ``PR_SET_PDEATHSIG``), its EngineCore and its workers.
``PR_SET_PDEATHSIG`` reaches the API server only: EngineCore and the workers are its children,
and after a SIGKILL of the driver they kept running for minutes. The reaper is a
small process of its own (its own session, so a signal to the driver's process group does not
reach it, and ``PR_SET_PDEATHSIG`` on it) that, every :data:`POLL_S` seconds, checks

- that the process that started it (the engine's Ray actor, or the rollout manager for the
  router) is alive: its parent; a SIGTERM (its own death signal) means the same;
- that the run's driver is alive: ``VIME_DRIVER`` (``boot_id:pid:start_time``, set by
  ``vime train``; watched only on the driver's machine, and the start time guards against a
  reused pid);

and when one of them is gone, SIGTERMs the group, SIGKILLs it :data:`GRACE_S` seconds later,
kills what a dead driver left in its own session (:func:`kill_run_leftovers`: Ray's agents
outlived a SIGKILLed driver) and exits. It exits on its own once the group is empty (the server was stopped normally).

This module imports only the standard library.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

__all__ = ["DRIVER_ENV", "GRACE_S", "POLL_S", "RUN_ID_ENV", "driver_marker", "group_alive",
           "group_members", "kill_run_leftovers",
           "kill_group", "process_alive", "set_pdeathsig", "start_reaper"]

#: The run's marker on every one of its processes (inherited through the environment).
RUN_ID_ENV = "VIME_RUN_ID"
#: ``boot_id:pid:start_time`` of the run's driver (set by ``vime train`` before Ray starts).
DRIVER_ENV = "VIME_DRIVER"
#: Seconds between two liveness checks.
POLL_S = 0.5
#: Seconds between SIGTERM and SIGKILL of the group.
GRACE_S = 5.0


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def _start_time(pid: int) -> str | None:
    """Field 22 of ``/proc/<pid>/stat`` (clock ticks after boot), None if there is none."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            stat = fh.read()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[19]


def driver_marker(pid: int | None = None) -> str:
    """``boot_id:pid:start_time`` of ``pid`` (default: this process), the value of
    :data:`DRIVER_ENV`."""
    pid = os.getpid() if pid is None else pid
    return f"{_boot_id()}:{pid}:{_start_time(pid) or ''}"


def process_alive(spec: str) -> bool:
    """Whether the process named by ``spec`` (a pid, or a :func:`driver_marker`) still runs.
    A marker of another machine (other boot id) counts as alive: it cannot be checked here."""
    pid_text, start = spec, ""
    if spec.count(":") == 2:
        boot, pid_text, start = spec.split(":")
        if boot and boot != _boot_id():
            return True
    try:
        pid = int(pid_text)
    except ValueError:
        return True
    now = _start_time(pid)
    if now is None:
        return False
    if start and now != start:
        return False   # the pid was reused
    try:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def group_alive(pgid: int) -> bool:
    """Whether process group ``pgid`` still has a running member (zombies, which a living
    parent has not reaped yet, do not count)."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return bool(group_members(pgid))


def group_members(pgid: int) -> list[int]:
    """The pids of group ``pgid`` that are not zombies (read from ``/proc/<pid>/stat``)."""
    return _members(pgid, field=2)


def _members(wanted: int, *, field: int) -> list[int]:
    """Non-zombie pids whose ``/proc/<pid>/stat`` field after the name (2: process group,
    3: session) is ``wanted``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[field]) == wanted and fields[0] not in ("Z", "X"):
            found.append(int(entry))
    return found


def kill_group(pgid: int, grace: float = GRACE_S) -> None:
    """SIGTERM group ``pgid``, SIGKILL it after ``grace`` seconds (sooner once it is empty);
    returns when the group is empty (or 5 s after the SIGKILL)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and group_alive(pgid):
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and group_alive(pgid):
        time.sleep(0.05)


def kill_run_leftovers(sid: int, run_id: str | None) -> list[int]:
    """SIGKILL the processes of session ``sid`` that carry ``VIME_RUN_ID=<run_id>`` in their
    environment (every one when ``run_id`` is None), this process excepted: what a killed
    driver (a session leader under ``vime.supervisor``, so its session is the run's) leaves.
    Ray's agents (``ray::DashboardAgent``, ``ray::RuntimeEnvAgent``), whose raylet died under
    them, outlived a SIGKILLed driver; the raylet starts them with an environment of its own,
    without the marker. The engines have sessions of their own, and reapers. While a member
    lives, its session id cannot be taken by a new session. Returns the pids signalled."""
    needle = f"{RUN_ID_ENV}={run_id}".encode() if run_id else None
    hit = []
    for pid in _members(sid, field=3):
        if pid == os.getpid():
            continue
        if needle is not None:
            try:
                with open(f"/proc/{pid}/environ", "rb") as fh:
                    if needle not in fh.read().split(b"\0"):
                        continue
            except OSError:
                continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
            hit.append(pid)
    return hit


def set_pdeathsig(sig: int = signal.SIGTERM) -> None:  # pragma: no cover - runs in a child
    """``prctl(PR_SET_PDEATHSIG, sig)``: Linux sends ``sig`` to this process when the thread
    that started it exits. A no-op where libc has no ``prctl``."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, sig)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


#: The signals that tell the reaper to act (its death signal among them).
_ACT_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _reaper_preexec() -> None:  # pragma: no cover - runs in the child
    # blocked until its handlers are in place (kept across exec): a death signal that came
    # while Python starts would otherwise kill the reaper before it kills the group
    signal.pthread_sigmask(signal.SIG_BLOCK, _ACT_SIGNALS)
    os.setsid()
    set_pdeathsig(signal.SIGTERM)


def start_reaper(pgid: int, watch: Sequence[str] = ()) -> subprocess.Popen[bytes]:
    """Start the reaper of process group ``pgid``: it watches this process (its parent),
    ``watch`` (pids or :func:`driver_marker` values) and :data:`DRIVER_ENV` when set."""
    specs = [str(os.getpid()), *watch]
    driver = os.environ.get(DRIVER_ENV)
    if driver:
        specs.append(driver)
    return subprocess.Popen([sys.executable, "-m", "vime.ray.reaper", str(pgid), *specs],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, close_fds=True,
                            preexec_fn=_reaper_preexec)


def _driver_leftovers(specs: Sequence[str]) -> None:
    """A dead driver's own session (it leads one under ``vime.supervisor``, which starts it
    with ``setsid``): its processes of this run go too."""
    for spec in specs:
        if spec.count(":") == 2 and not process_alive(spec):
            kill_run_leftovers(int(spec.split(":")[1]), None)


def _main(argv: Sequence[str]) -> int:
    pgid, specs = int(argv[0]), list(argv[1:])
    told: list[int] = []

    def on_signal(signum: int, frame: object) -> None:
        told.append(signum)

    for signum in _ACT_SIGNALS:
        signal.signal(signum, on_signal)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _ACT_SIGNALS)
    # the parent may have gone between fork and prctl: check it first, as the loop does
    parent = os.getppid()
    while True:
        if not group_alive(pgid):
            return 0
        if told or os.getppid() != parent or not all(process_alive(s) for s in specs):
            _driver_leftovers(specs)   # first: its session id is surely still taken
            kill_group(pgid)
            return 0
        time.sleep(POLL_S)


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
