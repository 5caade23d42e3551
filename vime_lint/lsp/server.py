"""The language server: ``vime-lint server`` speaks LSP over stdio (``pygls``).

What it answers:

- diagnostics of ``vime-lint rollout`` when a document opens and after each change (at once
  after a quiet spell, debounced by :data:`DEBOUNCE_SECONDS` inside a burst: :func:`lint_delay`), with ``vime-lint types``' VIM2xx added when it is saved (mypy;
  off with ``--no-types``); ids link to their section of docs/rules.md;
- code actions: each finding's own fix, "fix all vime-lint findings" (what ``--fix`` writes),
  and ``# noqa: VIMxxx`` for the finding's line;
- hover: on a ``VIM###`` id, what ``vime-lint rule ID`` prints; on a hook's ``def`` line, the
  contract's signature for it and where vime calls and checks it.

A bad ``[tool.vime_lint]`` or a file that does not parse is shown as one diagnostic at the top
of the document (the command would exit 2), never as a crash of the server.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from vime_lint import __version__
from vime_lint.lsp.convert import SOURCE, diagnostic, fix_edits, hover_text, noqa_edit
from vime_lint.lsp.documents import DocumentLinter
from vime_lint.static._model import Finding

__all__ = ["DEBOUNCE_SECONDS", "VimeLanguageServer", "build_server", "lint_delay", "main"]

#: Seconds of quiet after a change before the document is linted again.
DEBOUNCE_SECONDS = 0.1


class VimeLanguageServer(LanguageServer):
    """A pygls server with vime-lint's per-document state."""

    def __init__(self, *, types_on_save: bool = True) -> None:
        super().__init__("vime-lint", __version__,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.linter = DocumentLinter()
        self.types_on_save = types_on_save
        #: uri -> the findings last published (rollout, then types), for code actions
        self.findings: dict[str, list[Finding]] = {}
        self.type_findings: dict[str, list[Finding]] = {}
        self.pending: dict[str, asyncio.TimerHandle] = {}
        #: uri -> when its last change arrived (monotonic seconds), for :func:`lint_delay`
        self.last_change: dict[str, float] = {}


def _path(uri: str) -> Path:
    return Path(to_fs_path(uri) or uri)


def _problem(message: str) -> types.Diagnostic:
    return types.Diagnostic(range=types.Range(start=types.Position(line=0, character=0),
                                              end=types.Position(line=0, character=1)),
                            message=message, source=SOURCE,
                            severity=types.DiagnosticSeverity.Error)


def publish(ls: VimeLanguageServer, uri: str) -> None:
    """Lint the open document ``uri`` and publish its diagnostics (rollout + last types)."""
    doc = ls.workspace.get_text_document(uri)
    text = doc.source
    try:
        result = ls.linter.lint(_path(uri), text)
    except ValueError as exc:   # ConfigError, UnknownSelector: the command's exit 2
        ls.findings[uri] = []
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=doc.version, diagnostics=[_problem(f"vime-lint: {exc}")]))
        return
    found = list(result.findings)
    ls.findings[uri] = found
    diagnostics = [diagnostic(f, text) for f in found]
    if result.failure is not None:
        f = result.failure
        line = max(f.line - 1, 0)
        diagnostics.append(types.Diagnostic(
            range=types.Range(start=types.Position(line=line, character=max(f.col - 1, 0)),
                              end=types.Position(line=line, character=max(f.col, 1))),
            message=f.message, source=SOURCE, severity=types.DiagnosticSeverity.Error))
    diagnostics += [diagnostic(f, text) for f in ls.type_findings.get(uri, [])]
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
        uri=uri, version=doc.version, diagnostics=diagnostics))


def lint_delay(last_change: float | None, now: float) -> float:
    """Seconds to wait before linting after a change at ``now`` (monotonic seconds): none
    after a quiet spell (no change in the last :data:`DEBOUNCE_SECONDS`), so a single edit's
    diagnostics wait for no timer; :data:`DEBOUNCE_SECONDS` inside a burst of edits, so the
    burst is linted once more, on its last text, when the typing pauses."""
    if last_change is None or now - last_change > DEBOUNCE_SECONDS:
        return 0.0
    return DEBOUNCE_SECONDS


def _schedule(ls: VimeLanguageServer, uri: str) -> None:
    old = ls.pending.pop(uri, None)
    if old is not None:
        old.cancel()
    now = time.monotonic()
    delay = lint_delay(ls.last_change.get(uri), now)
    ls.last_change[uri] = now
    loop = asyncio.get_running_loop()
    ls.pending[uri] = loop.call_later(delay, _run_pending, ls, uri)


def _run_pending(ls: VimeLanguageServer, uri: str) -> None:
    ls.pending.pop(uri, None)
    if uri in ls.workspace.text_documents:
        publish(ls, uri)


def _run_types(ls: VimeLanguageServer, uri: str) -> None:
    try:
        ls.type_findings[uri] = ls.linter.types(_path(uri))
    except (RuntimeError, ValueError) as exc:
        ls.type_findings[uri] = []
        ls.window_log_message(types.LogMessageParams(type=types.MessageType.Warning,
                                                     message=f"vime-lint types: {exc}"))
    publish(ls, uri)


def _actions(ls: VimeLanguageServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    text = ls.workspace.get_text_document(uri).source
    start, end = params.range.start.line + 1, params.range.end.line + 1
    out: list[types.CodeAction] = []
    here = [f for f in [*ls.findings.get(uri, []), *ls.type_findings.get(uri, [])]
            if f.line <= end and f.end_line >= start]
    for f in here:
        edits = fix_edits(f, text)
        if edits:
            out.append(types.CodeAction(
                title=f"{f.code}: {f.fix_title or 'apply the fix'}"
                      + ("" if f.fix_safe else " (unsafe)"),
                kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic(f, text)],
                is_preferred=f.fix_safe,
                edit=types.WorkspaceEdit(changes={uri: edits})))
        out.append(types.CodeAction(
            title=f"{f.code}: silence it on this line (# noqa: {f.code})",
            kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic(f, text)],
            edit=types.WorkspaceEdit(changes={uri: [noqa_edit(text, f)]})))
    if any(f.fixable and f.fix_safe for f in ls.findings.get(uri, [])):
        fixed = ls.linter.fixed(_path(uri), text)
        if fixed is not None and fixed != text:
            lines = text.splitlines(keepends=True)
            end_pos = types.Position(line=len(lines), character=0)
            out.append(types.CodeAction(
                title="vime-lint: fix all safely fixable findings (vime-lint rollout --fix)",
                kind=types.CodeActionKind.SourceFixAll,
                edit=types.WorkspaceEdit(changes={uri: [types.TextEdit(
                    range=types.Range(start=types.Position(line=0, character=0), end=end_pos),
                    new_text=fixed)]})))
    return out


def build_server(*, types_on_save: bool = True) -> VimeLanguageServer:
    """The server with its features registered (not started)."""
    ls = VimeLanguageServer(types_on_save=types_on_save)

    @ls.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: VimeLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        publish(ls, params.text_document.uri)

    @ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: VimeLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        _schedule(ls, params.text_document.uri)

    @ls.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: VimeLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        if ls.types_on_save:
            _run_types(ls, params.text_document.uri)
        else:
            publish(ls, params.text_document.uri)

    @ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: VimeLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.findings.pop(uri, None)
        ls.type_findings.pop(uri, None)
        ls.linter.forget(_path(uri))
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri,
                                                                            diagnostics=[]))

    @ls.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll]))
    def code_action(ls: VimeLanguageServer, params: types.CodeActionParams
                    ) -> list[types.CodeAction]:
        return _actions(ls, params)

    @ls.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: VimeLanguageServer, params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        text = ls.workspace.get_text_document(uri).source
        try:
            hooks = ls.linter.hooks(_path(uri), text)
        except ValueError:
            hooks = {}
        md = hover_text(text, params.position.line, params.position.character, hooks)
        if md is None:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                                        value=md))

    return ls


def main(argv: list[str] | None = None) -> int:
    """``vime-lint server [--no-types]``: serve LSP on stdin/stdout until the client exits."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="vime-lint server",
        description="vime-lint as a language server over stdio (diagnostics, fixes, hover).")
    parser.add_argument("--no-types", action="store_true",
                        help="do not run vime-lint types (mypy) when a document is saved")
    ns = parser.parse_args(argv)
    build_server(types_on_save=not ns.no_types).start_io()
    return 0
