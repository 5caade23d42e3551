"""A reward that reads the ground truth from a metadata column the dataset does not have."""


async def reward_func(args, sample, **kwargs):
    truth = sample.metadata["reward_model"]["ground_truth"]
    return 1.0 if str(truth) in sample.response else 0.0
