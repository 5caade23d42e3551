"""``vime-lint types``: each kind of type mistake is caught at the user's line, correct example
modules (with and without their own annotations) give nothing, and no user file changes.

All case files are checked by one mypy run (a session fixture), so the suite pays for mypy's
cold start once.
"""

from __future__ import annotations

import hashlib
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from vime_lint.static._model import Finding
from vime_lint.typecheck.check import TypesOutcome, TypesSettings, check_paths

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]

#: case file -> (source, [(line, code, text the message holds)]).
CASES: dict[str, tuple[str, list[tuple[int, str, str]]]] = {
    "prompt_as_str.py": ('''
        async def reward_func(args, sample):
            text = sample.prompt.lower()
            return float("answer" in text)
        ''', [(2, "VIM201", "`sample.prompt` is `str | list[dict[str, Any]]` (Sample.prompt); "
                           'Item "list[dict[str, Any]]"')]),
    "reward_tensor.py": ('''
        import torch

        async def reward_func(args, sample):
            return torch.tensor(1.0)
        ''', [(4, "VIM200", 'got "Tensor"')]),
    "reward_numpy.py": ('''
        import numpy as np

        async def reward_func(args, sample):
            return np.float32(len(sample.response))
        ''', [(4, "VIM200", "`reward_func` returns `float | dict[str, Any]` (RewardFunction)")]),
    "reward_none_on_a_path.py": ('''
        async def reward_func(args, sample):
            if sample.label is None:
                return None
            return float(sample.response.strip() == sample.label)
        ''', [(3, "VIM200", 'got "None"')]),
    "reward_falls_off.py": ('''
        async def reward_func(args, sample):
            if sample.response:
                return 1.0
        ''', [(1, "VIM200", "Missing return statement")]),
    "rollout_returns_list.py": ('''
        def generate_rollout(args, rollout_id, data_source, evaluation=False):
            groups = data_source.get_samples(args.rollout_batch_size)
            return groups
        ''', [(3, "VIM200", 'got "list[list[Sample]]", expected "RolloutFnTrainOutput | '
                           'RolloutFnEvalOutput"')]),
    "metrics_list.py": ('''
        from vime.rollout.base_types import RolloutFnTrainOutput

        def generate_rollout(args, rollout_id, data_source, evaluation=False):
            groups = data_source.get_samples(4)
            return RolloutFnTrainOutput(samples=groups, metrics={"rollout/me/acc": [0.5, 1.0]})
        ''', [(5, "VIM202", "`RolloutFnTrainOutput.metrics` is `dict[str, float] | None`")]),
    "metrics_str.py": ('''
        from vime.rollout.base_types import RolloutFnTrainOutput

        def generate_rollout(args, rollout_id, data_source, evaluation=False):
            groups = data_source.get_samples(4)
            metrics = {"rollout/me/tag": "run-1"}
            return RolloutFnTrainOutput(samples=groups, metrics=metrics)
        ''', [(6, "VIM202", '"dict[str, str]"')]),
    "status_string.py": ('''
        async def generate(args, sample, sampling_params):
            sample.status = "completed"
            return sample
        ''', [(2, "VIM202", "`sample.status` is `Sample.Status` (Sample.status)")]),
    "reward_read_as_float.py": ('''
        from vime.rollout.filter_hub.base_types import DynamicFilterOutput

        def dynamic_sampling_filter(args, samples):
            keep = samples[0].reward > 0.5
            return DynamicFilterOutput(keep=keep)
        ''', [(4, "VIM201", "`samples[0].reward` is `float | dict[str, Any] | None`")]),
    "helper_gets_the_sample.py": ('''
        def _score(s, word="answer"):
            return s.prompt.lower().count(word)

        async def reward_func(args, sample):
            return float(_score(sample))
        ''', [(2, "VIM201", "via reward_func(sample)")]),
    "stale_parameter_name.py": ('''
        def generate_rollout(args, rollout_id, data_buffer, evaluation=False):
            return data_buffer.get_samples(2)
        ''', [(2, "VIM200", 'got "list[list[Sample]]"')]),
    "wider_annotation.py": ('''
        from vime.utils.types import Sample

        async def reward_func(args, sample: Sample | None) -> float:
            return float(len(sample.prompt.lower()))
        ''', [(4, "VIM201", "`sample.prompt` is `str | list[dict[str, Any]]`")]),
    "annotation_conflict.py": ('''
        async def reward_func(args, sample: dict) -> str:
            return "1.0"
        ''', [(1, "VIM203", "`sample` is `Sample` (RewardFunction)"),
              (1, "VIM203", "`reward_func` returns `float | dict[str, Any]`")]),
}

#: Correct code that must give no finding: a wrapper of the default rollout that edits its
#: output (the `evaluation` overloads), an agent written against the `openai` SDK as its docs
#: show (`messages=` lists of dicts, not the SDK's TypedDicts).
CLEAN: dict[str, str] = {
    "wrapper_of_the_default_rollout.py": '''
        from vime.rollout.vllm_rollout import generate_rollout as base_rollout

        def generate_rollout(args, rollout_id, data_source, evaluation=False):
            if evaluation:
                return base_rollout(args, rollout_id, data_source, evaluation=True)
            out = base_rollout(args, rollout_id, data_source, evaluation=False)
            out.samples = out.samples[: args.rollout_batch_size]
            out.metrics = {**(out.metrics or {}), "rollout/wrapper/groups": float(len(out.samples))}
            return out
        ''',
    "wrapper_of_the_sft_rollout.py": '''
        from vime.rollout import sft_rollout

        def generate_rollout(args, rollout_id, data_source, evaluation=False):
            if evaluation:
                ev = sft_rollout.generate_rollout(args, rollout_id, data_source, evaluation=True)
                ev.data = {k: v for k, v in ev.data.items() if v["samples"]}
                return ev
            out = sft_rollout.generate_rollout(args, rollout_id, data_source)
            out.samples = list(reversed(out.samples))
            return out
        ''',
    "openai_sdk_agent.py": '''
        from openai import AsyncOpenAI

        async def run_agent(args, sample, base_url, api_key, **kwargs):
            client = AsyncOpenAI(base_url=base_url, api_key=api_key)
            question = sample.prompt if isinstance(sample.prompt, str) else ""
            messages = [{"role": "system", "content": "Answer briefly."},
                        {"role": "user", "content": question}]
            reply = await client.chat.completions.create(model="policy", messages=messages)
            answer = reply.choices[0].message.content or ""
            messages.append({"role": "assistant", "content": answer})
            messages.append({"role": "user", "content": "Are you sure?"})
            reply = await client.chat.completions.create(
                model="policy", messages=[{"role": "user", "content": question}], max_tokens=8)
            return float(str(sample.label) in answer)
        ''',
}

#: Every shipped example module (examples/broken/ holds the linter's INVALID cases).
EXAMPLES = tuple(sorted(p.relative_to(REPO / "examples").as_posix()
                        for p in (REPO / "examples").rglob("*.py") if "broken" not in p.parts))


class _StripHookAnnotations(cst.CSTTransformer):
    """Remove the annotations of module-level functions (users rarely annotate hooks)."""

    def leave_Param(self, original_node: cst.Param, updated_node: cst.Param) -> cst.Param:
        return updated_node.with_changes(annotation=None)

    def leave_FunctionDef(self, original_node: cst.FunctionDef,
                          updated_node: cst.FunctionDef) -> cst.FunctionDef:
        return updated_node.with_changes(returns=None)


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.py"))}


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory, types_cache: Path) -> tuple[
        TypesOutcome, Path, dict[str, str], dict[str, str]]:
    """Every case, every example and the unannotated examples, in one ``check_paths`` run."""
    folder = tmp_path_factory.mktemp("types_cases")
    for name, (source, _) in CASES.items():
        (folder / name).write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
    for name, source in CLEAN.items():
        (folder / f"clean_{name}").write_text(textwrap.dedent(source).lstrip("\n"),
                                              encoding="utf-8")
    for name in EXAMPLES:
        text = (REPO / "examples" / name).read_text(encoding="utf-8")
        (folder / f"example_{name.replace('/', '_')}").write_text(text, encoding="utf-8")
        if name in ("calculator_rollout.py", "informative_groups_filter.py"):
            bare = cst.parse_module(text).visit(_StripHookAnnotations()).code
            (folder / f"bare_{name}").write_text(bare, encoding="utf-8")
    before = _digest(folder)
    outcome = check_paths(TypesSettings(paths=[folder], root=folder, cache_dir=types_cache))
    return outcome, folder, before, _digest(folder)


def _findings(outcome: TypesOutcome, name: str) -> list[Finding]:
    return [f for r in outcome.results if Path(r.path).name == name for f in r.findings]


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_mistake_is_caught_at_its_line(checked: tuple[TypesOutcome, Path, dict[str, str],
                                                           dict[str, str]], name: str) -> None:
    outcome, *_ = checked
    assert not outcome.problems, outcome.problems
    found = _findings(outcome, name)
    expected = CASES[name][1]
    for line, code, text in expected:
        assert any(f.line == line and f.code == code and text in f.message for f in found), (
            f"{name}: no {code} at line {line} with {text!r}; got "
            + "; ".join(f"{f.line}:{f.code} {f.message}" for f in found))
    assert len(found) == len(expected), [f"{f.line}:{f.code} {f.message}" for f in found]


def test_conflicting_annotations_are_warnings_and_the_rest_errors(
        checked: tuple[TypesOutcome, Path, dict[str, str], dict[str, str]]) -> None:
    outcome, *_ = checked
    for r in outcome.results:
        for f in r.findings:
            assert f.severity == ("warning" if f.code == "VIM203" else "error"), f


def test_a_wider_user_annotation_gives_way_to_the_contract(
        checked: tuple[TypesOutcome, Path, dict[str, str], dict[str, str]]) -> None:
    """`sample: Sample | None` is wider than the contract's `Sample`: the body is checked with
    `Sample` (the prompt's list case is reported, a None case that cannot happen is not)."""
    outcome, *_ = checked
    (finding,) = _findings(outcome, "wider_annotation.py")
    assert '"None"' not in finding.message, finding.message


def test_every_shipped_example_is_checked() -> None:
    assert {"openai_agent.py", "calculator_rollout.py", "real_model/reward.py"} <= set(EXAMPLES)


def test_the_agent_example_needs_no_type_ignore() -> None:
    assert "type: ignore" not in (REPO / "examples" / "openai_agent.py").read_text()


@pytest.mark.parametrize("prefix", ["example_", "bare_", "clean_"])
def test_correct_example_modules_give_nothing(
        checked: tuple[TypesOutcome, Path, dict[str, str], dict[str, str]], prefix: str) -> None:
    outcome, folder, *_ = checked
    names = [p.name for p in folder.glob(f"{prefix}*.py")]
    assert names
    checked_names = {Path(r.path).name for r in outcome.results}
    for name in names:
        assert name in checked_names, f"{name}: no hook found"
        assert _findings(outcome, name) == [], [f.message for f in _findings(outcome, name)]


def test_user_files_are_never_changed(
        checked: tuple[TypesOutcome, Path, dict[str, str], dict[str, str]]) -> None:
    _, folder, before, after = checked
    assert before == after
    assert sorted(p.name for p in folder.iterdir() if p.suffix == ".py") == sorted(before)
