"""``vime.rollout.vllm_rollout`` stays the import path of the default rollout after its code moved
to the package ``vime.rollout.vllm``: every public name is the same object as in its new module,
and the paths users configure still load."""

from __future__ import annotations

import importlib
import warnings

import pytest

from vime.rollout import vllm_rollout
from vime.utils.misc import load_function

pytestmark = pytest.mark.unit

#: name in vime.rollout.vllm_rollout -> (module of vime.rollout.vllm, name there)
MOVED = {
    "abort": ("abort", "abort"),
    "eval_rollout": ("evaluation", "eval_rollout"),
    "generate": ("client", "generate"),
    "generate_and_rm": ("sampling", "generate_and_rm"),
    "generate_and_rm_group": ("sampling", "generate_and_rm_group"),
    "generate_rollout": ("rollout_fn", "generate_rollout"),
    "generate_rollout_async": ("train_loop", "generate_rollout_async"),
    "get_model_url": ("state", "get_model_url"),
    "sampling_params_from_args": ("sampling", "sampling_params_from_args"),
}


def test_every_public_name_is_covered():
    assert set(vllm_rollout.__all__) <= set(MOVED)


@pytest.mark.parametrize("name", sorted(MOVED))
def test_name_is_the_object_of_its_new_module(name):
    module, attr = MOVED[name]
    new = importlib.import_module(f"vime.rollout.vllm.{module}")
    assert getattr(vllm_rollout, name) is getattr(new, attr)
    assert getattr(new, "__doc__", None), f"vime.rollout.vllm.{module} has no docstring"


@pytest.mark.parametrize("path, hook, module, attr", [
    ("vime.rollout.vllm_rollout.generate_rollout", "rollout_function_path", "rollout_fn",
     "generate_rollout"),
    ("vime.rollout.vllm_rollout.generate_rollout", "eval_function_path", "rollout_fn",
     "generate_rollout"),
    ("vime.rollout.vllm_rollout.generate", "custom_generate_function_path", "client",
     "generate"),
])
def test_configured_paths_load_the_moved_functions(path, hook, module, attr):
    """``--rollout-function-path`` / ``--eval-function-path`` / ``--custom-generate-function-path``
    with the documented paths: loaded and signature-checked without a warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fn = load_function(path, hook=hook)
    assert fn is getattr(importlib.import_module(f"vime.rollout.vllm.{module}"), attr)


def test_default_rollout_function_path_is_the_thin_module():
    from vime.contract.hooks import HOOKS

    default = HOOKS["rollout_function_path"].default
    assert default == "vime.rollout.vllm_rollout.generate_rollout"
    assert load_function(default) is vllm_rollout.generate_rollout
