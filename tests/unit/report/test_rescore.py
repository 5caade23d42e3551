"""`vime-lint rescore`: a dumped run scored again with another reward, no engine."""

from __future__ import annotations

import io
import json
import textwrap
from argparse import Namespace
from pathlib import Path

import pytest
from report_fixtures import make_run

from vime_lint.rescore import _prompt, main, rescore_rows, summarise

pytestmark = pytest.mark.unit


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(argv, out, err), out.getvalue(), err.getvalue()


@pytest.fixture
def hooks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A module of new rewards on sys.path; returns its name."""
    (tmp_path / "rescore_hooks.py").write_text(textwrap.dedent('''
        CALLS = []

        async def by_index(args, sample, **kwargs):
            assert sample.label == "5" and sample.prompt.startswith("What is")
            return float(sample.index % 2)

        async def raises_on_three(args, sample, **kwargs):
            if sample.index == 3:
                raise ValueError("cannot parse")
            return 1.0

        async def as_dict(args, sample, **kwargs):
            return {"score": 0.5}

        async def group(args, samples, **kwargs):
            CALLS.append(sorted(s.index for s in samples))
            return [float(i) for i, _ in enumerate(samples)]
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    return "rescore_hooks"


def test_builtin_math_reward_table(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "run", steps=2)
    code, out, err = run([str(run_dir), "--rm-type", "math"])
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["step", "scored", "skipped"]
    # every response says "The answer is 5." and every label is 5: the new reward is 1.0
    # everywhere; old: 1,0 | 1,0,failed | 1,1 | 1,1 (9 rows, the failed reward rescored).
    for step, line in zip((0, 1), lines[1:3], strict=True):
        cells = line.split()
        assert cells[:4] == [str(step), "9", "0", "0"]
        assert cells[5] == "1.000"
        assert int(cells[6]) >= 2  # indexes 1 and 3 went from 0 to 1
        # group 0 lost its spread; group 1 is not counted (its failed sample had no old reward)
        assert cells[7] == "1"
    assert "groups whose rewards became all equal" in out and "step 0 group 0" in out
    assert "moved most" in out and "0.000 -> 1.000" in out


def test_custom_reward_gains_spread_and_json(tmp_path: Path, hooks: str) -> None:
    run_dir = make_run(tmp_path / "run", steps=1)
    code, out, err = run([str(run_dir), "--custom-rm-path", f"{hooks}.by_index",
                          "--output-format", "json", "--top", "3"])
    assert code == 0, err
    data = json.loads(out)
    (step,) = data["steps"]
    assert step["scored"] == 9 and step["failed"] == 0
    # stale group 2 (indexes 6, 7: old 1, 1) and filtered group 3 (8, 9) now differ
    assert sorted(step["gained_examples"]) == [2, 3]
    assert len(data["moved"]) == 3


def test_failing_reward_exit_1_names_first_sample(tmp_path: Path, hooks: str) -> None:
    run_dir = make_run(tmp_path / "run", steps=2)
    code, out, _ = run([str(run_dir), "--custom-rm-path", f"{hooks}.raises_on_three",
                        "--steps", "1"])
    assert code == 1
    assert ("the new reward failed on 1 sample(s): ValueError: cannot parse (first: step 1 "
            "index 3") in out


def test_dict_reward_needs_reward_key(tmp_path: Path, hooks: str) -> None:
    run_dir = make_run(tmp_path / "run", steps=1)
    code, out, _ = run([str(run_dir), "--custom-rm-path", f"{hooks}.as_dict"])
    assert code == 1 and "--reward-key is not set" in out
    code, out, _ = run([str(run_dir), "--custom-rm-path", f"{hooks}.as_dict",
                        "--reward-key", "score"])
    assert code == 0 and "0.500" in out


def test_group_reward_is_called_once_per_group(tmp_path: Path, hooks: str) -> None:
    import importlib

    run_dir = make_run(tmp_path / "run", steps=1)
    code, _, err = run([str(run_dir), "--custom-rm-path", f"{hooks}.group", "--group-rm",
                        "--no-probe"])   # (it scores by position: the probes would say so)
    assert code == 0, err
    calls = importlib.import_module(hooks).CALLS
    assert sorted(calls) == [[0, 1], [2, 3, 5], [6, 7], [8, 9]]


@pytest.mark.parametrize(("argv", "message"), [
    (["RUN"], "name the new reward"),
    (["EMPTY", "--rm-type", "math"], "no rollouts/step_N.parquet"),
    (["RUN", "--rm-type", "math", "--steps", "7"], "argument --steps: [7] not dumped"),
    (["RUN", "--rm-type", "math", "--top", "-1"], "argument --top: must be >= 0"),
    (["RUN", "--custom-rm-path", "no_such_module_xyz.fn"], "module 'no_such_module_xyz' not found"),
])
def test_bad_arguments_exit_2(tmp_path: Path, argv: list[str], message: str) -> None:
    run_dir = make_run(tmp_path / "run", steps=1)
    (tmp_path / "empty").mkdir()
    argv = [{"RUN": str(run_dir), "EMPTY": str(tmp_path / "empty")}.get(a, a) for a in argv]
    code, out, err = run(argv)
    assert code == 2 and message in err and out == ""


def test_rows_whose_generation_failed_are_skipped() -> None:
    rows = [{"rollout_id": 0, "index": 0, "group_index": 0, "reward": 1.0, "fail_hook": None,
             "response": "5", "label": "5", "status": "completed"},
            {"rollout_id": 0, "index": 1, "group_index": 0, "reward": None,
             "fail_hook": "generate", "response": "", "label": "5", "status": "failed"}]
    rescored, skipped = rescore_rows(Namespace(rm_type="math", custom_rm_path=None,
                                               group_rm=False, reward_key=None), rows)
    assert skipped == 1 and [(r.index, r.new) for r in rescored] == [(0, 1.0)]
    (summary,) = summarise(rescored, {0: 1})
    assert (summary.scored, summary.skipped, summary.changed) == (1, 1, 0)


def test_chat_prompts_come_back_as_messages() -> None:
    messages = [{"role": "user", "content": "hi"}]
    assert _prompt(json.dumps(messages)) == messages
    assert _prompt("[1, 2]") == "[1, 2]"          # a text prompt that is JSON but not messages
    assert _prompt("[not json]") == "[not json]"


def test_reached_through_vime_lint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vime_lint.cli import main as vime_lint

    run_dir = make_run(tmp_path / "run", steps=1)
    assert vime_lint(["rescore", str(run_dir), "--rm-type", "math", "--top", "0"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].split()[:2] == ["0", "9"] and "moved most" not in out


def test_the_new_reward_is_probed(tmp_path: Path, hooks: str) -> None:
    run_dir = make_run(tmp_path / "run", steps=1)
    (tmp_path / "probed_first.py").write_text(textwrap.dedent('''
        import re

        async def first_number(args, sample):
            found = re.findall(r"-?\\d+", sample.response)
            return float(bool(found) and found[0] == sample.label)
    '''))
    code, out, _ = run([str(run_dir), "--custom-rm-path", "probed_first.first_number"])
    assert code == 1 and "reward probes (as in vime-lint check" in out
    assert "VIM304 error:" in out and "the first answer is graded" in out
    code, out, _ = run([str(run_dir), "--custom-rm-path", "probed_first.first_number",
                        "--no-probe"])
    assert "reward probes" not in out
    code, out, _ = run([str(run_dir), "--rm-type", "math"])
    assert code == 0 and "  no finding" in out
