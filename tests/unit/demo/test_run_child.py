"""``children.run_child``: a demo killed with SIGTERM passes it on to its ``vime train`` child."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from vime.demo.children import run_child

pytestmark = pytest.mark.unit

CHILD = textwrap.dedent("""
    import pathlib, signal, sys, time
    out = pathlib.Path(sys.argv[1])
    def on_term(signum, frame):
        (out / "child-got-sigterm").write_text("cleaned up")
        sys.exit(0)
    signal.signal(signal.SIGTERM, on_term)
    (out / "child-ready").write_text("")
    time.sleep(60)
""")

PARENT = textwrap.dedent("""
    import sys
    from vime.demo.children import run_child
    status = run_child([sys.executable, "-c", sys.argv[1], sys.argv[2]])
    print("parent went on after the child", status)
""")


def _wait_for(path: Path, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def test_sigterm_reaches_the_child_and_the_parent_stops(tmp_path: Path) -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT, CHILD, str(tmp_path)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(tmp_path / "child-ready")
    parent.send_signal(signal.SIGTERM)
    out, err = parent.communicate(timeout=30)
    assert (tmp_path / "child-got-sigterm").read_text() == "cleaned up"
    assert parent.returncode == 128 + signal.SIGTERM
    assert "SIGTERM received" in err and "exited with status 0" in err
    assert "parent went on" not in out


GROUP_CHILD = textwrap.dedent("""
    import pathlib, signal, sys, time
    out = pathlib.Path(sys.argv[1])
    def on_signal(signum, frame):
        with open(out / "signals", "a") as fh:
            fh.write(signal.Signals(signum).name + "\\n")
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    (out / "child-ready").write_text("")
    time.sleep(1.0)   # both copies of a group signal would have arrived by now
    sys.exit(0)
""")


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_a_signal_to_the_whole_group_reaches_the_child_once(tmp_path: Path,
                                                             signame: str) -> None:
    """Ctrl-C in a terminal, ``kill -TERM -PGID``, a stopped ``make``: the child is in a
    session of its own, so it gets the signal once, from the demo (two would make ``vime
    train`` stop at once instead of after its step), and the demo ends without a traceback."""
    sig = getattr(signal, signame)
    parent = subprocess.Popen([sys.executable, "-c", PARENT, GROUP_CHILD, str(tmp_path)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              start_new_session=True)
    _wait_for(tmp_path / "child-ready")
    os.killpg(parent.pid, sig)
    out, err = parent.communicate(timeout=30)
    assert (tmp_path / "signals").read_text().split() == [signame]
    assert parent.returncode == 128 + sig
    assert f"{signame} received" in err and "Traceback" not in err
    assert "parent went on" not in out


def test_a_child_that_finishes_returns_its_status() -> None:
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)  # Ray's, maybe
    assert run_child([sys.executable, "-c", "raise SystemExit(3)"]) == 3
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
