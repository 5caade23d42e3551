"""Dynamic sampling filters for the filter probes (VIM308, VIM309): mistakes seen in public
threads (NVIDIA-NeMo/RL#4158: an exact ``std == 0`` test) and the correct near-misses."""

import statistics

from vime.rollout.filter_hub.base_types import DynamicFilterOutput


def _rewards(args, samples):
    return [s.get_reward_value(args) for s in samples]


def exact_zero_std(args, samples, **kwargs):
    keep = statistics.pstdev(_rewards(args, samples)) != 0.0
    return DynamicFilterOutput(keep=keep, reason=None if keep else "zero_std")


def exact_set_of_rewards(args, samples, **kwargs):
    keep = len(set(_rewards(args, samples))) > 1   # equality of floats, spelled otherwise
    return DynamicFilterOutput(keep=keep, reason=None if keep else "all_equal")


def keeps_only_all_correct(args, samples, **kwargs):
    # inverted condition: keeps the groups without signal, drops the informative ones
    rewards = _rewards(args, samples)
    return DynamicFilterOutput(keep=statistics.pstdev(rewards) < 1e-6, reason="inverted")


def needs_a_full_score(args, samples, **kwargs):
    # written for 0/1 rewards: "at least one correct and one wrong" drops continuous groups
    rewards = _rewards(args, samples)
    keep = 1.0 in rewards and 0.0 in rewards
    return DynamicFilterOutput(keep=keep, reason=None if keep else "no_mix")


def tolerant_std(args, samples, **kwargs):
    keep = statistics.pstdev(_rewards(args, samples)) > 1e-6
    return DynamicFilterOutput(keep=keep, reason=None if keep else "zero_std")


def rounded_rewards(args, samples, **kwargs):
    keep = len({round(r, 6) for r in _rewards(args, samples)}) > 1
    return DynamicFilterOutput(keep=keep, reason=None if keep else "all_equal")


def keeps_everything(args, samples, **kwargs):
    # not a zero-std filter at all (e.g. a length filter): nothing to say about float noise
    return DynamicFilterOutput(keep=True)


def reads_dict_rewards(args, samples, **kwargs):
    keep = statistics.pstdev([s.reward[args.reward_key] for s in samples]) > 1e-6
    return DynamicFilterOutput(keep=keep, reason=None if keep else "zero_std")
