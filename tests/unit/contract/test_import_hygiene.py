"""The light modules import no heavy package (a pre-commit hook must start in seconds)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit

LIGHT = ["vime", "vime.contract", "vime.utils.types", "vime.rollout.base_types", "vime_lint",
         "vime.utils.misc", "vime.cli"]
HEAVY = ["torch", "ray", "vllm", "transformers", "httpx"]


@pytest.mark.parametrize("module", LIGHT)
def test_light_module_imports_no_heavy_package(module: str) -> None:
    code = (f"import sys, {module}; "
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"import {module} pulled in {out.stdout.strip()}"


def test_contract_uses_standard_library_only() -> None:
    code = ("import sys; before = set(sys.modules); import vime.contract; "
            "new = {m.split('.')[0] for m in set(sys.modules) - before}; "
            "import sys as s; std = s.stdlib_module_names; "
            "print(','.join(sorted(m for m in new if m not in std and m != 'vime')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
