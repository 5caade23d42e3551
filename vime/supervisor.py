"""``vime train`` as two processes: a small supervisor, and the run's driver in a session of
its own, so that a signal to the whole process group reaches the driver once and Ray's
processes not at all.

Usage (``vime.cli`` does this for ``vime train``)::

    status = supervise(["train", "--config", "run.yaml"])   # the driver's exit status

Why: a scheduler, ``make`` or a terminal stops a job by signalling its whole process group.
Ray's GCS, raylet and actors are children of the driver and used to share its group: the same
SIGTERM killed them under the driver, which then exited 1 ("Failed to connect to GCS")
without a checkpoint, and vLLM's EngineCore was orphaned. Here

- the driver (``python -m vime.cli train ...`` with :data:`SUPERVISED_ENV` set) starts in a
  new session (``setsid``): its Ray cluster and engines are in that session too;
- the supervisor forwards SIGINT, SIGTERM and SIGHUP to the driver alone, once per signal,
  waits for it, kills what is left of the run in the driver's session (Ray's agents outlived
  a SIGKILLed driver) and returns its exit status (143 after SIGTERM, 130 after Ctrl-C; a
  driver killed by a signal ``N`` gives ``128 + N``);
- the driver dies with the supervisor (``PR_SET_PDEATHSIG``, SIGKILL: the supervisor was
  killed outright), and Ray's processes and the engines with the driver (Ray's own fate
  sharing, ``PR_SET_PDEATHSIG`` and :mod:`vime.ray.reaper`);
- every process of the run carries ``VIME_RUN_ID`` (this run's id, or the one already in the
  environment) in its environment, so leftovers can be found: ``grep -l VIME_RUN_ID=<id>
  /proc/*/environ`` (Ray's agents excepted: the raylet gives them an environment of its own;
  they are in the driver's session, which the supervisor empties when the driver exits).

This module imports only the standard library.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Sequence

from vime.ray.reaper import RUN_ID_ENV, kill_run_leftovers, set_pdeathsig

__all__ = ["FORWARDED", "SUPERVISED_ENV", "run_id", "supervise"]

#: Set in the driver's environment: it is the supervised driver (no second supervisor).
SUPERVISED_ENV = "VIME_SUPERVISED"
#: The signals passed on to the driver.
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def run_id() -> str:
    """This run's id: ``VIME_RUN_ID`` when set, else a new one (set in ``os.environ``, so
    every child inherits it)."""
    value = os.environ.get(RUN_ID_ENV)
    if not value:
        value = os.environ[RUN_ID_ENV] = f"vime-{os.getpid()}-{secrets.token_hex(4)}"
    return value


def _driver_preexec() -> None:  # pragma: no cover - runs in the child
    os.setsid()
    set_pdeathsig(signal.SIGKILL)


def supervise(argv: Sequence[str]) -> int:
    """Run ``python -m vime.cli ARGV`` as the run's driver (module doc); return its status."""
    run_id()
    env = {**os.environ, SUPERVISED_ENV: "1"}
    # the handlers are in place before the driver exists: a signal in between is not lost
    pending: list[int] = []
    proc: subprocess.Popen[bytes] | None = None

    def forward(signum: int, frame: object) -> None:
        if proc is None:
            pending.append(signum)
            return
        try:
            proc.send_signal(signum)
        except ProcessLookupError:
            pass

    previous = {signum: signal.signal(signum, forward) for signum in FORWARDED}
    try:
        proc = subprocess.Popen([sys.executable, "-m", "vime.cli", *argv], env=env,
                                preexec_fn=_driver_preexec)
        for signum in pending:
            proc.send_signal(signum)
        while True:
            try:
                status = proc.wait()
                break
            except InterruptedError:   # pragma: no cover - PEP 475 retries wait itself
                continue
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if proc is not None and proc.poll() is not None:
            # what the driver left in its session: nothing after a normal exit; Ray's agents
            # after a SIGKILL (their raylet died under them)
            kill_run_leftovers(proc.pid, None)
    return status if status >= 0 else 128 - status
