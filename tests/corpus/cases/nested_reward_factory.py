"""A reward built by a factory (a nested function with the weight bound in) and bound by name."""


def make_reward(weight: float):
    async def scored(args, sample, **kwargs):
        return weight * float(str(sample.label) in sample.response)

    return scored


reward_func = make_reward(0.5)
