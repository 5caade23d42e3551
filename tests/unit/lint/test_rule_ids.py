"""`vime-lint rule ID` explains every id the tools print (static VIM0xx, load-time and runtime
VIM1xx from vime.contract.INVARIANTS); `vime-lint rules` lists both."""

from __future__ import annotations

import re

import pytest

from vime.contract.explain import checked_by, explain
from vime.contract.invariants import INVARIANTS
from vime_lint.cli import main

pytestmark = pytest.mark.unit

LIVE = [i for i, inv in INVARIANTS.items() if inv.status != "removed"]


@pytest.mark.parametrize("inv_id", LIVE)
def test_rule_explains_every_id(inv_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rule", inv_id]) == 0
    out = capsys.readouterr().out
    assert inv_id in out and "Checked by" in out


def test_runtime_id_says_where_it_is_checked_and_how_to_fix(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rule", "vim108"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("VIM108 `loss-mask` (runtime, severity error)")
    assert f"Fix: {INVARIANTS['VIM108'].fix}" in out
    assert "`vime train`: at run time, on each generate call" in out
    assert "always enforced" in out
    assert "`vime-lint check`: the same check in a dry run" in out
    checked = out.split("Checked by:")[1].split("Twins")[0]
    assert not re.search(r"\bB\d\b", checked), checked   # words, not stage names
    assert "VIM008 (static)" in out


def test_static_rule_names_its_runtime_twin(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rule", "VIM008"]) == 0
    out = capsys.readouterr().out
    assert "Checked by: `vime-lint rollout PATH`" in out
    assert "(`vime-lint rule VIM108`)" in out


def test_rules_lists_static_and_runtime_ids(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules"]) == 0
    listed = {line.split()[0] for line in capsys.readouterr().out.splitlines()
              if line.startswith("VIM")}
    assert {i for i in LIVE if INVARIANTS[i].scope != "static"} <= listed
    assert "VIM001" in listed and "VIM108" in listed and "VIM100" in listed


def test_unknown_id_is_still_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rule", "VIM999"]) == 2
    assert "unknown rule `VIM999`" in capsys.readouterr().err


def test_trainer_ids_are_not_claimed_for_the_dry_run() -> None:
    for inv in INVARIANTS.values():
        tools = " ".join(checked_by(inv))
        if inv.scope == "static" and inv.id.startswith("VIM2"):
            assert tools.startswith("`vime-lint types"), inv.id
        elif inv.scope == "static":
            assert tools.startswith("`vime-lint rollout")
        elif inv.scope == "probe":
            assert tools.startswith("`vime-lint check`") and "--no-probe" in tools, inv.id
        elif inv.scope == "template":
            assert tools.startswith("`vime-lint template MODEL_DIR`"), inv.id
        elif set(inv.boundaries) <= {"B7"}:
            assert "vime-lint check" not in tools and "vime train" in tools
        else:
            assert "vime-lint check" in tools, inv.id
    assert "Docs: docs/contract.md" in explain(INVARIANTS["VIM100"])


def test_a_types_id_names_vime_lint_types(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rule", "VIM201"]) == 0
    out = capsys.readouterr().out
    assert "  - `vime-lint types PATH`: statically, mypy on the hooks" in out
    assert "  - `vime-lint rollout" not in out


def test_every_boundary_has_words() -> None:
    from vime.contract.explain import IN_WORDS
    from vime.contract.invariants import BOUNDARIES

    assert set(IN_WORDS) == set(BOUNDARIES)
    for inv in INVARIANTS.values():
        assert not re.search(r"\bB\d\b", " ".join(checked_by(inv))), inv.id
