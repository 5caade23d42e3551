"""examples/openai_agent.py: its tools and scoring (pure), its load-time check as an
--agent-function-path hook, and that it imports no vime module."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from examples import openai_agent as agent  # noqa: E402
from vime.utils.misc import load_function  # noqa: E402

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("expr", "value"), [("12*7", "84"), ("7/2", "3.5"), ("-3+10", "7"),
                                              ("2**8", "error: not arithmetic"),
                                              ("__import__('os')", "error: not arithmetic"),
                                              ("1/0", "error: division by zero")])
def test_calculator_evaluates_arithmetic_only(expr: str, value: str) -> None:
    assert agent.calculator(expr) == value


def test_tools_by_name_and_json_arguments() -> None:
    assert agent.run_tool("lookup", '{"key": "Dozen"}') == "12"
    assert agent.run_tool("calculator", '{"expression": "3*4"}') == "12"
    assert agent.run_tool("calculator", "{not json") == "error: arguments are not JSON"
    assert agent.run_tool("search", "{}") == "error: no tool 'search'"


def test_own_checks_use_both_tools_on_the_question() -> None:
    assert agent.own_checks("What is a dozen times 11*3?") == ["calculator(11*3) = 33",
                                                               "lookup(dozen) = 12"]


def test_score_needs_the_label_in_the_answer() -> None:
    assert agent.score("The answer is 33.", 33) == 1.0
    assert agent.score("The answer is 34.", "33") == 0.0 and agent.score("", None) == 0.0


@pytest.mark.parametrize(("answer", "label", "reward"), [
    ("12*7 = 84.", "84", 1.0), ("It is 1,200", "1200", 1.0), ("3.50", "3.5", 1.0),
    ("42", "4", 0.0),                       # the label inside a wrong number (was 1.0)
    ("It is 3, 4, 5 or 6.", "4", 0.0),      # a list of guesses (was 1.0)
    ("4 is wrong, it is 5", "4", 0.0), ("5, no: 4", "4", 1.0),   # the last number counts
    ("A week is 7 days.", "7 days", 1.0), ("7 days\nor 8 days", "7 days", 0.0),
])
def test_score_grades_the_final_answer_not_a_substring(answer: str, label: str,
                                                       reward: float) -> None:
    assert agent.score(answer, label) == reward


def test_run_agent_passes_the_load_time_check() -> None:
    fn = load_function("examples.openai_agent.run_agent", hook="agent_function_path")
    assert fn is agent.run_agent


def test_the_agent_imports_no_vime_module() -> None:
    tree = ast.parse((ROOT / "examples" / "openai_agent.py").read_text())
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert not [n for n in names if n.split(".")[0] in ("vime", "vime_lint")]
