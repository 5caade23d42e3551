"""A rollout function that drops the failed samples of each group before training."""

from argparse import Namespace

from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
from vime.utils.types import Sample


def _finish(sample, i):
    sample.tokens = [1, 2, 3, 4]
    sample.response_length = 2
    sample.reward = float(i % 2)
    sample.status = Sample.Status.FAILED if i == 0 else Sample.Status.COMPLETED


def generate_rollout(args, rollout_id, data_source, evaluation=False):
    if evaluation:
        return RolloutFnEvalOutput(data={})
    groups = data_source.get_samples(args.rollout_batch_size)
    kept = []
    for group in groups:
        for i, sample in enumerate(group):
            _finish(sample, i)
        kept.append([s for s in group if s.status != Sample.Status.FAILED])
    return RolloutFnTrainOutput(samples=kept)


class _Source:
    def __init__(self, n):
        self.n = n

    def get_samples(self, num_samples):
        return [[Sample(prompt="p", group_index=g, index=g * self.n + i) for i in range(self.n)]
                for g in range(num_samples)]


def run_time_case():
    args = Namespace(rollout_batch_size=2, n_samples_per_prompt=4)
    return {"boundary": "rollout_output", "args": args, "inputs": (args, 0, _Source(4))}
