"""A buffer filter that returns the newest groups but leaves them in the buffer."""

from argparse import Namespace

from vime.utils.types import Sample


def buffer_filter(args, rollout_id, buffer, num_samples):
    return buffer[-num_samples:]


def run_time_case():
    args = Namespace(n_samples_per_prompt=2)
    buffer = [[Sample(prompt=f"p{g}", group_index=g, index=2 * g + i) for i in range(2)]
              for g in range(3)]
    return {"boundary": "buffer_filter_result", "args": args, "inputs": (args, 0, buffer, 2)}
