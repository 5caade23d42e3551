"""Invariants VIM170-VIM177 (failures reported in other frameworks) on the train output: a
passing and a failing case each, the failing ones checking the id, the location and the field in
the message; and one realistic clean batch that trips none of them."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

import pytest
from runtime_helpers import (
    findings,
    make_args,
    make_groups,
    make_sample,
    only,
    rejects,
    train_output,
)

from vime.contract.checks.batch import OutputInfo
from vime.contract.checks.field_reports import (
    FIELD_BATCH_CHECKS,
    FIELD_SAMPLE_CHECKS,
    check_field_reports,
    check_vim170,
    check_vim171,
    check_vim172,
    check_vim173,
    check_vim174,
    check_vim175,
    check_vim176,
    tokenizer_facts,
)
from vime.contract.checks.locations import Loc
from vime.contract.checks.settings import CheckSettings
from vime.contract.checks.shape import read_shape
from vime.contract.invariants import INVARIANTS
from vime.utils.types import Sample

pytestmark = pytest.mark.unit

OWN_IDS = {f"VIM{n}" for n in range(170, 178)}


def test_field_report_registries_hold_their_runtime_ids_in_order() -> None:
    for registry in (FIELD_SAMPLE_CHECKS, FIELD_BATCH_CHECKS):
        assert list(registry) == sorted(registry)
    assert set(FIELD_SAMPLE_CHECKS) | set(FIELD_BATCH_CHECKS) == OWN_IDS
    for inv_id in OWN_IDS:
        inv = INVARIANTS[inv_id]
        assert inv.scope == "runtime" and inv.boundaries == ("B5",)
        assert inv.severity == ("error" if inv_id == "VIM176" else "warning")
        assert "#" in inv.rationale, f"{inv_id} cites no source thread"


def test_settings_read_the_new_arguments() -> None:
    s = CheckSettings.from_args(make_args(rollout_max_response_len=64, rollout_max_prompt_len=32,
                                          bos_token_id=1, eos_token_text="<|im_end|>",
                                          eos_token_id=2))
    assert (s.max_response_len, s.max_prompt_len, s.bos_token_id, s.eos_token_text) == (
        64, 32, 1, "<|im_end|>")
    assert s.eos_token_id == 2
    assert (s.advantage_estimator, s.rewards_normalization, s.custom_advantages) == (
        "grpo", True, False)
    s = CheckSettings.from_args(make_args(bos_token_id=True, eos_token_text=""))
    assert (s.max_response_len, s.max_prompt_len, s.bos_token_id, s.eos_token_text) == (
        None, None, None, None)


# ---- VIM170 status vs budget ----------------------------------------------------------------

def test_vim170_warns_completed_sample_at_the_budget() -> None:
    groups = make_groups()
    found = only(findings(train_output(groups), make_args(rollout_max_response_len=3)), "VIM170")
    assert len(found) == 8 and found[0].severity == "warning"
    assert found[6].format().startswith(
        "VIM170 warning: samples[1][2].status (index=6) is COMPLETED but response_length=3 "
        "equals --rollout-max-response-len=3")
    assert "TRUNCATED" in found[6].message and "finish reason" in found[6].fix


def test_vim170_accepts_truncated_or_shorter_and_an_unset_budget() -> None:
    groups = make_groups()
    for group in groups:
        for s in group:
            s.status = Sample.Status.TRUNCATED
    assert only(findings(train_output(groups), make_args(rollout_max_response_len=3)),
                "VIM170") == []
    assert only(findings(train_output(make_groups()), make_args(rollout_max_response_len=4)),
                "VIM170") == []
    assert only(findings(train_output(make_groups())), "VIM170") == []


def test_vim170_accepts_a_model_that_stopped_on_its_last_budget_token() -> None:
    groups = make_groups()
    eos = groups[0][0].tokens[-1]
    for group in groups:
        for s in group:
            s.tokens[-1] = eos
    groups[1][2].tokens[-1] = eos + 1   # this one was cut by the budget
    found = only(findings(train_output(groups), make_args(rollout_max_response_len=3,
                                                          eos_token_id=eos)), "VIM170")
    assert [v.where for v in found] == ["samples[1][2].status (index=6)"]


def test_vim170_accepts_a_stop_token_id_at_the_budget_and_warns_on_other_last_tokens() -> None:
    groups = make_groups()
    stop = groups[0][0].tokens[-1]
    for group in groups:
        for s in group:
            s.tokens[-1] = stop
    groups[0][1].tokens[-1] = stop + 1   # cut by the budget: the last token stops nothing
    found = only(findings(train_output(groups), make_args(rollout_max_response_len=3,
                                                          rollout_stop_token_ids=[stop])),
                 "VIM170")
    assert [v.format().splitlines()[0] for v in found] == [
        "VIM170 warning: samples[0][1].status (index=1) is COMPLETED but response_length=3 "
        "equals --rollout-max-response-len=3: the engine most likely stopped on the budget, so "
        "the status should be TRUNCATED (the truncated flag and overlong filtering read it)"]
    assert "--rollout-stop-token-ids" in found[0].fix
    assert CheckSettings.from_args(make_args(rollout_stop_token_ids=[5, -1, 7])).stop_token_ids \
        == (5, 7)


# ---- VIM171 no learning signal in any group -------------------------------------------------

def _flat_groups(*rewards: float) -> list[list[Sample]]:
    groups = make_groups(groups=len(rewards))
    for group, r in zip(groups, rewards, strict=True):
        for s in group:
            s.reward = r
    return groups


def test_vim171_warns_when_no_group_has_reward_spread() -> None:
    found = only(findings(train_output(_flat_groups(0.0, 1.0, 0.0)),
                          make_args(rollout_batch_size=3)), "VIM171")
    assert len(found) == 1 and found[0].severity == "warning"
    assert found[0].format().startswith(
        "VIM171 warning: samples[*].reward are equal within each of the 3 groups (zero reward "
        "std in every group) although they range from 0.0 to 1.0 across the batch")
    assert "check_reward_nonzero_std" in found[0].fix


def test_vim171_accepts_one_group_with_spread_and_skips_where_advantages_differ() -> None:
    groups = _flat_groups(0.0, 1.0)
    groups[1][3].reward = 0.0
    assert only(findings(train_output(groups)), "VIM171") == []
    constant = train_output(_flat_groups(1.0, 1.0))          # VIM117's case, not VIM171's
    assert only(findings(constant), "VIM171") == []
    for extra in ({"rewards_normalization": False}, {"advantage_estimator": "ppo"},
                  {"loss_type": "sft_loss"},
                  {"custom_reward_post_process_path": "my_pkg.rewards.post"}):
        out = train_output(_flat_groups(0.0, 1.0))
        assert only(findings(out, make_args(**extra)), "VIM171") == [], extra
    single = [[make_sample(g, 0, 1, reward=float(g))] for g in range(4)]
    args = make_args(n_samples_per_prompt=1, rollout_batch_size=4)
    assert only(findings(train_output(single), args), "VIM171") == []


# ---- VIM172 prompt budget -------------------------------------------------------------------

def test_vim172_warns_prompt_over_the_prompt_budget() -> None:
    groups = make_groups()
    groups[1][1].tokens = [10, 11, 12, 13, 14] + groups[1][1].tokens[-3:]
    found = only(findings(train_output(groups), make_args(rollout_max_prompt_len=4)), "VIM172")
    assert len(found) == 1 and found[0].severity == "warning"
    assert found[0].format().startswith(
        "VIM172 warning: samples[1][1].tokens (index=5) holds 5 prompt tokens (len(tokens)=8 - "
        "response_length=3), more than --rollout-max-prompt-len=4")


def test_vim172_accepts_prompts_within_the_budget_and_later_fan_out_segments() -> None:
    args = make_args(rollout_max_prompt_len=3)
    assert only(findings(train_output(make_groups()), args), "VIM172") == []
    groups: list[list[Any]] = [[[s] for s in g] for g in make_groups()]
    first, second = make_sample(0, 0), make_sample(0, 0)
    first.rollout_id = second.rollout_id = 100
    second.tokens = first.tokens + [50, 51, 52]         # the first turn is the second's prompt
    groups[0][0] = [first, second]
    assert only(findings(train_output(groups), args), "VIM172") == []
    assert only(findings(train_output(make_groups())), "VIM172") == []


# ---- VIM173 placeholder log-probs on trainable tokens ---------------------------------------

def _long_sample(mask: list[int] | None, lp: list[float]) -> Sample:
    s = make_sample(1, 2, response_length=len(lp))
    s.loss_mask, s.rollout_log_probs = mask, lp
    return s


def test_vim173_warns_a_run_of_zero_log_probs_on_trainable_tokens() -> None:
    groups = make_groups()
    lp = [-0.5] * 4 + [0.0] * 9 + [-0.5] * 3
    groups[1][2] = _long_sample([1] * 16, lp)
    found = only(findings(train_output(groups)), "VIM173")
    assert len(found) == 1 and found[0].severity == "warning"
    assert found[0].format().startswith(
        "VIM173 warning: samples[1][2].rollout_log_probs[4] (index=6) has 9 consecutive "
        "entries of exactly 0.0 at trainable positions (loss_mask 1) from index 4 to 13")
    groups[1][2] = _long_sample(None, lp)
    found = only(findings(train_output(groups)), "VIM173")
    assert len(found) == 1 and "(loss_mask None: all trainable)" in found[0].message
    # an observation (mask 0, log-prob 0.0) whose zeros run on into 8 trainable tokens
    lp = [-0.5] * 2 + [0.0] * 11 + [-0.5] * 3
    groups[1][2] = _long_sample([1] * 2 + [0] * 3 + [1] * 11, lp)
    found = only(findings(train_output(groups)), "VIM173")
    assert [v.where for v in found] == ["samples[1][2].rollout_log_probs[5] (index=6)"]
    assert "has 8 consecutive entries" in found[0].message


def test_vim173_accepts_zeros_on_masked_observations_and_short_runs() -> None:
    groups = make_groups()
    lp = [-0.5] * 4 + [0.0] * 10 + [-0.5] * 3
    groups[1][2] = _long_sample([1] * 4 + [0] * 10 + [1] * 3, lp)        # observation tokens
    assert only(findings(train_output(groups)), "VIM173") == []
    lp = [-0.5] * 4 + [0.0] * 7 + [-0.5] * 3 + [0.0] * 7 + [-0.5]
    groups[1][2] = _long_sample(None, lp)                                  # runs of 7 only
    assert only(findings(train_output(groups)), "VIM173") == []
    groups[1][2] = _long_sample([1] * 7 + [0] + [1] * 7 + [0] + [1], [0.0] * 17)   # mask cuts
    assert only(findings(train_output(groups)), "VIM173") == []


def test_vim173_defers_to_vim127_on_an_inverted_mask() -> None:
    """Zeros on every trainable token and real log-probs on every masked one: the mask looks
    inverted (VIM127), which is reported once instead of also as placeholder log-probs."""
    groups = make_groups()
    groups[1][2] = _long_sample([0] * 4 + [1] * 9, [-0.5] * 4 + [0.0] * 9)
    found = findings(train_output(groups))
    assert only(found, "VIM173") == []
    assert [v.where for v in only(found, "VIM127")] == ["samples[1][2].loss_mask (index=6)"]


# ---- VIM174 labels of one kind --------------------------------------------------------------

def test_vim174_warns_mixed_label_types() -> None:
    groups = make_groups()
    groups[1][0].label = 5  # type: ignore[assignment]
    groups[1][3].label = 6  # type: ignore[assignment]
    found = only(findings(train_output(groups)), "VIM174")
    assert len(found) == 1 and found[0].severity == "warning"
    assert found[0].format().startswith(
        "VIM174 warning: samples[1][0].label (index=4) is int (5) while the batch mixes label "
        "types (str: 6, first samples[0][0] (index=0); int: 2, first samples[1][0] (index=4))")


def test_vim174_warns_empty_string_labels() -> None:
    groups = make_groups()
    groups[0][2].label = "  "
    groups[1][1].label = ""
    found = only(findings(train_output(groups)), "VIM174")
    assert len(found) == 1
    assert found[0].format().startswith(
        "VIM174 warning: samples[0][2].label (index=2) is '  ' (empty or whitespace only), as "
        "on 2 of 8 labelled samples")


def test_vim174_accepts_one_label_type_and_missing_labels() -> None:
    assert only(findings(train_output(make_groups())), "VIM174") == []
    groups = make_groups()
    groups[0][0].label = None
    assert only(findings(train_output(groups)), "VIM174") == []
    assert only(findings(train_output(make_groups(label=None))), "VIM174") == []


# ---- VIM175 empty response, top reward ------------------------------------------------------

def test_vim175_warns_empty_response_with_the_top_reward() -> None:
    groups = make_groups()
    groups[0][1].response = " \n"             # reward 1.0 (k odd), the batch maximum
    found = only(findings(train_output(groups)), "VIM175")
    assert len(found) == 1 and found[0].severity == "warning"
    assert found[0].format().startswith(
        "VIM175 warning: samples[0][1].response (index=1) is ' \\n' (response_length=3) but its "
        "reward 1.0 is the batch maximum (min 0.0); 1 of the 4 top-reward samples have an empty "
        "response")
    groups[0][1].response = "<|im_end|>"      # only the EOS text is empty too, when known
    args = make_args(eos_token_text="<|im_end|>")
    assert len(only(findings(train_output(groups), args), "VIM175")) == 1


def test_vim175_accepts_empty_response_without_the_top_reward() -> None:
    groups = make_groups()
    groups[0][0].response = ""                # reward 0.0, the minimum
    groups[0][1].response = ""
    groups[0][1].remove_sample = True         # left out of training on purpose
    assert only(findings(train_output(groups)), "VIM175") == []
    constant = make_groups(reward=1.0, response="")
    assert only(findings(train_output(constant)), "VIM175") == []
    tokens_only = make_groups(response="")      # no response has text: nothing to compare
    assert only(findings(train_output(tokens_only)), "VIM175") == []


# ---- VIM176 doubled BOS ---------------------------------------------------------------------

def test_vim176_rejects_doubled_bos() -> None:
    groups = make_groups()
    for group in groups:
        for s in group:
            s.tokens = [1, 1] + s.tokens      # a template's BOS, then the encoder's
    err = rejects(train_output(groups), make_args(bos_token_id=1))
    assert set(err.ids) == {"VIM176"} and len(err.violations) == 8
    assert ("VIM176 error: samples[1][3].tokens (index=7) starts with the BOS token id 1 twice "
            "(tokens[0] == tokens[1] == 1)") in str(err)
    assert "add_special_tokens=False" in str(err)


def test_vim176_accepts_one_bos_and_skips_an_unknown_bos() -> None:
    groups = make_groups()
    for group in groups:
        for s in group:
            s.tokens = [1] + s.tokens
    assert only(findings(train_output(groups), make_args(bos_token_id=1)), "VIM176") == []
    groups[0][0].tokens = [1] + groups[0][0].tokens
    assert only(findings(train_output(groups)), "VIM176") == []
    assert only(findings(train_output(groups), make_args(bos_token_id=2)), "VIM176") == []


# ---- VIM177 special-token text in the response ----------------------------------------------

def test_vim177_warns_eos_text_in_responses_once_per_batch() -> None:
    groups = make_groups()
    groups[0][3].response = "The answer is 5.<|im_end|>"
    groups[1][0].response = "5<|im_end|>"
    found = only(findings(train_output(groups), make_args(eos_token_text="<|im_end|>")),
                 "VIM177")
    assert len(found) == 1 and found[0].severity == "warning"
    assert found[0].format().startswith(
        "VIM177 warning: samples[0][3].response (index=3) contains the end-of-sequence text "
        "'<|im_end|>' (2 of 8 responses)")
    assert "--rollout-skip-special-tokens" in found[0].fix


def test_vim177_accepts_clean_responses_and_skips_an_unknown_eos() -> None:
    args = make_args(eos_token_text="<|im_end|>")
    assert only(findings(train_output(make_groups()), args), "VIM177") == []
    groups = make_groups(response="5<|im_end|>")
    assert only(findings(train_output(groups)), "VIM177") == []


# ---- tokenizer facts (the manager puts them on args) ----------------------------------------

class _Tokenizer:
    bos_token_id = 128000
    eos_token_id = 128009
    eos_token = "<|eot_id|>"


def test_tokenizer_facts_read_bos_id_and_eos_id_and_text() -> None:
    assert tokenizer_facts(_Tokenizer()) == {"bos_token_id": 128000, "eos_token_id": 128009,
                                             "eos_token_text": "<|eot_id|>"}
    assert tokenizer_facts(object()) == {"bos_token_id": None, "eos_token_id": None,
                                         "eos_token_text": None}


def test_the_rollout_manager_puts_tokenizer_facts_on_args(monkeypatch: pytest.MonkeyPatch) -> None:
    import vime.utils.data
    from vime.contract.checks.field_reports import record_tokenizer_facts
    from vime.ray import rollout

    assert rollout.record_tokenizer_facts is record_tokenizer_facts   # what the manager calls

    monkeypatch.setattr(vime.utils.data, "load_tokenizer", lambda path: _Tokenizer())
    args = Namespace(hf_checkpoint="/models/m", contract_check="raise",
                     rollout_skip_special_tokens=True)
    record_tokenizer_facts(args)
    assert (args.bos_token_id, args.eos_token_id, args.eos_token_text) == (
        128000, 128009, "<|eot_id|>")
    # Without --rollout-skip-special-tokens the built-in generate keeps EOS text in responses
    # on purpose: VIM177 gets no EOS text, VIM176 still gets the BOS id.
    keeps = Namespace(hf_checkpoint="/models/m", contract_check="raise")
    record_tokenizer_facts(keeps)
    assert keeps.bos_token_id == 128000 and not hasattr(keeps, "eos_token_text")
    kept = Namespace(hf_checkpoint="/models/m", contract_check="warn", eos_token_text="</s>")
    record_tokenizer_facts(kept)
    assert kept.eos_token_text == "</s>"
    off = Namespace(hf_checkpoint="/models/m", contract_check="off")
    record_tokenizer_facts(off)
    assert not hasattr(off, "bos_token_id")

    def fail(path: str) -> Any:
        raise OSError("no tokenizer here")

    monkeypatch.setattr(vime.utils.data, "load_tokenizer", fail)
    missing = Namespace(hf_checkpoint="/models/m", contract_check="raise")
    record_tokenizer_facts(missing)
    assert not hasattr(missing, "bos_token_id")


# ---- a realistic clean batch ----------------------------------------------------------------

BOS, EOS = 1, 2
TEMPLATE = {"rm_type": "math", "tools": ["calculator"], "source": "arith"}


def _episode(index: int, group: int, reward: float, *, truncate: bool = False) -> Sample:
    """Two model turns around a masked tool observation, built with append_response_tokens."""
    prompt = [BOS, 30, 31, 32, 33, 34]
    s = Sample(group_index=group, index=index, prompt="<|user|>What is 2+3?", label="5",
               tokens=list(prompt), metadata=dict(TEMPLATE))
    s.append_response_tokens(None, tokens=[60, 61, 62, 63, 64],
                             log_probs=[-0.3, -0.2, -0.1, -0.4, -0.6], text="<calc>2+3</calc>",
                             meta_info={"finish_reason": {"type": "stop"}})
    s.append_response_tokens(None, tokens=list(range(70, 82)), trainable=False,
                             text="<result>5</result>")
    if truncate:   # the second turn ran into the budget: 5 + 12 + 7 = 24 tokens
        s.append_response_tokens(None, tokens=[90, 91, 92, 93, 94, 95, 96],
                                 log_probs=[-0.5] * 7, text="The answer is",
                                 meta_info={"finish_reason": {"type": "length"}})
    else:
        s.append_response_tokens(None, tokens=[90, 91, 92, 93, EOS],
                                 log_probs=[-0.5, -0.4, -0.3, -0.2, -0.01],
                                 text="The answer is 5.",
                                 meta_info={"finish_reason": {"type": "stop"}})
    s.reward = reward
    return s


def _fan_out(index: int, group: int, reward: float) -> list[Sample]:
    """One rollout trained as two segments; the second carries the first turn as its prompt."""
    first = Sample(group_index=group, index=index, rollout_id=1000 + index, prompt="p",
                   label="5", tokens=[BOS, 30, 31, 32, 60, 61, 62], response="<calc>2+3</calc>",
                   response_length=3, rollout_log_probs=[-0.3, -0.2, -0.1], reward=reward,
                   status=Sample.Status.COMPLETED, metadata=dict(TEMPLATE))
    second = Sample(group_index=group, index=index, rollout_id=1000 + index, prompt="p",
                    label="5", tokens=[BOS, 30, 31, 32, 60, 61, 62, 70, 71, 72, 90, 91, EOS],
                    response="The answer is 5.", response_length=3,
                    rollout_log_probs=[-0.5, -0.4, -0.02], reward=reward,
                    status=Sample.Status.COMPLETED, metadata=first.metadata)
    return [first, second]


def test_realistic_clean_batch_trips_no_field_report() -> None:
    multi_turn = [_episode(0, 0, 1.0), _episode(1, 0, 0.0), _episode(2, 0, 1.0),
                  _episode(3, 0, 0.0, truncate=True)]
    fanned = [_fan_out(4 + k, 1, float(k % 2)) for k in range(4)]
    out = train_output([[[s] for s in multi_turn], fanned])
    args = make_args(rollout_max_response_len=24, rollout_max_prompt_len=6, bos_token_id=BOS,
                     eos_token_text="<|im_end|>", rm_type="math", label_key="label")
    found = findings(out, args)
    assert multi_turn[3].status is Sample.Status.TRUNCATED
    assert multi_turn[3].response_length == 24
    assert multi_turn[0].loss_mask == [1] * 5 + [0] * 12 + [1] * 5
    assert {v.id for v in found} & OWN_IDS == set(), found
    assert [v for v in found if v.severity == "error"] == []


# ---- exact values, one check at a time on a read Shape --------------------------------------
# (each test below fails on a mutant that mutation testing found surviving the ones above)

def _direct(check: Any, groups: Any, **args: Any) -> list[tuple[str, str, str]]:
    """``check`` (a batch check) on ``groups``: (where, message, fix) per finding."""
    s = CheckSettings.from_args(make_args(**args))
    shape, _ = read_shape(groups, s)
    assert shape is not None
    return [(v.where, v.message, v.fix) for v in check(shape, s, OutputInfo())]


def _sample_check(check: Any, sample: Sample, **args: Any) -> list[tuple[str, str]]:
    s = CheckSettings.from_args(make_args(**args))
    return [(v.where, v.message) for v in check(sample, Loc("samples[0][0]"), s, "train")]


def test_check_field_reports_skips_exactly_the_ids_proven_clean() -> None:
    groups = [[make_sample(0, k, tokens=[1, 1, 2, 3, 4, 5]) for k in range(2)]]
    s = CheckSettings.from_args(make_args(n_samples_per_prompt=2, rollout_batch_size=1,
                                          rollout_max_response_len=3, bos_token_id=1))
    shape, _ = read_shape(groups, s)
    assert shape is not None
    both = [v.id for v in check_field_reports(shape, s, OutputInfo())]
    assert both == ["VIM170", "VIM176", "VIM170", "VIM176"]
    first = id(groups[0][0])
    for proven, expected in ((frozenset({"VIM170"}), ["VIM176", "VIM170", "VIM176"]),
                             (frozenset({"VIM176"}), ["VIM170", "VIM170", "VIM176"]),
                             (frozenset({"VIM170", "VIM176"}), ["VIM170", "VIM176"])):
        found = check_field_reports(shape, s, OutputInfo(), {first: proven})
        assert [v.id for v in found] == expected, proven


def test_tokenizer_facts_keep_zero_ids_and_drop_negative_non_int_or_empty_ones() -> None:
    class Zero:
        bos_token_id = 0
        eos_token_id = 0
        eos_token = "</s>"

    class Bad:
        bos_token_id = -1
        eos_token_id = "2"
        eos_token = ""

    class Odd:
        bos_token_id = True
        eos_token_id = -5
        eos_token = 7

    assert tokenizer_facts(Zero()) == {"bos_token_id": 0, "eos_token_id": 0,
                                       "eos_token_text": "</s>"}
    for tok in (Bad(), Odd()):
        assert tokenizer_facts(tok) == {"bos_token_id": None, "eos_token_id": None,
                                        "eos_token_text": None}, type(tok).__name__


def test_record_tokenizer_facts_loads_the_checkpoint_and_keeps_values_already_set(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import vime.utils.data
    from vime.contract.checks.field_reports import record_tokenizer_facts

    loaded: list[str] = []

    def load(path: str) -> _Tokenizer:
        loaded.append(path)
        return _Tokenizer()

    monkeypatch.setattr(vime.utils.data, "load_tokenizer", load)
    args = Namespace(hf_checkpoint="/models/m", contract_check="raise",
                     rollout_skip_special_tokens=True, bos_token_id=7, eos_token_id=None)
    record_tokenizer_facts(args)
    assert loaded == ["/models/m"]
    assert (args.bos_token_id, args.eos_token_id, args.eos_token_text) == (
        7, 128009, "<|eot_id|>")


def test_vim170_exact_on_odd_tokens_and_lengths() -> None:
    at_budget = make_sample(response_length=3)
    assert _sample_check(check_vim170, at_budget, rollout_max_response_len=3) == [
        ("samples[0][0].status", "is COMPLETED but response_length=3 equals "
         "--rollout-max-response-len=3: the engine most likely stopped on the budget, so the "
         "status should be TRUNCATED (the truncated flag and overlong filtering read it)")]
    # no tokens to end on a stop token: still at the budget
    no_tokens = make_sample(response_length=3, tokens=[])
    assert len(_sample_check(check_vim170, no_tokens, rollout_max_response_len=3,
                             rollout_stop_token_ids=[42])) == 1
    # a float response_length is not compared with the budget (VIM108 reports the type)
    as_float = make_sample(response_length=3)
    as_float.response_length = 3.0  # type: ignore[assignment]
    assert _sample_check(check_vim170, as_float, rollout_max_response_len=3) == []


def test_vim171_exact_on_two_groups_of_two_dict_rewards_and_skipped_singletons() -> None:
    def groups(*rewards: float) -> list[list[Sample]]:
        return [[make_sample(g, k, 2, reward={"score": r}) for k in range(2)]
                for g, r in enumerate(rewards)]

    two = _direct(check_vim171, groups(0.0, 1.0), n_samples_per_prompt=2,
                  rollout_batch_size=2, reward_key="score")
    assert two == [("samples[*].reward", "are equal within each of the 2 groups (zero reward "
                    "std in every group) although they range from 0.0 to 1.0 across the batch: "
                    "every grpo advantage is zero and the step learns nothing",
                    INVARIANTS["VIM171"].fix)]
    # the lowest reward in the first group, the highest in the last two
    three = _direct(check_vim171, groups(0.0, 1.0, 1.0), n_samples_per_prompt=2,
                    rollout_batch_size=3, reward_key="score", advantage_estimator="gspo")
    assert [m for _, m, _ in three] == [
        "are equal within each of the 3 groups (zero reward std in every group) although they "
        "range from 0.0 to 1.0 across the batch: every gspo advantage is zero and the step "
        "learns nothing"]
    # a group of one rollout first is skipped, not the end of the walk
    mixed: list[list[Sample]] = [[make_sample(0, 0, 1, reward=0.5)],
                                 *[[make_sample(g, k, 2, reward=float(g - 1)) for k in range(2)]
                                   for g in (1, 2)]]
    assert [m.split(":")[0] for _, m, _ in _direct(check_vim171, mixed, n_samples_per_prompt=2,
                                                   rollout_batch_size=3)] == [
        "are equal within each of the 2 groups (zero reward std in every group) although they "
        "range from 0.0 to 1.0 across the batch"]


def test_vim172_skips_unreadable_first_samples_and_walks_on() -> None:
    groups = make_groups(groups=1, n=3)
    groups[0][0].response_length = None  # type: ignore[assignment]
    groups[0][1].tokens = None  # type: ignore[assignment]
    groups[0][2].tokens = [10, 11, 12, 13] + groups[0][2].tokens
    assert _direct(check_vim172, groups, rollout_max_prompt_len=3, n_samples_per_prompt=3,
                   rollout_batch_size=1) == [
        ("samples[0][2].tokens (index=2)", "holds 7 prompt tokens (len(tokens)=10 - "
         "response_length=3), more than --rollout-max-prompt-len=3", INVARIANTS["VIM172"].fix)]


def _vim173(mask: list[int] | None, lp: list[float]) -> list[tuple[str, str]]:
    sample = make_sample(response_length=len(lp))
    sample.loss_mask, sample.rollout_log_probs = mask, lp
    return _sample_check(check_vim173, sample)


def _run_message(run: int, start: int, end: int, trainable: str = "loss_mask 1") -> str:
    return INVARIANTS["VIM173"].render(run=run, start=start, end=end, trainable=trainable)


def test_vim173_exact_runs_at_the_edges_of_the_trainable_stretches() -> None:
    # exactly PLACEHOLDER_RUN zeros from the first token, every token trainable
    assert _vim173(None, [0.0] * 8) == [
        ("samples[0][0].rollout_log_probs[0]",
         _run_message(8, 0, 8, "loss_mask None: all trainable"))]
    assert _vim173(None, [0.0] * 8 + [-0.5] * 2) == [
        ("samples[0][0].rollout_log_probs[0]",
         _run_message(8, 0, 8, "loss_mask None: all trainable"))]
    # a run that ends with the sample, the mask all 1 (no 0 after the stretch)
    assert _vim173([1] * 12, [-0.5] * 4 + [0.0] * 8) == [
        ("samples[0][0].rollout_log_probs[4]", _run_message(8, 4, 12))]
    # zeros on trainable tokens that run on into a masked observation stop at the mask
    mask = [0] * 2 + [1] * 8 + [0] * 6
    assert _vim173(mask, [-0.5] * 6 + [0.0] * 10) == []
    # the mask's length differs: VIM108/VIM109 report it, not VIM173
    short = make_sample(response_length=10)
    short.loss_mask, short.rollout_log_probs = [1] * 12, [0.0] * 10
    assert _sample_check(check_vim173, short) == []


def test_vim173_walks_every_trainable_stretch_in_order() -> None:
    # four stretches of 8 trainable tokens: none, 3, then 8 zeros, then none
    mask = ([1] * 8 + [0]) * 3 + [1] * 8
    lp = ([-0.5] * 8 + [-0.5]) + ([0.0] * 3 + [-0.5] * 5 + [-0.5]) + ([0.0] * 8 + [-0.5]) \
        + [-0.5] * 8
    assert _vim173(mask, lp) == [("samples[0][0].rollout_log_probs[18]", _run_message(8, 18, 26))]


def test_vim174_exact_on_three_label_types_after_an_unlabelled_sample() -> None:
    groups = make_groups()
    groups[0][0].label = None
    groups[0][1].label = 5  # type: ignore[assignment]
    groups[1][0].label = 6  # type: ignore[assignment]
    groups[1][1].label = 0.5  # type: ignore[assignment]
    assert _direct(check_vim174, groups) == [
        ("samples[1][1].label (index=5)", "is float (0.5) while the batch mixes label types "
         "(str: 4, first samples[0][2] (index=2); int: 2, first samples[0][1] (index=1); "
         "float: 1, first samples[1][1] (index=5)): a reward function written for one type "
         "fails or mis-scores the other", INVARIANTS["VIM174"].fix)]
    groups = make_groups()
    groups[0][0].label = None
    groups[1][2].label = "\t"
    assert _direct(check_vim174, groups) == [
        ("samples[1][2].label (index=6)", "is '\\t' (empty or whitespace only), as on 1 of 7 "
         "labelled samples: the reward compares responses with nothing",
         "drop records without an answer, or point --label-key at the answer column")]


def test_vim175_exact_on_two_samples_lengths_eos_text_and_dict_rewards() -> None:
    def pair(top: dict[str, Any], reward_key: str | None = "score",
             **args: Any) -> list[tuple[str, str, str]]:
        groups = [[make_sample(0, 0, 2, reward={"score": 0.0}),
                   make_sample(0, 1, 2, reward={"score": 1.0}, **top)]]
        return _direct(check_vim175, groups, n_samples_per_prompt=2, rollout_batch_size=1,
                       reward_key=reward_key, **args)

    found = pair({"response_length": 0, "response": "5"})
    assert found == [("samples[0][1].response (index=1)", INVARIANTS["VIM175"].render(
        response="5", rl=0, hi=1.0, lo=0.0, count=1, top=1), INVARIANTS["VIM175"].fix)]
    assert pair({"response": None}) == []                 # no text to judge
    assert pair({"response": "5<|im_end|>"}, eos_token_text="<|im_end|>") == []
    assert len(pair({"response": "<|im_end|>"}, eos_token_text="<|im_end|>")) == 1
    # every response is the EOS text only: no response has text, nothing to compare
    groups = [[make_sample(0, k, 2, response="<|im_end|>") for k in range(2)]]
    assert _direct(check_vim175, groups, n_samples_per_prompt=2, rollout_batch_size=1,
                   eos_token_text="<|im_end|>") == []


def test_vim176_exact_on_short_tuple_and_single_bos_tokens() -> None:
    def vim176(tokens: Any) -> list[tuple[str, str]]:
        return _sample_check(check_vim176, make_sample(tokens=tokens), bos_token_id=1)

    assert vim176([1, 1]) == [("samples[0][0].tokens",
                               INVARIANTS["VIM176"].render(bos=1))]
    assert vim176([1]) == []
    assert vim176((1, 1, 5)) == []                        # not a list: VIM108 reports it
    assert vim176([5, 1, 1]) == []                        # BOS twice, but not at the start
