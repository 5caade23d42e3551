"""docs/rollout_dumps.md lists the dump's columns exactly as vime.report.schema defines them."""

from __future__ import annotations

from pathlib import Path

import pytest

from vime.report.dump import DUMP_VERSION
from vime.report.schema import markdown_table

pytestmark = pytest.mark.unit

DOC = Path(__file__).resolve().parents[3] / "docs" / "rollout_dumps.md"


def test_the_column_table_is_generated_from_the_schema() -> None:
    text = DOC.read_text()
    table = text.split("<!-- columns: generated -->\n", 1)[1].split("\n<!-- columns: end -->")[0]
    assert table == markdown_table()
    assert f"Dump version `{DUMP_VERSION}`" in text
