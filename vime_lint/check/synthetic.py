"""Synthetic inputs for the ``vime-lint check`` dry run: prompts, a data source, a generator.

Nothing here needs an engine or a GPU; a tokenizer only with ``--apply-chat-template`` and
``--hf-checkpoint``. Token ids are the prompt's UTF-8 bytes
(vocabulary 256); the built-in generator answers with the label on even indices and
``"no idea"`` on odd ones, so rewards vary within a group.

Usage::

    ds = SyntheticDataSource(args)                  # args.n_samples_per_prompt, prompt_data, ...
    groups = ds.get_samples(2)                      # 2 groups of n deep copies, indices set
    sample = await dry_run_generate(args, groups[0][0], {"max_tokens": 16})

See ``docs/contract.md`` §7 (data-source API) and §8 (generate's result).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from vime.rollout.base_types import SampleGroup
from vime.rollout.data_source import DataSource
from vime.utils.types import Sample

__all__ = ["DRY_RUN_GENERATE", "SyntheticDataSource", "dry_run_generate", "encode",
           "load_prompts", "synthetic_eval_prompts", "synthetic_prompts"]

#: Dotted path of :func:`dry_run_generate` (a valid ``--custom-generate-function-path``).
DRY_RUN_GENERATE = "vime_lint.check.synthetic.dry_run_generate"
#: Vocabulary size of :func:`encode` (bytes).
VOCAB_SIZE = 256


def encode(text: str, limit: int = 64) -> list[int]:
    """Deterministic token ids: the first ``limit`` UTF-8 bytes of ``text`` (at least one)."""
    return list(text.encode("utf-8")[:limit]) or [32]


Prompt = tuple[Any, "str | None", dict[str, Any]]


def synthetic_prompts(count: int) -> list[Prompt]:
    """``count`` arithmetic prompts ``(prompt, label, metadata)``, the same on every call; the
    first is ``What is 20+22?`` (label 42, the first answer of the engine stand-in of
    :mod:`vime_lint.check.engine`, so that a reward on its samples varies within the group)."""
    out: list[Prompt] = []
    for i in range(count):
        a, b = 20 + (7 * i) % 80, 22 + (13 * i) % 70
        out.append((f"What is {a}+{b}?", str(a + b), {}))
    return out


def synthetic_eval_prompts(count: int) -> list[Prompt]:
    """``count`` held-out arithmetic prompts (products, never among :func:`synthetic_prompts`)."""
    return [(f"What is {3 + i}*{4 + i}?", str((3 + i) * (4 + i)), {}) for i in range(count)]


def load_prompts(path: str, input_key: str = "input", label_key: str | None = None,
                 metadata_key: str = "metadata", arg: str = "--prompt-data") -> list[Prompt]:
    """Read ``(prompt, label, metadata)`` records from a JSONL file (``arg``: the argument
    that named it, for messages).

    Raises:
        ValueError: the file is not ``.jsonl``, a line is not a JSON object, or a record lacks
            ``input_key`` / ``label_key``; the message names the file and line.
        OSError: the file cannot be read.
    """
    if not path.endswith(".jsonl"):
        raise ValueError(f"{arg} {path!r}: vime-lint check reads .jsonl files")
    records: list[Prompt] = []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:  # one line naming the argument, not an errno tuple
        raise OSError(f"{arg} {path!r}: cannot read it ({exc.strerror or exc}); give "
                      "an existing .jsonl file") from None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: not valid JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise ValueError(f"{where}: expected a JSON object, got {type(record).__name__}")
        if input_key not in record:
            raise ValueError(f"{where}: no key {input_key!r} (--input-key); keys: "
                             f"{sorted(record)}")
        label = None
        if label_key:
            if label_key not in record:
                raise ValueError(f"{where}: no key {label_key!r} (--label-key); keys: "
                                 f"{sorted(record)}")
            label = record[label_key]
        meta = record.get(metadata_key) or {}
        records.append((record[input_key], label, dict(meta) if isinstance(meta, dict) else {}))
    if not records:
        raise ValueError(f"{arg} {path!r} has no records")
    return records


class SyntheticDataSource(DataSource):
    """A tiny in-memory data source (the ``DataSource`` API of docs/contract.md §7).

    ``get_samples(n)`` returns ``n`` groups of ``args.n_samples_per_prompt`` deep copies of one
    prompt each, with one ``group_index`` per group and increasing ``index`` per sample; prompts
    cycle through ``--prompt-data`` (JSONL) records, else synthetic arithmetic prompts. With
    ``--apply-chat-template`` and ``--hf-checkpoint`` they are rendered with that tokenizer's
    chat template (``vime.utils.data.render_chat_prompt``, as in training).
    ``add_samples`` keeps groups in a buffer served first; ``save``/``load`` do nothing.

    Raises:
        ValueError: ``--prompt-data`` cannot be read (see :func:`load_prompts`), or
            ``--apply-chat-template`` is set and no tokenizer loads from ``--hf-checkpoint``.
    """

    def __init__(self, args: Any) -> None:
        super().__init__(args)
        self.n = int(getattr(args, "n_samples_per_prompt", 1) or 1)
        path = getattr(args, "prompt_data", None)
        if path:
            self.prompts = load_prompts(path, getattr(args, "input_key", None) or "input",
                                        getattr(args, "label_key", None),
                                        getattr(args, "metadata_key", None) or "metadata")
        else:
            self.prompts = synthetic_prompts(16)
        #: ``--apply-chat-template`` with a tokenizer (``--hf-checkpoint``): prompts are rendered
        #: with its chat template, as vime's data source renders them in training.
        self.tokenizer = None
        if getattr(args, "apply_chat_template", False) and getattr(args, "hf_checkpoint", None):
            from vime.utils.data import load_tokenizer

            try:
                self.tokenizer = load_tokenizer(args.hf_checkpoint)
            except OSError as exc:
                raise ValueError(f"--apply-chat-template: no tokenizer loads from "
                                 f"--hf-checkpoint {args.hf_checkpoint!r} ({exc}); give a model "
                                 "folder with a tokenizer, or drop --apply-chat-template") from None
        self.chat_kwargs = dict(getattr(args, "apply_chat_template_kwargs", None) or {})
        self.offset = 0
        self.group_index = 0
        self.sample_index = 0
        self.buffer: list[list[Sample]] = []

    def get_samples(self, num_samples: int) -> list[list[Sample]]:
        """``num_samples`` groups (``list[list[Sample]]``, each a ``SampleGroup`` as the default
        data source returns), buffered groups first."""
        groups: list[list[Sample]] = [g if type(g) is SampleGroup else SampleGroup(g)
                                      for g in self.buffer[:num_samples]]
        del self.buffer[:num_samples]
        while len(groups) < num_samples:
            prompt, label, meta = self.prompts[self.offset % len(self.prompts)]
            self.offset += 1
            if self.tokenizer is not None:
                from vime.utils.data import render_chat_prompt

                prompt = render_chat_prompt(self.tokenizer, prompt, **self.chat_kwargs)
            template = Sample(group_index=self.group_index, prompt=copy.deepcopy(prompt),
                              label=None if label is None else str(label),
                              metadata=copy.deepcopy(meta))
            self.group_index += 1
            group = SampleGroup()
            for _ in range(self.n):
                sample = copy.deepcopy(template)
                sample.index = self.sample_index
                self.sample_index += 1
                group.append(sample)
            groups.append(group)
        return groups

    def training_prompts(self) -> list[Any]:
        """The prompts :meth:`get_samples` serves (as served: rendered with the chat
        template when there is one)."""
        if self.tokenizer is None:
            return [p for p, _, _ in self.prompts]
        from vime.utils.data import render_chat_prompt

        return [render_chat_prompt(self.tokenizer, p, **self.chat_kwargs)
                for p, _, _ in self.prompts]

    def eval_datasets(self) -> dict[str, list[Sample]]:
        """``args.eval_datasets`` as the dry run's eval sets: each dataset's ``.jsonl`` file
        (for ``--eval-datasets`` names a file of :func:`synthetic_eval_prompts`, not the
        training prompts), else those prompts; copies as the default rollout makes them
        (``vime.rollout.eval_data.eval_copies``)."""
        from vime.rollout.eval_data import eval_copies, samples_per_prompt

        out: dict[str, list[Sample]] = {}
        for cfg in getattr(self.args, "eval_datasets", None) or []:
            path = getattr(cfg, "path", None)
            records = load_prompts(str(path), getattr(cfg, "input_key", None) or "input",
                                   getattr(cfg, "label_key", None),
                                   getattr(cfg, "metadata_key", None) or "metadata",
                                   arg="--eval-prompt-data") \
                if path else synthetic_eval_prompts(4)
            prompts = [Sample(prompt=copy.deepcopy(p), label=None if lab is None else str(lab),
                              metadata=copy.deepcopy(m)) for p, lab, m in records]
            out[cfg.name] = eval_copies(prompts, cfg, samples_per_prompt(self.args, cfg))
        return out

    def add_samples(self, samples: list[list[Sample]]) -> None:
        """Keep groups to serve them first on the next ``get_samples``."""
        self.buffer.extend(samples)

    def save(self, rollout_id: int) -> None:
        """Nothing to save in a dry run."""

    def load(self, rollout_id: int | None = None) -> None:
        """Nothing to load in a dry run."""

    def __len__(self) -> int:
        return len(self.prompts)


async def dry_run_generate(args: Any, sample: Sample, sampling_params: dict[str, Any]) -> Sample:
    """A deterministic stand-in for the engine's generate (no network).

    Prompt ids: ``sample.tokens`` if set, else :func:`encode` of a string prompt (or of the
    last message's content). Response: the label on even ``index``, ``"no idea"`` on odd ones,
    one byte per token, log-prob ``-0.5 - 0.01 * i``, finish reason ``stop`` (status
    COMPLETED), grown with ``Sample.append_response_tokens``. Budget:
    ``sampling_params["max_tokens"]`` when given (TRUNCATED when cut).
    """
    if not sample.tokens:
        prompt = sample.prompt
        if isinstance(prompt, list) and prompt:
            prompt = str(prompt[-1].get("content", "")) if isinstance(prompt[-1], dict) else ""
        sample.tokens = encode(str(prompt))
    even = (sample.index or 0) % 2 == 0
    text = (sample.label or "ok") if even else "no idea"
    ids = encode(text)
    budget = sampling_params.get("max_tokens")
    finish = "stop"
    if isinstance(budget, int) and len(ids) > budget:
        ids, text, finish = ids[:max(budget, 0)], text[:max(budget, 0)], "length"
    sample.append_response_tokens(
        args, tokens=ids, log_probs=[-0.5 - 0.01 * i for i in range(len(ids))], trainable=True,
        meta_info={"finish_reason": {"type": finish}}, text=text)
    return sample
