"""`vime-lint rules`' fixable column agrees with `vime-lint rollout --diff` / `--fix`: every rule
marked `fix` gets a change from `--diff` on its INVALID cases, `fix*` only with
`--unsafe-fixes` (and a line on stderr says so without it), and nothing unmarked offers one."""

from __future__ import annotations

from pathlib import Path

import pytest

from vime.contract import hook_spec
from vime_lint.cli import main
from vime_lint.static.rules import ALL_RULES

pytestmark = pytest.mark.unit


def _columns(capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    assert main(["rules"]) == 0
    out = capsys.readouterr().out
    rows = {}
    for line in out.split("\n\n")[0].splitlines():
        if line.startswith("VIM"):
            code, _slug, _severity, rest = line.split(maxsplit=3)
            rows[code] = rest.split()[0] if rest.split()[0] in ("fix", "fix*") else ""
    return rows


def _project(tmp_path: Path, code: str, options: dict) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "case.py").write_text(code)
    hooks = dict(options.get("hooks", {}))
    if "launch_flags" in options:
        flags = " ".join(f"{hook_spec(d).arg} case.{fn}" for fn, d in hooks.items())
        (tmp_path / "run.sh").write_text(
            f"vime train {flags} {' '.join(options['launch_flags'])}\n")
        (tmp_path / "pyproject.toml").write_text("[tool.vime_lint]\n")
    else:
        table = ", ".join(f'"case.{fn}" = "{d}"' for fn, d in hooks.items())
        (tmp_path / "pyproject.toml").write_text(
            "[tool.vime_lint]\n" + (f"hooks = {{{table}}}\n" if hooks else ""))
    return tmp_path


def test_every_fixable_rule_changes_something_with_diff(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    columns = _columns(capsys)
    marked = {c for c, v in columns.items() if v}
    assert marked, "no rule is marked fixable"
    for rule in ALL_RULES:
        code = rule.code()
        cases = [c for c in rule.INVALID if c.fixed is not None]
        assert bool(cases) == (code in marked), (code, columns.get(code))
        for k, case in enumerate(cases):
            root = _project(tmp_path / f"{code}_{k}", case.code, dict(case.options))
            monkeypatch.chdir(root)
            unsafe = ["--unsafe-fixes"] if columns[code] == "fix*" else []
            argv = ["rollout", "--no-cache", "--select", code, "--diff", *unsafe, "case.py"]
            main(argv)
            out, err = capsys.readouterr()
            assert out.startswith("--- case.py"), (code, k, out, err)
            if unsafe:   # without --unsafe-fixes: no change, and a line that says why
                main(argv[:-2] + ["case.py"])
                out, err = capsys.readouterr()
                assert out == "" and "add --unsafe-fixes" in err, (code, out, err)


def test_concise_output_shows_the_fix_and_no_show_fixes_hides_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path, "def generate_rollout(args, rollout_id, data_buffer):\n"
                    "    return []\n", {})
    monkeypatch.chdir(root)
    assert main(["rollout", "--no-cache", "case.py"]) == 1
    lines = capsys.readouterr().out.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("case.py:1:"))
    assert lines[first + 1].startswith("  help: "), lines
    assert main(["rollout", "--no-cache", "--no-show-fixes", "case.py"]) == 1
    out = capsys.readouterr().out
    assert "  help: " not in out and "case.py:1:" in out
