"""Reward models (rm_hub) and the dynamic sampling filters (filter_hub)."""

from __future__ import annotations

import json
import sys
import textwrap
import threading
from argparse import Namespace
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from vime.contract.errors import ContractError
from vime.rollout.filter_hub.base_types import DynamicFilterOutput
from vime.rollout.filter_hub.dynamic_sampling_filters import (
    check_reward_nonzero_std,
    check_reward_nonzero_std_with_fallback,
)
from vime.rollout.rm_hub import async_rm, batched_async_rm
from vime.rollout.rm_hub.f1 import f1_score
from vime.rollout.rm_hub.math_rm import extract_boxed, extract_last_number, math_reward
from vime.utils.async_utils import run
from vime.utils.types import Sample

pytestmark = pytest.mark.unit


def args_(**kw) -> Namespace:
    base = dict(rm_type=None, custom_rm_path=None, group_rm=False, reward_key=None, rm_url=None)
    return Namespace(**{**base, **kw})


# ---- math ------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, expected", [
    ("The answer is 85.", "85"), ("x -73 y", "-73"), ("1,234 apples", "1234"),
    ("3.50 then 2", "2"), ("no digits", None), ("+7", "7"),
])
def test_extract_last_number(text, expected):
    assert extract_last_number(text) == expected


def test_extract_boxed_balanced():
    assert extract_boxed(r"so \boxed{\frac{1}{2}} and \boxed{42}") == "42"
    assert extract_boxed(r"\boxed{\frac{1}{2}}") == r"\frac{1}{2}"
    assert extract_boxed("none") is None
    assert extract_boxed(r"\boxed{open") is None


@pytest.mark.parametrize("response, label, reward", [
    ("The answer is 85.", "85", 1.0),
    ("The answer is 85.", 85, 1.0),
    ("The answer is 85.0", "85", 1.0),
    ("The answer is 84.", "85", 0.0),
    ("85 then The answer is -12.", "-12", 1.0),
    ("no number", "85", 0.0),
    ("The answer is 85.", "The answer is 85.", 1.0),
    ("yes", "yes", 1.0),
])
def test_math_reward(response, label, reward):
    assert math_reward(response, label) == reward


def test_boxed_math_grades_only_the_box():
    assert math_reward(r"85? no: \boxed{12}", "12", boxed=True) == 1.0
    assert math_reward("The answer is 12.", "12", boxed=True) == 0.0


def test_math_without_label_names_label_key():
    with pytest.raises(ValueError, match="--label-key"):
        math_reward("1", None)


def test_f1():
    assert f1_score("The answer is 85.", "answer 85") == pytest.approx(2 / 3)
    assert f1_score("", "") == 0.0      # an unreadable label gives no credit (VIM305)
    assert f1_score("", "???") == 0.0
    assert f1_score("a", "b") == 0.0
    with pytest.raises(ValueError, match="--label-key"):
        f1_score("a", None)


# ---- dispatch --------------------------------------------------------------------------------


def test_async_rm_builtin_types_and_metadata_override():
    s = Sample(response="The answer is 5.", label="5")
    assert run(async_rm(args_(rm_type="math"), s)) == 1.0
    assert run(async_rm(args_(rm_type="f1"), s)) == pytest.approx(2 / 5)
    assert run(async_rm(args_(rm_type="random"), s)) in (0.0, 1.0)
    s.metadata["rm_type"] = "boxed_math"
    assert run(async_rm(args_(rm_type="math"), s)) == 0.0   # metadata wins: no box -> 0


@pytest.mark.parametrize("rm_type, needle", [
    ("deepscaler", "not implemented in vime v1"), ("gpqa", "not implemented in vime v1"),
    ("nope", "unknown --rm-type 'nope'"),
])
def test_async_rm_unavailable_types(rm_type, needle):
    with pytest.raises(NotImplementedError, match=needle):
        run(async_rm(args_(rm_type=rm_type), Sample(response="1", label="1")))


def test_async_rm_without_any_reward_says_what_to_set():
    with pytest.raises(ValueError, match="sample index=3: no reward model: set --rm-type"):
        run(async_rm(args_(), Sample(index=3, response="1")))


@pytest.fixture
def rm_module(tmp_path, monkeypatch):
    (tmp_path / "my_rms.py").write_text(textwrap.dedent("""
        async def reward_func(args, sample, **kwargs):
            return 1.0 if sample.response.strip() == sample.label else 0.0

        async def group_rm(args, samples, **kwargs):
            return [float(i) for i, _ in enumerate(samples)]

        async def short_group_rm(args, samples, **kwargs):
            return [1.0]

        async def none_group_rm(args, samples, **kwargs):
            return None
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "my_rms"
    sys.modules.pop("my_rms", None)


def test_custom_rm_path_and_per_sample_override(rm_module):
    s = Sample(response="ok", label="ok")
    assert run(async_rm(args_(custom_rm_path=f"{rm_module}.reward_func"), s)) == 1.0
    s.custom_rm_path = f"{rm_module}.reward_func"
    assert run(async_rm(args_(rm_type="random"), Sample(response="x", label="y",
                                                        custom_rm_path=s.custom_rm_path))) == 0.0


def test_batched_custom_rm(rm_module):
    samples = [Sample(response="a"), Sample(response="b"), Sample(response="c")]
    out = run(batched_async_rm(args_(custom_rm_path=f"{rm_module}.group_rm", group_rm=True),
                               samples))
    assert out == [0.0, 1.0, 2.0]
    out = run(batched_async_rm(args_(rm_type="math"),
                               [Sample(response="1", label="1"), Sample(response="2", label="1")]))
    assert out == [1.0, 0.0]


@pytest.mark.parametrize("fn, needle", [
    ("short_group_rm", "result has 1 rewards for 3 samples"),
    ("none_group_rm", r"result is None \(NoneType\), expected a list of len\(samples\)=3 rewards"),
])
def test_batched_custom_rm_wrong_shape_is_vim150(rm_module, fn, needle):
    samples = [Sample(), Sample(), Sample()]
    with pytest.raises(ContractError, match=f"VIM150 error: .*{fn}.*{needle}"):
        run(batched_async_rm(args_(custom_rm_path=f"{rm_module}.{fn}", group_rm=True), samples))


def test_remote_rm_posts_prompt_response_label():
    seen = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server API
            seen.update(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            body = json.dumps({"score": 0.5}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/rm"
        s = Sample(prompt="p", response="r", label="l")
        out = run(async_rm(args_(rm_type="remote_rm", rm_url=url), s))
    finally:
        server.shutdown()
    assert out == {"score": 0.5}
    assert seen == {"prompt": "p", "response": "r", "label": "l"}
    with pytest.raises(ValueError, match="needs --rm-url"):
        run(async_rm(args_(rm_type="remote_rm"), s))


# ---- filters ---------------------------------------------------------------------------------


def group(*rewards) -> list[Sample]:
    return [Sample(index=i, reward=r) for i, r in enumerate(rewards)]


def test_nonzero_std_keeps_mixed_and_drops_constant_groups():
    a = args_()
    assert check_reward_nonzero_std(a, group(0.0, 1.0)) == DynamicFilterOutput(keep=True)
    out = check_reward_nonzero_std(a, group(1.0, 1.0, 1.0))
    assert out == DynamicFilterOutput(keep=False, reason="zero_std_1.0")
    assert check_reward_nonzero_std(a, group(0.0, 0.0)).reason == "zero_std_0.0"
    assert not check_reward_nonzero_std(a, group(0.5, 0.5 + 1e-9)).keep


def test_nonzero_std_with_fallback_marks_keep_when_insufficient():
    out = check_reward_nonzero_std_with_fallback(args_(), group(0.0, 0.0))
    assert out == DynamicFilterOutput(keep=False, reason="zero_std_0.0",
                                      keep_when_insufficient=True)
    assert check_reward_nonzero_std_with_fallback(args_(), group(0.0, 1.0)).keep_when_insufficient \
        is False


def test_filter_reads_dict_rewards_through_reward_key():
    g = [Sample(reward={"acc": 1.0}), Sample(reward={"acc": 0.0})]
    assert check_reward_nonzero_std(args_(reward_key="acc"), g).keep
    with pytest.raises(ContractError, match="VIM110"):
        check_reward_nonzero_std(args_(), g)
