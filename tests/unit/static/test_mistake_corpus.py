"""The mistake corpus (tests/corpus/): `vime-lint rollout` catches every kind the index says it
catches, with the expected id; misses marked ``caught = false`` really are missed (so a fix
shows up as a failure to update the index); every near-miss lints clean; the run-time cases
fire their ids; docs/mistakes.md is generated from the index."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from tests.corpus.index import lint_rollout, load_kinds  # noqa: E402

pytestmark = pytest.mark.unit

KINDS = load_kinds()
ROLLOUT = [k for k in KINDS if k.tool == "rollout"]
NEAR = [k for k in KINDS if k.near]


def test_the_index_is_large_enough_and_cites_threads() -> None:
    assert len(KINDS) >= 60
    assert len(NEAR) >= 30
    assert sum(k.visible == "source" for k in KINDS) * 2 >= len(KINDS)
    assert len({k.name for k in KINDS}) == len(KINDS)
    assert len({k.module for k in KINDS}) == len(KINDS)
    for k in KINDS:
        assert k.threads, k.name
        for t in k.threads:
            owner_repo, _, number = t.partition("#")
            assert owner_repo.count("/") == 1 and number.isdigit(), (k.name, t)
        assert k.caught or k.miss_why, f"{k.name}: caught = false needs miss_why"


@pytest.mark.parametrize("kind", ROLLOUT, ids=[k.name for k in ROLLOUT])
def test_rollout_catches_the_kind(kind) -> None:
    found = lint_rollout(kind, near=False)
    if kind.caught:
        assert kind.expect in found, f"{kind.name}: expected {kind.expect}, got {found}"
    else:
        assert kind.expect not in found, (
            f"{kind.name} is marked caught = false but {kind.expect} is now reported: "
            "set caught = true in tests/corpus/kinds.toml")


@pytest.mark.parametrize("kind", NEAR, ids=[k.near for k in NEAR])
def test_near_miss_lints_clean(kind) -> None:
    assert lint_rollout(kind, near=True) == {}


RUNTIME = [k for k in KINDS if "def run_time_case" in k.path.read_text(encoding="utf-8")]


@pytest.mark.parametrize("kind", RUNTIME, ids=[k.name for k in RUNTIME])
def test_run_time_case_fires_its_id(kind) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from corpus import run_runtime

    found = run_runtime(kind)
    assert found is not None
    wanted = {kind.expect} if kind.tool == "runtime" else set()
    wanted |= {a.split()[1] for a in kind.also if a.startswith("runtime ")}
    assert wanted and wanted <= set(found), f"{kind.name}: expected {wanted}, got {found}"


def test_the_mistakes_page_is_generated_from_the_index() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "document_mistakes.py"),
                           "--check"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_a_kind_that_regresses_fails_the_rollout_test(tmp_path: Path) -> None:
    """The comparison the parametrised test makes is able to fail: the near-miss of a caught
    kind does not carry the kind's id."""
    kind = next(k for k in ROLLOUT if k.caught and k.near)
    assert kind.expect in lint_rollout(kind, near=False)
    assert kind.expect not in lint_rollout(kind, near=True)
