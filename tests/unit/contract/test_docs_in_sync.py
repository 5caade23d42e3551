"""Generated docs stay in step with the contract."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]


def test_hooks_page_is_generated_from_the_contract() -> None:
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "document_hooks.py"), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_hooks_page_lists_every_hook_argument() -> None:
    from vime.contract import HOOKS

    page = (REPO / "docs" / "en" / "get_started" / "hooks.md").read_text()
    for spec in HOOKS.values():
        assert f"| `{spec.arg}`" in page
