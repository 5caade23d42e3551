"""Every SARIF ``helpUri`` points at a heading that exists on docs/rules.md."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import pytest

from vime_lint.static._output import INFO_URI, render
from vime_lint.static.rules import ALL_RULES

pytestmark = pytest.mark.unit

RULES_MD = Path(__file__).resolve().parents[3] / "docs" / "rules.md"


def _slug(text: str) -> str:
    """GitHub's heading slug, written out independently of ``vime_lint``: lower case, Unicode
    punctuation and symbols dropped (``-`` and ``_`` kept), spaces turned into ``-``."""
    kept = []
    for ch in text.strip().lower():
        if ch in "-_ " or unicodedata.category(ch)[0] in "LNM":
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


def _anchors(markdown: str) -> set[str]:
    """The fragments of all headings outside code fences, with GitHub's ``-N`` de-duplication."""
    seen: dict[str, int] = {}
    anchors: set[str] = set()
    fenced = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        m = None if fenced else re.match(r"#{1,6} +(.*?) *#* *$", line)
        if not m:
            continue
        slug = _slug(m.group(1))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def test_every_sarif_help_uri_anchor_is_a_rules_md_heading() -> None:
    anchors = _anchors(RULES_MD.read_text(encoding="utf-8"))
    driver = json.loads(render([], "sarif", rules=ALL_RULES))["runs"][0]["tool"]["driver"]
    assert {r["id"] for r in driver["rules"]} == {r.code() for r in ALL_RULES}
    missing = []
    for rule in driver["rules"]:
        base, _, fragment = rule["helpUri"].partition("#")
        assert base == INFO_URI and base.endswith("docs/rules.md"), rule["helpUri"]
        if fragment not in anchors:
            missing.append(f"{rule['id']}: #{fragment}")
    assert not missing, f"SARIF help anchors with no heading on docs/rules.md: {missing}"


def test_rules_md_index_links_resolve() -> None:
    text = RULES_MD.read_text(encoding="utf-8")
    anchors = _anchors(text)
    links = re.findall(r"\]\(#([^)]+)\)", text)
    assert links and not [a for a in links if a not in anchors]
