"""A data source that builds each group by repeating one Sample object n times."""

from vime.rollout.data_source import DataSource
from vime.utils.types import Sample

PROMPTS = [("1+1=", "2"), ("2+3=", "5"), ("4+4=", "8"), ("7+2=", "9")]


class RepeatingSource(DataSource):
    def __init__(self, args):
        super().__init__(args)
        self.args = args
        self.cursor = 0

    def get_samples(self, num_samples):
        groups = []
        for g in range(num_samples):
            prompt, label = PROMPTS[self.cursor % len(PROMPTS)]
            self.cursor += 1
            sample = Sample(prompt=prompt, label=label, group_index=g)
            groups.append([sample] * self.args.n_samples_per_prompt)
        return groups

    def add_samples(self, samples):
        pass

    def save(self, rollout_id):
        pass

    def load(self, rollout_id=None):
        pass

    def __len__(self):
        return len(PROMPTS)
