"""A rollout module written against the upstream vime contract (docs/contract.md §12).

It runs on vime, loads with the signature check, lints clean and passes the runtime checker;
its eval branch reads the eval sets from ``data_source.eval_datasets()`` (vime's view of
``--eval-prompt-data``). Use it as the smallest template for your own:

    vime train --rollout-function-path examples.reference_rollout.generate_rollout \
        --custom-rm-path examples.reference_rollout.reward_func ...
    vime-lint rollout examples/reference_rollout.py
"""

from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
from vime.utils.types import Sample


def _fill(sample, k):
    prompt_ids = [11, 12, 13]
    sample.tokens = prompt_ids + [40 + k, 41]
    sample.response_length = 2
    sample.loss_mask = [1, 1]
    sample.response = "ok"
    sample.reward = float(k % 2)
    sample.status = Sample.Status.COMPLETED


def generate_rollout(args, rollout_id, data_source, evaluation=False):
    """Fill every sample of ``rollout_batch_size`` groups with a fixed 2-token response; the
    eval step does the same on the ``--eval-prompt-data`` sets (``data_source.eval_datasets()``,
    never the training prompts of ``get_samples``)."""
    if evaluation:
        data = {}
        for name, samples in data_source.eval_datasets().items():
            for k, sample in enumerate(samples):
                _fill(sample, k)
            data[name] = {"rewards": [s.reward for s in samples],
                          "truncated": [False] * len(samples), "samples": samples}
        return RolloutFnEvalOutput(data=data)
    groups = data_source.get_samples(args.rollout_batch_size)
    for group in groups:
        for k, sample in enumerate(group):
            _fill(sample, k)
    return RolloutFnTrainOutput(samples=groups, metrics={"rollout/toy/groups": len(groups)})


async def reward_func(args, sample, **kwargs):
    """1.0 when the stripped response equals the label, else 0.0."""
    return 1.0 if sample.response.strip() == sample.label else 0.0
