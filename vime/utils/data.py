"""Prompt datasets: JSONL/Parquet records -> ``Sample`` prompts (docs/contract.md §7, dataset format).

Usage::

    ds = Dataset("train.jsonl@[0:1000]", tokenizer=tok, max_length=512, label_key="answer",
                 apply_chat_template=True)
    len(ds)                    # prompts kept (after slicing, bad-record skipping, length filter)
    ds.samples[0].prompt       # templated string, or the raw message list
    ds.num_bad_records         # undecodable JSONL lines skipped (strict: skip_bad_records=False)
    ds.num_too_long            # string prompts longer than max_length tokens, dropped
    ds.shuffle(epoch_id=3)     # order of epoch 3: seeded with seed + 3, from the file order
    tok = load_tokenizer("/models/tiny")   # AutoTokenizer.from_pretrained, cached per path

Rows are the non-blank lines of a ``.jsonl`` file (1-based line numbers in messages) or the rows
of a ``.parquet`` file (0-based row numbers); ``path@[start:end]`` slices them in file order
(Python slice semantics, bounds optional) before decoding, filtering and shuffling.

See ``docs/contract.md`` §7 (dataset format).
"""

from __future__ import annotations

import copy
import functools
import json
import logging
import random
import re
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vime.utils.types import Sample

__all__ = ["SKIPPED_SHOWN", "DataPath", "Dataset", "data_file_problem", "dataset_rows_problem",
           "load_tokenizer", "parse_data_path", "read_rows", "record_problem",
           "render_chat_prompt"]

logger = logging.getLogger(__name__)

_SLICE = re.compile(r"^(?P<path>.+)@\[(?P<start>[+-]?\d*):(?P<end>[+-]?\d*)\]$")


@dataclass(frozen=True)
class DataPath:
    """A dataset path with its optional row slice (``path@[start:end]``)."""

    #: The file path, ``.jsonl`` or ``.parquet``.
    path: str
    #: Rows to keep, in file order (``None``: all).
    rows: slice | None = None


def parse_data_path(spec: str) -> DataPath:
    """``"d.jsonl@[10:-5]"`` -> ``DataPath("d.jsonl", slice(10, -5))``; no suffix -> all rows.

    Raises:
        ValueError: a malformed ``@[...]`` suffix (names the spec and the expected form).
    """
    match = _SLICE.match(spec)
    if match:
        start = int(match["start"]) if match["start"] not in ("", "+", "-") else None
        end = int(match["end"]) if match["end"] not in ("", "+", "-") else None
        return DataPath(match["path"], slice(start, end))
    if "@[" in spec:
        raise ValueError(f"dataset path {spec!r}: malformed row slice; expected "
                         "`path@[start:end]` with optional integer bounds, e.g. `d.jsonl@[0:100]`")
    return DataPath(spec)


def _format(path: str) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in (".jsonl", ".parquet"):
        raise ValueError(f"dataset {path!r}: unsupported format {suffix or '(no suffix)'!r}; "
                         "use a .jsonl or .parquet file")
    return suffix


def data_file_problem(spec: str) -> str | None:
    """Why :func:`read_rows` cannot open ``spec`` (malformed slice, unsupported suffix, no such
    file, a folder, not readable), or None; reads the file's metadata and its first byte."""
    try:
        data_path = parse_data_path(spec)
        _format(data_path.path)
    except ValueError as exc:
        return str(exc)
    file = Path(data_path.path)
    if file.is_dir():
        return f"dataset {data_path.path!r} is a folder; give a .jsonl or .parquet file"
    if not file.is_file():
        return f"dataset {data_path.path!r} does not exist (relative to {Path.cwd()})"
    try:
        with file.open("rb") as handle:
            handle.read(1)
    except OSError as exc:   # no permission, or a file that fails to read (EIO), root included
        return (f"dataset {data_path.path!r} is not readable ({exc.strerror or exc}; check its "
                "permissions)")
    return None


def read_rows(spec: str, *, skip_bad_records: bool = True,
              counts: dict[str, Any] | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(location, record)`` for each row of ``spec`` (sliced), in file order.

    ``location`` is ``"file:LINE"`` (JSONL, 1-based) or ``"file row N"`` (Parquet, 0-based).
    With ``skip_bad_records`` (the default) a line that is not valid JSON or not a JSON
    object is skipped and counted in ``counts["bad_records"]``; ``counts["skipped"]`` names the
    first :data:`SKIPPED_SHOWN` of them (``file:LINE (reason)``). Bytes that are not UTF-8 are
    an error naming the line (the whole file is suspect).

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: unsupported suffix; malformed slice; a line that is not UTF-8
            (``file:line``); with ``skip_bad_records=False`` a bad record (``file:line:
            reason``); a Parquet row that is not a mapping.
    """
    data_path = parse_data_path(spec)
    suffix = _format(data_path.path)
    file = Path(data_path.path)
    if not file.is_file():
        raise FileNotFoundError(f"dataset {data_path.path!r} does not exist")
    counts = counts if counts is not None else {}
    counts.setdefault("bad_records", 0)
    counts.setdefault("skipped", [])
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        rows = list(enumerate(pq.read_table(file).to_pylist()))
        if data_path.rows is not None:
            rows = rows[data_path.rows]
        for row_number, record in rows:
            if not isinstance(record, dict):
                raise ValueError(f"{file} row {row_number}: expected a mapping, got "
                                 f"{type(record).__name__}")
            yield f"{file} row {row_number}", record
        return
    lines = []
    with file.open("rb") as handle:
        for n, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(f"{file}:{n}: not UTF-8 text ({exc.reason} at byte {exc.start} "
                                 "of the line); save the file as UTF-8") from None
            if text.strip():
                lines.append((n, text))
    if data_path.rows is not None:
        lines = lines[data_path.rows]
    for line_number, text in lines:
        where = f"{file}:{line_number}"
        try:
            record = json.loads(text)
            reason = None if isinstance(record, dict) else (
                f"expected a JSON object, got {type(record).__name__}")
        except json.JSONDecodeError as exc:
            reason = f"invalid JSON ({exc.msg} at column {exc.colno})"
        if reason is not None:
            if not skip_bad_records:
                raise ValueError(f"{where}: bad record: {reason}; fix the line or load with "
                                 "skip_bad_records=True to skip and count bad lines")
            counts["bad_records"] += 1
            if len(counts["skipped"]) < SKIPPED_SHOWN:
                counts["skipped"].append(f"{where} ({reason})")
            continue
        yield where, record


#: Skipped lines named (file:line and reason) in the warning of a dataset with bad records.
SKIPPED_SHOWN = 5


def record_problem(where: str, record: Mapping[str, Any], input_key: str,
                   label_key: str | None) -> str | None:
    """Why ``record`` (at ``where``, ``file:line``) lacks the prompt or label key, or None."""
    if input_key not in record:
        return (f"{where}: record has no input key {input_key!r} (--input-key); it has "
                f"{sorted(record)}")
    if label_key is not None and label_key not in record:
        return (f"{where}: record has no label key {label_key!r} (--label-key); it has "
                f"{sorted(record)}")
    return None


def dataset_rows_problem(spec: str, *, input_key: str = "input",
                         label_key: str | None = None) -> str | None:
    """The first row of dataset ``spec`` that training would stop on, or None: bytes that are
    not UTF-8, a row without ``input_key`` or (when set) ``label_key``; each named with its
    ``file:line`` (``file row N`` for Parquet). Lines that are not JSON objects are skipped
    as in training (:func:`read_rows`), not reported here. Reads the whole file once (a
    Parquet file's schema only, when it has both columns)."""
    try:
        if _format(parse_data_path(spec).path) == ".parquet":
            import pyarrow.parquet as pq

            names = set(pq.read_schema(parse_data_path(spec).path).names)
            if input_key in names and (label_key is None or label_key in names):
                return None
        for where, record in read_rows(spec):
            problem = record_problem(where, record, input_key, label_key)
            if problem:
                return problem
    except (OSError, ValueError) as exc:
        return str(exc)
    return None


def render_chat_prompt(tokenizer: Any, prompt: str | list[dict[str, Any]],
                       tools: list[dict[str, Any]] | None = None, **kwargs: Any) -> str:
    """The text prompt of ``--apply-chat-template``: the tokenizer's chat template applied to
    ``prompt`` (a message list, or a string taken as one user message) with the generation
    prompt added (``tokenize=False``; ``kwargs`` are ``--apply-chat-template-kwargs``)."""
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
    return str(tokenizer.apply_chat_template(messages, tools=tools, tokenize=False,
                                             add_generation_prompt=True, **kwargs))


@functools.lru_cache(maxsize=8)
def load_tokenizer(path: str | None) -> Any:
    """``transformers.AutoTokenizer.from_pretrained(path)``, cached per path.

    Raises:
        ValueError: ``path`` is None (names ``--hf-checkpoint``).
        OSError: transformers cannot load a tokenizer from ``path``.
    """
    if not path:
        raise ValueError("no tokenizer: set --hf-checkpoint to a Hugging Face model or "
                         "tokenizer folder")
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


def _as_dict(value: Any, where: str, key: str) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise ValueError(f"{where}: key {key!r} is a string that is not JSON") from None
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: key {key!r} must be a mapping (or a JSON object string), "
                         f"got {type(value).__name__}")
    return dict(value)


def _as_tools(value: Any, where: str, key: str) -> list[Any] | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise ValueError(f"{where}: key {key!r} is a string that is not JSON") from None
    if value is None:
        return None
    if not isinstance(value, list):
        raise ValueError(f"{where}: key {key!r} must be a list of tools (or a JSON list "
                         f"string), got {type(value).__name__}")
    return value


class Dataset:
    """Prompts of one JSONL/Parquet file as ``Sample`` objects (prompt, label, metadata).

    Args:
        path: ``.jsonl`` or ``.parquet`` file, optionally ``path@[start:end]``.
        tokenizer: a Hugging Face tokenizer; needed for ``apply_chat_template`` and
            ``max_length``.
        max_length: drop string prompts longer than this many tokens
            (``add_special_tokens=False``); the count is logged and kept in ``num_too_long``.
        input_key / label_key / metadata_key / tool_key: record keys (``--input-key`` ...).
            ``label_key=None``: labels are None. ``tool_key`` -> ``metadata["tools"]``.
        apply_chat_template: render prompts with the tokenizer's chat template (a string
            prompt becomes one user message first).
        apply_chat_template_kwargs: extra template keywords; also stored on each sample.
        seed: shuffle seed; epoch ``e`` is shuffled with ``seed + e``.
        skip_bad_records: skip and count undecodable JSONL lines (default, docs/contract.md §7);
            False raises on the first one.

    Raises:
        FileNotFoundError, ValueError: see :func:`read_rows`; a prompt that is neither a string
            nor a list of message dicts; a malformed metadata/tools value (file and row named).
        KeyError: a row without ``input_key``, or without ``label_key`` when one is set (the key
            and the row are named).
    """

    def __init__(
        self,
        path: str,
        *,
        tokenizer: Any = None,
        max_length: int | None = None,
        input_key: str = "input",
        label_key: str | None = None,
        metadata_key: str | None = "metadata",
        tool_key: str | None = "tools",
        apply_chat_template: bool = False,
        apply_chat_template_kwargs: Mapping[str, Any] | None = None,
        seed: int = 42,
        skip_bad_records: bool = True,
    ) -> None:
        if (apply_chat_template or max_length is not None) and tokenizer is None:
            raise ValueError(f"dataset {path!r}: apply_chat_template / max_length need a "
                             "tokenizer (set --hf-checkpoint)")
        self.path = path
        self.seed = seed
        self.num_bad_records = 0
        self.num_too_long = 0
        self.num_list_prompts_unfiltered = 0
        kwargs = dict(apply_chat_template_kwargs or {})
        counts: dict[str, Any] = {}
        samples: list[Sample] = []
        for where, record in read_rows(path, skip_bad_records=skip_bad_records, counts=counts):
            sample = self._make_sample(where, record, tokenizer, input_key, label_key,
                                       metadata_key, tool_key, apply_chat_template, kwargs)
            if max_length is not None:
                if isinstance(sample.prompt, str):
                    n_tokens = len(tokenizer.encode(sample.prompt, add_special_tokens=False))
                    if n_tokens > max_length:
                        self.num_too_long += 1
                        continue
                else:
                    self.num_list_prompts_unfiltered += 1
            samples.append(sample)
        self.num_bad_records = counts.get("bad_records", 0)
        if self.num_bad_records:
            shown = "; ".join(counts["skipped"])
            more = self.num_bad_records - SKIPPED_SHOWN
            logger.warning("dataset %s: skipped %d undecodable record(s): %s%s", path,
                           self.num_bad_records, shown, f"; and {more} more" if more > 0 else "")
        if self.num_too_long:
            logger.info("dataset %s: dropped %d prompt(s) longer than %d tokens; kept %d",
                        path, self.num_too_long, max_length, len(samples))
        if self.num_list_prompts_unfiltered:
            warnings.warn(f"dataset {path}: {self.num_list_prompts_unfiltered} message-list "
                          f"prompt(s) were not length-filtered (max_length={max_length} applies "
                          "to string prompts; use --apply-chat-template to filter them)",
                          UserWarning, stacklevel=2)
        self.origin_samples: list[Sample] = samples
        self.samples: list[Sample] = list(samples)

    @staticmethod
    def _make_sample(where: str, record: Mapping[str, Any], tokenizer: Any, input_key: str,
                     label_key: str | None, metadata_key: str | None, tool_key: str | None,
                     apply_chat_template: bool, kwargs: dict[str, Any]) -> Sample:
        problem = record_problem(where, record, input_key, label_key)
        if problem:
            raise KeyError(problem)
        prompt = record[input_key]
        if isinstance(prompt, list):
            if not all(isinstance(m, Mapping) and "role" in m for m in prompt):
                raise ValueError(f"{where}: key {input_key!r} is a list but not of message "
                                 "dicts with a 'role'")
            prompt = [dict(m) for m in prompt]
        elif not isinstance(prompt, str):
            raise ValueError(f"{where}: key {input_key!r} must be a string or a list of "
                             f"messages, got {type(prompt).__name__}")
        label = record[label_key] if label_key is not None else None
        metadata = _as_dict(record.get(metadata_key) if metadata_key else None, where,
                            str(metadata_key))
        tools = _as_tools(record.get(tool_key) if tool_key else None, where, str(tool_key))
        if tools is not None:
            metadata["tools"] = tools
        if apply_chat_template:
            prompt = render_chat_prompt(tokenizer, prompt, tools=tools, **kwargs)
        return Sample(prompt=prompt, label=label, metadata=metadata,
                      apply_chat_template_kwargs=copy.deepcopy(kwargs))

    def shuffle(self, epoch_id: int) -> None:
        """Set ``samples`` to the file order shuffled with ``random.Random(seed + epoch_id)``."""
        order = list(self.origin_samples)
        random.Random(self.seed + epoch_id).shuffle(order)
        self.samples = order

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> Sample:
        return self.samples[index]
