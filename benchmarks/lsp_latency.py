"""``vime-lint server``: time from a change to its diagnostics on a warm server
(target: <= 150 ms for a 300-line hook module).

Starts the server over stdio with pygls's client in a temporary project, opens a module made of
the repository's example hooks (``--lines`` lines, default about 300), waits for the first
diagnostics (the cold lint), then sends ``--changes`` edits one at a time, ``--pause`` seconds
after the previous diagnostics, and takes the wall time from each ``didChange`` to its
``publishDiagnostics``. An edit after a pause longer than the server's debounce
(``vime_lint.lsp.server.DEBOUNCE_SECONDS``) is linted at once; edits closer together are a
burst, debounced (``--pause 0`` measures that). Prints the median and the worst, and the lint
alone (``DocumentLinter.lint`` in this process) for comparison.

Usage::

    python benchmarks/lsp_latency.py [--lines 300] [--changes 10] [--pause 0.3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ("calculator_rollout.py", "answer_prefix_generate.py", "format_reward.py",
            "informative_groups_filter.py")


def module_text(lines: int) -> str:
    """Example hook modules joined (``from __future__`` lines dropped) and cut at a top-level
    statement near ``lines`` lines."""
    body: list[str] = []
    for name in EXAMPLES:
        body += [line for line in (ROOT / "examples" / name).read_text().splitlines()
                 if not line.startswith("from __future__")]
    cut = len(body)
    for i in range(min(lines, len(body)), len(body)):
        if body[i].startswith(("def ", "async def ", "class ")):
            cut = i
            break
    return "\n".join(body[:cut]) + "\n"


async def measure(text: str, changes: int, pause: float) -> tuple[float, list[float]]:
    client = LanguageClient("vime-bench", "1")
    got: list[float] = []
    event = asyncio.Event()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        got.append(time.perf_counter())
        event.set()

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pyproject.toml").write_text("[project]\nname = 'bench'\n")
        uri = (root / "hooks.py").as_uri()
        await client.start_io(sys.executable, "-m", "vime_lint", "server", "--no-types",
                              cwd=tmp)
        await client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=root.as_uri(), process_id=None))
        client.initialized(types.InitializedParams())
        start = time.perf_counter()
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1,
                                                 text=text)))
        await asyncio.wait_for(event.wait(), 120)
        cold = got[-1] - start
        latencies = []
        for i in range(changes):
            await asyncio.sleep(pause)
            event.clear()
            sent = time.perf_counter()
            client.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=i + 2),
                content_changes=[types.TextDocumentContentChangeWholeDocument(
                    text=text + f"# edit {i}\n")]))
            await asyncio.wait_for(event.wait(), 120)
            latencies.append(got[-1] - sent)
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()
    return cold, latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=300)
    parser.add_argument("--changes", type=int, default=10)
    parser.add_argument("--pause", type=float, default=0.3,
                        help="seconds between one edit's diagnostics and the next edit")
    ns = parser.parse_args()
    text = module_text(ns.lines)
    from vime_lint.lsp.documents import DocumentLinter
    from vime_lint.lsp.server import DEBOUNCE_SECONDS

    linter, path = DocumentLinter(), ROOT / "hooks.py"
    linter.lint(path, text)
    alone = []
    for i in range(5):
        t = time.perf_counter()
        linter.lint(path, text + f"# {i}\n")
        alone.append(time.perf_counter() - t)
    cold, lat = asyncio.run(measure(text, ns.changes, ns.pause))
    print(f"{text.count(chr(10))}-line module: first diagnostics {cold * 1000:.0f} ms (cold); "
          f"change -> diagnostics median {statistics.median(lat) * 1000:.0f} ms, worst "
          f"{max(lat) * 1000:.0f} ms (edits {ns.pause:.2f} s apart; a burst under "
          f"{DEBOUNCE_SECONDS * 1000:.0f} ms is debounced); "
          f"one lint alone median {statistics.median(alone) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
