"""The command-line entry points as a user runs them, each in a subprocess of this interpreter:
``python -m vime`` (the ``vime`` dispatcher, ``vime.cli``), every subcommand's ``--help``, the
``vime`` console script, and ``python -m vime_lint``.

The processes run in an empty folder, so they use the installed packages, not the current
directory.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from vime import __version__
from vime.cli import COMMANDS

pytestmark = pytest.mark.unit

#: The dispatcher's subcommands, with a word each one's ``--help`` must print.
SUBCOMMANDS = {
    "train": "--rollout-function-path",
    "make-tiny-model": "out_dir",
    "model": "prepare",
    "demo": "--quick",
    "report": "--control",
}


def _run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*argv], capture_output=True, text=True, cwd=cwd, timeout=300)


def _python_m(cwd: Path, module: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return _run(cwd, sys.executable, "-m", module, *argv)


def _console_script(name: str) -> str:
    """The console script installed next to this interpreter (``pip install -e .[cpu,dev]``)."""
    script = Path(sys.executable).with_name(name)
    assert script.is_file(), f"{script} is missing: install the package (make setup)"
    return str(script)


def test_python_m_vime_help_lists_every_subcommand(tmp_path: Path) -> None:
    proc = _python_m(tmp_path, "vime", "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: vime COMMAND [ARGS...]")
    listed = {line.split()[0] for line in proc.stdout.split("commands:\n", 1)[1].splitlines()
              if line.strip()}
    assert listed == set(SUBCOMMANDS) == set(COMMANDS), listed


@pytest.mark.parametrize("command", sorted(set(SUBCOMMANDS) | set(COMMANDS)))
def test_python_m_vime_subcommand_help(tmp_path: Path, command: str) -> None:
    proc = _python_m(tmp_path, "vime", command, "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: "), proc.stdout
    assert SUBCOMMANDS.get(command, "usage: ") in proc.stdout
    assert "Traceback" not in proc.stderr


def test_python_m_vime_version_and_usage_errors(tmp_path: Path) -> None:
    proc = _python_m(tmp_path, "vime", "--version")
    assert (proc.returncode, proc.stdout) == (0, f"vime {__version__}\n")
    proc = _python_m(tmp_path, "vime", "no-such-command")
    assert proc.returncode == 2
    assert proc.stderr.startswith("vime: error: unknown command 'no-such-command'")
    proc = _python_m(tmp_path, "vime")
    assert proc.returncode == 2 and proc.stdout.startswith("usage: vime COMMAND")


def test_vime_console_script_dispatches(tmp_path: Path) -> None:
    proc = _run(tmp_path, _console_script("vime"), "--help")
    assert proc.returncode == 0, proc.stderr
    assert all(f"\n  {name} " in proc.stdout for name in SUBCOMMANDS), proc.stdout
    proc = _run(tmp_path, _console_script("vime"), "make-tiny-model", "--help")
    assert proc.returncode == 0 and proc.stdout.startswith("usage: vime make-tiny-model ")


def test_python_m_vime_lint_help(tmp_path: Path) -> None:
    proc = _python_m(tmp_path, "vime_lint", "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: vime-lint ")
    for command in ("rollout", "rules", "rule", "check"):
        assert f"\n    {command} " in proc.stdout, command
    proc = _python_m(tmp_path, "vime_lint", "--version")
    assert proc.returncode == 0 and proc.stdout.startswith("vime-lint ")
