"""The vime-lint command line: formats, exit codes, configuration, fixes, discovery, robustness."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vime_lint.cli import main

pytestmark = pytest.mark.unit

BAD = (
    "from vime.utils.types import Sample\n"
    "\n"
    "\n"
    "def generate_rollout(args, rollout_id, data_source, evaluation):\n"
    "    sample = Sample(prompt='p')\n"
    "    sample.status = 'completed'\n"
    "    if evaluation:\n"
    "        return None\n"
    "    return None\n"
)
GOOD = (
    "from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput\n"
    "\n"
    "\n"
    "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
    "    if evaluation:\n"
    "        return RolloutFnEvalOutput(data={})\n"
    "    return RolloutFnTrainOutput(samples=data_source.get_samples(1))\n"
)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_concise_golden_and_exit_1(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "r.py").write_text(BAD)
    code, out, _ = _run(capsys, "rollout", "r.py", "--no-show-fixes")
    assert code == 1
    assert out == (
        "r.py:4:5: VIM001 rollout function `generate_rollout` declares `evaluation` without a "
        "default; expected `evaluation=False`\n"
        "r.py:6:5: VIM007 `status` is set to the string 'completed' instead of a "
        "`Sample.Status` member\n"
        "r.py:8:16: VIM003 rollout function `generate_rollout` returns None instead of "
        "RolloutFnTrainOutput / RolloutFnEvalOutput on the evaluation=True path\n"
        "r.py:9:12: VIM003 rollout function `generate_rollout` returns None instead of "
        "RolloutFnTrainOutput / RolloutFnEvalOutput on the evaluation=False path\n"
        "Found 4 finding(s): 4 error(s), 0 warning(s).\n"
        "[*] 2 fixable with `--fix`.\n")
    # the default: each finding's fix on the lines after it (Ruff's `help:` lines)
    code, out, _ = _run(capsys, "rollout", "r.py")
    assert code == 1
    assert out.splitlines()[:6] == [
        "r.py:4:5: VIM001 rollout function `generate_rollout` declares `evaluation` without a "
        "default; expected `evaluation=False`",
        "  help: add the default: `evaluation=False`",
        "  fix: Add the default `evaluation=False` (--fix)",
        "r.py:6:5: VIM007 `status` is set to the string 'completed' instead of a "
        "`Sample.Status` member",
        "  help: use Sample.Status.COMPLETED / TRUNCATED / ABORTED / FAILED",
        "  fix: Use `Sample.Status.COMPLETED` (--fix)"]
    assert out.count("  help: return RolloutFnTrainOutput(samples=groups)") == 2


def test_clean_exit_0(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "r.py").write_text(GOOD)
    assert _run(capsys, "rollout", ".") == (0, "All checks passed!\n", "")
    # The one-line summary is for people: machine formats stay unchanged.
    assert _run(capsys, "rollout", ".", "--output-format", "json") == (0, "[]\n", "")


def test_full_format_has_source_line_and_caret(repo: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "r.py").write_text(BAD)
    code, out, _ = _run(capsys, "rollout", "r.py", "--output-format", "full", "--select",
                        "VIM007")
    assert code == 1
    assert out.startswith(
        "r.py:6:5: VIM007 [error] `status` is set to the string 'completed' instead of a "
        "`Sample.Status` member\n"
        "  |\n"
        "6 |     sample.status = 'completed'\n"
        "  |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        "  = help: use Sample.Status.COMPLETED / TRUNCATED / ABORTED / FAILED\n"
        "  = fix (safe): Use `Sample.Status.COMPLETED`\n")


def test_json_carries_fixes_and_safety(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "r.py").write_text(BAD)
    code, out, _ = _run(capsys, "rollout", "r.py", "--output-format", "json")
    assert code == 1
    data = json.loads(out)
    assert [d["code"] for d in data] == ["VIM001", "VIM007", "VIM003", "VIM003"]
    first = data[0]
    assert first["location"] == {"row": 4, "column": 5}
    assert first["fix"] == {"applicability": "safe", "message": "Add the default `evaluation=False`",
                            "edits": [{"content": "=False", "location": {"row": 4, "column": 63},
                                       "end_location": {"row": 4, "column": 63}}]}
    assert data[2]["fix"] is None and data[2]["severity"] == "error"


def test_github_format(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "r.py").write_text(BAD)
    _, out, _ = _run(capsys, "rollout", "r.py", "--output-format", "github", "--select", "VIM001")
    assert out == ("::error title=vime-lint (VIM001),file=r.py,line=4,col=5,endLine=4,"
                   "endColumn=21::r.py:4:5: VIM001 rollout function `generate_rollout` declares "
                   "`evaluation` without a default; expected `evaluation=False`\n")


def test_sarif_2_1_0_structure(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "r.py").write_text(BAD)
    _, out, _ = _run(capsys, "rollout", "r.py", "--output-format", "sarif")
    sarif = json.loads(out)
    assert sarif["version"] == "2.1.0" and "sarif-2.1.0" in sarif["$schema"]
    (run,) = sarif["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "vime-lint"
    ids = [r["id"] for r in driver["rules"]]
    assert ids == sorted(set(ids)) and "VIM001" in ids
    assert len(run["results"]) == 4
    for res in run["results"]:
        assert driver["rules"][res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["level"] in ("error", "warning")
        region = res["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1
        assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "r.py"
    assert run["results"][0]["fixes"][0]["artifactChanges"][0]["replacements"]


def test_statistics(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "r.py").write_text(BAD)
    _, out, _ = _run(capsys, "rollout", "r.py", "--statistics")
    assert "    2\tVIM003\t    raw-rollout-return\n" in out
    assert "    1\tVIM001\t[*] rollout-function-signature\n" in out


def test_fix_writes_file_and_is_idempotent(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = repo / "r.py"
    path.write_text(BAD)
    code, out, _ = _run(capsys, "rollout", "r.py", "--fix")
    assert code == 1  # the two `return None` remain
    text = path.read_text()
    assert "evaluation=False" in text and "Sample.Status.COMPLETED" in text
    code2, _, _ = _run(capsys, "rollout", "r.py", "--fix", "--exit-non-zero-on-fix",
                       "--select", "VIM001,VIM007")
    assert code2 == 0 and path.read_text() == text


def test_exit_non_zero_on_fix(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "r.py").write_text(BAD)
    code, _, _ = _run(capsys, "rollout", "r.py", "--fix", "--select", "VIM001",
                      "--exit-non-zero-on-fix")
    assert code == 1
    (repo / "s.py").write_text(BAD)
    code, _, _ = _run(capsys, "rollout", "s.py", "--fix", "--select", "VIM001")
    assert code == 0


def test_diff_writes_nothing(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "r.py").write_text(BAD)
    code, out, _ = _run(capsys, "rollout", "r.py", "--diff", "--select", "VIM001")
    assert code == 1
    assert "-def generate_rollout(args, rollout_id, data_source, evaluation):" in out
    assert "+def generate_rollout(args, rollout_id, data_source, evaluation=False):" in out
    assert (repo / "r.py").read_text() == BAD


def test_unsafe_fix_rebuilds_a_train_path_dict_and_says_when_it_cannot(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A dict returned on the train path (an error at run time) got no fix though VIM003 is
    listed as fixable: a literal of RolloutFnTrainOutput's keys is rebuilt by --unsafe-fixes,
    any other dict says why it is not."""
    src = ("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
           "    if evaluation:\n        return RolloutFnEvalOutput(data={})\n"
           "    groups = data_source.get_samples(1)\n"
           "    return {\"samples\": groups, \"metrics\": {\"rollout/x\": 1.0}}\n")
    (repo / "r.py").write_text(src)
    code, out, _ = _run(capsys, "rollout", "r.py", "--select", "VIM003")
    assert code == 1 and "no automatic fix" not in out and "fix:" in out, out
    code, _, _ = _run(capsys, "rollout", "r.py", "--fix", "--unsafe-fixes", "--select", "VIM003")
    assert code == 0
    assert (repo / "r.py").read_text() == (
        "from vime.rollout.base_types import RolloutFnTrainOutput\n" + src.replace(
            "return {\"samples\": groups, \"metrics\": {\"rollout/x\": 1.0}}",
            "return RolloutFnTrainOutput(samples=groups, metrics={\"rollout/x\": 1.0})"))
    built = src.replace("    return {", "    out = {").replace("1.0}}\n", "1.0}}\n    return out\n")
    (repo / "r.py").write_text(built)
    code, out, _ = _run(capsys, "rollout", "r.py", "--fix", "--unsafe-fixes", "--select", "VIM003")
    assert code == 1 and (repo / "r.py").read_text() == built
    assert ("no automatic fix: only a dict literal with the keys of RolloutFnTrainOutput "
            "(samples, metrics) is rewritten") in out, out
    both = ("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
            "    return {\"samples\": data_source.get_samples(1)}\n")
    (repo / "r.py").write_text(both)
    code, out, _ = _run(capsys, "rollout", "r.py", "--fix", "--unsafe-fixes", "--select", "VIM003")
    assert code == 1 and (repo / "r.py").read_text() == both
    assert "no automatic fix: no `if evaluation:` splits this return" in out, out


def test_unsafe_fix_only_with_flag(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = ("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
           "    if evaluation:\n        return RolloutFnEvalOutput(data={})\n"
           "    return [data_source.get_samples(1)]\n")
    (repo / "r.py").write_text(src)
    _run(capsys, "rollout", "r.py", "--fix", "--select", "VIM003")
    assert (repo / "r.py").read_text() == src
    code, _, _ = _run(capsys, "rollout", "r.py", "--fix", "--unsafe-fixes", "--select", "VIM003")
    assert code == 0
    assert (repo / "r.py").read_text() == (
        "from vime.rollout.base_types import RolloutFnTrainOutput\n" + src.replace(
            "return [data_source.get_samples(1)]",
            "return RolloutFnTrainOutput(samples=[data_source.get_samples(1)])"))


def test_select_ignore_prefixes(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "r.py").write_text(BAD)
    _, out, _ = _run(capsys, "rollout", "r.py", "--select", "VIM00", "--ignore", "VIM003")
    assert "VIM003" not in out and "VIM001" in out and "VIM007" in out
    _, out, _ = _run(capsys, "rollout", "r.py", "--select", "VIM001", "--extend-select", "VIM007")
    assert "VIM001" in out and "VIM007" in out and "VIM003" not in out
    code, _, err = _run(capsys, "rollout", "r.py", "--select", "XYZ1")
    assert code == 2 and "unknown rule selector `XYZ1`" in err


def test_exit_zero(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "r.py").write_text(BAD)
    assert _run(capsys, "rollout", "r.py", "--exit-zero")[0] == 0


def test_usage_error_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys, "rollout", "--output-format", "xml")[0] == 2
    assert _run(capsys, "frobnicate")[0] == 2
    assert _run(capsys)[0] == 2


def test_stdin(repo: Path, capsys: pytest.CaptureFixture[str],
               monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(BAD.encode())))
    code, out, _ = _run(capsys, "rollout", "-", "--stdin-filename", "my.py", "--select", "VIM001")
    assert code == 1 and out.startswith("my.py:4:5: VIM001 ")


def test_config_select_per_file_ignores_and_unknown_key(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "r.py").write_text(BAD)
    (repo / "legacy").mkdir()
    (repo / "legacy" / "old.py").write_text(BAD)
    (repo / "pyproject.toml").write_text(
        "[tool.vime_lint]\nselect = ['VIM001', 'VIM007']\n"
        "per-file-ignores = { 'legacy/*' = ['VIM007'] }\n")
    _, out, _ = _run(capsys, "rollout", ".")
    assert "r.py:6:5: VIM007" in out and "legacy/old.py:4:5: VIM001" in out
    assert "legacy/old.py:6:5: VIM007" not in out and "VIM003" not in out
    (repo / "pyproject.toml").write_text("[tool.vime_lint]\nselct = ['VIM001']\n")
    code, out, err = _run(capsys, "rollout", ".")
    assert code == 2 and "unknown key `selct`" in err and "pyproject.toml" in err
    (repo / "pyproject.toml").write_text("[tool.vime_lint]\nselect = 'VIM001\n")
    code, _, err = _run(capsys, "rollout", ".")
    assert code == 2 and "invalid TOML" in err
    (repo / "pyproject.toml").write_text("[tool.vime_lint]\nhooks = { no_such_hook = 'a.b' }\n")
    code, _, err = _run(capsys, "rollout", ".")
    assert code == 2 and "unknown hook `no_such_hook`" in err


def test_config_option_and_missing_file(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "r.py").write_text(BAD)
    (repo / "lint.toml").write_text("select = ['VIM007']\n")
    _, out, _ = _run(capsys, "rollout", "r.py", "--config", "lint.toml")
    assert "VIM007" in out and "VIM001" not in out
    code, _, err = _run(capsys, "rollout", "r.py", "--config", "nope.toml")
    assert code == 2 and "nope.toml" in err


def test_exclude_and_force_exclude(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "gen").mkdir()
    (repo / "gen" / "r.py").write_text(BAD)
    (repo / "ok.py").write_text("x = 1\n")
    assert _run(capsys, "rollout", ".", "--extend-exclude", "gen")[0] == 0
    assert _run(capsys, "rollout", "gen/r.py", "--extend-exclude", "gen")[0] == 1
    assert _run(capsys, "rollout", "gen/r.py", "--extend-exclude", "gen",
                "--force-exclude")[0] == 0
    assert _run(capsys, "rollout", ".", "--exclude", "gen")[0] == 0


def test_discovery_from_launch_script_and_pyproject(repo: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    pkg = repo / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text("def my_rollout(args, rollout_id, data):\n    pass\n"
                                "def score(args, sample):\n    return 1.0\n"
                                "def filt(args, samples):\n    return True\n")
    (repo / "run.sh").write_text("python train.py \\\n  --rollout-function-path pkg.mod.my_rollout"
                                 " \\\n  --custom-rm-path=pkg.mod.score --eval-interval 5\n")
    (repo / "cfg.yaml").write_text("dynamic_sampling_filter_path: pkg.mod.filt\n")
    (repo / "pyproject.toml").write_text(
        "[tool.vime_lint]\nhooks = { '--custom-generate-function-path' = 'pkg.missing.gen' }\n")
    code, out, _ = _run(capsys, "rollout", "--show-hooks", ".")
    assert code == 0
    assert "pkg/mod.py:1: my_rollout -> --rollout-function-path [run.sh:2 " \
           "(--rollout-function-path)]" in out
    assert "pkg/mod.py:3: score -> --custom-rm-path [run.sh:3 (--custom-rm-path)]" in out
    assert "pkg/mod.py:5: filt -> --dynamic-sampling-filter-path [cfg.yaml:1 " \
           "(--dynamic-sampling-filter-path)]" in out
    assert "(not found): pkg.missing.gen -> --custom-generate-function-path " \
           "[pyproject.toml [tool.vime_lint] hooks]" in out
    code, out, _ = _run(capsys, "rollout", "pkg")
    assert code == 1
    assert "pkg/mod.py:1:5: VIM001" in out  # bound by the launch script, not by its name
    assert "pkg/mod.py:3:5: VIM004 --custom-rm-path `score` is a plain def" in out
    # --eval-interval in the launch script makes VIM002 an error; the JSON says so.
    _, out, _ = _run(capsys, "rollout", "pkg", "--output-format", "json", "--select", "VIM002")
    assert json.loads(out) == []  # no evaluation parameter: VIM001's finding, not VIM002's


def test_annotation_discovery(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "m.py").write_text("from vime.contract.protocols import RewardFunction\n"
                               "def score(args, sample):\n    return 1.0\n"
                               "_rm: RewardFunction = score\n")
    _, out, _ = _run(capsys, "rollout", "--show-hooks", "m.py")
    assert "m.py:2: score -> --custom-rm-path [annotation `RewardFunction`]" in out


def test_noqa_suppression(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = BAD.replace("evaluation):", "evaluation):  # noqa: VIM001").replace(
        "'completed'", "'completed'  # noqa")
    (repo / "r.py").write_text(src + "x = 1  # noqa: VIM016\n")
    _, out, _ = _run(capsys, "rollout", "r.py", "--select", "VIM001,VIM007,VIM09")
    assert "r.py:4:5: VIM001" not in out
    assert "r.py:6:5: VIM007" in out  # a bare noqa silences nothing ...
    assert "r.py:6:34: VIM090 bare `# noqa` does not silence vime-lint" in out  # ... and is reported
    assert "r.py:10:8: VIM091 unused suppression of VIM016" not in out  # VIM016 not enabled
    _, out, _ = _run(capsys, "rollout", "r.py")
    assert "r.py:10:8: VIM091 unused suppression of VIM016" in out
    (repo / "f.py").write_text("# vime-lint: noqa: VIM001, VIM003\n" + BAD)
    _, out, _ = _run(capsys, "rollout", "f.py")
    assert "VIM001" not in out and "VIM003 " not in out and "VIM007" in out


def test_rules_rule_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "rules")
    assert code == 0 and out.splitlines()[0].startswith("VIM001  rollout-function-signature")
    code, out, _ = _run(capsys, "rule", "VIM001")
    assert code == 0 and out.startswith("## VIM001 `rollout-function-signature`")
    assert "### What it does" in out and "### Fix safety" in out
    assert _run(capsys, "rule", "VIM999")[0] == 2
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("vime-lint 0.1.0")


def test_check_dispatches_to_runtime_harness(monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    import types

    fake = types.ModuleType("vime_lint.runtime.harness")
    seen: list[list[str]] = []
    fake.main = lambda argv: seen.append(argv) or 0  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vime_lint.runtime.harness", fake)
    import vime_lint.runtime as runtime_pkg

    monkeypatch.setattr(runtime_pkg, "harness", fake, raising=False)
    assert main(["check", "--rollout-function-path", "a.b"]) == 0
    assert seen == [["--rollout-function-path", "a.b"]]


RUNTIME_HOOKS = Path(__file__).resolve().parents[2] / "fixtures" / "runtime_hooks"


def _vime_lint_check(tmp_path: Path, function: str) -> subprocess.CompletedProcess[str]:
    """The installed ``vime-lint check`` on one fixture rollout function, in a subprocess."""
    script = Path(sys.executable).with_name("vime-lint")
    assert script.is_file(), f"{script} is missing: install the package (make setup)"
    env = {**os.environ, "PYTHONPATH": str(RUNTIME_HOOKS)}
    return subprocess.run([str(script), "check", "--rollout-function-path", function,
                           "--rollout-batch-size", "2", "--n-samples-per-prompt", "2"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)


def test_real_check_on_the_reference_module_exits_0(tmp_path: Path) -> None:
    proc = _vime_lint_check(tmp_path, "vime_ref_good.generate_rollout")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("vime-lint check: runtime contract checks\n")
    for line in ("VIM100  hook-signature-at-load        pass",
                 "VIM101  rollout-result-type           pass",
                 "VIM103  group-size                    pass",
                 "VIM108  loss-mask                     pass"):
        assert line in proc.stdout, line
    assert " error: " not in proc.stdout and "FAIL" not in proc.stdout
    assert proc.stdout.rstrip().endswith("vime-lint check: clean")
    assert "Traceback" not in proc.stderr


def test_real_check_on_broken_hooks_exits_1_with_ids(tmp_path: Path) -> None:
    proc = _vime_lint_check(tmp_path, "vime_ref_broken.generate_rollout")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout
    # vime_ref_broken.generate_rollout: loss_mask one entry short (VIM108), a dict reward without
    # --reward-key (VIM110), a string status (VIM111), the train output on the eval path (VIM101).
    for inv_id, slug, errors in (("VIM101", "rollout-result-type", 1), ("VIM108", "loss-mask", 4),
                                 ("VIM110", "reward-value", 4), ("VIM111", "status", 4)):
        assert f"{inv_id}  {slug:<28}  FAIL ({errors} error(s))" in out, inv_id
        assert out.count(f"\n{inv_id} error: ") == 1, inv_id   # grouped: one entry each
        if errors > 1:
            assert f"  {errors} findings at samples[*][*]." in out, inv_id
    assert ("VIM108 error: samples[0][0].loss_mask (index=0) has 1 entries, expected "
            "response_length=2") in out
    assert "VIM111 error: samples[0][0].status (index=0) is 'completed' (str)" in out
    assert "samples[1][0].status (index=2) and 1 more" in out
    # the hook's own file and the line of its `def` lead the context, the dotted path stays
    broken = RUNTIME_HOOKS / "vime_ref_broken.py"
    assert (f"  in {broken}:6: rollout `vime_ref_broken.generate_rollout` "
            "(--rollout-function-path) step 0") in out
    assert "VIM103  group-size                    pass" in out  # 2 groups of 2: right shape
    assert out.rstrip().endswith("vime-lint check: 13 error(s), 0 warning(s)")
    assert "Traceback" not in proc.stderr


def test_check_without_harness_exits_2(monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "vime_lint.runtime.harness", None)
    import vime_lint.runtime as runtime_pkg

    monkeypatch.delattr(runtime_pkg, "harness", raising=False)
    assert main(["check"]) == 2
    assert "runtime harness is not available" in capsys.readouterr().err


def test_startup_imports_no_heavy_module() -> None:
    code = ("import sys; from vime_lint.cli import main\n"
            "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
            "heavy = [m for m in ('torch', 'ray', 'vllm', 'transformers', 'httpx', 'libcst') "
            "if m in sys.modules]\nprint(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).parents[3]).stdout
    assert out.strip().endswith("[]")


def test_docs_rules_md_in_sync() -> None:
    from vime_lint.rules_page import rules_page

    root = Path(__file__).parents[3]
    assert (root / "docs" / "rules.md").read_text() == rules_page(), \
        "docs/rules.md is stale: run python scripts/document_rules.py"


def test_contract_reference_module_lints_clean(repo: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The repository's copy of the contract's reference module (every v1 hook written right;
    `vime-lint check` runs the same file in tests/unit/runtime/test_harness.py) lints clean."""
    reference = Path(__file__).parents[2] / "fixtures" / "runtime_hooks" / "vime_ref_good.py"
    text = reference.read_text()
    (repo / "ref.py").write_text(text)
    lines = {line.split("def ", 1)[1].split("(", 1)[0]: n
             for n, line in enumerate(text.splitlines(), 1) if line.startswith(("def ", "async def "))}
    (repo / "pyproject.toml").write_text(
        "[tool.vime_lint.hooks]\n'--custom-generate-function-path' = 'ref.generate'\n"
        "'--custom-rm-path' = 'ref.reward_func'\n"
        "'--dynamic-sampling-filter-path' = 'ref.dynamic_filter'\n")
    code, out, err = _run(capsys, "rollout", "--show-hooks", "ref.py")
    assert code == 0 and err == ""
    for name, arg in (("generate_rollout", "--rollout-function-path"),
                      ("generate", "--custom-generate-function-path"),
                      ("reward_func", "--custom-rm-path"),
                      ("dynamic_filter", "--dynamic-sampling-filter-path")):
        assert f"ref.py:{lines[name]}: {name} -> {arg} " in out, out  # linted as that hook
    assert _run(capsys, "rollout", "ref.py") == (0, "All checks passed!\n", "")


def test_symlink_loop_and_missing_path(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = repo / "d"
    d.mkdir()
    (d / "ok.py").write_text(GOOD)
    os.symlink(d, d / "loop")
    os.symlink(repo / "a_link", repo / "b_link")
    os.symlink(repo / "b_link", repo / "a_link")
    code, out, err = _run(capsys, "rollout", "d")
    assert code == 0 and "Traceback" not in err
    code, _, err = _run(capsys, "rollout", "a_link")
    assert code == 2 and "a_link" in err and "Traceback" not in err
    code, _, err = _run(capsys, "rollout", "no_such.py")
    assert code == 2 and "no_such.py" in err


def test_bad_files_get_diagnostics_not_tracebacks(repo: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "syntax.py").write_text("def f(:\n    pass\n")
    (repo / "latin.py").write_bytes(b"x = '\xff\xfe'\n")
    (repo / "empty.py").write_text("")
    code, out, err = _run(capsys, "rollout", "syntax.py")
    # Python's own position and message, the source line and a caret under the column.
    assert code == 2 and err == ("syntax.py:1:7: error: SyntaxError: invalid syntax\n"
                                 "    def f(:\n          ^\n")
    assert "All checks passed" not in out
    (repo / "unclosed.py").write_text("def f():\n    x = [1,\n    return x\n")
    code, _, err = _run(capsys, "rollout", "unclosed.py")
    assert code == 2 and err.startswith("unclosed.py:2:9: error: SyntaxError: '[' was never closed")
    code, out, err = _run(capsys, "rollout", "latin.py")
    assert code == 2 and "latin.py: error: cannot decode" in err
    assert _run(capsys, "rollout", "empty.py") == (0, "All checks passed!\n", "")


def test_directory_of_thousands_of_files(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    many = repo / "many"
    many.mkdir()
    for i in range(2000):
        (many / f"m{i}.py").write_text(f"x{i} = {i}\n")
    (many / "bad.py").write_text(BAD)
    code, out, _ = _run(capsys, "rollout", "many", "--select", "VIM001")
    assert code == 1 and out.count("VIM001") == 1


def test_project_lints_itself(monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    """The project's own rollout code and examples are clean under its [tool.vime_lint]."""
    root = Path(__file__).parents[3]
    monkeypatch.chdir(root)
    code, out, err = _run(capsys, "rollout", "vime/rollout", "examples", "--extend-exclude",
                          "examples/broken")
    assert (code, out, err) == (0, "All checks passed!\n", "")
    # The deliberately broken examples are still linted when asked for, with findings.
    code, out, _ = _run(capsys, "rollout", "examples/broken", "--select", "VIM001")
    assert code == 1 and "examples/broken/stale_signature.py:6:5: VIM001" in out


def _files(**files: str | bytes) -> dict[str, str | bytes]:
    return files


#: Bad input to `vime-lint rollout` / `types`: the files of the project, the command line and
#: what its one error line must say (exit 2, nothing on stdout but the summary, no traceback).
BAD_INPUTS = [
    ("missing path", _files(), ["rollout", "no_such.py"], "no_such.py: error: No such file"),
    ("binary file", _files(**{"b.py": bytes(range(256))}), ["rollout", "b.py"],
     "b.py: error: cannot decode"),
    ("non-UTF-8 file", _files(**{"l.py": b"x = '\xff\xfe'\n"}), ["rollout", "l.py"],
     "l.py: error: cannot decode"),
    ("unknown --select", _files(**{"r.py": "x = 1\n"}), ["rollout", "r.py", "--select", "XYZ1"],
     "unknown rule selector `XYZ1`"),
    ("bad [tool.vime_lint]", _files(**{"pyproject.toml": "[tool.vime_lint]\nselct = []\n",
                                       "r.py": "x = 1\n"}), ["rollout", "r.py"],
     "unknown key `selct`"),
    ("empty --select", _files(**{"r.py": "x = 1\n"}), ["rollout", "r.py", "--select", ""],
     "--select names no rule code, which would turn every rule off"),
    ("--select of commas", _files(**{"r.py": "x = 1\n"}), ["rollout", "r.py", "--select", ","],
     "--select names no rule code"),
    ("types: empty --select", _files(**{"r.py": "x = 1\n"}), ["types", "r.py", "--select", ""],
     "--select names no rule code"),
    ("no Python files", _files(**{"docs/readme.txt": "hi\n"}), ["rollout", "docs"],
     "vime-lint: no Python files found under docs"),
    ("no Python files (default path)", _files(), ["rollout"],
     "vime-lint: no Python files found under ."),
    ("types: no Python files", _files(**{"docs/readme.txt": "hi\n"}), ["types", "docs"],
     "vime-lint: no Python files found under docs"),
    ("nested past Python's limit", _files(**{"n.py": "x = " + "[" * 2000 + "]" * 2000 + "\n"}),
     ["rollout", "n.py"], "n.py:1:205: error: SyntaxError: too many nested parentheses"),
    ("types: nested past Python's limit",
     _files(**{"n.py": "x = " + "(" * 300 + ")" * 300 + "\n"}), ["types", "n.py"],
     "n.py:1:205: error: SyntaxError: too many nested parentheses"),
]


@pytest.mark.parametrize(("files", "argv", "says"), [c[1:] for c in BAD_INPUTS],
                         ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_is_one_line_and_exit_2(repo: Path, capsys: pytest.CaptureFixture[str],
                                          files: dict[str, str | bytes], argv: list[str],
                                          says: str) -> None:
    for name, content in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            (repo / name).write_bytes(content)
        else:
            (repo / name).write_text(content)
    code, out, err = _run(capsys, *argv)
    assert code == 2, (out, err)
    assert says in err, err
    assert "Traceback" not in err and "All checks passed" not in out
    assert len([line for line in err.splitlines() if "error" in line or "vime-lint" in line]) \
        == 1, err


def test_force_excluded_files_only_are_a_clean_run(repo: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """pre-commit passes changed files; when --force-exclude drops them all, nothing is wrong."""
    (repo / "gen").mkdir()
    (repo / "gen" / "r.py").write_text(BAD)
    assert _run(capsys, "rollout", "gen/r.py", "--extend-exclude", "gen", "--force-exclude") \
        == (0, "All checks passed!\n", "")


def test_types_in_a_project_folder_that_cannot_be_written(
        repo: Path, tmp_path_factory: pytest.TempPathFactory,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """mypy's cache goes to the user's cache folder, said in one line (was a traceback)."""
    from vime_lint.typecheck.command import mypy_cache_dir, user_cache_dir

    home = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    (repo / ".vime_lint_cache").write_text("a file where the cache folder would go\n")
    (repo / "r.py").write_text("x = 1\n")
    code, _, err = _run(capsys, "types", "r.py")
    assert code == 0 and "Traceback" not in err, err
    assert err.startswith("vime-lint types: note: cannot write ") and err.count("\n") == 1
    assert f"mypy's cache is in {user_cache_dir(repo)}" in err
    assert user_cache_dir(repo).is_dir() and str(user_cache_dir(repo)).startswith(str(home))
    # Neither writable: mypy runs without a cache (os.devnull), still one line.
    blocked = home / "blocked"
    blocked.write_text("a file, so no folder can be made under it\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    import io

    note = io.StringIO()
    assert mypy_cache_dir(repo, None, note) == Path(os.devnull)
    assert "mypy runs without a cache" in note.getvalue()


def test_types_skips_a_file_over_the_limits_with_vim092(repo: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """`vime-lint types` applies the guards of `rollout` before LibCST and mypy."""
    (repo / "rm.py").write_text("async def reward_func(args, sample, **kwargs):\n"
                                "    return " + "[" * 150 + "]" * 150 + "\n")
    code, out, err = _run(capsys, "types", "rm.py", "--cache-dir", str(repo / "c"))
    assert code == 1 and "Traceback" not in err, err
    assert out.startswith("rm.py:1:1: VIM092 not type-checked: too deeply nested (syntax tree "
                          "depth"), out
    # mypy never ran: the folder holds at most the result cache's entry, no mypy cache
    assert {q.name for q in (repo / "c").glob("*")} <= {"vime-lint-results"}


@pytest.mark.parametrize("argv", [["rule", "VIM036"], ["rules"]])
def test_output_cut_short_by_the_reader_ends_quietly(argv: list[str]) -> None:
    # `vime-lint rule VIM036 | head`: a reader that is gone before the first write (`true`
    # exits at once) makes every write fail with EPIPE; no traceback, exit 1
    proc = subprocess.run(["bash", "-c", f"{sys.executable} -m vime_lint {' '.join(argv)} "
                           "| true; echo ${PIPESTATUS[0]} >&2"],
                          capture_output=True, text=True, timeout=60)
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "1"


def test_a_diff_says_what_it_leaves_unfixed(tmp_path: Path) -> None:
    # VIM001 has a fix for renamed parameters, not for a missing one or `async def`
    path = tmp_path / "m1.py"
    path.write_text("async def generate_rollout(args, data_source, evaluation=False):\n"
                    "    return None\n")
    proc = subprocess.run([sys.executable, "-m", "vime_lint", "rollout", "--diff", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout == ""
    assert "finding(s) remain that the diff does not fix; run without --diff to see them" \
        in proc.stderr


@pytest.mark.parametrize("command", [[], ["rollout"], ["types"], ["template"], ["check"]])
def test_every_help_lists_the_exit_statuses(command: list[str],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    # README: "Exit statuses, the same for `vime train` and `vime-lint` (`--help` lists them)"
    try:
        code = main([*command, "--help"])
    except SystemExit as exc:
        code = exc.code
    assert code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "exit status" in text and "0 clean" in text.replace("0 no findings", "0 clean")
    assert "1 any finding" in text or "1 findings" in text
    assert "2 bad arguments" in text or "2 a folder without a tokenizer" in text
