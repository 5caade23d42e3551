"""The eval datasets a rollout's eval branch uses: ``--eval-prompt-data`` / ``--eval-config``
(``args.eval_datasets``), each prompt copied ``n_samples_per_eval_prompt`` times, exactly as the
default rollout's eval step builds them.

A custom rollout reaches them through its data source::

    def generate_rollout(args, rollout_id, data_source, evaluation=False):
        if evaluation:
            data = {}
            for name, samples in data_source.eval_datasets().items():
                ...  # generate and score each sample
                data[name] = {"rewards": [...], "truncated": [...], "samples": samples}
            return RolloutFnEvalOutput(data=data)
        groups = data_source.get_samples(args.rollout_batch_size)   # training prompts
        ...

``data_source.get_samples`` serves *training* prompts (``--prompt-data``); evaluating on them
gives training numbers, which VIM131 warns about.

Each eval sample: ``index`` sequential within its dataset, ``group_index`` the prompt's
position, a fresh ``session_id``, ``metadata["rm_type"]`` from the dataset's ``rm_type`` (if
not set), the dataset's ``metadata_overrides`` applied, and ``custom_rm_path`` /
``generate_function_path`` from the dataset's ``custom_rm_path`` /
``custom_generate_function_path``.

See ``docs/contract.md`` §3 (eval data) and §7 (data source).
"""

from __future__ import annotations

import copy
import uuid
from argparse import Namespace
from collections.abc import Sequence
from typing import Any

from vime.config import arg
from vime.utils.types import Sample

__all__ = ["eval_copies", "load_eval_datasets", "load_eval_prompts", "samples_per_prompt"]


def eval_copies(prompts: Sequence[Sample], cfg: Any, n_per: int) -> list[Sample]:
    """``n_per`` deep copies of each of ``prompts`` for eval dataset ``cfg`` (an
    ``EvalDatasetConfig``), set up as in the module docstring.

    Returns:
        ``list[Sample]`` of ``len(prompts) * n_per``, prompt by prompt.
    """
    samples: list[Sample] = []
    for i, prompt in enumerate(prompts):
        for _ in range(n_per):
            s = copy.deepcopy(prompt)
            s.index = len(samples)
            s.group_index = i
            s.session_id = str(uuid.uuid4())
            if getattr(cfg, "rm_type", None):
                s.metadata.setdefault("rm_type", cfg.rm_type)
            s.metadata.update(copy.deepcopy(getattr(cfg, "metadata_overrides", None) or {}))
            if getattr(cfg, "custom_rm_path", None):
                s.custom_rm_path = cfg.custom_rm_path
            if getattr(cfg, "custom_generate_function_path", None):
                s.generate_function_path = cfg.custom_generate_function_path
            samples.append(s)
    return samples


def samples_per_prompt(args: Namespace, cfg: Any) -> int:
    """The dataset's ``n_samples_per_eval_prompt``, else ``--n-samples-per-eval-prompt``, else
    1."""
    return int(getattr(cfg, "n_samples_per_eval_prompt", None)
               or arg(args, "n_samples_per_eval_prompt") or 1)


def load_eval_prompts(args: Namespace, cfg: Any, tokenizer: Any = None) -> list[Sample]:
    """The prompts of eval dataset ``cfg`` (its file, keys and ``max_prompt_len``), read with
    ``vime.utils.data.Dataset`` as the training prompts are (``tokenizer`` for the chat
    template and the length filter).

    Raises:
        FileNotFoundError, ValueError: the dataset file cannot be read (see ``Dataset``).
    """
    from vime.utils.data import Dataset

    ds = Dataset(cfg.path, tokenizer=tokenizer, max_length=cfg.max_prompt_len,
                 input_key=cfg.input_key or "input", label_key=cfg.label_key,
                 metadata_key=cfg.metadata_key or "metadata", tool_key=cfg.tool_key,
                 apply_chat_template=bool(arg(args, "apply_chat_template")),
                 apply_chat_template_kwargs=arg(args, "apply_chat_template_kwargs"),
                 seed=int(arg(args, "rollout_seed")))
    return list(ds.samples)


def load_eval_datasets(args: Namespace, tokenizer: Any = None) -> dict[str, list[Sample]]:
    """``{name: samples}`` for every ``args.eval_datasets`` entry (``{}`` without any), built
    by :func:`load_eval_prompts` and :func:`eval_copies`; what ``DataSource.eval_datasets()``
    returns.

    Raises:
        FileNotFoundError, ValueError: a dataset file cannot be read.
    """
    out: dict[str, list[Sample]] = {}
    for cfg in getattr(args, "eval_datasets", None) or []:
        out[cfg.name] = eval_copies(load_eval_prompts(args, cfg, tokenizer), cfg,
                                    samples_per_prompt(args, cfg))
    return out
