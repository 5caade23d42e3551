"""Data sources: where rollout functions get prompt groups (docs/contract.md §7).

Usage::

    ds = RolloutDataSourceWithBuffer(args)        # the default --data-source-path
    groups = ds.get_samples(args.rollout_batch_size)
    # groups: list[list[Sample]], num_samples groups of n_samples_per_prompt deep copies of one
    # prompt, one group_index per group, distinct increasing index per sample
    ds.add_samples(recycled_groups)               # back into the buffer (partial rollouts)
    ds.save(rollout_id)    # {args.save}/rollout/global_dataset_state_dict_{rollout_id}.pt
    ds.load()              # latest state under {args.load}; load(rollout_id) for one step

The checkpoint holds ``sample_offset``, ``epoch_id``, ``sample_group_index``, ``sample_index``,
``metadata`` and (ours) ``buffer`` (``list[list[dict]]`` of ``Sample.to_dict()``); it is written
with ``torch.save`` to a temporary file in the same folder, fsynced, then ``os.replace``-d, so
a crash mid-write leaves the previous checkpoint intact; it is read back as plain data
(``torch.load(weights_only=True)``, ``vime.backends.checkpoint.load_state``), so sample
attributes and ``metadata`` must be plain types (tensors, numbers, strings, lists, dicts).

Class names, counters and the state file name follow upstream slime's
``slime/rollout/data_source.py``; see ``docs/contract.md`` §7.
"""

from __future__ import annotations

import copy
import logging
import os
import re
from abc import ABC, abstractmethod
from argparse import Namespace
from pathlib import Path
from typing import Any

from vime.config import arg
from vime.contract.hooks import HOOKS
from vime.rollout.base_types import SampleGroup
from vime.utils.types import Sample

__all__ = ["DataSource", "RolloutDataSource", "RolloutDataSourceWithBuffer", "pop_first",
           "pop_oldest", "state_path"]

logger = logging.getLogger(__name__)

_STATE_NAME = "global_dataset_state_dict_{rollout_id}.pt"
_STATE_RE = re.compile(r"^global_dataset_state_dict_(\d+)\.pt$")


def state_path(folder: str | os.PathLike[str], rollout_id: int) -> Path:
    """``{folder}/rollout/global_dataset_state_dict_{rollout_id}.pt``."""
    return Path(folder) / "rollout" / _STATE_NAME.format(rollout_id=rollout_id)


class DataSource(ABC):
    """The data-source API (``--data-source-path`` classes subclass this).

    Optional, used if present: ``state_dict()``, ``load_state_dict()``, ``close()``,
    ``async get_samples_async(n)``.
    """

    def __init__(self, args: Namespace) -> None:
        self.args = args

    @abstractmethod
    def get_samples(self, num_samples: int) -> list[list[Sample]]:
        """``num_samples`` groups of ``n_samples_per_prompt`` samples of one prompt each
        (training prompts: an eval branch uses :meth:`eval_datasets`)."""

    def eval_datasets(self) -> dict[str, list[Sample]]:
        """The eval datasets (``--eval-prompt-data`` / ``--eval-config``), as the default
        rollout's eval step uses them: ``{name: samples}``, ``n_samples_per_eval_prompt`` fresh
        copies of each prompt per call (``vime.rollout.eval_data``); ``{}`` without eval
        datasets. A rollout's eval branch returns one entry per name.

        Raises:
            FileNotFoundError, ValueError: an eval dataset file cannot be read.
        """
        from vime.rollout.eval_data import eval_copies, load_eval_prompts, samples_per_prompt

        configs = list(getattr(self.args, "eval_datasets", None) or [])
        cache: dict[str, list[Sample]] = self.__dict__.setdefault("_eval_prompts", {})
        for cfg in configs:
            if cfg.name not in cache:
                cache[cfg.name] = load_eval_prompts(self.args, cfg, self._eval_tokenizer(configs))
        return {cfg.name: eval_copies(cache[cfg.name], cfg, samples_per_prompt(self.args, cfg))
                for cfg in configs}

    def training_prompts(self) -> list[Any] | None:
        """The prompts :meth:`get_samples` serves (``--prompt-data``), for the check that an
        eval is not run on them (VIM131); None when unknown (the default)."""
        return None

    def _eval_tokenizer(self, configs: list[Any]) -> Any:
        """The tokenizer of ``--hf-checkpoint`` when the eval prompts need one (chat template,
        a prompt length limit), else None."""
        if "_eval_tok" not in self.__dict__:
            need = arg(self.args, "apply_chat_template") or any(
                getattr(c, "max_prompt_len", None) for c in configs)
            path = getattr(self.args, "hf_checkpoint", None)
            if need and path:
                from vime.utils.data import load_tokenizer

                self.__dict__["_eval_tok"] = load_tokenizer(path)
            else:
                self.__dict__["_eval_tok"] = None
        return self.__dict__["_eval_tok"]

    @abstractmethod
    def add_samples(self, samples: list[list[Sample]]) -> None:
        """Take groups back (e.g. aborted partial rollouts)."""

    @abstractmethod
    def save(self, rollout_id: int) -> None:
        """Checkpoint the state after step ``rollout_id``."""

    @abstractmethod
    def load(self, rollout_id: int | None = None) -> None:
        """Restore the state saved at ``rollout_id`` (None: the latest)."""

    @abstractmethod
    def __len__(self) -> int:
        """Prompts per epoch (``num_rollout_per_epoch = len // rollout_batch_size``)."""


class RolloutDataSource(DataSource):
    """Read-only prompts from ``--prompt-data`` (docs/contract.md §7).

    With ``--rollout-shuffle`` epoch ``e`` is shuffled with seed ``rollout_seed + e``.
    ``get_samples(n)`` takes the next ``n`` prompts across epoch boundaries; the counters
    ``sample_group_index`` (per prompt) and ``sample_index`` (per copy) only grow. Without
    ``--prompt-data`` (or with ``--disable-rollout-global-dataset``) it yields empty
    ``Sample()``s with indices.

    Raises:
        ValueError: the dataset has no prompts left after filtering (from ``get_samples``).
    """

    def __init__(self, args: Namespace) -> None:
        super().__init__(args)
        self.epoch_id = 0
        self.sample_offset = 0
        self.sample_group_index = 0
        self.sample_index = 0
        self.metadata: dict[str, Any] = {}
        self.dataset: Any = None
        if arg(args, "rollout_global_dataset") and arg(args, "prompt_data"):
            self.dataset = self._build_dataset(args)
            if arg(args, "rollout_shuffle"):
                self.dataset.shuffle(self.epoch_id)

    @staticmethod
    def _build_dataset(args: Namespace) -> Any:
        from vime.utils.data import Dataset, load_tokenizer

        max_len = arg(args, "rollout_max_prompt_len")
        template = arg(args, "apply_chat_template")
        tokenizer = load_tokenizer(args.hf_checkpoint) if (template or max_len) else None
        return Dataset(
            args.prompt_data, tokenizer=tokenizer, max_length=max_len,
            input_key=arg(args, "input_key"),
            label_key=arg(args, "label_key"),
            metadata_key=arg(args, "metadata_key"),
            tool_key=arg(args, "tool_key"),
            apply_chat_template=template,
            apply_chat_template_kwargs=arg(args, "apply_chat_template_kwargs"),
            seed=arg(args, "rollout_seed"),
        )

    # ---- prompts -------------------------------------------------------------------------

    def training_prompts(self) -> list[Any] | None:
        """The prompts of ``--prompt-data`` (None without it)."""
        return None if self.dataset is None else [s.prompt for s in self.dataset.samples]

    def _next_prompts(self, num_samples: int) -> list[Sample]:
        if self.dataset is None:
            return [Sample() for _ in range(num_samples)]
        if len(self.dataset) == 0:
            raise ValueError(f"--prompt-data {self.args.prompt_data!r} has no prompts (after "
                             "slicing, skipping bad records and the --rollout-max-prompt-len "
                             "filter)")
        prompts: list[Sample] = []
        while len(prompts) < num_samples:
            take = min(num_samples - len(prompts), len(self.dataset) - self.sample_offset)
            prompts += self.dataset.samples[self.sample_offset:self.sample_offset + take]
            self.sample_offset += take
            if self.sample_offset >= len(self.dataset):
                self.epoch_id += 1
                self.sample_offset = 0
                if arg(self.args, "rollout_shuffle"):
                    self.dataset.shuffle(self.epoch_id)
        return prompts

    def get_samples(self, num_samples: int) -> list[list[Sample]]:
        """``num_samples`` groups of ``n_samples_per_prompt`` deep copies of the next prompts.

        Each group gets the next ``group_index``; each copy the next ``index``. Each group is a
        :class:`~vime.rollout.base_types.SampleGroup` (a ``list`` that names the mistake when
        used as a Sample, VIM128).
        """
        groups: list[list[Sample]] = []
        n = self.args.n_samples_per_prompt
        for prompt in self._next_prompts(num_samples):
            group = SampleGroup()
            for _ in range(n):
                sample = copy.deepcopy(prompt)
                sample.group_index = self.sample_group_index
                sample.index = self.sample_index
                self.sample_index += 1
                group.append(sample)
            self.sample_group_index += 1
            groups.append(group)
        return groups

    def add_samples(self, samples: list[list[Sample]]) -> None:
        """Raises ``RuntimeError``: this source is read-only (use the buffered one)."""
        raise RuntimeError(f"{type(self).__name__} is read-only and cannot take samples back; "
                           "use vime.rollout.data_source.RolloutDataSourceWithBuffer "
                           "(--data-source-path)")

    def __len__(self) -> int:
        return len(self.dataset) if self.dataset is not None else 0

    # ---- metadata ------------------------------------------------------------------------

    def update_metadata(self, metadata: dict[str, Any]) -> None:
        """Merge ``metadata`` into the checkpointed metadata."""
        self.metadata.update(metadata)

    def get_metadata(self) -> dict[str, Any]:
        """The checkpointed metadata dict."""
        return self.metadata

    # ---- checkpoints ---------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The checkpointed state (counters and metadata)."""
        return {"sample_offset": self.sample_offset, "epoch_id": self.epoch_id,
                "sample_group_index": self.sample_group_index,
                "sample_index": self.sample_index, "metadata": copy.deepcopy(self.metadata)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` output and re-shuffle the dataset for its epoch.

        Raises:
            ValueError: a required key is missing (named).
        """
        for key in ("sample_offset", "epoch_id", "sample_group_index", "sample_index"):
            if key not in state:
                raise ValueError(f"data source state has no {key!r}; keys: {sorted(state)}")
        self.sample_offset = int(state["sample_offset"])
        self.epoch_id = int(state["epoch_id"])
        self.sample_group_index = int(state["sample_group_index"])
        self.sample_index = int(state["sample_index"])
        self.metadata = dict(state.get("metadata") or {})
        if self.dataset is not None and arg(self.args, "rollout_shuffle"):
            self.dataset.shuffle(self.epoch_id)

    def save(self, rollout_id: int) -> None:
        """Write :meth:`state_dict` to ``{args.save}/rollout/global_dataset_state_dict_{id}.pt``
        atomically; does nothing without ``--save``."""
        folder = arg(self.args, "save")
        if not folder:
            return
        from vime.backends.checkpoint import atomic_torch_save

        atomic_torch_save(self.state_dict(), state_path(folder, rollout_id))

    def load(self, rollout_id: int | None = None) -> None:
        """Read the state saved at ``rollout_id`` (None: the highest id) under ``--load``.

        Nothing happens without ``--load`` or when no state file exists (a fresh start; logged).

        Raises:
            ValueError: the file exists but is not a data-source state (path named).
            UnsafeCheckpointError: the file holds more than plain data (a ``ValueError``;
                ``vime.backends.checkpoint.load_state``).
        """
        folder = arg(self.args, "load")
        if not folder:
            return
        if rollout_id is None:
            found = [(int(m[1]), p) for p in (Path(folder) / "rollout").glob("*.pt")
                     if (m := _STATE_RE.match(p.name))]
            if not found:
                logger.info("no data source state under %s/rollout; starting fresh", folder)
                return
            rollout_id = max(found)[0]
        path = state_path(folder, rollout_id)
        if not path.is_file():
            logger.info("no data source state at %s; starting fresh", path)
            return
        from vime.backends.checkpoint import load_state

        state = load_state(path)
        if not isinstance(state, dict):
            raise ValueError(f"{path}: expected a data source state dict, got "
                             f"{type(state).__name__}")
        try:
            self.load_state_dict(state)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
        logger.info("loaded data source state from %s (epoch %d, offset %d)", path,
                    self.epoch_id, self.sample_offset)


class RolloutDataSourceWithBuffer(RolloutDataSource):
    """The default data source: a buffer of returned groups, served before new prompts.

    ``get_samples(n)`` first takes ``buffer_filter(args, None, buffer, n)`` (``--buffer-filter-
    path``; ``pop_first`` FIFO, ``pop_oldest`` with ``--buffer-sort-by-staleness``), then new
    prompts. The buffer is checkpointed with the dataset state (ours).

    Raises:
        ContractError: the buffer filter cannot be loaded or has a wrong signature (VIM100);
            it returns a bad result (VIM161); ``add_samples`` gets anything but groups of
            ``n_samples_per_prompt`` Samples (VIM102/VIM103, the group named).
    """

    def __init__(self, args: Namespace) -> None:
        from vime.utils.misc import load_function

        super().__init__(args)
        self.buffer: list[list[Sample]] = []
        path = str(arg(args, "buffer_filter_path")
                   or HOOKS["buffer_filter_path"].default)
        self.buffer_filter = load_function(path, hook="buffer_filter_path")
        self._buffer_filter_path = path

    def get_samples(self, num_samples: int) -> list[list[Sample]]:
        """Groups from the buffer first, then new prompts: ``num_samples`` groups in all (each a
        ``SampleGroup``)."""
        groups: list[list[Sample]] = [
            g if type(g) is SampleGroup else SampleGroup(g)
            for g in self._get_samples_from_buffer(num_samples)]
        if len(groups) < num_samples:
            groups += super().get_samples(num_samples - len(groups))
        return groups

    def _get_samples_from_buffer(self, num_samples: int) -> list[list[Sample]]:
        if not self.buffer or num_samples <= 0:
            return []
        from vime.contract.checks import check_buffer_filter_result

        result: list[list[Sample]] = self.buffer_filter(self.args, None, self.buffer,
                                                        num_samples)
        # VIM161 (and VIM165) per --contract-check: <= num_samples groups of
        # n_samples_per_prompt, each removed from the buffer.
        check_buffer_filter_result(result, self.buffer, num_samples, self.args,
                                   hook_path=self._buffer_filter_path)
        return result

    def add_samples(self, samples: list[list[Sample]]) -> None:
        """Append groups to the buffer.

        Raises:
            ContractError: not a list of groups of exactly ``n_samples_per_prompt`` Samples
                (VIM102/VIM103; ``add_samples: samples[g]`` named).
        """
        from vime.contract.checks.enforced import buffer_groups_problems, require

        require(buffer_groups_problems(samples, self.args.n_samples_per_prompt,
                                       root="add_samples: samples"))
        self.buffer.extend(samples)

    def get_buffer_length(self) -> int:
        """Groups in the buffer."""
        return len(self.buffer)

    def state_dict(self) -> dict[str, Any]:
        """The dataset state plus ``buffer``: ``list[list[dict]]`` of ``Sample.to_dict()``."""
        state = super().state_dict()
        state["buffer"] = [[copy.deepcopy(s.to_dict()) for s in g] for g in self.buffer]
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore counters, metadata and the buffer (samples via ``Sample.from_dict``)."""
        super().load_state_dict(state)
        self.buffer = [[Sample.from_dict(d) for d in g] for g in state.get("buffer") or []]


# ---- buffer filters (--buffer-filter-path) ------------------------------------------------------

def pop_first(args: Namespace, rollout_id: int | None, buffer: list[list[Sample]],
              num_samples: int) -> list[list[Sample]]:
    """FIFO: remove and return the first ``min(num_samples, len(buffer))`` groups."""
    count = min(len(buffer), num_samples)
    taken = buffer[:count]
    del buffer[:count]
    return taken


def _oldest_version(group: list[Sample], g: int) -> int:
    versions = [v for s in group for v in s.weight_versions]
    if not versions:
        return -1
    try:
        return min(int(v) for v in versions)
    except ValueError:
        raise ValueError(f"pop_oldest: buffer group {g} has non-numeric weight_versions "
                         f"{versions}; use pop_first or a custom --buffer-filter-path") from None


def pop_oldest(args: Namespace, rollout_id: int | None, buffer: list[list[Sample]],
               num_samples: int) -> list[list[Sample]]:
    """Remove and return up to ``num_samples`` groups, lowest numeric weight version first
    (groups without versions first; ties keep buffer order).

    Raises:
        ValueError: a group has a non-numeric weight version (the group is named).
    """
    order = sorted(range(len(buffer)), key=lambda g: _oldest_version(buffer[g], g))
    taken = [buffer[g] for g in order[:num_samples]]
    for g in sorted(order[:num_samples], reverse=True):
        del buffer[g]
    return taken
