"""The report page in a real browser: Debian's headless Chromium runs the page's own script, the
sample search (``#q=...`` fills the search box, as a link to a sample does) shows exactly the
matching rows, and a full-page screenshot renders."""

from __future__ import annotations

import shutil
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from report_fixtures import make_run

from vime.report.html import write_report

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium")
# The flags a closed network needs (no background connections, no first-run, no sandbox as root).
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (scripts/install.sh installs Debian's chromium)")
    return write_report(make_run(tmp_path_factory.mktemp("browser") / "run"))


def _browser(page: Path, *args: str) -> str:
    profile = page.parent / "chromium-profile"
    proc = subprocess.run([str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


class _Rows(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.shown: list[dict[str, str | None]] = []
        self.hidden = 0
        self.count = ""
        self._in_count = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "tr" and a.get("class") == "sample":
            if "none" in (a.get("style") or ""):
                self.hidden += 1
            else:
                self.shown.append(a)
        self._in_count = a.get("id") == "match-count"

    def handle_data(self, data: str) -> None:
        if self._in_count:
            self.count += data


@pytest.mark.parametrize(("query", "expect"), [
    ("", {"count": "9 of 9 samples", "n": 9}),
    ("group:1", {"count": "3 of 9 samples", "group": "1"}),
    ("index:5", {"count": "1 of 9 samples", "index": "5"}),
    ("failed", {"count": "1 of 9 samples", "fate": "failed"}),
    ("stale", {"count": "2 of 9 samples", "fate": "stale"}),
])
def test_sample_search_in_chromium(page: Path, query: str, expect: dict[str, object]) -> None:
    rows = _Rows()
    rows.feed(_browser(page, "--dump-dom", f"{page.as_uri()}#q={query}"))
    assert rows.count.strip() == expect["count"]
    assert len(rows.shown) + rows.hidden == 9
    for key in ("group", "index", "fate"):
        if key in expect:
            assert {r[f"data-{key}"] for r in rows.shown} == {expect[key]}


def test_full_page_screenshot(page: Path) -> None:
    shot = page.parent / "report.png"
    _browser(page, f"--screenshot={shot}", "--window-size=1280,2400",
             "--hide-scrollbars", page.as_uri())
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1280, 2400) and len(data) > 20_000  # not a blank page
