"""Load-time signature checks (VIM100) and load_function's three import failures."""

from __future__ import annotations

import sys
import textwrap
import warnings

import pytest

from vime.contract import HOOKS, ContractError, check_signature
from vime.contract.signature import Param
from vime.utils import misc

pytestmark = pytest.mark.unit

REFERENCE = '''
from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
from vime.utils.types import Sample


def generate_rollout(args, rollout_id, data_source, evaluation=False):
    groups = data_source.get_samples(args.rollout_batch_size)
    if evaluation:
        return RolloutFnEvalOutput(data={})
    return RolloutFnTrainOutput(samples=groups)


async def generate(args, sample, sampling_params):
    return sample


async def reward_func(args, sample, **kwargs):
    return 1.0 if sample.response.strip() == sample.label else 0.0


async def group_reward(args, samples, **kwargs):
    return [0.0 for _ in samples]


def dynamic_filter(args, samples, **kwargs):
    return True


def buffer_filter(args, rollout_id, buffer, num_samples):
    return buffer[:num_samples]


class MySource:
    def __init__(self, args):
        self.args = args


# The variants docs/contract.md §12 says must be rejected:
def old_name(args, rollout_id, data_buffer, evaluation=False):
    pass


async def async_rollout(args, rollout_id, data_source, evaluation=False):
    pass


def no_default(args, rollout_id, data_source, evaluation):
    pass


def no_data_source(args, rollout_id, *, evaluation=False):
    pass


def sync_generate(args, sample, sampling_params):
    return sample


async def renamed_sampling(args, sample, params, evaluation=False):
    return sample


def extra_required(args, rollout_id, data_source, tokenizer, evaluation=False):
    pass


def evaluation_in_third_slot(args, rollout_id, evaluation=False, data_source=None):
    pass


def var_args(*args, **kwargs):
    pass


def positional_only_evaluation(args, rollout_id, data_source, evaluation=False, /):
    pass


not_callable = 3


def broken_import():
    pass
'''


@pytest.fixture(scope="module")
def usermod(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("hooks")
    (root / "vime_test_usermod.py").write_text(textwrap.dedent(REFERENCE))
    (root / "vime_test_raises.py").write_text("raise RuntimeError('boom at import')\n")
    sys.path.insert(0, str(root))
    misc._CACHE.clear()
    yield "vime_test_usermod"
    sys.path.remove(str(root))


def load(path: str, hook: str | None = None, **kw: bool) -> object:
    misc._CACHE.clear()
    return misc.load_function(path, hook=hook, **kw)


@pytest.mark.parametrize(
    ("attr", "hook", "group_rm"),
    [
        ("generate_rollout", "rollout_function_path", False),
        ("generate_rollout", "eval_function_path", False),
        ("generate", "custom_generate_function_path", False),
        ("reward_func", "custom_rm_path", False),
        ("group_reward", "custom_rm_path", True),
        ("dynamic_filter", "dynamic_sampling_filter_path", False),
        ("buffer_filter", "buffer_filter_path", False),
        ("MySource", "data_source_path", False),
        ("var_args", "rollout_function_path", False),
    ],
)
def test_correct_hooks_load_without_findings(usermod: str, attr: str, hook: str, group_rm: bool) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert callable(load(f"{usermod}.{attr}", hook, group_rm=group_rm))


@pytest.mark.parametrize(
    ("attr", "hook", "message"),
    [
        ("async_rollout", "rollout_function_path", r"is an async def, but --rollout-function-path hooks are called synchronously"),
        ("no_default", "rollout_function_path", r"declares `evaluation` without a default; expected `evaluation=False`"),
        ("no_data_source", "rollout_function_path", r"takes 2 positional parameter\(s\) but is called with 3 .*missing data_source"),
        ("sync_generate", "custom_generate_function_path", r"is a plain def, but --custom-generate-function-path hooks are awaited"),
        ("extra_required", "rollout_function_path", r"extra required parameter `tokenizer` that the call site never passes"),
        ("evaluation_in_third_slot", "rollout_function_path", r"binds `evaluation` to positional slot 3"),
        ("positional_only_evaluation", "rollout_function_path", r"declares `evaluation` positional-only"),
    ],
)
def test_wrong_signatures_raise_vim100_naming_arg_target_expected_actual(
    usermod: str, attr: str, hook: str, message: str
) -> None:
    with pytest.raises(ContractError) as info:
        load(f"{usermod}.{attr}", hook)
    text = str(info.value)
    assert "VIM100 error" in text
    assert f"{HOOKS[hook].arg} {usermod}.{attr}: signature does not match the contract" in text
    assert "expected: " in text and "actual:   " in text
    assert f"def {attr}(" in text
    import re

    assert re.search(message, text), text
    assert info.value.ids and set(info.value.ids) == {"VIM100"}


@pytest.mark.parametrize(
    ("attr", "hook", "group_rm", "message"),
    [
        ("old_name", "rollout_function_path", False,
         r"parameter 3 `data_buffer`: did you mean `data_source`\?"),
        ("reward_func", "custom_rm_path", True, r"parameter 2 `sample`: did you mean `samples`\?"),
    ],
)
def test_stale_positional_name_loads_with_a_deprecation_warning(
    usermod: str, attr: str, hook: str, group_rm: bool, message: str
) -> None:
    # The argument is passed positionally, so the call works: deprecated, not refused.
    with pytest.warns(DeprecationWarning, match=message):
        fn = load(f"{usermod}.{attr}", hook, group_rm=group_rm)
    assert callable(fn)


def test_other_positional_name_binds_by_position(usermod: str) -> None:
    # The call site passes sampling_params positionally: another name is no finding.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert callable(load(f"{usermod}.renamed_sampling", "custom_generate_function_path"))


def test_class_hook_must_be_a_class(usermod: str) -> None:
    with pytest.raises(ContractError, match=r"--data-source-path 'vime_test_usermod.generate_rollout' is a function, expected a class"):
        load(f"{usermod}.generate_rollout", "data_source_path")


def test_not_callable_target(usermod: str) -> None:
    with pytest.raises(ContractError, match=r"is a int, not callable"):
        load(f"{usermod}.not_callable", "rollout_function_path")


def test_module_not_found_message(usermod: str) -> None:
    with pytest.raises(ContractError, match=r"cannot load \(--custom-rm-path\) 'no_such_pkg.mod.fn': module 'no_such_pkg.mod' not found"):
        load("no_such_pkg.mod.fn", "custom_rm_path")


def test_attribute_missing_message_lists_what_module_defines(usermod: str) -> None:
    with pytest.raises(ContractError, match=r"module 'vime_test_usermod' has no attribute 'generate_rollot'; it defines .*generate_rollout"):
        load(f"{usermod}.generate_rollot", "rollout_function_path")


def test_import_raised_message_keeps_traceback_chained(usermod: str) -> None:
    with pytest.raises(ContractError, match=r"importing module 'vime_test_raises' raised RuntimeError: boom at import") as info:
        load("vime_test_raises.fn", "rollout_function_path")
    assert isinstance(info.value.__cause__, RuntimeError)


def test_not_a_dotted_path() -> None:
    with pytest.raises(ContractError, match=r"'generate_rollout' is not a dotted path"):
        load("generate_rollout", "rollout_function_path")


def test_unknown_hook_dest_is_key_error(usermod: str) -> None:
    with pytest.raises(KeyError, match="not a vime hook"):
        load(f"{usermod}.generate_rollout", "rollout_fn_path")


def test_load_function_caches_per_path(usermod: str) -> None:
    misc._CACHE.clear()
    a = misc.load_function(f"{usermod}.generate_rollout", hook="rollout_function_path")
    assert misc.load_function(f"{usermod}.generate_rollout", hook="rollout_function_path") is a


def test_check_signature_on_cst_style_params_matches_load_time() -> None:
    # The linter feeds (name, kind, has_default, default_repr) tuples read from the CST.
    spec = HOOKS["rollout_function_path"]
    good = [Param("args", "POSITIONAL_OR_KEYWORD"), Param("rollout_id", "POSITIONAL_OR_KEYWORD"),
            Param("data_source", "POSITIONAL_OR_KEYWORD"),
            Param("evaluation", "POSITIONAL_OR_KEYWORD", True, "False")]
    assert check_signature(good, False, spec) == []
    found = check_signature(good, True, spec, invariant="VIM001", where="m.py:3:1")
    assert [v.id for v in found] == ["VIM001"] and found[0].where == "m.py:3:1"


def test_every_hook_renders_its_expected_definition() -> None:
    rendered = HOOKS["rollout_function_path"].render()
    assert rendered == "def generate_rollout(args, rollout_id, data_source, evaluation=False)"
    assert HOOKS["custom_generate_function_path"].render().startswith("async def generate(")
    assert HOOKS["data_source_path"].render("Src") == "class Src: def __init__(self, args)"
