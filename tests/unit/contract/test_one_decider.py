"""Each run-time id is decided in one module: a test that fails when a second module starts
building findings of an id (``INVARIANTS["VIMnnn"]``), except the documented places that build
one from the id's single predicate."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

from vime.contract.invariants import INVARIANTS

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
#: Modules that only read an id's record (its text, its docs), never decide it.
READERS = {"vime/contract/invariants.py", "vime/contract/explain.py"}
#: Ids whose findings more than one module builds, each from the same predicate, and why.
SHARED = {
    # the one rule: vime.contract.reward.reward_read_problem (what can be read) inside
    # vime.contract.checks.values.reward_problem (is it a finite real)
    "VIM110": {
        "vime/contract/checks/sample.py",        # a sample's reward in rollout output (B5)
        "vime/contract/checks/hook_results.py",  # what a reward function returned (B3)
        "vime/contract/checks/enforced.py",      # conversion, always enforced
        "vime/utils/types.py",                   # Sample.get_reward_value raises it
    },
}


def _builders() -> dict[str, set[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    for package in ("vime", "vime_lint"):
        for path in (ROOT / package).rglob("*.py"):
            rel = path.relative_to(ROOT).as_posix()
            if rel in READERS:
                continue
            for inv_id in re.findall(r'INVARIANTS\["(VIM\d{3})"\]', path.read_text()):
                if INVARIANTS[inv_id].scope != "static":
                    found[inv_id].add(rel)
    return found


def test_every_run_time_id_is_built_in_one_module_or_listed() -> None:
    builders = _builders()
    shared = {i: sorted(m) for i, m in builders.items() if len(m) > 1}
    assert shared == {i: sorted(m) for i, m in SHARED.items()}, (
        "an id is decided in a second module: call its one check function instead (or list "
        "the module in SHARED with the predicate it reuses)")


def test_the_scan_sees_the_deciders() -> None:
    """The scan reads what it should: VIM101's decider and VIM150's are where they live."""
    builders = _builders()
    assert builders["VIM101"] == {"vime/rollout/base_types.py"}
    assert builders["VIM150"] == {"vime/contract/checks/hook_results.py"}
    assert builders["VIM102"] == {"vime/contract/checks/shape.py"}
    assert "VIM109" in builders and builders["VIM109"] == {"vime/contract/checks/sample.py"}
