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


# ---- exact findings of check_signature, render_params, params_from_callable, optional_kwargs --

PK, PO, VP, KO, VK = ("POSITIONAL_OR_KEYWORD", "POSITIONAL_ONLY", "VAR_POSITIONAL",
                      "KEYWORD_ONLY", "VAR_KEYWORD")
ROLLOUT_CALL = "RolloutManager.generate and RolloutManager.eval, through call_rollout_fn"
RM_CALL = "rm_hub.async_rm, once per sample (with --group-rm: batched_async_rm)"
FILTER_CALL = "vllm_rollout.generate_rollout_async, per finished group"


def P(name: str, kind: str = PK, default: str | None = None) -> Param:
    return Param(name, kind, default is not None, default or "")


def findings(params: list[Param], is_async: bool, hook: str, **kw: str
             ) -> list[tuple[str, str, str, str, str]]:
    return [(v.id, v.severity, v.where, v.message, v.fix)
            for v in check_signature(params, is_async, HOOKS[hook], **kw)]


def test_check_signature_async_rollout_names_the_sync_fix_and_the_expected_definition() -> None:
    rollout = [P("args"), P("rollout_id"), P("data_source"), P("evaluation", default="False")]
    assert findings(rollout, True, "rollout_function_path", where="pkg.mod.my_rollout") == [
        ("VIM100", "error", "pkg.mod.my_rollout",
         "is an async def, but --rollout-function-path hooks are called synchronously "
         f"({ROLLOUT_CALL}); declare it with plain `def` and run async work through "
         "vime.utils.async_utils.run(coro)",
         "change the definition to "
         "`def my_rollout(args, rollout_id, data_source, evaluation=False)`")]
    # no `where`: reported at "", the expected definition under the hook's conventional name
    assert findings(rollout, True, "rollout_function_path") == [
        ("VIM100", "error", "",
         "is an async def, but --rollout-function-path hooks are called synchronously "
         f"({ROLLOUT_CALL}); declare it with plain `def` and run async work through "
         "vime.utils.async_utils.run(coro)",
         "change the definition to "
         "`def generate_rollout(args, rollout_id, data_source, evaluation=False)`")]


def test_check_signature_other_sync_and_async_hooks_in_the_wrong_mode() -> None:
    # a file:line:col location: the name is the part after the last dot and the last colon
    assert findings([P("args"), P("samples")], True, "dynamic_sampling_filter_path",
                    where="hooks.py:12:my_filter") == [
        ("VIM100", "error", "hooks.py:12:my_filter",
         "is an async def, but --dynamic-sampling-filter-path hooks are called synchronously "
         f"({FILTER_CALL}); declare it with plain `def`",
         "change the definition to `def my_filter(args, samples)`")]
    assert findings([P("args"), P("sample")], False, "custom_rm_path", where="a.b.score") == [
        ("VIM100", "error", "a.b.score",
         f"is a plain def, but --custom-rm-path hooks are awaited ({RM_CALL}); declare it "
         "with `async def`",
         "change the definition to `async def score(args, sample)`")]


def test_check_signature_fills_the_linters_message_template() -> None:
    # VIM004's message names the hook, the function and the expected definition
    assert findings([P("args"), P("sample")], False, "custom_rm_path", where="score",
                    invariant="VIM004") == [
        ("VIM004", "error", "score",
         f"--custom-rm-path `score` is a plain def, but --custom-rm-path hooks are awaited "
         f"({RM_CALL}); declare it with `async def`; expected `async def score(args, sample)`",
         "change the definition to `async def score(args, sample)`")]


def test_check_signature_counts_the_missing_positional_slots() -> None:
    fix = "change the definition to `def r(args, rollout_id, data_source, evaluation=False)`"
    assert findings([P("args"), P("evaluation", KO, "False")], False,
                    "rollout_function_path", where="m.r") == [
        ("VIM100", "error", "m.r",
         "takes 1 positional parameter(s) but is called with 3 (args, rollout_id, "
         "data_source); missing rollout_id, data_source", fix)]
    # *args takes every positional argument
    assert findings([P("a", VP), P("evaluation", KO, "False")], False,
                    "rollout_function_path", where="m.r") == []


def test_check_signature_stale_name_and_other_default_are_warnings_with_their_own_fixes() -> None:
    params = [P("args"), P("rollout_id"), P("data_buffer"), P("evaluation", default="True")]
    assert findings(params, False, "rollout_function_path", where="m.r") == [
        ("VIM100", "warning", "m.r",
         "names parameter 3 `data_buffer`: did you mean `data_source`? (`data_buffer` is the "
         "deprecated name; the argument is passed positionally, so it still works)",
         "rename `data_buffer` to `data_source`"),
        ("VIM100", "warning", "m.r", "declares `evaluation=True`, expected `evaluation=False`",
         "use `evaluation=False`")]


def test_check_signature_missing_default_and_keyword_problems() -> None:
    fix = "change the definition to `def r(args, rollout_id, data_source, evaluation=False)`"
    base = [P("args"), P("rollout_id"), P("data_source")]
    assert findings([*base, P("evaluation", KO), P("tokenizer", KO)], False,
                    "rollout_function_path", where="m.r") == [
        ("VIM100", "error", "m.r", "declares `evaluation` without a default; expected "
         "`evaluation=False`", "add the default: `evaluation=False`"),
        ("VIM100", "error", "m.r", "has an extra required parameter `tokenizer` that the call "
         "site never passes; give it a default or remove it", fix)]
    assert findings([*base, P("evaluation", VK)], False, "rollout_function_path",
                    where="m.r") == [
        ("VIM100", "error", "m.r", "declares `evaluation` positional-only, but the call site "
         "passes it by keyword", fix),
        ("VIM100", "error", "m.r", "declares `evaluation` without a default; expected "
         "`evaluation=False`", "add the default: `evaluation=False`")]
    assert findings(base, False, "rollout_function_path", where="m.r") == [
        ("VIM100", "error", "m.r", "does not accept the keyword `evaluation` that the call "
         "site passes", fix)]
    assert findings([*base, P("kw", VK)], False, "rollout_function_path", where="m.r") == []


def test_check_signature_reports_every_keyword_the_hook_cannot_take() -> None:
    # the TIS hook is called by keyword only: each missing keyword is its own finding
    fix = ("change the definition to `def t(args, pg_loss, train_log_probs, rollout_log_probs, "
           "loss_masks, total_lengths, response_lengths)`")
    missing = ("train_log_probs", "rollout_log_probs", "loss_masks", "total_lengths",
               "response_lengths")
    assert findings([P("args"), P("pg_loss")], False, "custom_tis_function_path",
                    where="m.t") == [
        ("VIM100", "error", "m.t", f"does not accept the keyword `{kw}` that the call site "
         "passes", fix) for kw in missing]


def test_check_signature_keeps_checking_defaults_after_one_the_hook_lacks() -> None:
    import dataclasses
    from types import MappingProxyType

    spec = dataclasses.replace(HOOKS["rollout_function_path"], params=("args", "b", "c"),
                               keyword_passed=("b", "c"),
                               param_defaults=MappingProxyType({"b": "1", "c": "2"}))
    found = check_signature([P("args"), P("c", KO)], False, spec, where="m.f")
    assert [(v.severity, v.message, v.fix) for v in found] == [
        ("error", "does not accept the keyword `b` that the call site passes",
         "change the definition to `def f(args, b=1, c=2)`"),
        ("error", "declares `c` without a default; expected `c=2`", "add the default: `c=2`")]


@pytest.mark.parametrize(("params", "extra"), [
    # a keyword-only parameter of the spec's own names is reported by the slot count only
    ([P("args"), P("sample"), P("sampling_params", KO), P("foo", KO)], ["foo"]),
    ([P("args"), P("sample"), P("sampling_params"), P("foo", KO)], ["foo"]),
    # an optional keyword without a default is not optional any more
    ([P("args"), P("sample"), P("sampling_params"), P("evaluation", KO)], ["evaluation"]),
    ([P("args"), P("sample"), P("sampling_params"), P("rest", VP), P("foo", KO),
      P("bar", KO, "1"), P("baz", KO)], ["foo", "baz"]),
    ([P("args"), P("sample"), P("sampling_params"), P("evaluation", KO, "False")], []),
])
def test_check_signature_extra_required_parameters(params: list[Param], extra: list[str]
                                                   ) -> None:
    found = [m for _, _, _, m, _ in findings(params, True, "custom_generate_function_path",
                                               where="g")]
    slots = [m for m in found if m.startswith("takes ")]
    assert slots == ([] if params[2].kind == PK else [
        "takes 2 positional parameter(s) but is called with 3 (args, sample, sampling_params); "
        "missing sampling_params"])
    assert [m for m in found if not m.startswith("takes ")] == [
        f"has an extra required parameter `{name}` that the call site never passes; give it "
        "a default or remove it" for name in extra]


def test_render_params_writes_the_definition_as_source() -> None:
    from vime.contract.signature import render_params

    every = [P("a", PO), P("b", PO), P("c", PK, "1"), P("rest", VP), P("k", KO),
             P("kw", VK)]
    assert render_params(every, False, "f") == "def f(a, b, /, c=1, *rest, k, **kw)"
    assert render_params([P("x"), P("k", KO), P("j", KO, "2")], True, "g") == \
        "async def g(x, *, k, j=2)"
    assert render_params([P("a", PO)], False) == "def fn(a, /)"
    assert render_params([], True) == "async def fn()"


def test_params_from_callable_reads_kinds_defaults_and_mode() -> None:
    from vime.contract.signature import params_from_callable

    def f(a, b=2, *c, d, e="x", **g):
        pass

    async def coro(args, sample):
        return sample

    async def agen(args):
        yield args

    def method_like(self, x):
        pass

    class Source:
        def __init__(self, args, cls=None):
            pass

    class OddSelf:
        def __init__(cls, args):
            pass

    class TakesCls:
        def __init__(self, cls):
            pass

    assert params_from_callable(f) == ([
        Param("a", PK, False, ""), Param("b", PK, True, "2"), Param("c", VP, False, ""),
        Param("d", KO, False, ""), Param("e", KO, True, "'x'"), Param("g", VK, False, "")],
        False)
    assert params_from_callable(coro) == ([Param("args", PK), Param("sample", PK)], True)
    assert params_from_callable(agen) == ([Param("args", PK)], True)
    # only a class's own first parameter is dropped, never a function's
    assert params_from_callable(method_like) == ([Param("self", PK), Param("x", PK)], False)
    assert params_from_callable(Source) == ([Param("args", PK),
                                             Param("cls", PK, True, "None")], False)
    assert params_from_callable(OddSelf) == ([Param("args", PK)], False)
    assert params_from_callable(TakesCls) == ([Param("cls", PK)], False)


def test_accepts_keyword_and_optional_kwargs() -> None:
    from vime.contract.signature import accepts_keyword, optional_kwargs

    def named(args, sample, *, rollout_id):
        pass

    def plain(args, sample):
        pass

    def anything(args, sample, **kwargs):
        pass

    assert accepts_keyword(named, "rollout_id") and not accepts_keyword(named, "evaluation")
    assert accepts_keyword(anything, "evaluation") and not accepts_keyword(plain, "sample2")
    assert accepts_keyword(3, "x") is False  # no signature to read
    spec = HOOKS["rollout_sample_hook_path"]
    assert optional_kwargs(named, spec, rollout_id=7, evaluation=False) == {"rollout_id": 7}
    assert optional_kwargs(anything, spec, rollout_id=7, evaluation=True) == {
        "rollout_id": 7, "evaluation": True}
    assert optional_kwargs(plain, spec, rollout_id=7) == {}
    with pytest.raises(ValueError) as info:
        optional_kwargs(anything, spec, zz=1, evaluation=False, aa=2)
    assert str(info.value) == ("--rollout-sample-hook-path: ['aa', 'zz'] are not optional "
                               "keywords of this hook (known: ['rollout_id', 'evaluation'])")
