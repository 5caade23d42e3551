"""vime.contract.checks.values on exact values: which numbers are finite reals, how a tensor,
array or numpy scalar is described (VIM122), the reward and real-number findings (severity and
text), and the first path json.dumps trips on."""

from __future__ import annotations

import pytest

from vime.contract.checks.values import json_problem

pytestmark = pytest.mark.unit


def test_json_problem_cycles():
    loop: list = [1]
    loop.append(loop)
    assert json_problem(loop) == "[1] is a list, not JSON-serialisable"
    node: dict = {"a": 1}
    node["self"] = node
    assert json_problem(node) == "['self'] is a dict, not JSON-serialisable"
    # the same (acyclic) list twice is no cycle for json.dumps, and a bad value after it is found
    shared = [1]
    assert json_problem({"x": shared, "y": shared, "z": {3}}) == (
        "['z'] is a set, not JSON-serialisable")
