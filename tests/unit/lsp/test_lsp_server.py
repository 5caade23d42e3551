"""``vime-lint server`` driven by a real LSP client over stdio (pygls's ``LanguageClient``):
initialise, open a module with a mistake, receive the diagnostic at its range, apply the offered
fix, receive an empty list, hover, silence with ``# noqa``, types on save, shut down cleanly."""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.lsp.client import LanguageClient

from vime_lint.lsp.convert import noqa_edit, utf16_col

pytestmark = pytest.mark.unit

BROKEN = textwrap.dedent('''\
    from vime.utils.types import Sample


    def generate_rollout(args, rollout_id, data_source, evaluation=False):
        groups = data_source.get_samples(args.rollout_batch_size)
        for group in groups:
            for sample in group:
                sample.status = "completed"
        return groups
    ''')


def _apply(text: str, edits: list[types.TextEdit]) -> str:
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def at(p: types.Position) -> int:
        return offsets[min(p.line, len(lines))] + p.character

    for e in sorted(edits, key=lambda e: at(e.range.start), reverse=True):
        text = text[:at(e.range.start)] + e.new_text + text[at(e.range.end):]
    return text


class Session:
    """A started server and the diagnostics it published, per uri, in order."""

    def __init__(self, client: LanguageClient) -> None:
        self.client = client
        self.published: dict[str, list[list[types.Diagnostic]]] = {}
        self.event = asyncio.Event()

    async def next_diagnostics(self, uri: str, after: int) -> list[types.Diagnostic]:
        while len(self.published.get(uri, [])) <= after:
            self.event.clear()
            await asyncio.wait_for(self.event.wait(), timeout=120)
        return self.published[uri][after]


async def _start(root: Path, *args: str) -> Session:
    client = LanguageClient("vime-test", "1")
    session = Session(client)

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        session.published.setdefault(params.uri, []).append(list(params.diagnostics))
        session.event.set()

    await client.start_io(sys.executable, "-m", "vime_lint", "server", *args, cwd=str(root))
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=root.as_uri(),
        process_id=None))
    client.initialized(types.InitializedParams())
    return session


async def _stop(session: Session) -> int | None:
    await session.client.shutdown_async(None)
    session.client.exit(None)
    await session.client.stop()
    server = session.client._server
    return None if server is None else server.returncode


def _open(session: Session, path: Path, text: str) -> str:
    uri = path.as_uri()
    session.client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1,
                                             text=text)))
    return uri


def _change(session: Session, uri: str, text: str, version: int) -> None:
    session.client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    return tmp_path


def test_diagnostic_fix_and_clean_shutdown(project: Path) -> None:
    async def run() -> None:
        session = await _start(project, "--no-types")
        path = project / "my_rollout.py"
        path.write_text(BROKEN)
        uri = _open(session, path, BROKEN)
        first = await session.next_diagnostics(uri, 0)
        (status,) = [d for d in first if d.code == "VIM007"]
        assert (status.range.start.line, status.range.start.character) == (7, 12)
        assert status.severity == types.DiagnosticSeverity.Error and status.source == "vime-lint"
        assert status.code_description is not None
        assert status.code_description.href.endswith("#vim007-stale-status-api")
        assert "fix:" in status.message

        actions = await session.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=status.range,
            context=types.CodeActionContext(diagnostics=[status])))
        assert actions is not None
        titles = [a.title for a in actions if isinstance(a, types.CodeAction)]
        assert any(t.startswith("VIM007:") and "noqa" not in t for t in titles), titles
        assert "VIM007: silence it on this line (# noqa: VIM007)" in titles
        assert any(t.startswith("vime-lint: fix all") for t in titles)
        fix = next(a for a in actions if isinstance(a, types.CodeAction)
                   and a.title.startswith("VIM007:") and "noqa" not in a.title)
        assert fix.edit is not None and fix.edit.changes is not None
        fixed = _apply(BROKEN, fix.edit.changes[uri])
        assert "Sample.Status.COMPLETED" in fixed
        _change(session, uri, fixed, 2)
        second = await session.next_diagnostics(uri, 1)
        assert [d for d in second if d.code == "VIM007"] == []

        hover = await session.client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=3, character=6)))
        assert hover is not None and isinstance(hover.contents, types.MarkupContent)
        assert "def generate_rollout(args, rollout_id, data_source, evaluation=False)" in \
            hover.contents.value
        assert "--rollout-function-path" in hover.contents.value
        assert await _stop(session) == 0

    asyncio.run(run())


def test_types_on_save_and_hover_on_an_id(project: Path) -> None:
    text = textwrap.dedent('''\
        async def reward_func(args, sample):  # see VIM200
            if sample.label is None:
                return None
            return float(sample.response.strip() == sample.label)
        ''')

    async def run() -> None:
        session = await _start(project)
        path = project / "rewards.py"
        path.write_text(text)
        uri = _open(session, path, text)
        # vime-lint rollout's own rule sees the None reward (VIM011) ...
        assert [d.code for d in await session.next_diagnostics(uri, 0)] == ["VIM011"]
        session.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        saved = await session.next_diagnostics(uri, 1)
        # ... and vime-lint types adds mypy's view of it when the file is saved
        assert sorted((d.code, d.range.start.line) for d in saved) == [("VIM011", 2),
                                                                         ("VIM200", 2)]
        hover = await session.client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=0, character=text.index("VIM200") + 2)))
        assert hover is not None and isinstance(hover.contents, types.MarkupContent)
        assert "VIM200" in hover.contents.value and "Checked by:" in hover.contents.value
        assert await _stop(session) == 0

    asyncio.run(run())


def test_a_bad_project_configuration_is_one_diagnostic(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.vime_lint]\nselect = ['NOPE']\n")

    async def run() -> None:
        session = await _start(project, "--no-types")
        uri = _open(session, project / "m.py", "x = 1\n")
        (only,) = await session.next_diagnostics(uri, 0)
        assert only.message.startswith("vime-lint: ") and "NOPE" in only.message
        assert await _stop(session) == 0

    asyncio.run(run())


@pytest.mark.parametrize(("line", "expected"), [
    ("    sample.status = 'x'", "    sample.status = 'x'  # noqa: VIM007"),
    ("    y = 1  # noqa: VIM001", "    y = 1  # noqa: VIM001, VIM007"),
    ("    y = 1  # noqa: VIM007", "    y = 1  # noqa: VIM007"),
])
def test_noqa_edit(line: str, expected: str) -> None:
    from vime_lint.static._model import Finding

    f = Finding("VIM007", "status-string", "error", "m", "p.py", 1, 4, 1, 10)
    assert noqa_edit(line + "\n", f).new_text == expected


def test_columns_are_utf16_code_units() -> None:
    assert utf16_col("a😀b", 2) == 3 and utf16_col("aéb", 2) == 2


def test_a_warm_linter_reuses_the_result_of_an_unchanged_text(project: Path) -> None:
    from vime_lint.lsp.documents import DocumentLinter

    linter, path = DocumentLinter(), project / "hooks.py"
    first = linter.lint(path, BROKEN)
    assert "VIM007" in [f.code for f in first.findings]
    assert linter.lint(path, BROKEN) is first            # unchanged text: not linted again
    edited = BROKEN.replace('"completed"', "Sample.Status.COMPLETED")
    again = linter.lint(path, edited)
    assert again is not first                            # a change is linted
    assert "VIM007" not in [f.code for f in again.findings]
    assert linter.fixed(path, BROKEN) == linter.fixed(path, BROKEN) is not None
    assert linter.hooks(path, BROKEN) == linter.hooks(path, BROKEN)
    assert "generate_rollout" in linter.hooks(path, BROKEN)
    # a new [tool.vime_lint] (its modification time) is read again, and the text relinted
    pyproject = project / "pyproject.toml"
    pyproject.write_text("[project]\nname = 'p'\n\n[tool.vime_lint]\nignore = ['VIM007']\n")
    stamp = pyproject.stat().st_mtime + 5
    os.utime(pyproject, (stamp, stamp))
    assert "VIM007" not in [f.code for f in linter.lint(path, BROKEN).findings]
    linter.forget(path)
    assert not [k for k in linter.last if k[0] == path]


def test_lint_delay_is_none_after_a_quiet_spell_and_the_debounce_in_a_burst() -> None:
    from vime_lint.lsp.server import DEBOUNCE_SECONDS, lint_delay

    assert lint_delay(None, 10.0) == 0.0                           # the first change
    assert lint_delay(10.0, 10.0 + DEBOUNCE_SECONDS + 0.01) == 0.0  # after a pause
    assert lint_delay(10.0, 10.0 + DEBOUNCE_SECONDS / 2) == DEBOUNCE_SECONDS  # inside a burst


def test_a_single_change_is_linted_at_once_and_a_burst_on_its_last_text(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's scheduling on a real event loop: one edit after a pause is linted without
    waiting for the debounce; a burst of edits is linted on its first and its last text."""
    import time
    from types import SimpleNamespace

    from vime_lint.lsp import server as srv

    ls = srv.VimeLanguageServer(types_on_save=False)
    texts = {"uri": "v0"}
    linted: list[tuple[str, float]] = []
    monkeypatch.setattr(srv, "publish", lambda ls_, uri: linted.append((texts[uri],
                                                                         time.monotonic())))
    monkeypatch.setattr(ls, "_workspace", SimpleNamespace(text_documents=texts), raising=False)
    monkeypatch.setattr(type(ls), "workspace", property(lambda self: self._workspace))
    gap = srv.DEBOUNCE_SECONDS

    async def edits() -> None:
        start = time.monotonic()
        srv._schedule(ls, "uri")                  # a single edit, nothing before it
        await asyncio.sleep(gap / 4)
        assert [t for t, _ in linted] == ["v0"]   # linted before the debounce elapsed
        assert linted[0][1] - start < gap
        await asyncio.sleep(gap * 2)              # a quiet spell, then a burst of 5 edits
        for i in range(1, 6):
            texts["uri"] = f"v{i}"
            srv._schedule(ls, "uri")
            await asyncio.sleep(gap / 10)
        await asyncio.sleep(gap * 3)

    asyncio.run(edits())
    assert [t for t, _ in linted] == ["v0", "v1", "v5"], linted
