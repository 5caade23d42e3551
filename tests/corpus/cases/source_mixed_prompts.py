"""A data source that fills each group with n independently drawn prompts."""

import random

from vime.rollout.data_source import DataSource
from vime.utils.types import Sample

PROMPTS = [("1+1=", "2"), ("2+3=", "5"), ("4+4=", "8"), ("7+2=", "9")]


class ShuffledSource(DataSource):
    def __init__(self, args):
        super().__init__(args)
        self.args = args
        self.rng = random.Random(0)
        self.next_index = 0

    def get_samples(self, num_samples):
        groups = []
        for g in range(num_samples):
            group = []
            for _ in range(self.args.n_samples_per_prompt):
                prompt, label = self.rng.choice(PROMPTS)
                group.append(Sample(prompt=prompt, label=label, group_index=g,
                                    index=self.next_index))
                self.next_index += 1
            groups.append(group)
        return groups

    def add_samples(self, samples):
        pass

    def save(self, rollout_id):
        pass

    def load(self, rollout_id=None):
        pass

    def __len__(self):
        return len(PROMPTS)
