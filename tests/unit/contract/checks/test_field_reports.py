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

from vime.contract.checks.field_reports import (
    FIELD_BATCH_CHECKS,
    FIELD_SAMPLE_CHECKS,
    tokenizer_facts,
)
from vime.contract.checks.settings import CheckSettings
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
