"""The linter never crashes or hangs on hostile input: Python's verdict before LibCST, the
size, depth and time limits (VIM092), LibCST's parser on a large stack, and fuzzed
pathological files run through the real command (exit 0, 1 or 2, never a signal)."""

from __future__ import annotations

import codecs
import subprocess
import sys
import time
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from vime_lint.static import _engine
from vime_lint.static._guard import (
    DEFAULT_LIMITS,
    Limits,
    OverBudget,
    Screened,
    Skipped,
    nesting_depth,
    screen,
    time_budget,
)
from vime_lint.static._model import LintResult
from vime_lint.static._runner import Settings, run
from vime_lint.static.rules import ALL_RULES

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]


def _nested_ifs(n: int) -> str:
    return "".join("    " * i + "if x:\n" for i in range(n)) + "    " * n + "pass\n"


def _nested_fors(n: int) -> str:
    return "".join("    " * i + "for x in y:\n" for i in range(n)) + "    " * n + "pass\n"


def _lint(src: str | bytes, limits: Limits = DEFAULT_LIMITS) -> LintResult:
    return _engine.lint_source(src, "h.py", rules=ALL_RULES, limits=limits)


# (name, source, expected): "syntax: <text>" a ParseFailure whose message has the text (what
# Python says), "VIM092: <kind>" one VIM092 finding of that kind, "linted" a normal lint.
CASES = [
    ("2000 nested brackets", "x = " + "[" * 2000 + "]" * 2000 + "\n",
     "syntax: too many nested parentheses"),
    ("201 nested parentheses", "x = " + "(" * 201 + "1" + ")" * 201 + "\n",
     "syntax: too many nested parentheses"),
    ("190 nested lists", "x = " + "[" * 190 + "]" * 190 + "\n", "VIM092: too deeply nested"),
    ("150 nested calls", "x = " + "f(" * 150 + ")" * 150 + "\n", "VIM092: too deeply nested"),
    ("20,000 `and` operands", "x = " + " and ".join(["a"] * 20000) + "\n",
     "VIM092: too deeply nested"),
    ("10,000 `+` operands", "x = " + "+".join(["1"] * 10000) + "\n",
     "syntax: maximum recursion depth exceeded during compilation"),
    ("5,000 unary minus", "x = " + "-" * 5000 + "1\n", "syntax: nested too deeply"),
    ("101 nested ifs", _nested_ifs(101), "syntax: too many levels of indentation"),
    ("25 nested for loops", _nested_fors(25), "syntax: too many statically nested blocks"),
    ("60 nested ifs", _nested_ifs(60), "linted"),
    ("a NUL byte", "x = 1\n\0\n", "syntax: null bytes"),
    ("20,000 adjacent strings", "x = " + " ".join(['"a"'] * 20000) + "\n",
     "VIM092: not parsable by LibCST"),
    ("'return' outside a function, nothing else", "return 1\n",
     "syntax: 'return' outside function"),
    ("a 200,000-character line", "x = 1  # " + "a" * 200_000 + "\n", "linted"),
    ("a 5,000-element list on one line", "x = [" + "1, " * 5_000 + "]\n", "linted"),
    ("a 300 KB string literal", "x = '" + "a" * 300_000 + "'\n", "linted"),
]


@pytest.mark.parametrize(("src", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_pathological_file_gets_the_interpreters_verdict_or_vim092(
        src: str, expected: str) -> None:
    result = _lint(src)
    kind, _, text = expected.partition(": ")
    if kind == "syntax":
        assert result.failure is not None and text in result.failure.message, result.failure
        assert result.failure.message.startswith("SyntaxError")
        with pytest.raises((SyntaxError, RecursionError, MemoryError, ValueError)):
            compile(src, "h.py", "exec")  # the interpreter rejects it too
    elif kind == "VIM092":
        assert result.failure is None
        assert [f.code for f in result.findings] == ["VIM092"], result.findings
        assert result.findings[0].message.startswith(f"not linted: {text} (")
        assert (result.findings[0].line, result.findings[0].severity) == (1, "warning")
        compile(src, "h.py", "exec")  # a file Python accepts
    else:
        assert result.failure is None and not result.findings


def test_the_size_limit_is_checked_before_any_parse() -> None:
    src = "x = 1\n" * 2000  # 12,000 bytes
    big = _lint(src, Limits(max_bytes=10_000))
    assert [f.code for f in big.findings] == ["VIM092"]
    assert "too large (12,000 bytes, the limit is 10,000" in big.findings[0].message
    # Python's verdict is not asked for a file over the size limit (5 MB took 9 s to parse).
    broken = _lint(src + "x = (\n", Limits(max_bytes=10_000))
    assert broken.failure is None and [f.code for f in broken.findings] == ["VIM092"]
    assert _lint(src, Limits(max_bytes=12_000)).findings == ()


def test_a_compiler_only_error_defers_to_a_rule_finding() -> None:
    # Python rejects both (`await` in a sync def); a rule explains the first, so it stands.
    hook = "def generate(args, sample, sampling_params):\n    await post(sample)\n    return sample\n"
    assert _lint(hook).failure is None and _lint(hook).findings
    plain = "def helper():\n    await post()\n"
    failure = _lint(plain).failure
    assert failure is not None and "'await' outside async function" in failure.message


def test_the_depth_counts_and_or_chains_as_libcst_nests_them() -> None:
    import ast

    assert nesting_depth(ast.parse("x = a and b and c and d")) == \
        nesting_depth(ast.parse("x = a and b")) + 2
    assert nesting_depth(ast.parse("x = 1")) == 4  # Module, Assign, Constant... and the Name
    assert isinstance(screen("x = a and b\n", 12, "h.py", Limits(max_depth=5)), Screened)
    assert isinstance(screen("x = " + " or ".join("abcdefgh") + "\n", 40, "h.py",
                             Limits(max_depth=5)), Skipped)


def test_odd_encodings_are_decoded_or_one_clear_failure() -> None:
    latin = "# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n".encode("latin-1")
    assert _lint(latin).failure is None
    assert _lint(codecs.BOM_UTF8 + b"x = 1\n").failure is None
    bad = _lint(b"x = '\xff\xfe'\n").failure
    assert bad is not None and bad.message.startswith("cannot decode")
    unknown = _lint(b"# coding: no-such-codec\nx = 1\n").failure
    assert unknown is not None and "no-such-codec" in unknown.message
    utf16 = _lint("x = 1\n".encode("utf-16")).failure
    assert utf16 is not None and utf16.message


def test_a_file_over_the_time_budget_is_vim092_too_slow(monkeypatch: pytest.MonkeyPatch) -> None:
    def slow(*args: object) -> LintResult:
        time.sleep(5)
        raise AssertionError("the budget did not stop the lint")

    monkeypatch.setattr(_engine, "_lint_and_fix", slow)
    started = time.monotonic()
    result = _lint("x = 1\n", Limits(seconds=0.2))
    assert time.monotonic() - started < 2
    assert [f.code for f in result.findings] == ["VIM092"]
    assert result.findings[0].message.startswith("not linted: too slow (over the 0.2 s budget")


def test_the_budget_keeps_an_outer_timer() -> None:
    import signal

    fired: list[int] = []
    old = signal.signal(signal.SIGALRM, lambda *a: fired.append(1))
    outer = signal.getitimer(signal.ITIMER_REAL)
    try:
        signal.setitimer(signal.ITIMER_REAL, 30.0)
        with time_budget(0.5):
            pass
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 25 < left <= 30  # set again, less the time spent
        assert signal.getsignal(signal.SIGALRM) is not None and not fired
        with pytest.raises(OverBudget), time_budget(0.05):
            time.sleep(1)
    finally:
        signal.setitimer(signal.ITIMER_REAL, *outer)
        signal.signal(signal.SIGALRM, old)


def test_vim092_is_selectable_and_not_cached(tmp_path: Path) -> None:
    (tmp_path / "deep.py").write_text("x = " + "[" * 150 + "]" * 150 + "\n")
    out = run(Settings(paths=[tmp_path], root=tmp_path))
    assert [f.code for r in out.results for f in r.findings] == ["VIM092"]
    assert not (tmp_path / ".vime_lint_cache" / "rollout").exists() or not [
        p for p in (tmp_path / ".vime_lint_cache" / "rollout").rglob("*") if p.is_file()]
    quiet = run(Settings(paths=[tmp_path], root=tmp_path, ignore=("VIM092",)))
    assert [f for r in quiet.results for f in r.findings] == []


def test_libcsts_parser_runs_on_a_large_stack() -> None:
    # 20,000 `and` operands: libcst.parse_module on the main thread's 8 MB stack ends the
    # process with SIGSEGV; on the parse thread it returns.
    code = ("from vime_lint.static._guard import parse_module\n"
            "m = parse_module('x = ' + ' and '.join(['a'] * 20000) + '\\n')\n"
            "print(type(m).__name__)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=REPO, env=_env())
    assert proc.returncode == 0 and proc.stdout.strip() == "Module", proc.stderr[-2000:]


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": str(REPO)}


def _run_cli(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vime_lint", "rollout", "--no-cache", *args,
                           str(folder)], capture_output=True, text=True, timeout=300,
                          cwd=folder, env=_env())


def test_hand_made_pathological_files_through_the_command(tmp_path: Path) -> None:
    """Every case above in one run of the real command: exit 2 (syntax errors among them),
    never a signal, one line per file."""
    for i, (_, src, _) in enumerate(CASES):
        (tmp_path / f"case{i:02d}.py").write_text(src)
    (tmp_path / "binary.py").write_bytes(bytes(range(256)) * 4)
    proc = _run_cli(tmp_path)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    named = {line.split(":")[0] for line in (proc.stdout + proc.stderr).splitlines()
             if line.startswith("case") or line.startswith("binary")}
    expected = {f"case{i:02d}.py" for i, c in enumerate(CASES) if c[2] != "linted"}
    assert expected | {"binary.py"} <= named


_SHAPES = st.sampled_from([
    ("[", "]"), ("(", ")"), ("{", "}"), ("f(", ")"), ("-", ""), ("not ", ""), ("a.", "b"),
    ("lambda: ", ""), ("x if y else ", "z"), ("await ", ""), ("a[", "]"), ("*", ""),
])


@st.composite
def _pathological(draw: st.DrawFn) -> bytes:
    """One hostile file: a deep nest of one shape, a long flat chain, deep blocks, a huge
    literal or junk bytes, with or without a coding cookie."""
    kind = draw(st.sampled_from(["nest", "chain", "blocks", "literal", "junk"]))
    if kind == "nest":
        open_, close = draw(_SHAPES)
        n = draw(st.sampled_from([50, 150, 250, 1000, 3000]))
        src = "x = " + open_ * n + "1" + close * n + "\n"
    elif kind == "chain":
        op = draw(st.sampled_from([" and ", " or ", " + ", " < ", " ", ", ", ".a", "()"]))
        n = draw(st.sampled_from([100, 5000, 40000]))
        src = "x = " + op.join(["1" if op != " " else '"s"'] * n) + "\n"
    elif kind == "blocks":
        stmt = draw(st.sampled_from(["if x:", "for x in y:", "while x:", "try:", "with x:",
                                     "def f():", "class C:"]))
        n = draw(st.sampled_from([10, 30, 99, 120]))
        src = "".join("    " * i + stmt + "\n" for i in range(n)) + "    " * n + "pass\n"
    elif kind == "literal":
        src = "x = " + draw(st.sampled_from(["'a'", "b'a'", "1", "[1]", "{1: 2}"])) \
            .replace("a", "a" * 50_000).replace("1", "1, " * 20_000) + "\n"
    else:
        return draw(st.binary(min_size=1, max_size=300))
    data = src.encode()
    if draw(st.booleans()):
        data = b"# -*- coding: " + draw(st.sampled_from([b"utf-8", b"latin-1", b"bogus"])) \
            + b" -*-\n" + data
    if draw(st.booleans()):
        cut = draw(st.integers(0, len(data)))
        data = data[:cut] + draw(st.sampled_from([b"\0", b"\xff", b"\r", b"\t\t"])) + data[cut:]
    return data


@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(st.lists(_pathological(), min_size=6, max_size=6))
def test_fuzzed_pathological_files_exit_0_1_or_2_never_a_signal(
        tmp_path: Path, files: list[bytes]) -> None:
    for p in tmp_path.glob("*.py"):
        p.unlink()
    for i, data in enumerate(files):
        (tmp_path / f"fuzz{i}.py").write_bytes(data)
    proc = _run_cli(tmp_path)
    assert proc.returncode in (0, 1, 2), (proc.returncode, proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
