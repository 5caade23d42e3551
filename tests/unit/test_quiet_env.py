"""The quiet environment is one definition: what vime train, the engines and the demo's
children get, and setdefault semantics (a value the user set wins)."""

from __future__ import annotations

import pytest

from vime.demo.children import _env
from vime.ray.engine_command import SERVER_ENV
from vime.utils.quiet_env import QUIET_ENV, apply_quiet_env

pytestmark = pytest.mark.unit


def test_apply_fills_in_only_what_is_missing() -> None:
    env = {"HF_HUB_OFFLINE": "0"}
    apply_quiet_env(env)
    assert env == {**QUIET_ENV, "HF_HUB_OFFLINE": "0"}


def test_engines_and_demo_children_get_the_same_environment() -> None:
    assert SERVER_ENV == {"VLLM_SERVER_DEV_MODE": "1", **QUIET_ENV}
    child = _env()
    assert {k: child[k] for k in QUIET_ENV} == QUIET_ENV
