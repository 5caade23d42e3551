"""`vime-lint check` (vime_lint.runtime.harness.main): exit 0 clean, 1 findings, 2 cannot run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vime.contract.hooks import HOOKS
from vime_lint.runtime.harness import build_parser, main

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runtime_hooks"


@pytest.fixture(autouse=True)
def _fixture_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(FIXTURES))


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_parser_has_every_v1_hook_argument() -> None:
    options = {a for action in build_parser()._actions for a in action.option_strings}
    assert {spec.arg for spec in HOOKS.values() if spec.v1} <= options


def test_reference_module_is_clean(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "--rollout-function-path", "vime_ref_good.generate_rollout",
                          "--custom-generate-function-path", "vime_ref_good.generate",
                          "--custom-rm-path", "vime_ref_good.reward_func",
                          "--dynamic-sampling-filter-path", "vime_ref_good.dynamic_filter",
                          "--n-samples-per-prompt", "4")
    assert code == 0, out + err
    assert "VIM103  group-size" in out and "pass" in out
    assert "vime-lint check: clean" in out
    assert "note: dry run" in out


def test_reference_rollout_alone_uses_builtin_generator(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--rollout-function-path", "vime_ref_good.generate_rollout")
    assert code == 0, out
    assert "built-in deterministic generator" in out
    assert "VIM140  generate-boundary             not run (no custom generate)\n" in out


def test_uneven_groups_exit_1_with_id(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--rollout-function-path", "vime_ref_uneven.generate_rollout",
                        "--n-samples-per-prompt", "4")
    assert code == 1
    assert "VIM103  group-size" in out and "FAIL (2 error(s))" in out
    assert "VIM103 error: samples[0] has 3 samples, expected n_samples_per_prompt=4" in out
    assert "rollout `vime_ref_uneven.generate_rollout` (--rollout-function-path) step 0" in out


def test_unimportable_path_exits_2_without_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "--rollout-function-path", "no_such_pkg.rollout.fn")
    assert code == 2
    assert "module 'no_such_pkg.rollout' not found" in err
    assert "--rollout-function-path" in err
    assert "Traceback" not in out + err


def test_missing_attribute_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "--rollout-function-path", "vime_ref_good.no_such_function")
    assert code == 2 and "has no attribute 'no_such_function'" in err


def test_crashing_hook_is_an_error_in_user_code_exit_1(capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    # the README's table: 1 = findings / an error in your code; 2 = bad arguments, hooks that
    # cannot be loaded. A rollout that raises while it runs is the former.
    code, out, err = _run(capsys, "--rollout-function-path", "vime_ref_broken.crashing_rollout")
    assert code == 1
    assert "error: --rollout-function-path `vime_ref_broken.crashing_rollout` raised " \
        "KeyError: 'prompt' at " in out and "vime_ref_broken.py:" in out
    assert out.rstrip().endswith("vime-lint check: 1 error(s), 0 warning(s)"), out
    assert "Traceback" not in out + err and err == ""


def test_signature_error_is_a_vim100_finding(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--rollout-function-path",
                        "vime_ref_broken.rollout_with_bad_signature")
    assert code == 1
    assert "VIM100 error" in out and "data_source" in out


def test_broken_hooks_report_each_id(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--rollout-function-path", "vime_ref_broken.generate_rollout",
                        "--custom-rm-path", "vime_ref_broken.reward_none",
                        "--dynamic-sampling-filter-path", "vime_ref_broken.filter_returns_none",
                        "--custom-generate-function-path", "vime_ref_broken.generate_pending")
    assert code == 1
    for needle in ("VIM108 error: samples[0][0].loss_mask (index=0) has 1 entries",
                   "VIM110 error: samples[0][0].reward (index=0) is a dict",
                   "VIM111 error: samples[0][0].status (index=0) is 'completed' (str)",
                   "VIM101 error: rollout function `vime_ref_broken.generate_rollout` (eval) returned",
                   "VIM150 error: reward function result (index=0) is None",
                   "VIM106 error: generate result.tokens (index=0) is empty"):
        assert needle in out, needle


def test_findings_about_a_hook_lead_with_the_file_and_line_of_its_def(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--rollout-function-path", "vime_ref_broken.generate_rollout",
                        "--custom-rm-path", "vime_ref_broken.reward_none",
                        "--dynamic-sampling-filter-path", "vime_ref_broken.filter_returns_none",
                        "--custom-generate-function-path", "vime_ref_broken.generate_pending")
    assert code == 1
    broken = FIXTURES / "vime_ref_broken.py"
    for line, hook in ((6, "rollout `vime_ref_broken.generate_rollout` (--rollout-function-path)"),
                       (18, "reward function `vime_ref_broken.reward_none` (--custom-rm-path)"),
                       (23, "dynamic sampling filter `vime_ref_broken.filter_returns_none` "
                            "(--dynamic-sampling-filter-path)"),
                       (27, "generate function `vime_ref_broken.generate_pending` "
                            "(--custom-generate-function-path)")):
        assert f"\n  in {broken}:{line}: {hook} step 0 (vime-lint check dry run)\n" in out, hook
    # every finding's context that names a hook names its file (none left with the path alone)
    contexts = [ln for ln in out.splitlines() if ln.startswith("  in ")]
    assert contexts and all(ln.startswith(f"  in {broken}:") for ln in contexts), contexts
    # the reward probes say it the same way
    assert f"VIM303 error: {broken}:18: vime_ref_broken.reward_none (--custom-rm-path)" in out


def test_a_signature_finding_names_the_file_and_line_of_the_def(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--rollout-function-path",
                        "vime_ref_broken.rollout_with_bad_signature")
    assert code == 1
    where = (f"  in {FIXTURES / 'vime_ref_broken.py'}:35: rollout "
             "`vime_ref_broken.rollout_with_bad_signature` (--rollout-function-path)\n")
    assert out.count(where) == 2, out   # the error and the deprecated-name warning
    assert "VIM100 error: vime_ref_broken.rollout_with_bad_signature does not accept" in out


def test_defined_at_is_the_def_line_behind_decorators_partials_and_instances() -> None:
    import functools

    from vime_lint.check.calls import defined_at

    def deco(fn):  # type: ignore[no-untyped-def]
        @functools.wraps(fn)
        def inner(*a, **k):  # type: ignore[no-untyped-def]
            return fn(*a, **k)
        return inner

    @deco
    def hook(args, sample):  # type: ignore[no-untyped-def]
        return sample

    class Hook:
        def __call__(self, args, sample):  # type: ignore[no-untyped-def]
            return sample

    here = __file__
    line = hook.__wrapped__.__code__.co_firstlineno  # type: ignore[attr-defined]
    assert defined_at(hook) == f"{here}:{line + 1}"   # the `def`, not the `@deco` above it
    assert defined_at(functools.partial(hook, None)) == f"{here}:{line + 1}"
    call = Hook.__call__.__code__.co_firstlineno
    assert defined_at(Hook()) == f"{here}:{call}"
    assert defined_at(len) is None


def test_prompt_data_jsonl(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "prompts.jsonl"
    data.write_text("\n".join(json.dumps({"question": f"q{i}", "answer": str(i)})
                              for i in range(3)))
    code, out, _ = _run(capsys, "--rollout-function-path", "vime_ref_good.generate_rollout",
                        "--custom-rm-path", "vime_ref_good.reward_func", "--prompt-data",
                        str(data), "--input-key", "question", "--label-key", "answer")
    assert code == 0, out
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q"}\n')
    code, _, err = _run(capsys, "--rollout-function-path", "vime_ref_good.generate_rollout",
                        "--prompt-data", str(bad), "--input-key", "question",
                        "--label-key", "answer")
    assert code == 2 and f"{bad}:1: no key 'answer' (--label-key)" in err


def test_eval_dataset_names_are_checked(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--rollout-function-path", "vime_ref_good.generate_rollout",
                        "--eval-datasets", "aime")
    assert code == 1 and "VIM130 warning: data has datasets ['toy']" in out


def test_external_engines_are_passed_through(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--rollout-function-path", "vime_ref_good.generate_rollout",
                        "--rollout-external-engine-addrs", "127.0.0.1:30000")
    assert code == 0 and "passed through on args" in out


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "--n-samples-per-prompt", "many")
    assert code == 2 and "--n-samples-per-prompt" in err


def test_python_dash_m_entry_point() -> None:
    env = {"PYTHONPATH": str(FIXTURES), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "vime_lint.runtime.harness",
                           "--rollout-function-path", "vime_ref_uneven.generate_rollout"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "VIM103 error" in proc.stdout


def test_filter_returning_none_is_vim160(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--rollout-function-path", "vime_ref_good.generate_rollout",
                        "--custom-rm-path", "vime_ref_good.reward_func",
                        "--dynamic-sampling-filter-path", "vime_ref_broken.filter_returns_none")
    assert code == 1
    assert "VIM160 error: vime_ref_broken.filter_returns_none result is None" in out


def test_synthetic_data_source_groups() -> None:
    from argparse import Namespace

    from vime_lint.check.synthetic import SyntheticDataSource

    ds = SyntheticDataSource(Namespace(n_samples_per_prompt=3))
    groups = ds.get_samples(2)
    assert [len(g) for g in groups] == [3, 3]
    assert [s.index for g in groups for s in g] == [0, 1, 2, 3, 4, 5]
    assert [{s.group_index for s in g} for g in groups] == [{0}, {1}]
    assert groups[0][0] is not groups[0][1] and groups[0][0].prompt == groups[0][1].prompt
    ds.add_samples(groups[:1])
    assert ds.get_samples(1)[0] is groups[0]


def test_synthetic_data_source_renders_the_chat_template_like_training(tmp_path: Path) -> None:
    from argparse import Namespace

    from vime.utils.tiny_model import build_tokenizer
    from vime_lint.check.synthetic import SyntheticDataSource

    build_tokenizer().save_pretrained(tmp_path / "tok")
    data = tmp_path / "p.jsonl"
    data.write_text(json.dumps({"input": [{"role": "user", "content": "1+1="}],
                                "label": "2"}) + "\n")
    args = Namespace(n_samples_per_prompt=1, prompt_data=str(data), input_key="input",
                     label_key="label", apply_chat_template=True,
                     hf_checkpoint=str(tmp_path / "tok"))
    prompt = SyntheticDataSource(args).get_samples(1)[0][0].prompt
    assert prompt == "<|im_start|>user\n1+1=<|im_end|>\n<|im_start|>assistant\n"
    args.hf_checkpoint = str(tmp_path / "no-such-model")
    with pytest.raises(ValueError, match="--apply-chat-template: no tokenizer loads from "
                                         "--hf-checkpoint"):
        SyntheticDataSource(args)


def test_user_data_source_is_used(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--rollout-function-path", "vime_ref_good.generate_rollout",
                        "--data-source-path", "vime_lint.check.synthetic.SyntheticDataSource")
    assert code == 0, out


# ---- --agent-function-path: the agent runs in every mode (a stand-in engine by default) -----

def _agent_check(capsys: pytest.CaptureFixture[str], agent: str, *extra: str
                 ) -> tuple[int, str, str]:
    # the docs' agent launch as it is: no --rollout-function-path, no --rm-type
    return _run(capsys, "--agent-function-path", f"vime_ref_agents.{agent}", *extra)


def _row(out: str, inv_id: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(f"{inv_id}  "))


def test_agent_runs_in_the_default_mode_scored_by_its_own_reward(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _agent_check(capsys, "good_agent")
    assert "no reward model" not in out + err
    assert "scripted engine stand-in" in out
    for inv_id in ("VIM185", "VIM186", "VIM187"):
        assert _row(out, inv_id).endswith("pass"), _row(out, inv_id)
    assert _row(out, "VIM150").endswith("not run (no custom reward)")   # the agent scores
    assert "error" not in out.split("vime-lint check:")[-1].replace("0 error(s)", ""), out
    assert code in (0, 1) and "Traceback" not in err


def test_an_agent_that_runs_the_scripted_answers_as_code_gets_no_constant_reward_warning(
        capsys: pytest.CaptureFixture[str]) -> None:
    # the stand-in answers '42' / 'no idea': no program prints a label, so every reward is 0;
    # the agent handed them to a subprocess, so that says nothing about the agent
    code, out, _ = _agent_check(capsys, "code_tool_agent")
    assert "VIM117 warning" not in out, out
    assert _row(out, "VIM117").endswith("not judged"), _row(out, "VIM117")
    assert "the agent ran them as programs, which they are not" in out
    code, out, _ = _agent_check(capsys, "constant_agent")
    assert "VIM117 warning: samples[*].reward are all equal to 0.0" in out, out
    assert "ran them as programs" not in out


def test_vim194_the_agent_step_compares_its_trajectories_with_the_template(
        capsys: pytest.CaptureFixture[str]) -> None:
    # the agent's generate step runs the token-boundary check (1 in N; N = 1 here) on the
    # trajectories the endpoint assembled; 0 turns it off
    code, out, err = _agent_check(capsys, "good_agent", "--check-token-boundaries", "1")
    assert _row(out, "VIM194").endswith("pass"), _row(out, "VIM194")
    code, out, err = _agent_check(capsys, "good_agent", "--check-token-boundaries", "0")
    assert _row(out, "VIM194").endswith("not run (--check-token-boundaries 0)"), \
        _row(out, "VIM194")


@pytest.mark.parametrize(("agent", "inv_id", "text"), [
    ("string_reward_agent", "VIM185", "expected a finite real (the agent returned '42' (str))"),
    ("no_call_agent", "VIM186", "recorded no model call"),
])
def test_broken_agent_fails_check_in_the_default_mode(
        capsys: pytest.CaptureFixture[str], agent: str, inv_id: str, text: str) -> None:
    code, out, err = _agent_check(capsys, agent)
    assert code == 1
    assert "FAIL" in _row(out, inv_id), out
    assert "contract finding(s)" not in err   # reported once, in the report, not also logged
    assert f"{inv_id} error:" in out and text in out, out


def test_raising_agent_is_an_error_naming_its_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _agent_check(capsys, "raising_agent")
    assert code == 1
    # once, as the agent (not again as the default rollout that ran it), at the agent's line
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, errors
    assert errors[0].startswith("error: --agent-function-path `vime_ref_agents.raising_agent` "
                                "raised ValueError: tool 'calculator' is not defined at ")
    assert errors[0].endswith("vime_ref_agents.py:42 in raising_agent"), errors


def test_save_debug_rollout_data_writes_the_dry_run_samples(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    template = str(tmp_path / "dump" / "rollout_{rollout_id}.pt")
    code, out, _ = _run(capsys, "--rollout-function-path", "vime_ref_good.generate_rollout",
                        "--save-debug-rollout-data", template)
    assert code == 0, out
    train = torch.load(tmp_path / "dump" / "rollout_0.pt", weights_only=False)
    assert train["rollout_id"] == 0 and len(train["samples"]) == 4   # 2 groups of 2
    assert all(s["tokens"] and s["reward"] is not None for s in train["samples"])
    assert (tmp_path / "dump" / "rollout_eval_0.pt").is_file()
    assert f"wrote the 4 samples of the dry run's train step to {tmp_path}" in out


def test_save_debug_rollout_data_unwritable_is_a_bad_argument(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, _, err = _run(capsys, "--rollout-function-path", "vime_ref_good.generate_rollout",
                        "--save-debug-rollout-data", str(blocker / "x_{rollout_id}.pt"))
    assert code == 2 and "--save-debug-rollout-data" in err and "cannot write" in err


def test_eval_branch_on_training_prompts_warns_vim131(capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    # vime_ref_good's eval branch uses data_source.get_samples: its held-out numbers would be
    # training numbers
    code, out, _ = _run(capsys, "--rollout-function-path", "vime_ref_good.generate_rollout",
                        "--eval-datasets", "toy")
    assert code == 1
    assert "VIM131 warning: data['toy']['samples'] are 4 samples whose prompts are all " \
        "training prompts" in out, out


def test_eval_branch_on_the_eval_view_is_clean(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--rollout-function-path",
                        "examples.reference_rollout.generate_rollout", "--eval-datasets", "held")
    assert code == 0, out
    assert _row(out, "VIM131").endswith("pass") and _row(out, "VIM130").endswith("pass")


def test_default_rollout_evaluates_the_eval_sets_clean(capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    # a launch as it is (no --rollout-function-path): the default rollout's eval step runs on
    # the synthetic held-out set of --eval-datasets, the same samples eval_datasets() gives
    code, out, _ = _run(capsys, "--rm-type", "math", "--label-key", "label",
                        "--eval-datasets", "held")
    assert code == 0, out
    for inv_id in ("VIM130", "VIM131"):
        assert _row(out, inv_id).endswith("pass"), _row(out, inv_id)


def test_missing_prompt_data_is_one_line_naming_the_argument(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "--prompt-data", str(tmp_path / "nope.jsonl"))
    assert code == 2
    assert err.strip() == (f"vime-lint check: error: --prompt-data '{tmp_path / 'nope.jsonl'}': "
                           "cannot read it (No such file or directory); give an existing "
                           ".jsonl file")


@pytest.mark.parametrize("make", ["missing", "folder"])
def test_an_unreadable_eval_file_is_a_bad_argument_not_an_error_of_the_rollout(
        make: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # it was read inside the rollout's eval call: "rollout ... raised OSError", exit 1
    path = tmp_path / "held.jsonl"
    if make == "folder":
        path.mkdir()
    code, out, err = _run(capsys, "--rollout-function-path", "vime_ref_good.generate_rollout",
                          "--eval-prompt-data", "held", str(path))
    assert code == 2 and out == ""
    why = "does not exist (relative to" if make == "missing" else "is a folder"
    assert err.startswith(f"vime-lint check: error: argument --eval-prompt-data: eval dataset "
                          f"'held': dataset '{path}' {why}"), err


def test_shipped_openai_agent_dry_runs_in_the_default_mode(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "--agent-function-path", "examples.openai_agent.run_agent",
                          "--label-key", "label")
    for inv_id in ("VIM185", "VIM186", "VIM187"):
        assert _row(out, inv_id).endswith("pass"), out
    assert "0 error(s)" in out.splitlines()[-1] and "Traceback" not in err
    if code == 1:   # its later turns get no budget (32 tokens): the report says so
        assert "can come from the refused calls above" in out


def test_a_correct_agent_on_the_users_rows_is_clean_with_the_stand_in(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the stand-in's scripted answers cannot match the labels of the user's own rows: equal
    # rewards are not judged (a note says why), so a correct agent can be clean
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(f'{{"input": "What is {i} + {i}?", "label": "{2 * i}"}}\n'
                            for i in range(3, 9)))
    code, out, _ = _run(capsys, "--agent-function-path", "examples.openai_agent.run_agent",
                        "--prompt-data", str(rows), "--label-key", "label")
    assert code == 0, out
    assert "VIM117 warning" not in out and "VIM171 warning" not in out
    assert "constant rewards (VIM117, VIM171) not judged" in out
    for inv_id in ("VIM117", "VIM171"):   # never "pass": the check could not judge them
        assert _row(out, inv_id).endswith("not judged"), _row(out, inv_id)
    assert f"on the prompts of --prompt-data {rows}" in out


@pytest.mark.parametrize("agent", ["sync_openai_agent", "swallowing_sync_agent"])
def test_agent_with_a_synchronous_client_fails_fast_naming_the_fix(agent: str) -> None:
    # a subprocess with a deadline: before the fix this hung past the SDK's 10-minute timeout
    root = Path(__file__).resolve().parents[3]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(root / "tests" / "fixtures" / "runtime_hooks"), str(root)]))
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "vime_lint", "check", "--agent-function-path",
                           f"vime_ref_agents.{agent}"], cwd=root, env=env, text=True,
                          capture_output=True, timeout=240)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert f"--agent-function-path vime_ref_agents.{agent} held the event loop" in proc.stdout
    assert "openai.AsyncOpenAI" in proc.stdout and "--agent-function-mode subprocess" in out
    assert "vime: warning: --agent-function-path" in proc.stderr   # said while it happens
    assert time.monotonic() - started < 180, out


@pytest.mark.parametrize("mode", ["off", "warn"])
def test_contract_check_off_or_warn_is_said_not_silently_ignored(
        mode: str, capsys: pytest.CaptureFixture[str]) -> None:
    uneven = ("--rollout-function-path", "vime_ref_uneven.generate_rollout",
              "--n-samples-per-prompt", "4")
    code, out, _ = _run(capsys, *uneven, "--contract-check", mode)
    assert code == 1                    # the check still checks
    assert f"note: --contract-check {mode} sets what vime train does with its run-time " \
           "findings; vime-lint check runs every check regardless" in out
    assert "VIM103 error: samples[0] has 3 samples" in out
    _, out, _ = _run(capsys, *uneven)
    assert "note: --contract-check" not in out
