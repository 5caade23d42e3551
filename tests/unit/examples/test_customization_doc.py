"""docs/en/get_started/customization.md names every hook with its current expected definition
(generated from vime.contract, so the guide cannot drift from the contract)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vime.contract.hooks import GROUP_RM_SPEC, HOOKS

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "en" / "get_started" / "customization.md"


def _text() -> str:
    return re.sub(r"\s+", " ", DOC.read_text(encoding="utf-8"))


@pytest.mark.parametrize("dest", sorted(HOOKS))
def test_every_hook_argument_is_documented(dest: str) -> None:
    assert f"`{HOOKS[dest].arg}`" in _text()


@pytest.mark.parametrize("dest", sorted(d for d, s in HOOKS.items() if s.v1))
def test_v1_hooks_show_the_contract_definition(dest: str) -> None:
    assert HOOKS[dest].render() in _text(), f"customization.md: update {HOOKS[dest].arg}"


def test_group_reward_definition_and_links() -> None:
    text = _text()
    assert GROUP_RM_SPEC.render() in text
    assert "(hooks.md)" in text and "(../../rules.md)" in text


def test_linked_example_files_exist() -> None:
    for target in re.findall(r"\]\((\.\./\.\./\.\./examples/[^)]+)\)", DOC.read_text()):
        assert (DOC.parent / target).resolve().exists(), target


def test_what_a_sample_needs_matches_the_checks() -> None:
    """The guide calls a missing reward an error and a status left PENDING a warning: so do
    the runtime checks (VIM110, VIM111)."""
    from vime.contract.checks.locations import Loc
    from vime.contract.checks.sample import check_vim111
    from vime.contract.checks.settings import CheckSettings
    from vime.utils.types import Sample

    text = _text()
    assert "`response_length` and `reward` (errors: VIM105-VIM110)" in text
    assert "one left at its default PENDING is a warning (VIM111;" in text
    (pending,) = check_vim111(Sample(index=0), Loc("samples[0][0]", 0), CheckSettings(), "train")
    assert (pending.id, pending.severity) == ("VIM111", "warning")
    (bad,) = check_vim111(Sample(index=0, status="completed"), Loc("samples[0][0]", 0),
                          CheckSettings(), "train")
    assert bad.severity == "error"
