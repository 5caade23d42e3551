"""A length-normalised reward that divides by the number of words of the response."""


async def reward_func(args, sample, **kwargs):
    words = sample.response.split()
    hits = sum(1 for w in words if w.strip(".") == str(sample.label))
    return hits / len(words) if words else float("nan")


def run_time_case():
    from argparse import Namespace

    from vime.utils.types import Sample

    args = Namespace(label_key="label")
    return {"boundary": "reward_result", "args": args,
            "inputs": (args, Sample(prompt="2+2=", response="", label="4"))}
