"""A corpus of realistic rollout modules (tests/unit/static/corpus/): each lints clean, and each
copy with one planted mistake is flagged with the right code on the right line."""

from __future__ import annotations

from pathlib import Path

import pytest

from vime_lint.static._engine import lint_source
from vime_lint.static._model import LintOptions
from vime_lint.static.rules import ALL_RULES

pytestmark = pytest.mark.unit

CORPUS = Path(__file__).parent / "corpus"
MODULES = sorted(p for p in CORPUS.glob("*.py") if p.name != "__init__.py")

#: (module, [(old, new), ...], expected code, a text on the expected line of the planted copy)
PLANTED = [
    ("multi_turn_tools", [("sample.reward = await async_rm(", "sample.reward = async_rm(")],
     "VIM021", "sample.reward = async_rm("),
    ("multi_turn_tools", [("    sample.reward = await async_rm(args, sample)\n", "")],
     "VIM036", "return RolloutFnTrainOutput(samples=groups)"),
    ("multi_turn_tools", [('            "truncated": [s.status == Sample.Status.TRUNCATED for s '
                           'in flat],\n', "")],
     "VIM020", 'return RolloutFnEvalOutput(data={"search": {'),
    ("multi_turn_tools", [("    await asyncio.gather(*[episode(args, s, params) for group in "
                           "groups for s in group])",
                           "    [episode(args, s, params) for group in groups for s in group]")],
     "VIM021", "[episode(args, s, params)"),
    ("search_agent", [("    async def __call__(", "    def __call__(")],
     "VIM004", "generate = SearchAgent()"),
    ("search_agent", [("sample = await self.hop(", "sample = self.hop(")],
     "VIM021", "sample = self.hop("),
    # the generate hook's helper posts by hand: the sample never gets tokens or a length
    ("search_agent", [("sample = await engine.generate(args, sample, params)",
                       "sample.response += (await engine.post(URL, params))['text']"),
                      ("        return sample\n\n\ngenerate",
                       "        return sample  # the hook's return\n\n\ngenerate")],
     "VIM036", "# the hook's return"),
    ("async_rollout", [("tasks = [asyncio.create_task(_worker(args, todo, done, params)) for _ "
                        "in range(workers)]",
                        "tasks = [_worker(args, todo, done, params) for _ in range(workers)]"),
                       ("    await asyncio.gather(*tasks)\n", "    await asyncio.sleep(0)\n")],
     "VIM021", "tasks = [_worker("),
    ("async_rollout", [("    if not evaluation:\n", "    if evaluation:\n")],
     "VIM002", "return RolloutFnTrainOutput(samples=done"),
    ("async_rollout", [('return RolloutFnTrainOutput(samples=done, metrics={"rollout/async/groups"'
                        ': len(done)})', 'return {"samples": done}')],
     "VIM003", 'return {"samples": done}'),
    ("distillation", [('                 "truncated": [s.status == Sample.Status.TRUNCATED for s '
                       'in flat],\n', "")],
     "VIM020", 'entry = {"rewards"'),
    ("distillation", [('return EvalOutput(data={"distil": entry})',
                       "return TrainOutput(samples=groups)")],
     "VIM002", "        return TrainOutput(samples=groups)"),
    ("distillation", [("rollout_id: int, data_source: Any,", "rollout_id: int, data_buffer: Any,"),
                      ("groups = data_source.get_samples(", "groups = data_buffer.get_samples(")],
     "VIM001", "def generate_rollout("),
    ("distillation", [("                sample.reward = sum(scores) / max(len(scores), 1)\n", "")],
     "VIM036", "return TrainOutput(samples=groups)"),
    ("rollout_buffer", [("        return DynamicFilterOutput(keep=True)\n",
                         "        return True\n")],
     "VIM037", "        return True"),
    ("rollout_buffer", [("self.data_buffer = data_buffer if", "self.items = data_buffer if")],
     "VIM033", "self.data_buffer.appendleft(group)"),
    ("rollout_buffer", [("def buffer_filter(", "async def buffer_filter(")],
     "VIM004", "async def buffer_filter("),
]


def _lint(text: str) -> list[tuple[str, int, str]]:
    result = lint_source(text, "corpus.py", LintOptions(), rules=ALL_RULES)
    assert result.failure is None, result.failure
    return [(f.code, f.line, f.severity) for f in result.findings]


@pytest.mark.parametrize("path", MODULES, ids=[p.stem for p in MODULES])
def test_corpus_module_lints_clean(path: Path) -> None:
    assert _lint(path.read_text()) == []


@pytest.mark.parametrize(("module", "edits", "code", "marker"), PLANTED,
                         ids=[f"{m}-{c}-{i}" for i, (m, _, c, _) in enumerate(PLANTED)])
def test_planted_mistake_is_flagged_on_its_line(module: str, edits: list[tuple[str, str]],
                                                 code: str, marker: str) -> None:
    text = (CORPUS / f"{module}.py").read_text()
    for old, new in edits:
        assert text.count(old) == 1, f"{old!r} must occur once in {module}.py"
        text = text.replace(old, new)
    line = next(i for i, row in enumerate(text.splitlines(), start=1) if marker in row)
    found = _lint(text)
    assert (code, line) in [(c, ln) for c, ln, _ in found], found
