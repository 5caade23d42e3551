"""vime.config: the vime.utils.arguments re-exports and the parser-only defaults of ``arg``."""

from __future__ import annotations

import argparse
import subprocess
import sys
from types import SimpleNamespace

import pytest

import vime.config
import vime.utils.arguments
from vime.config import UnknownArgumentError, arg, get_parser, parser_defaults

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("name", vime.utils.arguments.__all__)
def test_utils_arguments_reexports_the_vime_config_objects(name: str) -> None:
    assert getattr(vime.utils.arguments, name) is getattr(vime.config, name)


def test_every_public_name_is_exported() -> None:
    for name in vime.config.__all__:
        assert hasattr(vime.config, name), name


def test_arg_defaults_are_the_parsers() -> None:
    parsed = vars(get_parser().parse_args([]))
    assert dict(parser_defaults()) == parsed
    empty = SimpleNamespace()
    for dest, value in parsed.items():
        assert arg(empty, dest) == value, dest


def test_arg_reads_args_first() -> None:
    args = argparse.Namespace(rollout_seed=7, n_samples_per_prompt=None)
    assert arg(args, "rollout_seed") == 7
    assert arg(args, "n_samples_per_prompt") is None   # present: never replaced by the default
    assert arg(args, "micro_batch_size") == 1


def test_arg_unknown_name_raises_naming_it() -> None:
    with pytest.raises(UnknownArgumentError, match="'n_sample_per_prompt'"):
        arg(SimpleNamespace(n_sample_per_prompt=2), "n_sample_per_prompt")
    with pytest.raises(AttributeError, match="'vocab_size' is not the dest"):
        arg(SimpleNamespace(), "vocab_size")


def test_arg_mutable_defaults_are_not_shared() -> None:
    first = arg(SimpleNamespace(), "apply_chat_template_kwargs")
    first["x"] = 1
    assert arg(SimpleNamespace(), "apply_chat_template_kwargs") == {}
    assert parser_defaults()["apply_chat_template_kwargs"] == {}


def test_vime_config_imports_nothing_heavy() -> None:
    heavy = ["torch", "ray", "vllm", "transformers", "httpx", "aiohttp", "yaml", "numpy"]
    code = (f"import sys, vime.config; "
            f"print(','.join(m for m in {heavy!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
