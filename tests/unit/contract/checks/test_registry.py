"""Every runtime invariant of vime.contract has a check here and its own named tests."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vime.contract.checks.batch import BATCH_CHECKS
from vime.contract.checks.sample import SAMPLE_CHECKS
from vime.contract.invariants import INVARIANTS

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[4]
RUNTIME_IDS = [i for i, inv in INVARIANTS.items() if inv.scope == "runtime"]


def test_registries_hold_runtime_ids_in_order() -> None:
    for registry in (SAMPLE_CHECKS, BATCH_CHECKS):
        assert list(registry) == sorted(registry)
        assert all(INVARIANTS[i].scope == "runtime" for i in registry)


@pytest.mark.parametrize("inv_id", RUNTIME_IDS)
def test_every_runtime_invariant_is_checked(inv_id: str) -> None:
    sources = "\n".join(p.read_text() for p in (ROOT / "vime" / "contract" / "checks").glob("*.py"))
    sources += (ROOT / "vime" / "rollout" / "base_types.py").read_text()
    assert f'INVARIANTS["{inv_id}"]' in sources


@pytest.mark.parametrize("inv_id", RUNTIME_IDS)
def test_every_runtime_invariant_has_named_tests(inv_id: str) -> None:
    names = set(re.findall(r"def (test_\w+)", "\n".join(
        p.read_text() for p in Path(__file__).parent.glob("test_*.py"))))
    prefix = f"test_{inv_id.lower()}_"
    assert any(n.startswith(prefix) for n in names), f"no test named {prefix}*"
