"""A reward post-process hook that returns only the normalised rewards."""

from argparse import Namespace

from vime.utils.types import Sample


def reward_post_process(args, samples):
    raw = [s.get_reward_value(args) for s in samples]
    mean = sum(raw) / len(raw)
    return [r - mean for r in raw]


def run_time_case():
    args = Namespace(n_samples_per_prompt=2)
    samples = [Sample(prompt="p", index=i, group_index=i // 2, reward=float(i % 2))
               for i in range(4)]
    return {"boundary": "reward_post_process_result", "args": args, "inputs": (args, samples)}
