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
