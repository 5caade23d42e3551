"""The Makefile's install stamp: `make setup` re-installs only when the hash of the dependency
spec (`pyproject.toml`, `scripts/install.sh`) changes, never because of file times.

Runs the real Makefile in a temporary copy of the repository's layout whose
`scripts/install.sh` only appends a line to a log (nothing is installed)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]
FAKE_INSTALL = "#!/usr/bin/env bash\nset -eu\nmkdir -p \"$VENV\"\necho installed >> install.log\n"


def _setup(root: Path) -> int:
    """Run `make setup` in ``root``; the number of install runs so far."""
    subprocess.run(["make", "-s", "setup"], cwd=root, check=True, capture_output=True,
                   text=True, timeout=60)
    log = root / "install.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_stamp_is_compared_by_hash_not_by_file_time(tmp_path: Path) -> None:
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "install.sh").write_text(FAKE_INSTALL)
    assert _setup(tmp_path) == 1                      # a fresh clone installs
    stamps = list((tmp_path / ".venv").glob(".vime-install-*"))
    assert len(stamps) == 1
    # a reused .venv older than the clone's files (a fresh clone, a `git checkout`)
    old = stamps[0].stat().st_mtime - 3600
    os.utime(stamps[0], (old, old))
    os.utime(tmp_path / ".venv", (old, old))
    for name in ("pyproject.toml", "scripts/install.sh"):
        os.utime(tmp_path / name, None)
    assert _setup(tmp_path) == 1                      # same hash: no re-install
    with (tmp_path / "pyproject.toml").open("a") as fh:
        fh.write("\n# changed\n")
    assert _setup(tmp_path) == 2                      # new hash: re-install
    assert len(list((tmp_path / ".venv").glob(".vime-install-*"))) == 1
