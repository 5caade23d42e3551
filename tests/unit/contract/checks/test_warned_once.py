"""A runtime finding in `--contract-check warn` reaches a vime process's output once: the log
line, not also Python's warning display (the duplicate `vime train` logs showed)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.unit

_SCRIPT = textwrap.dedent("""
    import sys
    from vime.contract.checks.policy import enforce
    from vime.contract.checks.settings import CheckContext
    from vime.contract.errors import Violation, show_logged_warnings_once
    if sys.argv[1] == "vime":
        show_logged_warnings_once()     # what vime train and its Ray actors do
    found = [Violation("VIM117", "warning", "samples[*].reward", "are all equal to 0.0")]
    enforce(found, "warn", CheckContext("rollout_function_path", "my.rollout", 3))
""")


def _stderr(mode: str) -> str:
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, mode], capture_output=True,
                          text=True, check=True, timeout=60)
    return proc.stderr


def test_a_vime_process_prints_a_finding_once() -> None:
    err = _stderr("vime")
    assert err.count("VIM117 warning: samples[*].reward are all equal to 0.0") == 1, err
    assert "LoggedContractWarning" not in err


def test_without_the_filter_python_would_print_it_twice() -> None:
    # the failing case: the log line plus the warning display
    err = _stderr("plain")
    assert err.count("VIM117 warning: samples[*].reward are all equal to 0.0") == 2, err


def test_recording_code_still_gets_the_warning() -> None:
    import warnings

    from vime.contract.checks.policy import WarnOnce, enforce
    from vime.contract.checks.settings import CheckContext
    from vime.contract.errors import ContractWarning, Violation, show_logged_warnings_once

    with warnings.catch_warnings():
        show_logged_warnings_once()
        with pytest.warns(ContractWarning, match="VIM117"):
            enforce([Violation("VIM117", "warning", "x", "y")], "warn",
                    CheckContext("rollout_function_path", "p", 1), registry=WarnOnce())
