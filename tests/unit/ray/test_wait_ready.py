"""Waiting for a child server: a start slowed by a loaded machine goes on while the process
still makes progress (its log grows), a silent one fails after ``timeout`` seconds, and every
start ends by ``max_timeout`` (vime.ray._process.wait_ready)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vime.ray._process import log_size, wait_ready

pytestmark = pytest.mark.unit


class Failed(Exception):
    pass


@pytest.fixture
def proc() -> Iterator[subprocess.Popen[bytes]]:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield p
    p.kill()
    p.wait()


def test_a_start_that_keeps_logging_outlives_the_silence_limit(
        proc: subprocess.Popen[bytes], tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    start = time.monotonic()

    def ready() -> bool:
        with log.open("a") as fh:          # the engine writes a line every poll
            fh.write("loading\n")
        return time.monotonic() - start > 1.0

    wait_ready(proc, ready, timeout=0.4, interval=0.05, fail=Failed, what="answer",
               progress=lambda: log_size(log), max_timeout=5.0)
    assert time.monotonic() - start > 1.0          # waited past the 0.4 s silence limit


def test_a_silent_start_fails_after_the_silence_limit(proc: subprocess.Popen[bytes],
                                                      tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    log.write_text("started\n")
    start = time.monotonic()
    with pytest.raises(Failed, match=r"did not answer: no progress \(its log unchanged\) for "
                                     r"0 s, 0 s after the start"):
        wait_ready(proc, lambda: False, timeout=0.3, interval=0.05, fail=Failed, what="answer",
                   progress=lambda: log_size(log), max_timeout=5.0)
    assert time.monotonic() - start < 2.0


def test_a_start_that_logs_forever_fails_at_the_cap(proc: subprocess.Popen[bytes],
                                                   tmp_path: Path) -> None:
    log = tmp_path / "engine.log"

    def ready() -> bool:
        with log.open("a") as fh:
            fh.write("retrying\n")
        return False

    start = time.monotonic()
    with pytest.raises(Failed, match=r"did not answer within 1 s \(it was still writing its "
                                     r"log: a machine this loaded needs a longer "
                                     r"startup_timeout\)"):
        wait_ready(proc, ready, timeout=0.3, interval=0.05, fail=Failed, what="answer",
                   progress=lambda: log_size(log), max_timeout=1.0)
    assert 1.0 <= time.monotonic() - start < 3.0


def test_without_progress_the_timeout_is_the_whole_wait(proc: subprocess.Popen[bytes]) -> None:
    with pytest.raises(Failed, match=r"^did not answer within 0 s$"):
        wait_ready(proc, lambda: False, timeout=0.2, interval=0.05, fail=Failed, what="answer")


def test_an_exit_during_the_start_fails_at_once(tmp_path: Path) -> None:
    p = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    p.wait()
    with pytest.raises(Failed, match="exited with code 3 during start-up"):
        wait_ready(p, lambda: False, timeout=30, interval=0.05, fail=Failed, what="answer",
                   progress=lambda: log_size(tmp_path / "none.log"), max_timeout=60)


def test_the_log_size_of_a_missing_log_is_zero(tmp_path: Path) -> None:
    assert log_size(tmp_path / "missing.log") == 0
    (tmp_path / "x.log").write_text("abc")
    assert log_size(tmp_path / "x.log") == 3
