"""`vime_lint.check.code_watch`: a watched text compiled, exec'd or given to a subprocess is
seen; other code, and anything outside a `watching` block, is not."""

from __future__ import annotations

import subprocess
import sys

import pytest

from vime_lint.check.code_watch import watching

pytestmark = pytest.mark.unit


def test_compile_exec_and_eval_of_the_text_are_seen() -> None:
    for run in (lambda: compile("x = 1 + 1\n", "<r>", "exec"), lambda: exec("y = 2 * 3\n", {}),
                lambda: eval("1 + 1")):
        with watching(["x = 1 + 1", "y = 2 * 3", "1 + 1"]) as seen:
            run()
        assert seen.ran


def test_a_subprocess_running_the_text_is_seen() -> None:
    with watching(["print('the answer is 42')"]) as seen:
        subprocess.run([sys.executable, "-c", "print('the answer is 42')"], check=True,
                       capture_output=True)
    assert seen.ran


def test_other_code_and_code_outside_the_block_are_not_seen() -> None:
    with watching(["The answer is 42."]) as seen:
        compile("z = 42\n", "<r>", "exec")
    assert not seen.ran
    with watching(["w = 5"]) as seen:
        pass
    compile("w = 5\n", "<r>", "exec")
    assert not seen.ran


def test_exact_matches_only_a_program_that_is_the_text() -> None:
    with watching(["42"], exact=True) as seen:
        compile("Integer(42)\n", "<r>", "eval")   # a math parser's code holds "42" by chance
    assert not seen.ran
    with watching(["42"], exact=True) as seen:
        compile("42 \n", "<r>", "eval")
    assert seen.ran
