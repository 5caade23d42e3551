"""Every rule's VALID and INVALID examples, collected as parametrised cases (like Fixit)."""

from __future__ import annotations

import string

import pytest

from vime.contract.invariants import INVARIANTS
from vime_lint.static._engine import lint_source
from vime_lint.static._model import Invalid, Valid, options_from_mapping
from vime_lint.static._rule import Rule
from vime_lint.static.rules import ALL_RULES

pytestmark = pytest.mark.unit


def _rules_for(rule: type[Rule]) -> list[type[Rule]]:
    """A rule alone, or every rule for the engine's suppression rules (they need findings)."""
    return list(ALL_RULES) if rule.ENGINE_ONLY else [rule]


def _cases(kind: str) -> list[pytest.param]:
    out = []
    for rule in ALL_RULES:
        for i, case in enumerate(getattr(rule, kind)):
            out.append(pytest.param(rule, case, id=f"{rule.code()}-{rule.__name__}-{kind.lower()}{i}"))
    return out


@pytest.mark.parametrize(("rule", "case"), _cases("VALID"))
def test_valid(rule: type[Rule], case: Valid) -> None:
    result = lint_source(case.code, "case.py", options_from_mapping(case.options), rules=_rules_for(rule))
    assert result.failure is None, result.failure
    assert [f.message for f in result.findings if f.code == rule.code()] == []


@pytest.mark.parametrize(("rule", "case"), _cases("INVALID"))
def test_invalid(rule: type[Rule], case: Invalid) -> None:
    options = options_from_mapping(case.options)
    result = lint_source(case.code, "case.py", options, rules=_rules_for(rule))
    assert result.failure is None, result.failure
    mine = [f for f in result.findings if f.code == rule.code()]
    assert mine, f"{rule.__name__} reported nothing"
    positions = [(f.line, f.col) for f in mine]
    assert (case.line, case.col) in positions, positions
    hit = next(f for f in mine if (f.line, f.col) == (case.line, case.col))
    assert hit.slug == rule.slug()
    assert hit.message.strip(), "empty message"
    template = INVARIANTS[rule.code()].message_template
    unfilled = [f"{{{name}}}" for _, name, _, _ in string.Formatter().parse(template)
                if name and f"{{{name}}}" in hit.message]
    assert not unfilled, f"message fields left unfilled: {unfilled} in {hit.message!r}"
    assert hit.fix_hint and "\n" not in hit.fix_hint, hit.fix_hint  # one line: how to fix it
    if case.severity is not None:
        assert hit.severity == case.severity
    fixed = lint_source(case.code, "case.py", options, rules=_rules_for(rule), fix=True, unsafe_fixes=True)
    if case.fixed is None:
        assert fixed.fixed_source is None, fixed.fixed_source
    else:
        assert fixed.fixed_source == case.fixed
        # Fixed code keeps parsing, and fixing again changes nothing.
        again = lint_source(case.fixed, "case.py", options, rules=_rules_for(rule), fix=True,
                            unsafe_fixes=True)
        assert again.failure is None
        assert again.fixed_source is None


def test_every_rule_has_examples() -> None:
    for rule in ALL_RULES:
        if rule.ENGINE_ONLY:
            continue
        assert rule.VALID and rule.INVALID, rule.__name__


def test_rule_docstrings_have_ruff_headings() -> None:
    for rule in ALL_RULES:
        doc = rule.__doc__ or ""
        for heading in ("## What it does", "## Why is this bad?", "## Example",
                        "## Use instead", "## Fix safety"):
            assert heading in doc, (rule.__name__, heading)


def test_case_blocks_are_dedented() -> None:
    """A case written as an indented triple-quoted block reads as the plain code; a case in
    the old form (no leading newline, no common indent) is unchanged."""
    block = Invalid("""
        def f(x):
            return x
    """, line=2, col=4, fixed="""
        def f(x):
            return x + 1
    """)
    assert block.code == "def f(x):\n    return x\n"
    assert block.fixed == "def f(x):\n    return x + 1\n"
    assert Valid("""
        x = 1
        y = 2""").code == "x = 1\ny = 2"
    plain = "def f(x):\n    return x\n"
    assert Valid(plain).code == plain
    assert Invalid(plain, line=1, col=0).fixed is None
