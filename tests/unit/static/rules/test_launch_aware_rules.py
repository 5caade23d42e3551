"""VIM009, VIM018 and VIM019 beyond their VALID/INVALID snippets: messages, launch discovery
(per-file flags, referenced configs, forwarded arguments) and the command line end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vime_lint.cli import main
from vime_lint.static import ALL_RULES, lint_source
from vime_lint.static._discovery import FORWARDED_ARGS, bind_targets, scan_launch_files
from vime_lint.static._model import options_from_mapping

pytestmark = pytest.mark.unit

RM_MODULE = (
    "async def reward_func(args, sample, **kwargs):\n"
    "    if sample.response.strip() == sample.label:\n"
    "        return {'acc': 1.0, 'len': len(sample.response)}\n"
    "    return {'acc': 0.0, 'len': len(sample.response)}\n"
    "\n"
    "\n"
    "async def generate(args, sample, sampling_params):\n"
    "    sample.reward = 0.5\n"
    "    return sample\n"
)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "rm.py").write_text(RM_MODULE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict[str, object]]]:
    code = main([*argv, "--output-format", "json"])
    return code, json.loads(capsys.readouterr().out)


def _codes(findings: list[dict[str, object]], *codes: str) -> list[tuple[object, object, object]]:
    return [(f["location"]["row"], f["location"]["column"], f["message"])  # type: ignore[index]
            for f in findings if f["code"] in codes]


# ---- discovery ----------------------------------------------------------------------------


def test_launch_files_keep_flags_per_file_with_referenced_configs(tmp_path: Path) -> None:
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "rm.yaml").write_text("reward_key: acc\nlabel-key: answer\n")
    (tmp_path / "a.sh").write_text("vime train --custom-rm-path pkg.rm.reward_func \\\n"
                                   "  --custom-config-path configs/rm.yaml\n")
    (tmp_path / "b.sh").write_text("vime train --custom-rm-path pkg.rm.reward_func \"$@\"\n")
    (tmp_path / "other.yaml").write_text("reward-key: x\n")
    launch = scan_launch_files(tmp_path, ())
    assert set(launch.files) == {"a.sh", "b.sh"}  # files naming a hook target only
    assert {"--custom-rm-path", "--custom-config-path", "--reward-key",
            "--label-key"} <= launch.files["a.sh"]  # rm.yaml is named by a.sh: merged
    assert "--reward-key" not in launch.files["b.sh"]  # other.yaml is not named by b.sh
    assert FORWARDED_ARGS in launch.files["b.sh"] and FORWARDED_ARGS not in launch.files["a.sh"]
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "rm.py").write_text(RM_MODULE)
    bindings, missing = bind_targets(tmp_path, launch.targets)
    assert missing == []
    (b,) = bindings[(tmp_path / "pkg" / "rm.py").resolve()]
    assert b.function == "reward_func" and b.launches == ("a.sh", "b.sh")


def test_a_hook_module_beside_its_launch_script_is_found(tmp_path: Path) -> None:
    """`recipes/math/run.sh` naming `rm.reward_func` (the script's own folder on PYTHONPATH,
    as `PYTHONPATH=$SCRIPT_DIR` launches have it) binds `recipes/math/rm.py`; a module of that
    name under the root wins (the working directory comes first), and a name found in neither
    place stays missing."""
    recipe = tmp_path / "recipes" / "math"
    recipe.mkdir(parents=True)
    (recipe / "rm.py").write_text(RM_MODULE)
    (recipe / "gen.py").write_text(RM_MODULE)
    (tmp_path / "gen.py").write_text(RM_MODULE)
    (recipe / "run.sh").write_text("vime train --custom-rm-path rm.reward_func \\\n"
                                   "  --custom-generate-function-path gen.generate \\\n"
                                   "  --dynamic-sampling-filter-path nowhere.keep\n")
    bindings, missing = bind_targets(tmp_path, scan_launch_files(tmp_path, ()).targets)
    (rm,) = bindings[(recipe / "rm.py").resolve()]
    assert rm.function == "reward_func" and rm.launches == ("recipes/math/run.sh",)
    (gen,) = bindings[(tmp_path / "gen.py").resolve()]
    assert gen.function == "generate"
    assert (recipe / "gen.py").resolve() not in bindings
    assert [t.dotted for t in missing] == ["nowhere.keep"]


@pytest.mark.parametrize("gap", [" \\\n      ", "\\\n\t", " \\\r\n  "])
def test_a_hook_path_on_the_line_after_its_flag_is_found(tmp_path: Path, gap: str) -> None:
    """`--rollout-function-path \\` with the dotted path on the next line (a shell line
    continuation) names the hook as on one line; a flag followed by another flag names
    nothing."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "rm.py").write_text(RM_MODULE)
    (tmp_path / "run.sh").write_text(
        f"python train.py \\\n  --custom-rm-path{gap}pkg.rm.reward_func \\\n"
        f"  --rollout-function-path{gap}--colocate\n")
    launch = scan_launch_files(tmp_path, ())
    assert [(t.dotted, t.source) for t in launch.targets] == [
        ("pkg.rm.reward_func", "run.sh:2 (--custom-rm-path)")]
    bindings, missing = bind_targets(tmp_path, launch.targets)
    assert missing == [] and list(bindings) == [(tmp_path / "pkg" / "rm.py").resolve()]


def test_a_path_python_cannot_import_names_no_hook(tmp_path: Path) -> None:
    """`examples.tau2-bench.generate_with_tau2:generate` (a hyphen, a colon) is no dotted
    Python path (vime's load_function stops at start: module not found); it was read up to
    the hyphen as `examples.tau2` and bound to `examples/__init__.py`, a function it is not."""
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "__init__.py").write_text("def tau2(args, sample):\n    return 1\n")
    (tmp_path / "run.sh").write_text(
        'python train.py --rollout-function-path "examples.tau2-bench.gen:generate" \\\n'
        "  --custom-rm-path examples.rm:score \\\n"
        "  --custom-generate-function-path examples.gen.generate\n")
    launch = scan_launch_files(tmp_path, ())
    assert [t.dotted for t in launch.targets] == ["examples.gen.generate"]


# ---- VIM019 through the command line -------------------------------------------------------


def test_vim019_fires_only_for_the_launch_that_lacks_the_flags(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "run.sh").write_text(
        "vime train \\\n  --custom-rm-path pkg.rm.reward_func \\\n"
        "  --custom-generate-function-path pkg.rm.generate\n")
    # --select VIM019 also selects VIM034 and VIM035: the two rules that had code VIM019.
    code, findings = _json(capsys, "rollout", "pkg", "--select", "VIM019")
    assert code == 1
    assert [f["code"] for f in findings] == ["VIM034", "VIM019", "VIM019", "VIM035"]
    assert _codes(findings, "VIM019", "VIM034", "VIM035") == [
        (2, 35, "reward function `reward_func` reads `.label`, but run.sh sets no --label-key, "
                "so every label is None"),
        (3, 9, "`reward_func` returns a dict reward, but run.sh (which names it for "
               "--custom-rm-path) sets no --reward-key"),
        (4, 5, "`reward_func` returns a dict reward, but run.sh (which names it for "
               "--custom-rm-path) sets no --reward-key"),
        (8, 5, "generate function `generate` sets `.reward`, but run.sh also sets "
               "--custom-rm-path, which is then skipped for samples that already have a reward"),
    ]
    assert [f["fix_hint"] for f in findings] == [
        "add `--label-key <dataset column>` to run.sh",
        "add `--reward-key <key>` to run.sh, or return a float",
        "add `--reward-key <key>` to run.sh, or return a float",
        "leave `reward` to the reward model (pass what it needs in `sample.metadata`), or drop "
        "--custom-rm-path"]
    assert all(f["fix"] is None for f in findings)  # the key or column is the author's choice
    # The keys in a config file the launch script names silence the two absence checks.
    (repo / "rm.yaml").write_text("reward_key: acc\nlabel_key: answer\n")
    (repo / "run.sh").write_text(
        "vime train --custom-rm-path pkg.rm.reward_func --custom-config-path rm.yaml \\\n"
        "  --custom-generate-function-path pkg.rm.generate\n")
    code, findings = _json(capsys, "rollout", "pkg", "--select", "VIM019")
    assert [f["message"] for f in findings] == [
        "generate function `generate` sets `.reward`, but run.sh also sets --custom-rm-path, "
        "which is then skipped for samples that already have a reward"]


def test_vim019_needs_a_launch_file(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Hooks found by their conventional names or by [tool.vime_lint] hooks: no launch config.
    (repo / "pyproject.toml").write_text(
        "[tool.vime_lint]\nhooks = { custom_rm_path = 'pkg.rm.reward_func' }\n")
    assert _json(capsys, "rollout", "pkg", "--select", "VIM019") == (0, [])
    # A launch that names another module's hooks says nothing about this one.
    (repo / "run.sh").write_text("vime train --custom-rm-path pkg.other.reward_func\n")
    assert _json(capsys, "rollout", "pkg", "--select", "VIM019") == (0, [])


def test_vim019_quiet_when_the_script_forwards_arguments(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "run.sh").write_text("vime train --custom-rm-path pkg.rm.reward_func \"$@\"\n")
    assert _json(capsys, "rollout", "pkg", "--select", "VIM019") == (0, [])


def test_vim019_two_launches_absence_needs_all(repo: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "a.sh").write_text("vime train --custom-rm-path pkg.rm.reward_func\n")
    (repo / "b.sh").write_text("vime train --custom-rm-path pkg.rm.reward_func "
                               "--reward-key acc --label-key answer\n")
    assert _json(capsys, "rollout", "pkg", "--select", "VIM019") == (0, [])
    (repo / "b.sh").write_text("vime train --custom-rm-path pkg.rm.reward_func\n")
    _, findings = _json(capsys, "rollout", "pkg", "--select", "VIM019")
    assert "a.sh (and 1 more) sets no --label-key" in str(findings[0]["message"])


# ---- VIM009 and VIM018 messages -------------------------------------------------------------

_GEN = "from vime.utils.types import Sample\n\n\nasync def generate(args, sample, sampling_params):\n"


def _messages(source: str, code: str, **options: object) -> list[tuple[int, int, str]]:
    result = lint_source(source, "m.py", options_from_mapping(options), rules=ALL_RULES)
    assert result.failure is None
    return [(f.line, f.col, f.message) for f in result.findings if f.code == code]


def test_vim009_names_the_missing_mappings() -> None:
    body = ("    out = await post(url, sampling_params)\n"
            "    sample.append_response_tokens(args, tokens=out['token_ids'], log_probs=lp)\n"
            "    if out['finish_reason'] == 'length':\n"
            "        sample.status = Sample.Status.TRUNCATED\n"
            "    return sample\n")
    assert _messages(_GEN + body, "VIM009") == [
        (7, 7, "generate function `generate` reads the finish reason but never maps `abort` "
               "-> ABORTED")]
    nothing = body.replace("'length'", "'stop'").replace("TRUNCATED", "COMPLETED")
    assert _messages(_GEN + nothing, "VIM009") == [
        (7, 7, "generate function `generate` reads the finish reason but never maps `length` "
               "-> TRUNCATED or `abort` -> ABORTED")]
    both = body + ("    if out['finish_reason'] == 'abort':\n"
                   "        sample.status = Sample.Status.ABORTED\n")
    assert _messages(_GEN + both, "VIM009") == []
    with_meta = body.replace("log_probs=lp)", "log_probs=lp,\n        meta_info={'finish_reason': "
                             "{'type': out['finish_reason']}})")
    assert _messages(_GEN + with_meta.replace("'length'", "'stop'"), "VIM009") == []


def test_vim009_only_for_generate_hooks() -> None:
    src = ("def helper(args, sample, sampling_params):\n"
           "    return sample.metadata['out']['finish_reason']\n")
    assert _messages(src, "VIM009") == []
    assert _messages(src, "VIM009", hooks={"helper": "custom_generate_function_path"}) == [
        (2, 11, "generate function `helper` reads the finish reason but never maps `length` "
                "-> TRUNCATED or `abort` -> ABORTED")]


def test_vim018_message_and_helper_loop() -> None:
    src = ("async def _episode(args, sample, messages):\n"
           "    for _ in range(4):\n"
           "        ids = await engine(tokenizer.apply_chat_template(messages))\n"
           "        messages.append({'role': 'assistant', 'content': tokenizer.decode(ids)})\n"
           "    return sample\n"
           "\n"
           "\n"
           "async def generate(args, sample, sampling_params):\n"
           "    return await _episode(args, sample, [])\n")
    assert _messages(src, "VIM018") == [
        (3, 27, "generated text re-encoded in `_episode`: `tokenizer.apply_chat_template(messages)`"
                " inside a loop encodes generated text again")]
    # The same helper not reached from a rollout/generate hook is left alone.
    assert _messages(src.replace("async def generate", "async def unrelated"), "VIM018") == []


@pytest.mark.parametrize(("name", "text"), [
    ("run.sh", "# old: --custom-rm-path pkg.rm --group-rm\npython train.py --x 1\n"),
    ("run.sh", "python train.py --x 1  # --custom-rm-path pkg.rm --group-rm\n"),
    ("launch.toml", "# custom_rm_path = 'pkg.rm'\n# --group-rm\nx = 1\n"),
    ("launch.toml", "x = 1  # --custom-rm-path pkg.rm, --group-rm\n"),
    ("launch.yaml", "x: 1\n  # custom-rm-path: pkg.rm\n# group_rm: true\n"),
])
def test_flags_and_hooks_in_comments_are_not_launch_flags(tmp_path: Path, name: str,
                                                          text: str) -> None:
    (tmp_path / name).write_text(text)
    launch = scan_launch_files(tmp_path, ())
    assert launch.targets == ()
    assert "--group-rm" not in launch.flags and "--custom-rm-path" not in launch.flags


@pytest.mark.parametrize(("name", "text", "line"), [
    ("run.sh", "# header\n# more\npython t.py --custom-rm-path pkg.rm  # the reward\n", 3),
    ("run.sh", 'echo "#1" $#\npython t.py --custom-rm-path "pkg.rm" --group-rm\n', 2),
    ("launch.toml", "# a comment\nflag = '#hash'  # note\ncustom_rm_path = \"pkg.rm\"\n", 3),
    ("launch.yaml", "# a comment\nname: 'a # b'\ncustom-rm-path: pkg.rm # the reward\n", 3),
])
def test_real_values_beside_comments_are_read_with_their_lines(tmp_path: Path, name: str,
                                                               text: str, line: int) -> None:
    (tmp_path / name).write_text(text)
    launch = scan_launch_files(tmp_path, ())
    assert [(t.dotted, t.source.split(" ")[0]) for t in launch.targets] == [
        ("pkg.rm", f"{name}:{line}")]
    assert "--custom-rm-path" in launch.flags


def test_hashes_in_quotes_and_words_are_not_comments() -> None:
    from vime_lint.static._discovery import strip_comments

    text = "a='x # y' b=\"p#q\" c=$# d=${#arr} # gone\n# all gone\nk = 1"
    assert strip_comments(text, ".sh") == "a='x # y' b=\"p#q\" c=$# d=${#arr} \n\nk = 1"
    assert strip_comments('{"a": "# --group-rm"}', ".json") == '{"a": "# --group-rm"}'


def test_vim004_on_a_loose_conventional_binding_is_a_warning_that_says_why() -> None:
    # slime's own `log_rollout_data(rollout_id, args, rollout_data)` (megatron_utils/data.py),
    # which no launch passes: bound by its name alone, with a parameter the hook never passes
    src = "def log_rollout_data(rollout_id, args, rollout_data):\n    return None\n"
    result = lint_source(src, "m.py", options_from_mapping({}), rules=ALL_RULES)
    (f,) = [f for f in result.findings if f.code == "VIM004"]
    assert f.severity == "warning"
    assert f.message.endswith(
        "(a warning: `log_rollout_data` is taken for --custom-rollout-log-function-path by its "
        "conventional name alone, and it has parameters that hook does not pass; no launch, "
        "`[tool.vime_lint] hooks` or Protocol annotation names it)"), f.message
    named = lint_source(src, "m.py", options_from_mapping(
        {"hooks": {"log_rollout_data": "custom_rollout_log_function_path"}}), rules=ALL_RULES)
    (g,) = [g for g in named.findings if g.code == "VIM004"]
    assert g.severity == "error" and "(a warning" not in g.message
    # the rollout function's conventional name binds firmly: `data_buffer` is slime's name
    rollout = ("def generate_rollout(args, rollout_id, data_buffer):\n"
               "    return None\n")
    found = lint_source(rollout, "m.py", options_from_mapping({}), rules=ALL_RULES).findings
    vim001 = [h for h in found if h.code == "VIM001"]
    assert "error" in {h.severity for h in vim001}, found    # `evaluation` is missing
    assert not any("conventional name alone" in h.message for h in vim001), found


# ---- --group-rm belongs to the launch that names the reward --------------------------------

SINGLE_RM = "async def reward_func(args, sample):\n    return 1.0 if sample.response else 0.0\n"


@pytest.mark.parametrize(("config", "vim004"), [
    # another module's reward (the new-user trial: no pyproject.toml, sub/run.yaml)
    ("custom-rm-path: x.reward_func\ngroup-rm: true\n", False),
    # the file's own reward, but --group-rm is off
    ("custom-rm-path: stale2.reward_func\ngroup_rm: false\n", False),
    ("custom-rm-path: stale2.reward_func\n", False),
    # the file's own reward under --group-rm: the batch signature is expected
    ("custom-rm-path: stale2.reward_func\ngroup-rm: true\n", True),
    ("custom_rm_path: stale2.reward_func\ngroup_rm: True\n", True),
])
def test_group_rm_of_a_config_applies_only_to_the_reward_it_names(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        config: str, vim004: bool) -> None:
    (tmp_path / "stale2.py").write_text(SINGLE_RM)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "run.yaml").write_text(config)
    monkeypatch.chdir(tmp_path)
    _, findings = _json(capsys, "rollout", "stale2.py")
    found = _codes(findings, "VIM004")
    if vim004:
        assert [(r, c) for r, c, _ in found] == [(1, 11)]
        assert "did you mean `samples`?" in str(found[0][2])
    else:
        assert found == []
    # --fix never renames a correct single reward's `sample`
    main(["rollout", "--fix", "stale2.py"])
    capsys.readouterr()
    fixed = (tmp_path / "stale2.py").read_text()
    assert ("samples" in fixed) is vim004


def test_group_rm_in_a_config_the_launch_names_makes_its_reward_a_group_reward(
        tmp_path: Path) -> None:
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "grpo.yaml").write_text("group-rm: true\n")
    (tmp_path / "configs" / "other.yaml").write_text("group-rm: true\n")
    (tmp_path / "a.sh").write_text("vime train --custom-rm-path pkg.rm.a "
                                   "--config configs/grpo.yaml\n")
    (tmp_path / "b.sh").write_text("vime train --custom-rm-path pkg.rm.b\n")
    launch = scan_launch_files(tmp_path, ())
    groups = {t.dotted: t.spec.params for t in launch.targets}
    assert groups == {"pkg.rm.a": ("args", "samples"), "pkg.rm.b": ("args", "sample")}
    assert "--group-rm" not in launch.files["b.sh"]


def test_group_rm_false_is_not_the_group_rm_flag(tmp_path: Path) -> None:
    (tmp_path / "run.yaml").write_text("custom-rm-path: pkg.rm.a\ngroup_rm: false\n")
    launch = scan_launch_files(tmp_path, ())
    assert "--group-rm" not in launch.flags
    assert [t.spec.params for t in launch.targets] == [("args", "sample")]


NO_EVAL_BRANCH = ("from vime.rollout.base_types import RolloutFnTrainOutput\n\n\n"
                  "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                  "    return RolloutFnTrainOutput(samples=data_source.get_samples(1))\n")


@pytest.mark.parametrize(("config", "severity"), [
    # a config that evaluates another module's rollout says nothing about this one
    ("rollout-function-path: x.generate_rollout\neval-interval: 5\n", "warning"),
    ("rollout-function-path: rollout.generate_rollout\n", "warning"),
    # the launch that names this function evaluates: its eval steps are rejected
    ("rollout-function-path: rollout.generate_rollout\neval-interval: 5\n", "error"),
])
def test_eval_flags_of_a_config_apply_only_to_the_rollout_it_names(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        config: str, severity: str) -> None:
    (tmp_path / "rollout.py").write_text(NO_EVAL_BRANCH)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "run.yaml").write_text(config)
    monkeypatch.chdir(tmp_path)
    _, findings = _json(capsys, "rollout", "rollout.py")
    assert [f["severity"] for f in findings if f["code"] == "VIM002"] == [severity]


def test_a_config_named_by_its_file_name_alone_is_the_one_beside_the_launch(
        tmp_path: Path) -> None:
    # two `grpo.yaml`: the launch's bare `grpo.yaml` is the one in its own folder; the other
    # folder's (which sets --group-rm for its own run) does not leak into this launch
    for d, text in (("a", "reward_key: acc\n"), ("b", "group-rm: true\n")):
        (tmp_path / d).mkdir()
        (tmp_path / d / "grpo.yaml").write_text(text)
    (tmp_path / "a" / "run.sh").write_text(
        'cd "$(dirname "$0")"\nvime train --custom-rm-path pkg.rm.a --config grpo.yaml\n')
    (tmp_path / "c.sh").write_text("vime train --custom-rm-path pkg.rm.c --config rm.yaml\n")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "rm.yaml").write_text("label_key: answer\n")
    launch = scan_launch_files(tmp_path, ())
    assert "--reward-key" in launch.files["a/run.sh"]
    assert "--group-rm" not in launch.files["a/run.sh"]
    assert [t.spec.params for t in launch.targets if t.dotted == "pkg.rm.a"] == [
        ("args", "sample")]
    # a file name that only one scanned file has still finds it wherever it is
    assert "--label-key" in launch.files["c.sh"]
