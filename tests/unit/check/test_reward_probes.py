"""Reward probes (``vime-lint check``, VIM300-VIM307, VIM310, VIM311): every mistaken reward of
``probe_rewards`` is named with the probe that shows it, the correct near-misses and vime's own
rewards get no finding, the budget and ``--rm-timeout`` are respected, and the check's exit
status and report carry the findings."""

from __future__ import annotations

from pathlib import Path

import pytest

from vime_lint.check.arguments import make_args, parse_check_args
from vime_lint.check.probe_run import run_probes
from vime_lint.check.probes import PROBES, ProbeRow
from vime_lint.check.synthetic import synthetic_prompts

pytestmark = pytest.mark.unit

HERE = Path(__file__).resolve().parent
ROWS = [ProbeRow(p, label) for p, label, _ in synthetic_prompts(3) if label]
ROLLOUT = "vime.rollout.sft_rollout.generate_rollout"


@pytest.fixture(autouse=True)
def _on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(HERE))


def probe(*argv: str, max_calls: int = 400) -> tuple[set[str], list[str], list[str]]:
    args = make_args(parse_check_args(["--rollout-function-path", ROLLOUT, *argv]))
    out = run_probes(args, ROWS, max_calls=max_calls)
    return {v.id for v in out.findings}, [v.format() for v in out.findings], out.notes


@pytest.mark.parametrize(("reward", "expected"), [
    ("first_boxed", {"VIM304"}),
    ("no_number_full_credit", {"VIM301"}),
    ("unparseable_label_full_credit", {"VIM305"}),
    ("abstain_above_wrong", {"VIM306"}),
    ("random_ties", {"VIM302"}),
    ("raises_without_number", {"VIM303"}),
    ("nan_on_empty", {"VIM303"}),
    ("ignores_label", {"VIM300"}),
    ("hashes_only", {"VIM303"}),
    ("truncated_benefit", {"VIM301"}),
])
def test_each_mistake_is_named(reward: str, expected: set[str]) -> None:
    ids, texts, _ = probe("--custom-rm-path", f"probe_rewards.{reward}")
    assert expected <= ids, texts
    assert all("probe_rewards.py:" in t for t in texts)   # the reward's def, file and line


@pytest.mark.parametrize("reward", ["by_position", "tie_by_index"])
def test_a_group_reward_that_scores_by_position(reward: str) -> None:
    ids, texts, _ = probe("--custom-rm-path", f"probe_rewards.{reward}", "--group-rm")
    assert ids == {"VIM307"}, texts


def test_a_slow_judge_is_bounded_by_rm_timeout() -> None:
    ids, texts, notes = probe("--custom-rm-path", "probe_rewards.slow_judge", "--rm-timeout",
                              "0.05", max_calls=12)
    assert any("no reward within --rm-timeout 0.05 s" in t for t in texts) or \
        any("not judged" in n for n in notes), (texts, notes)
    assert any("ran out after" in n for n in notes)


@pytest.mark.parametrize("reward", ["probe_rewards.last_number",
                                    "probe_rewards.last_boxed_balanced",
                                    "probe_rewards.normalised_exact",
                                    "probe_rewards.format_bonus",
                                    "examples.format_reward.reward_func",
                                    "examples.real_model.reward.reward",
                                    "probe_rewards.openai_agent_score"])
def test_near_misses_and_examples_pass(reward: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(HERE.parents[2]))
    ids, texts, _ = probe("--custom-rm-path", reward)
    assert ids == set(), texts


def test_group_near_miss_passes() -> None:
    ids, texts, _ = probe("--custom-rm-path", "probe_rewards.group_centered", "--group-rm")
    assert ids == set(), texts


@pytest.mark.parametrize("rm_type", ["math", "boxed_math", "f1"])
def test_builtin_rewards_pass(rm_type: str) -> None:
    ids, texts, _ = probe("--rm-type", rm_type)
    assert ids == set(), texts


def test_every_probe_has_a_failing_case_here() -> None:
    covered = {"VIM300", "VIM301", "VIM302", "VIM303", "VIM304", "VIM305", "VIM306", "VIM307"}
    covered.add("VIM310")               # test_a_reward_that_reads_what_is_unset_...
    covered.add("VIM311")               # test_a_substring_reward_is_named
    filters = {"VIM308", "VIM309"}      # the filter probes' failing cases: test_filter_probes
    assert {p.id for p in PROBES} == covered | filters


def test_a_substring_reward_is_named() -> None:
    """`str(label) in response` passed every probe: "421" scored 1.0 for the label "42"."""
    ids, texts, _ = probe("--custom-rm-path", "probe_rewards.label_substring")
    assert ids == {"VIM311"}, texts
    assert texts[0].startswith("VIM311 warning: ") and "probe_rewards.py:" in texts[0]
    assert "(the label followed by a digit) scores 1.0, as much as gold" in texts[0], texts
    assert "not `label in response`" in texts[0]
    ids, texts, _ = probe("--custom-rm-path", "probe_rewards.any_number_matches")
    assert ids == {"VIM311"}, texts
    assert "(a list of candidates, the label among them, another last)" in texts[0], texts


def test_substring_answers_hold_the_label_and_are_wrong() -> None:
    from vime_lint.check.probes import responses_for, substring_answers

    assert substring_answers("4") == {"label-then-digit": "41", "candidates": "3, 4, 5 or 6"}
    assert substring_answers("2.5") == {"label-then-digit": "2.51"}
    assert substring_answers("Paris") == {}
    row = ProbeRow("What is 2+2?", "4")
    texts = responses_for(row, [row], "boxed")
    assert texts["candidates"][0] == "The result is \\boxed{3, 4, 5 or 6}."
    assert texts["label-then-digit"][0] == "The result is \\boxed{41}."


def test_the_budget_is_respected_and_said() -> None:
    args = make_args(parse_check_args(["--rollout-function-path", ROLLOUT, "--rm-type", "math"]))
    out = run_probes(args, ROWS, max_calls=30)
    assert out.calls <= 30 and any("--probe-max-calls 30" in n for n in out.notes)


def test_an_unknown_answer_format_is_said_once_not_reported() -> None:
    ids, _, notes = probe("--custom-rm-path", "probe_rewards.json_only_format")
    assert ids == set()
    assert sum("--probe-responses-path" in n for n in notes) == 1


def test_a_reward_that_returns_text_is_said_to_return_text_not_an_unknown_format() -> None:
    """It used to get the note "... so the reward's answer format is unknown"."""
    ids, texts, notes = probe("--custom-rm-path", "probe_rewards.text_score")
    assert ids == {"VIM303"} and "returned str, not a number" in texts[0], texts
    said = [n for n in notes if "not judged" in n]
    assert len(said) == 1 and "answer format is unknown" not in said[0], notes
    assert "(it returned str, not a number)" in said[0] and "float(text)" in said[0], said


def test_check_reports_probes_and_no_probe_turns_them_off(
        capsys: pytest.CaptureFixture[str]) -> None:
    from vime_lint.runtime.harness import main

    code = main(["--rollout-function-path", ROLLOUT, "--custom-rm-path",
                 "probe_rewards.first_boxed"])
    out = capsys.readouterr().out
    assert code == 1 and "VIM304  probe-final-answer" in out and "FAIL" in out
    code = main(["--rollout-function-path", ROLLOUT, "--custom-rm-path",
                 "probe_rewards.first_boxed", "--no-probe"])
    out = capsys.readouterr().out
    assert "VIM304  probe-final-answer            not run" in out
    assert "first answer is graded" not in out


def test_probe_responses_path_gives_the_answer_format(
        capsys: pytest.CaptureFixture[str]) -> None:
    from vime_lint.runtime.harness import main

    main(["--rollout-function-path", ROLLOUT, "--custom-rm-path",
          "probe_rewards.json_only_format", "--probe-responses-path",
          "probe_rewards.json_renderings"])
    out = capsys.readouterr().out
    assert "not judged" not in out and "VIM300  probe-gold-above-wrong        pass" in out


def test_a_group_reward_launch_is_checkable_with_evaluation(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The eval step scores each prompt's copies as one group (it used to stop the check with
    exit 2: '--group-rm is not supported for evaluation')."""
    from vime_lint.runtime.harness import main

    code = main(["--custom-rm-path", "probe_rewards.group_centered", "--group-rm",
                 "--eval-datasets", "held_out"])
    out = capsys.readouterr().out
    assert code == 0, out
    import re

    assert re.search(r"^VIM130\s+eval-data\s+pass$", out, re.M), out   # the eval step ran


def test_an_unjudged_reward_is_not_run_not_pass(capsys: pytest.CaptureFixture[str]) -> None:
    """A reward whose answer format is unknown is not reported as passing the probes."""
    import re

    from vime_lint.runtime.harness import main

    main(["--rollout-function-path", ROLLOUT, "--custom-rm-path",
          "probe_rewards.json_only_format"])
    out = capsys.readouterr().out
    assert re.search(r"^VIM300\s+probe-gold-above-wrong\s+not run \(no prompt judged: see "
                     r"the notes\)$", out, re.M), out


def test_a_reward_that_reads_what_is_unset_at_reward_time_is_named() -> None:
    ids, texts, _ = probe("--custom-rm-path", "probe_rewards.reads_previous_reward")
    assert ids == {"VIM310"}, texts
    assert "sample.reward (None until the reward returns)" in texts[0]
    ids, texts, _ = probe("--custom-rm-path", "probe_rewards.reads_missing_metadata")
    assert "VIM310" in ids, texts
    vim310 = next(t for t in texts if "VIM310" in t)
    assert "sample.metadata['answer'] (not in the rows' metadata" in vim310
    assert "--metadata-key" in vim310 and "probe_rewards.py:" in vim310


def test_metadata_the_rows_carry_is_no_unset_read() -> None:
    rows = [ProbeRow(r.prompt, r.label, {"source": "gsm8k"}) for r in ROWS]
    args = make_args(parse_check_args(["--rollout-function-path", ROLLOUT, "--custom-rm-path",
                                       "probe_rewards.reads_row_metadata"]))
    out = run_probes(args, rows, max_calls=400)
    assert [v.id for v in out.findings] == [], [v.format() for v in out.findings]
    ids, texts, _ = probe("--custom-rm-path", "probe_rewards.optional_metadata_present")
    assert ids == set(), texts


def test_the_check_passes_the_rows_metadata_to_the_probes(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    from vime_lint.runtime.harness import main

    data = tmp_path / "rows.jsonl"
    data.write_text("".join(f'{{"input": "What is {a}+1?", "label": "{a + 1}", '
                            f'"metadata": {{"source": "gsm8k"}}}}\n' for a in range(4)))
    main(["--rollout-function-path", ROLLOUT, "--custom-rm-path",
          "probe_rewards.reads_row_metadata", "--prompt-data", str(data), "--label-key",
          "label"])
    out = capsys.readouterr().out
    assert "VIM310  probe-reads-unset-field       pass" in out, out


def test_metadata_a_launch_hook_may_set_is_a_note_not_a_finding() -> None:
    args = make_args(parse_check_args(["--rollout-function-path", ROLLOUT, "--custom-rm-path",
                                       "probe_rewards.reads_missing_metadata"]))
    out = run_probes(args, ROWS, max_calls=400, metadata_from_hooks=True)
    assert "VIM310" not in {v.id for v in out.findings}
    assert any("sample.metadata['answer']" in n and "may set it" in n for n in out.notes)
    # a field that is unset at reward time whatever the hooks do is still named
    out = run_probes(make_args(parse_check_args([
        "--rollout-function-path", ROLLOUT, "--custom-rm-path",
        "probe_rewards.reads_previous_reward"])), ROWS, max_calls=400, metadata_from_hooks=True)
    assert "VIM310" in {v.id for v in out.findings}


def test_the_check_names_a_metadata_key_no_row_has(capsys: pytest.CaptureFixture[str]) -> None:
    """Through vime-lint check with vime's rollout (the dry run's stand-in generate is not the
    user's, so the key cannot come from a hook of the launch)."""
    from vime_lint.runtime.harness import main

    main(["--custom-rm-path", "probe_rewards.reads_missing_metadata", "--label-key", "label"])
    out = capsys.readouterr().out
    assert "VIM310  probe-reads-unset-field       WARN (1 warning(s))" in out, out
    assert "sample.metadata['answer'] (not in the rows' metadata" in out


def test_a_reward_that_raises_even_on_gold_is_told_to_fix_its_error() -> None:
    # raising on every response is a bug in the reward, not an answer it does not handle
    ids, texts, _ = probe("--custom-rm-path", "probe_rewards.misspelt_option")
    assert ids == {"VIM303"}, texts
    assert "the label's own answer (bare) raised AttributeError" in texts[0]
    assert "fix the error it names" in texts[0] and "instead of raising" not in texts[0]
    ids, texts, _ = probe("--custom-rm-path", "probe_rewards.raises_without_number")
    assert ids == {"VIM303"} and "instead of raising" in texts[0], texts


@pytest.mark.parametrize("reward", ["code_tests_exec", "code_tests_subprocess"])
def test_a_reward_that_runs_the_response_as_code_is_not_judged_on_answers(reward: str) -> None:
    # the synthetic labels are answers, not tests: "42" runs as a program, so every response
    # passed; that says nothing about a code reward (VIM300/VIM301 fired here before)
    args = make_args(parse_check_args(["--rollout-function-path", ROLLOUT,
                                       "--custom-rm-path", f"probe_rewards.{reward}"]))
    out = run_probes(args, ROWS, max_calls=120)
    assert out.code_reward
    assert {v.id for v in out.findings} == set(), [v.format() for v in out.findings]
    assert any("runs the response as code" in n and "VIM300, VIM301 would have fired" in n
               for n in out.notes), out.notes


@pytest.mark.parametrize("argv", [("--rm-type", "math"), ("--custom-rm-path",
                                                          "probe_rewards.first_boxed")])
def test_a_reward_that_parses_the_answer_is_judged(argv: tuple[str, str]) -> None:
    args = make_args(parse_check_args(["--rollout-function-path", ROLLOUT, *argv]))
    out = run_probes(args, ROWS, max_calls=120)
    assert not out.code_reward and out.judged
    assert not any("as code" in n for n in out.notes)


def test_constant_rewards_on_bare_scripted_answers_are_not_judged_for_a_boxed_reward(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The built-in generator answers the bare label: a correct reward that pays only for
    \\boxed{} scores every sample 0; the probes show it ranks the boxed answer, so VIM117 is
    not judged (it was a warning on this correct reward)."""
    import re

    from vime_lint.runtime.harness import main

    code = main(["--custom-rm-path", "probe_rewards.boxed_only", "--label-key", "label"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert re.search(r"^VIM117\s+constant-reward\s+not judged$", out, re.M), out
    assert "VIM117 warning" not in out
    assert "pays for the answer written as 'The result is \\\\boxed{ANSWER}.'" in out, out


def test_constant_rewards_of_a_reward_that_never_pays_stay_reported(
        capsys: pytest.CaptureFixture[str]) -> None:
    from vime_lint.runtime.harness import main

    main(["--custom-rm-path", "probe_rewards.never_pays", "--label-key", "label"])
    out = capsys.readouterr().out
    assert "VIM117 warning: samples[*].reward are all equal to 0.0" in out, out
    assert "not judged: the reward probes found" not in out
    # the dry run answers the label on half the samples: not the run's "expected now and then
    # on hard prompts", the reward's doing
    vim117 = out.split("VIM117 warning:", 1)[1].split("\nVIM", 1)[0]
    assert ("fix: the dry run's responses are the label on half the samples and \"no idea\" "
            "on the others, so a constant reward here comes from the reward") in vim117, vim117
    assert "now and then" not in vim117


def test_a_reward_that_returns_text_is_said_to_return_it_not_to_raise() -> None:
    ids, texts, _ = probe("--custom-rm-path", "probe_rewards.text_score")
    gold = [t for t in texts if "the label's own answer" in t]
    assert ids == {"VIM303"} and gold, texts
    assert "returned str, not a number" in gold[0] and "raised" not in gold[0]
    assert "return a float" in gold[0] and "fix the error it names" not in gold[0]


def test_findings_on_the_default_rollouts_output_name_the_users_hook(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Under vime's own rollout a reward finding on the output (samples[g][e].reward) is about
    the user's --custom-rm-path: it names that file and line, not vime's rollout module."""
    from vime_lint.runtime.harness import main

    code = main(["--custom-rm-path", "probe_rewards.text_score", "--no-probe"])
    out = capsys.readouterr().out
    stored = out.split("samples[0][0].reward", 1)
    assert code == 1 and len(stored) == 2, out
    context = stored[1].split("\n  in ", 1)[1].splitlines()[0]
    assert "probe_rewards.py:" in context and "text_score" in context, context
    assert "rollout_fn.py" not in out


def test_a_reward_that_raises_on_every_call_is_said_to_raise_not_to_have_an_unknown_format(
        ) -> None:
    # a KeyError on every call read "no rendering of the label ... scored above both an empty
    # and a wrong answer, so the reward's answer format is unknown"
    ids, texts, notes = probe("--custom-rm-path", "probe_rewards.raises_key_error")
    assert ids == {"VIM303"}, texts
    assert not any("answer format is unknown" in n for n in notes), notes
    (note,) = [n for n in notes if "raised" in n]
    assert "every one of the " in note and " probe call(s) of " in note
    assert "probe_rewards.py:" in note.split(" raised ")[0]        # the reward's def
    assert f"(the first: KeyError: 'b' at {HERE / 'probe_rewards.py'}:" in note
    assert " in raises_key_error), so no prompt was judged; fix that error" in note
    # a reward that raises on some responses only keeps the unknown-format note
    _, _, notes = probe("--custom-rm-path", "probe_rewards.raises_without_number")
    assert not any("every one of the" in n for n in notes), notes
