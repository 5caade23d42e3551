"""`--dump-rollouts` files (vime.report.dump) and the `vime report` page (vime.report.html):
every fate written and read back, a step rewritten not duplicated, the page's numbers equal to
the dumped data."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest
from report_fixtures import FINDING, make_run

from vime.report.dump import dumped_steps, read_findings, read_step, step_path, write_step
from vime.report.html import SECTIONS, main, write_report
from vime.report.schema import COLUMNS

pytestmark = pytest.mark.unit

# index -> fate in the fixture's step (tests/report_fixtures.py)
EXPECTED_FATES = {0: "trained", 1: "trained", 2: "masked", 3: "removed", 5: "failed",
                  6: "stale", 7: "stale", 8: "filtered", 9: "filtered"}


def test_every_fate_is_written_and_read_back(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", steps=2)
    assert sorted(dumped_steps(run)) == [0, 1]
    table = read_step(step_path(run, 1))
    rows = table.to_pylist()
    assert table.column_names == [c.name for c in COLUMNS]
    assert {r["index"]: r["fate"] for r in rows} == EXPECTED_FATES
    failed = next(r for r in rows if r["fate"] == "failed")
    assert failed["fail_hook"] == "reward"
    assert "no answer in the response" in (failed["fate_reason"] or "")
    assert next(r for r in rows if r["index"] == 8)["fate_reason"] == "zero_std_1.0"
    assert {r["index"]: r["advantage"] for r in rows if r["advantage"] is not None} == \
        {0: 1.0, 1: -1.0}
    assert [f["id"] for f in read_findings(table)] == [FINDING.id]
    assert next(r for r in rows if r["index"] == 2)["finding_ids"] == [FINDING.id]


def test_a_rewritten_step_replaces_its_file(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", steps=1)
    rows = read_step(step_path(run, 0)).to_pylist()
    write_step(run, 0, rows[:2], [])          # a resumed run writes step 0 again
    again = read_step(step_path(run, 0)).to_pylist()
    assert [r["index"] for r in again] == [0, 1]
    assert read_findings(read_step(step_path(run, 0))) == []
    assert sorted(p.name for p in (run / "rollouts").iterdir()) == ["step_0.parquet"]


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.sample_rows: list[dict[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "section":
            self.sections.append(a["id"])
        if tag == "tr" and a.get("class") == "sample":
            self.sample_rows.append(a)


def test_the_page_has_every_section_and_the_dumped_samples(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", steps=3)
    page = _Page()
    page.feed(write_report(run).read_text())
    assert page.sections == [i for i, _ in SECTIONS]
    assert {int(r["data-index"]): r["data-fate"] for r in page.sample_rows} == EXPECTED_FATES
    text = (run / "report.html").read_text()
    for loads in ('src="http', "src='http", 'href="http', "href='http", "url(http", "<link"):
        assert loads not in text   # self-contained: nothing fetched when the page opens
    assert FINDING.id in text


def test_vime_report_on_a_folder_without_a_run_is_one_line(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("vime report: "), err
