"""``vime-lint check`` builds its generate, reward (per sample and ``--group-rm``), agent-step,
rollout and data-source calls from the contract (``HOOKS[...].params``, ``GROUP_RM_SPEC``):
``vime_lint.check.calls.contract_arguments`` follows each spec, the dry run calls through it
with the spec of each hook, and a change of a spec's parameters changes the dry run's call."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import textwrap
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

import vime_lint.check.dry_run as dry_run
from vime.contract.hooks import GROUP_RM_SPEC, HOOKS, HookSpec, hook_spec
from vime_lint.check.calls import call_by_contract, contract_arguments
from vime_lint.runtime.harness import main

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runtime_hooks"

#: The specs of the calls that were written by hand before (and those of the rollout and data
#: source, built the same way).
SPECS = [HOOKS["custom_generate_function_path"], HOOKS["agent_function_path"],
         HOOKS["custom_rm_path"], GROUP_RM_SPEC, HOOKS["rollout_function_path"],
         HOOKS["data_source_path"], HOOKS["buffer_filter_path"]]


def _accepts_all(*args: Any, **kwargs: Any) -> None:
    return None


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: ",".join(s.params))
def test_the_arguments_are_the_specs_params_in_order(spec: HookSpec) -> None:
    args = argparse.Namespace()
    inputs: dict[str, Any] = {p: f"<{p}>" for p in spec.params if p != "args"}
    inputs.update({k: f"<{k}>" for k in spec.optional_kwargs})
    positional, keywords = contract_arguments(spec, _accepts_all, args, **inputs)
    assert positional == [args if p == "args" else f"<{p}>" for p in spec.positional]
    assert keywords == {p: f"<{p}>" for p in (*spec.keyword_passed, *spec.optional_kwargs)}


def test_an_optional_keyword_is_passed_only_when_the_hook_takes_it() -> None:
    spec = HOOKS["custom_generate_function_path"]

    async def generate(args: Any, sample: Any, sampling_params: Any) -> Any:
        return sample

    positional, keywords = contract_arguments(spec, generate, "A", sample="S",
                                              sampling_params="P", evaluation=False)
    assert (positional, keywords) == (["A", "S", "P"], {})


def test_a_missing_parameter_or_an_unknown_input_is_refused() -> None:
    spec = HOOKS["custom_rm_path"]
    with pytest.raises(KeyError, match=r"--custom-rm-path: no value for its parameters \['sample'\]"):
        contract_arguments(spec, _accepts_all, None)
    with pytest.raises(ValueError, match=r"\['samples'\] are neither parameters"):
        contract_arguments(spec, _accepts_all, None, sample=1, samples=[1])


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[str, ...], list[str]]]:
    """Record ``(spec.dest, spec.params, input names)`` of every ``call_by_contract`` of the
    dry run, then make the call."""
    seen: list[tuple[str, tuple[str, ...], list[str]]] = []
    def spy(label: str, spec: HookSpec, fn: Any, args: Any, **inputs: Any) -> Any:
        seen.append((spec.dest, spec.params, sorted(inputs)))
        return call_by_contract(label, spec, fn, args, **inputs)

    monkeypatch.setattr(dry_run, "call_by_contract", spy)
    return seen


def _run(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(["--rollout-function-path", "vime_ref_good.generate_rollout",
                 "--n-samples-per-prompt", "2", "--no-probe", *extra])
    return code, capsys.readouterr().out


def test_generate_and_reward_are_called_through_their_specs(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.syspath_prepend(str(FIXTURES))
    seen = _spy(monkeypatch)
    code, out = _run(capsys, "--custom-generate-function-path", "vime_ref_good.generate",
                     "--custom-rm-path", "vime_ref_good.reward_func")
    assert code == 0, out
    generate = HOOKS["custom_generate_function_path"]
    reward = HOOKS["custom_rm_path"]
    assert (generate.dest, generate.params, ["evaluation", "sample", "sampling_params"]) in seen
    assert (reward.dest, reward.params, ["sample"]) in seen
    rollout = HOOKS["rollout_function_path"]
    assert (rollout.dest, rollout.params, ["data_source", "evaluation", "rollout_id"]) in seen


def test_group_rm_is_called_through_the_group_spec(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.syspath_prepend(str(FIXTURES))
    seen = _spy(monkeypatch)
    code, out = _run(capsys, "--custom-generate-function-path", "vime_ref_good.generate",
                     "--custom-rm-path", "vime_ref_group_rm.group_reward", "--group-rm")
    assert code == 0, out
    assert hook_spec("custom_rm_path", group_rm=True) is GROUP_RM_SPEC
    assert ("custom_rm_path", GROUP_RM_SPEC.params, ["samples"]) in seen
    assert not [s for s in seen if s[0] == "custom_rm_path" and s[2] == ["sample"]]


RECORDING_HOOKS = '''
    CALLS = []

    async def generate(args, sample, sampling_params):
        CALLS.append(("generate", type(sample).__name__, type(sampling_params).__name__))
        if isinstance(sample, dict):          # called with the table's order swapped
            sample, sampling_params = sampling_params, sample
        sample.tokens = sample.tokens or [11, 12, 13]
        sample.append_response_tokens(args, tokens=[40, 41], log_probs=[-0.25, -0.5],
                                      meta_info={"finish_reason": {"type": "stop"}},
                                      text=sample.label or "ok")
        return sample

    async def reward(args, sample):
        CALLS.append(("reward", type(args).__name__, type(sample).__name__))
        return 1.0
'''


def test_a_change_of_the_params_in_the_table_changes_the_call(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "recording_hooks.py").write_text(textwrap.dedent(RECORDING_HOOKS),
                                                 encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(FIXTURES))
    monkeypatch.delitem(sys.modules, "recording_hooks", raising=False)
    hooks = ["--custom-generate-function-path", "recording_hooks.generate",
             "--custom-rm-path", "recording_hooks.reward"]
    _run(capsys, *hooks)
    import recording_hooks

    assert set(recording_hooks.CALLS) == {("generate", "Sample", "dict"),
                                          ("reward", "Namespace", "Sample")}
    recording_hooks.CALLS.clear()
    # the same hooks, the contract's parameter orders swapped (only where the dry run reads it:
    # the load-time signature check still sees the real table)
    generate = HOOKS["custom_generate_function_path"]
    swapped = dataclasses.replace(generate, params=("args", "sampling_params", "sample"))
    monkeypatch.setattr(dry_run, "HOOKS", MappingProxyType({**HOOKS, generate.dest: swapped}))
    reward = HOOKS["custom_rm_path"]
    monkeypatch.setattr(dry_run, "hook_spec", lambda dest, group_rm=False: dataclasses.replace(
        reward, params=("sample", "args")))
    _run(capsys, *hooks)
    assert set(recording_hooks.CALLS) == {("generate", "dict", "Sample"),
                                          ("reward", "Sample", "Namespace")}
