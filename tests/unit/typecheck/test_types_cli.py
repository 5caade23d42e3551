"""``vime-lint types`` on the command line: every output format, noqa, select/ignore,
per-file-ignores, exit codes, the cache folder, and a light start-up (mypy imported only when
the subcommand runs)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from vime_lint.cli import main

pytestmark = pytest.mark.unit

BAD = (
    "async def reward_func(args, sample):\n"
    "    text = sample.prompt.lower()\n"
    "    sample.status = 'completed'\n"
    "    return float(len(text))\n"
)
GOOD = (
    "async def reward_func(args, sample):\n"
    "    text = sample.prompt if isinstance(sample.prompt, str) else ''\n"
    "    return float(len(text))\n"
)


def _run(capsys: pytest.CaptureFixture[str], cache: Path, *argv: str) -> tuple[int, str, str]:
    code = main(["types", *argv, "--cache-dir", str(cache)])
    out, err = capsys.readouterr()
    return code, out, err


def test_concise_lines_and_exit_codes(repo: Path, types_cache: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "rm.py").write_text(BAD)
    (repo / "ok.py").write_text(GOOD)
    code, out, err = _run(capsys, types_cache, "rm.py", "ok.py")
    assert code == 1, err
    lines = out.splitlines()
    assert lines[0].startswith("rm.py:2:12: VIM201 `sample.prompt` is `str | list[dict[str, "
                               'Any]]` (Sample.prompt); mypy: Item "list[dict[str, Any]]" of ')
    # the finding's own fix, as in `rollout` (not the rule's general text), said once: on
    # the help line, not in the message too
    assert "narrow it first" not in lines[0]
    assert lines[1] == ("  help: narrow it first: `if isinstance(sample.prompt, str): ...` "
                        "(else a message list)")
    assert lines[2].startswith("rm.py:3:21: VIM202 `sample.status` is `Sample.Status`")
    assert lines[3] == "  help: store a member of `Sample.Status` (`Sample.Status.COMPLETED`)"
    assert lines[4] == "Found 2 finding(s): 2 error(s), 0 warning(s)."
    _, out, _ = _run(capsys, types_cache, "rm.py", "--no-show-fixes")
    assert [line.split()[1] for line in out.splitlines()] == ["VIM201", "VIM202", "2"]
    assert _run(capsys, types_cache, "ok.py")[:2] == (0, "All checks passed!\n")
    assert _run(capsys, types_cache, "rm.py", "--exit-zero")[0] == 0


def test_json_sarif_and_github_formats(repo: Path, types_cache: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "rm.py").write_text(BAD)
    _, out, _ = _run(capsys, types_cache, "rm.py", "--output-format", "json")
    data = json.loads(out)
    assert [(d["code"], d["location"], d["slug"]) for d in data] == [
        ("VIM201", {"row": 2, "column": 12}, "contract-type-misuse"),
        ("VIM202", {"row": 3, "column": 21}, "contract-field-type")]
    assert data[0]["filename"] == "rm.py" and data[0]["severity"] == "error"
    _, out, _ = _run(capsys, types_cache, "rm.py", "--output-format", "sarif")
    run = json.loads(out)["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert set(rules) == {"VIM200", "VIM201", "VIM202", "VIM203", "VIM204", "VIM031", "VIM032"}
    assert rules["VIM201"]["helpUri"].endswith("docs/rules.md#vim201-contract-type-misuse")
    assert [r["ruleId"] for r in run["results"]] == ["VIM201", "VIM202"]
    region = run["results"][0]["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (2, 12)
    _, out, _ = _run(capsys, types_cache, "rm.py", "--output-format", "github")
    assert out.startswith("::error title=vime-lint (VIM201),file=rm.py,line=2,col=12,")


def test_noqa_select_ignore_and_per_file_ignores(repo: Path, types_cache: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "rm.py").write_text(BAD.replace("'completed'\n", "'completed'  # noqa: VIM202\n"))
    _, out, _ = _run(capsys, types_cache, "rm.py", "--no-show-fixes")
    assert [line.split()[1] for line in out.splitlines()[:-1]] == ["VIM201"]
    (repo / "rm.py").write_text("# vime-lint: noqa: VIM201\n" + BAD)
    _, out, _ = _run(capsys, types_cache, "rm.py", "--output-format", "json")
    assert [d["code"] for d in json.loads(out)] == ["VIM202"]
    (repo / "rm.py").write_text(BAD)
    _, out, _ = _run(capsys, types_cache, "rm.py", "--select", "VIM202", "--output-format", "json")
    assert [d["code"] for d in json.loads(out)] == ["VIM202"]
    _, out, _ = _run(capsys, types_cache, "rm.py", "--ignore", "VIM2", "--output-format", "json")
    assert json.loads(out) == []
    (repo / "pyproject.toml").write_text(
        "[project]\nname = 'x'\n[tool.vime_lint.per-file-ignores]\n\"rm.py\" = [\"VIM201\"]\n")
    _, out, _ = _run(capsys, types_cache, "rm.py", "--output-format", "json")
    assert [d["code"] for d in json.loads(out)] == ["VIM202"]
    code, _, err = _run(capsys, types_cache, "rm.py", "--select", "VIM299")
    assert code == 2 and "unknown rule selector `VIM299`" in err


def test_hooks_named_by_a_launch_script_are_checked(repo: Path, types_cache: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "pkg").mkdir()
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "scores.py").write_text(BAD.replace("reward_func", "score_answer"))
    (repo / "run.sh").write_text("vime train --custom-rm-path pkg.scores.score_answer\n")
    code, out, _ = _run(capsys, types_cache, "pkg")
    assert code == 1 and "pkg/scores.py:2:12: VIM201" in out
    (repo / "run.sh").write_text("vime train\n")
    assert _run(capsys, types_cache, "pkg")[:2] == (0, "All checks passed!\n")  # no hook


def test_default_cache_folder_is_under_the_project_root(repo: Path,
                                                        capsys: pytest.CaptureFixture[str],
                                                        types_cache: Path) -> None:
    (repo / "ok.py").write_text(GOOD)
    assert main(["types", "ok.py"]) == 0
    capsys.readouterr()
    assert (repo / ".vime_lint_cache" / "mypy").is_dir()
    assert (repo / ".vime_lint_cache" / ".gitignore").read_text().splitlines()[-1] == "*"


def test_start_up_imports_neither_mypy_nor_libcst() -> None:
    code = ("import sys; from vime_lint.cli import _build_parser; _build_parser(); "
            "print(sorted(m for m in ('mypy', 'libcst') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_pre_commit_manifest_exports_an_opt_in_types_hook() -> None:
    import shlex

    import yaml

    from vime_lint.cli import _build_parser

    root = Path(__file__).resolve().parents[3]
    hooks = {h["id"]: h for h in yaml.safe_load((root / ".pre-commit-hooks.yaml").read_text())}
    types = hooks["vime-lint-types"]
    assert types["language"] == "python" and types["types"] == ["python"]
    assert any(d.startswith("mypy") for d in types["additional_dependencies"])
    prog, *args = shlex.split(types["entry"])
    assert prog == "vime-lint"
    ns = _build_parser().parse_args([*args, "x.py"])
    assert ns.command == "types" and ns.force_exclude and ns.paths == [Path("x.py")]


def test_rollout_accepts_a_types_noqa_as_known(repo: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """`# noqa: VIM201` is for `vime-lint types`; `vime-lint rollout` neither reports it unused
    nor as an unknown code."""
    (repo / "rm.py").write_text(GOOD.replace("else ''\n", "else ''  # noqa: VIM201\n"))
    code = main(["rollout", "rm.py"])
    out, _ = capsys.readouterr()
    assert "VIM091" not in out and code == 0, out


def test_missing_mypy_and_unparsable_files_exit_2(repo: Path, types_cache: Path,
                                                  capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "broken.py").write_text("async def reward_func(args, sample:\n")
    code, _, err = _run(capsys, types_cache, "broken.py")
    assert code == 2 and "broken.py:1:" in err and "SyntaxError: '(' was never closed" in err
    monkeypatch.setitem(sys.modules, "mypy", None)  # as if mypy were not installed
    code, _, err = _run(capsys, types_cache, "broken.py")
    assert code == 2 and "pip install 'vime[types]'" in err


def test_helpers_imported_from_the_users_package_are_checked(
        repo: Path, types_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A hook's samples reach `fill`/`score` of another module of the user's package: those
    helpers are checked with the contract's types; each finding names the hook. The
    wrong-length mask set in the helper is `vime-lint rollout`'s (VIM022), which sees it too."""
    (repo / "pkg").mkdir()
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "util.py").write_text(
        "import torch\n\n\ndef fill(s, text):\n    s.response = text\n"
        "    s.reward = torch.tensor(1.0)\n    s.reward = 'high'\n"
        "    s.loss_mask = [1] * len(s.tokens)\n\n\ndef untouched(s):\n    return s.prompt.lower()\n")
    (repo / "pkg" / "hooks.py").write_text(
        "from .util import fill\n\n\nasync def generate(args, sample, sampling_params):\n"
        "    fill(sample, 'x')\n    return sample\n")
    code, out, _ = _run(capsys, types_cache, "pkg/hooks.py", "--output-format", "json")
    data = json.loads(out)
    assert code == 1
    assert [(d["filename"], d["location"]["row"], d["code"]) for d in data] == [
        ("pkg/util.py", 6, "VIM202"), ("pkg/util.py", 7, "VIM202")]
    assert all("via generate(sample) in pkg.hooks), reached from `generate`" in d["message"]
               for d in data), data
    main(["rollout", "pkg/util.py", "--output-format", "json"])
    rollout = json.loads(capsys.readouterr().out)
    assert ("VIM022", 8) in {(d["code"], d["location"]["row"]) for d in rollout}, rollout


def test_strictness_needs_selecting_and_stores_share_vim031(
        repo: Path, types_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "rm.py").write_text(
        "async def reward_func(args, sample):\n    seen = []\n    sample.my_score = 1.0\n"
        "    return float(len(seen))\n")
    _, out, _ = _run(capsys, types_cache, "rm.py", "--output-format", "json")
    types = [(d["code"], d["severity"], d["location"]["row"]) for d in json.loads(out)]
    assert types == [("VIM031", "warning", 3)]
    main(["rollout", "rm.py", "--output-format", "json"])
    rollout = [(d["code"], d["severity"], d["location"]["row"])
               for d in json.loads(capsys.readouterr().out) if d["code"] == "VIM031"]
    assert rollout == types
    _, out, _ = _run(capsys, types_cache, "rm.py", "--extend-select", "VIM204",
                     "--output-format", "json")
    assert [(d["code"], d["location"]["row"]) for d in json.loads(out)] == [
        ("VIM204", 2), ("VIM031", 3)]
    _, out, _ = _run(capsys, types_cache, "rm.py", "--ignore", "VIM031")
    assert out == "All checks passed!\n"


@pytest.mark.parametrize("read", ["getattr(s, 'math_ok', False)", 'hasattr(s, "math_ok")',
                                  "s.math_ok"])
def test_an_attribute_read_back_by_name_is_the_modules_own(
        repo: Path, types_cache: Path, capsys: pytest.CaptureFixture[str], read: str) -> None:
    """The reward stores `sample.math_ok` and the post-process reads it back with
    `getattr(s, "math_ok", False)` (or `hasattr`): the module's own attribute, kept by the
    Sample, so neither `types` nor `rollout` reports VIM031 ("nothing reads it" was untrue);
    a name read by no one is still reported."""
    (repo / "rm.py").write_text(
        "async def reward_func(args, sample, **kwargs):\n"
        "    sample.math_ok = sample.response == sample.label\n"
        "    sample.unused_flag = True\n"
        "    return 1.0\n\n\n"
        "def post_process(args, samples):\n"
        f"    rewards = [1.0 if {read} else 0.0 for s in samples]\n"
        "    return rewards, rewards\n")
    _, out, _ = _run(capsys, types_cache, "rm.py", "--output-format", "json")
    types = [(d["code"], d["location"]["row"]) for d in json.loads(out)]
    assert types == [("VIM031", 3)], out
    main(["rollout", "rm.py", "--output-format", "json"])
    rollout = [(d["code"], d["location"]["row"])
               for d in json.loads(capsys.readouterr().out) if d["code"] == "VIM031"]
    assert rollout == types


def test_prompt_is_text_in_launches_that_apply_the_chat_template(
        repo: Path, types_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Launch-aware types: with `--apply-chat-template` in every launch naming the hook,
    `sample.prompt` is `str` (in the hook and in the helpers it reaches); without it the
    message-list case is reported."""
    (repo / "rm.py").write_text(
        "def _words(s):\n    return s.prompt.lower().split()\n\n\n"
        "async def reward_func(args, sample):\n    text = sample.prompt.lower()\n"
        "    return float(len(_words(sample)) + len(text))\n")
    # annotated with the contract's own `Sample`, as examples/real_model/reward.py is
    (repo / "rm_typed.py").write_text(
        "from vime.utils.types import Sample\n\n\n"
        "async def reward(args, sample: Sample) -> float:\n"
        "    return float(sample.prompt.lower() == 'x')\n")
    (repo / "run.sh").write_text("vime train --custom-rm-path rm.reward_func "
                                 "--apply-chat-template\n"
                                 "vime train --custom-rm-path rm_typed.reward --apply-chat-template\n")
    assert _run(capsys, types_cache, "rm.py", "rm_typed.py")[:2] == (0, "All checks passed!\n")
    (repo / "run.sh").write_text("vime train --custom-rm-path rm.reward_func\n")
    code, out, _ = _run(capsys, types_cache, "rm.py", "--output-format", "json")
    assert code == 1
    assert [(d["code"], d["location"]["row"]) for d in json.loads(out)] == [
        ("VIM201", 2), ("VIM201", 6)]


def test_the_launch_beside_a_hook_module_types_it(
        repo: Path, types_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A recipe folder whose script puts the folder on PYTHONPATH and names `rm.reward_func`
    (the module beside it), with `--apply-chat-template`: the launch binds the hook, so
    `sample.prompt` is `str` there, as it is at run time (it was the contract's union, a
    false VIM201, while the script's path was "not found")."""
    recipe = repo / "recipes" / "boxed"
    recipe.mkdir(parents=True)
    (recipe / "rm.py").write_text(
        "async def reward_func(args, sample, **kwargs):\n"
        "    full = sample.prompt + sample.response\n"
        "    return float('boxed' in full)\n")
    (recipe / "run.sh").write_text(
        'SCRIPT_DIR="$(cd "$(dirname "$0")" && pwd)"\n'
        "PYTHONPATH=$SCRIPT_DIR vime train \\\n  --apply-chat-template \\\n"
        "  --custom-rm-path \\\n    rm.reward_func\n")
    assert _run(capsys, types_cache, "recipes")[:2] == (0, "All checks passed!\n")
    (recipe / "run.sh").write_text("PYTHONPATH=. vime train --custom-rm-path rm.reward_func\n")
    code, out, _ = _run(capsys, types_cache, "recipes", "--output-format", "json")
    assert code == 1
    assert [(d["code"], d["location"]["row"]) for d in json.loads(out)] == [("VIM201", 2)]


def test_a_launch_typed_sample_keeps_the_contracts_words(
        repo: Path, types_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Under a launch with `--apply-chat-template` the hook's sample is the launch's narrowed
    Sample: an extra attribute stored on it is VIM031 (a warning: it works at run time), not
    an error, as without the launch; and no message names vime-lint's internal class."""
    (repo / "gen.py").write_text(
        "async def generate(args, sample, sampling_params):\n"
        "    sample.turns = 3\n"
        "    sample.response = sample.prompt.upper()\n"
        "    if len(sample) > 1:\n        sample.response_length = 1\n"
        "    return sample\n")
    for launch in ("vime train --custom-generate-function-path gen.generate\n",
                   "vime train --custom-generate-function-path gen.generate "
                   "--apply-chat-template\n"):
        (repo / "run.sh").write_text(launch)
        _, out, _ = _run(capsys, types_cache, "gen.py", "--output-format", "json")
        found = {(d["code"], d["location"]["row"]): d["message"] for d in json.loads(out)}
        assert set(found) - {("VIM201", 3)} == {("VIM031", 2), ("VIM201", 4)}, (launch, found)
        assert "_vime_t_" not in out, out
        assert "`sample` is `Sample`" in found[("VIM201", 4)], found
        assert [d["severity"] for d in json.loads(out) if d["code"] == "VIM031"] == ["warning"]
    assert ("VIM201", 3) not in found  # the launch's prompts are text: .upper() is fine


def test_reward_is_a_number_in_launches_without_a_reward_key(
        repo: Path, types_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Launch-aware types: without `--reward-key` in the launches naming the hook, a sample's
    reward is `float | None` (arithmetic on it is no contract error); with it, the dict case
    is reported."""
    (repo / "gen.py").write_text(
        "async def generate(args, sample, sampling_params):\n"
        "    sample.metadata['bonus'] = sample.reward + 1.0\n    return sample\n")
    (repo / "run.sh").write_text("vime train --custom-generate-function-path gen.generate\n")
    assert _run(capsys, types_cache, "gen.py")[:2] == (0, "All checks passed!\n")
    _, out, _ = _run(capsys, types_cache, "gen.py", "--extend-select", "VIM204",
                     "--output-format", "json")
    assert [(d["code"], d["location"]["row"]) for d in json.loads(out)] == [("VIM204", 2)]
    (repo / "run.sh").write_text("vime train --custom-generate-function-path gen.generate "
                                 "--reward-key acc\n")
    _, out, _ = _run(capsys, types_cache, "gen.py", "--output-format", "json")
    assert [(d["code"], d["location"]["row"]) for d in json.loads(out)] == [("VIM201", 2)]


def test_this_repository_runs_the_types_hook_on_its_rollout_code_and_examples() -> None:
    import yaml

    root = Path(__file__).resolve().parents[3]
    config = yaml.safe_load((root / ".pre-commit-config.yaml").read_text())
    hooks = {h["id"]: h for r in config["repos"] for h in r["hooks"]}
    types = hooks["vime-lint-types"]
    assert types["entry"].split()[1:3] == ["types", "--force-exclude"]
    assert types["files"] == hooks["vime-lint"]["files"]
    assert types["exclude"] == hooks["vime-lint"]["exclude"]


def test_a_relative_import_in_a_hook_module_is_followed(
        repo: Path, types_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The copy mypy checks is a top-level module: `from .helpers import x` is made absolute
    (a relative import stopped mypy: "No parent module -- cannot perform relative import")."""
    (repo / "pkg").mkdir()
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "helpers.py").write_text("def bonus() -> str:\n    return 'x'\n")
    (repo / "pkg" / "rm.py").write_text(
        "from .helpers import bonus\n\n\nasync def reward_func(args, sample):\n"
        "    return bonus()\n")
    code, out, err = _run(capsys, types_cache, "pkg/rm.py", "--output-format", "json")
    assert code == 1, err
    assert [(d["code"], d["location"]["row"]) for d in json.loads(out)] == [("VIM200", 5)]


def test_a_relative_import_in_a_folder_that_is_no_package_name_is_followed(
        repo: Path, types_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A hook module in `recipes/tau2-bench/` (a folder name Python cannot import as a
    package) with `from .helpers import bonus`: the import is read as the sibling module
    (the hook's folder is on mypy's path) instead of `from recipes.tau2-bench.helpers`, a
    syntax error that stopped mypy (exit 2) and lost every other file's findings too."""
    recipe = repo / "recipes" / "tau2-bench"
    recipe.mkdir(parents=True)
    (repo / "recipes" / "__init__.py").write_text("")
    (recipe / "__init__.py").write_text("")
    (recipe / "helpers.py").write_text("def bonus() -> str:\n    return 'x'\n")
    (recipe / "rm.py").write_text(
        "from .helpers import bonus\nfrom . import helpers as h\n\n\n"
        "async def reward_func(args, sample):\n"
        "    if h.bonus():\n        return bonus()\n    return 0.0\n")
    (repo / "gen.py").write_text(
        "async def generate(args, sample, sampling_params):\n"
        "    sample.status = 'completed'\n    return sample\n")
    code, out, err = _run(capsys, types_cache, "recipes", "gen.py", "--output-format", "json")
    assert "mypy failed" not in err, err
    assert code == 1, err
    assert sorted((d["filename"], d["code"], d["location"]["row"]) for d in json.loads(out)) == [
        ("gen.py", "VIM202", 2), ("recipes/tau2-bench/rm.py", "VIM200", 7)]


def test_a_package_module_named_like_the_stdlib_does_not_stop_mypy(
        repo: Path, types_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A hook package with its own `types.py` (reached as `.types`): the hook's folder is not
    a root of its own there (`types` would be a top-level module shadowing the stdlib's, and
    mypy stopped: "This file shadows library module"); the module is checked through its
    package, and its class types the hook's helper."""
    (repo / "pkg").mkdir()
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "types.py").write_text(
        "class Verdict:\n    def score(self) -> str:\n        return 'x'\n")
    (repo / "pkg" / "rm.py").write_text(
        "from .types import Verdict\n\n\nasync def reward_func(args, sample):\n"
        "    return Verdict().score()\n")
    code, out, err = _run(capsys, types_cache, "pkg/rm.py", "--output-format", "json")
    assert "mypy failed" not in err, err
    assert code == 1, err
    assert [(d["code"], d["location"]["row"]) for d in json.loads(out)] == [("VIM200", 5)]


def test_prompt_is_text_when_every_row_of_the_launchs_data_is(
        repo: Path, types_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Launch-aware types from the data itself: without `--apply-chat-template`, a launch whose
    `--prompt-data` holds a string prompt in every row gives `sample.prompt: str`; one message
    list, another source of samples (`--eval-prompt-data`) or a path that is not literal keep
    the contract's `str | list[...]`, and the message-list case is reported."""
    (repo / "rm.py").write_text("async def reward_func(args, sample):\n"
                                "    return float(len(sample.prompt.lower()))\n")
    (repo / "data").mkdir()
    rows = [{"question": "1+1?", "input": ["not", "text"]}, {"question": "2+2?"}]
    (repo / "data" / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    launch = ("vime train --custom-rm-path rm.reward_func \\\n"
              "    --prompt-data data/train.jsonl --input-key question\n")
    (repo / "run.sh").write_text(launch)
    assert _run(capsys, types_cache, "rm.py")[:2] == (0, "All checks passed!\n")
    reported = (1, [("VIM201", 2)])

    def found() -> tuple[int, list[tuple[str, int]]]:
        code, out, _ = _run(capsys, types_cache, "rm.py", "--output-format", "json")
        return code, [(d["code"], d["location"]["row"]) for d in json.loads(out)]

    (repo / "run.sh").write_text(launch.replace("question", "input"))  # a list in row 1
    assert found() == reported
    (repo / "run.sh").write_text(launch + "    --eval-prompt-data aime data/aime.jsonl\n")
    assert found() == reported
    (repo / "run.sh").write_text(launch.replace("data/train", "$DATA/train"))
    assert found() == reported
    (repo / "run.sh").write_text(launch.replace("--input-key ", "--input-key="))
    assert _run(capsys, types_cache, "rm.py")[:2] == (0, "All checks passed!\n")
    # the data changes under an unchanged launch: a message list now (the result cache too)
    rows[1]["question"] = [{"role": "user", "content": "2+2?"}]  # type: ignore[assignment]
    (repo / "data" / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert found() == reported


def test_launch_values_are_read_from_scripts_and_configs(tmp_path: Path) -> None:
    from vime_lint.typecheck.launch_data import _value

    assert _value("vime train --prompt-data d.jsonl --x 1\n", "--prompt-data") == "d.jsonl"
    assert _value("vime train --prompt-data='d.jsonl@[0:10]'\n", "--prompt-data") \
        == "d.jsonl@[0:10]"
    assert _value("train:\n  prompt_data: data/d.jsonl\n", "--prompt-data") == "data/d.jsonl"
    assert _value("--prompt-data ${D}/d.jsonl\n", "--prompt-data") is None
    assert _value("--prompt-data a.jsonl\n--prompt-data b.jsonl\n", "--prompt-data") is None
    assert _value("--prompt-data-dir x\n", "--prompt-data") is None
