"""Child processes: the environment they run in, the printed header, and ``run_child``,
which forwards SIGTERM to a ``vime train`` child and ends the demo cleanly on a signal.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vime.demo.config import ROOT, _display
from vime.utils.quiet_env import QUIET_ENV


def _env() -> dict[str, str]:
    return {**os.environ, **QUIET_ENV, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}


def _banner(text: str) -> None:
    print(f"\n== {text}", flush=True)


def _script(name: str, here: Path | None) -> str:
    """The console script ``name`` as a shell finds it: the bare name where ``PATH`` leads to
    this interpreter's own (an activated venv), else its path (``.venv/bin/vime`` from the
    checkout; ``make demo`` runs without activating the venv)."""
    own = Path(sys.executable).parent / name
    found = shutil.which(name)
    if not own.is_file() or (found is not None and Path(found).resolve() == own.resolve()):
        return name
    if here is not None and own.is_relative_to(here):
        return str(own.relative_to(here))
    return str(own)


def _shell(command: Sequence[str]) -> str:
    """``command`` (run in :data:`~vime.demo.config.ROOT`) as a line to paste into a shell:
    prefixed with ``cd ROOT &&`` when the demo runs in another folder (an installed wheel, or
    a checkout's demo started elsewhere), so its relative paths still resolve; its console
    script (``vime``, ``vime-lint``) by path when ``PATH`` does not lead to it."""
    try:
        here: Path | None = Path(os.getcwd()).resolve()
    except OSError:   # the folder was removed
        here = None
    line = shlex.join([_script(command[0], ROOT), *command[1:]])
    return line if here == ROOT else f"cd {shlex.quote(str(ROOT))} && {line}"


def _vime_train(config: Path, overrides: Sequence[str], title: str) -> tuple[int, list[str]]:
    """Run ``vime train --config CONFIG OVERRIDES`` in a subprocess; returns (status, argv)."""
    command = ["vime", "train", "--config", _display(config), *overrides]
    _banner(f"{title}\n$ {_shell(command)}")
    status = run_child([sys.executable, "-m", "vime.cli", *command[1:]], cwd=ROOT, env=_env())
    return status, command


def run_child(argv: Sequence[str], **popen_kwargs: Any) -> int:
    """Run ``argv`` to completion and return its exit status; on SIGTERM or Ctrl-C, let it
    stop cleanly, then end the demo.

    ``subprocess.run`` does not forward signals: a demo killed with SIGTERM (``kill``, a CI
    time-out) used to leave its ``vime train`` child, with Ray and a vLLM engine, running.
    The child runs in a session of its own, so a signal to the demo's process group (``kill
    -TERM -PGID``, Ctrl-C in a terminal, ``make`` stopped) reaches it once, from here: SIGTERM
    and SIGINT are forwarded (two would make ``vime train`` stop at once instead of after its
    current step). Either way the demo waits for the child, then exits with status 143
    (SIGTERM) or 130 (Ctrl-C), with a message and no traceback.
    """
    proc = subprocess.Popen(list(argv), start_new_session=True, **popen_kwargs)
    received: list[int] = []

    def on_signal(signum: int, frame: object) -> None:
        received.append(signum)
        proc.send_signal(signum)

    previous = {signum: signal.signal(signum, on_signal)
                for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        status = proc.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if received:
        first = signal.Signals(received[0])
        print(f"vime demo: {first.name} received; {shlex.join(argv[:4])} ... exited with "
              f"status {status}; stopping the demo", file=sys.stderr, flush=True)
        raise SystemExit(128 + first.value)
    return status

