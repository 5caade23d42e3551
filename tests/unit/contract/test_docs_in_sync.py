"""Generated docs stay in step with the contract."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]


def test_hooks_page_is_generated_from_the_contract() -> None:
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "document_hooks.py"), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_hooks_page_lists_every_hook_argument() -> None:
    from vime.contract import HOOKS

    page = (REPO / "docs" / "en" / "get_started" / "hooks.md").read_text()
    for spec in HOOKS.values():
        assert f"| `{spec.arg}`" in page


def test_readme_first_rollout_function_lints_and_checks_clean(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    """The README's "write a rollout function, lint it, check it" snippet stays true."""
    import re

    readme = (REPO / "README.md").read_text()
    code = re.search(r"```python\n# my_rollout.py\n(.*?)```", readme, re.S)
    assert code is not None, "README lost its my_rollout.py example"
    (tmp_path / "readme_rollout.py").write_text(code.group(1))
    lint = subprocess.run([sys.executable, "-m", "vime_lint", "rollout",
                           str(tmp_path / "readme_rollout.py")], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    from vime_lint.runtime.harness import main as check_main

    monkeypatch.syspath_prepend(str(tmp_path))
    assert check_main(["--rollout-function-path", "readme_rollout.generate_rollout",
                       "--rollout-batch-size", "4", "--n-samples-per-prompt", "2"]) == 0


def test_readme_rollout_runs_the_sample_filter_as_the_docs_say(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The customization guide says a rollout returns through finalize_rollout_groups so that
    --rollout-sample-filter-path runs; the README's example does, so a filter set on its
    launch runs (no VIM120) and marks the samples."""
    import re

    from vime_lint.runtime.harness import main as check_main

    readme = (REPO / "README.md").read_text()
    code = re.search(r"```python\n# my_rollout.py\n(.*?)```", readme, re.S)
    assert code is not None and "return finalize_rollout_groups(" in code.group(1)
    guide = (REPO / "docs" / "en" / "get_started" / "customization.md").read_text()
    assert "finalize_rollout_groups(args, rollout_id, groups, metrics)`" in guide
    (tmp_path / "readme_rollout2.py").write_text(
        code.group(1) + "\n\ndef drop_odd(args, groups):\n"
        "    for group in groups:\n        for s in group[1::2]:\n"
        "            s.remove_sample = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert check_main(["--rollout-function-path", "readme_rollout2.generate_rollout",
                       "--rollout-sample-filter-path", "readme_rollout2.drop_odd",
                       "--rollout-batch-size", "4", "--n-samples-per-prompt", "2"]) == 0
