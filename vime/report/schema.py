"""The columns of a rollout dump (``RUN_DIR/rollouts/step_N.parquet``), defined once.

Usage::

    from vime.report.schema import COLUMNS, DUMP_VERSION, arrow_schema, markdown_table
    [c.name for c in COLUMNS]     # "rollout_id", "index", "group_index", ...
    arrow_schema()                # the pyarrow.Schema every dump is written with
    markdown_table()              # the table of docs/rollout_dumps.md

Each column has a name, a type spelled as a small string (``int64``, ``float64``, ``string``,
``bool``, ``list<int32>``, ``list<int8>``, ``list<float32>``, ``list<string>``) and its meaning.
Every column may be null where the sample has no value. The step's contract findings and the
run's identity are in the file's key-value metadata (:data:`FINDINGS_KEY`, :data:`VERSION_KEY`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["COLUMNS", "DUMP_VERSION", "FINDINGS_KEY", "VERSION_KEY", "Column", "arrow_schema",
           "markdown_table"]

#: Schema version written into every file (raise it when a column changes meaning).
DUMP_VERSION = "1"
#: Key of the file metadata holding the schema version.
VERSION_KEY = "vime.dump_version"
#: Key of the file metadata holding the step's contract findings: a JSON list of
#: ``{"id", "severity", "where", "message", "fix", "sample"}`` (``sample``: the row's position,
#: or null when the finding is about the whole step).
FINDINGS_KEY = "vime.findings"


@dataclass(frozen=True)
class Column:
    """One column of the dump."""

    name: str
    #: ``int64``, ``float64``, ``string``, ``bool`` or ``list<T>`` of ``int32``/``int8``/
    #: ``float32``/``string``.
    type: str
    meaning: str


COLUMNS: tuple[Column, ...] = (
    Column("rollout_id", "int64", "The train step (rollout id) the sample belongs to."),
    Column("index", "int64", "`Sample.index`: the sample's index (unique within the run)."),
    Column("group_index", "int64", "`Sample.group_index`: its prompt group."),
    Column("position", "int64", "Row number within the step (order of the rollout's output; "
           "dropped groups follow the kept ones)."),
    Column("status", "string", "`Sample.status`: pending, completed, truncated, aborted, "
           "failed."),
    Column("fate", "string", "What happened to it: `trained`, `masked` (every loss-mask entry "
           "0), `removed` (`remove_sample`), `failed` (a hook raised or timed out), `filtered` "
           "(dropped with its group by `--dynamic-sampling-filter-path`), `stale` (dropped with "
           "its group by `--max-staleness`)."),
    Column("fate_reason", "string", "Why, in words (the filter's reason, the lag, the "
           "failed hook's error)."),
    Column("fail_hook", "string", "FAILED samples: the hook that failed (`generate`, "
           "`reward`; `metadata['vime_error']['hook']`)."),
    Column("fail_type", "string", "FAILED samples: the error's type (`ValueError`, "
           "`TimeoutError`, `Unscored`)."),
    Column("fail_message", "string", "FAILED samples: the error's message (at most 500 "
           "characters)."),
    Column("reward", "float64", "The scalar reward (`--reward-key` of a dict reward); null "
           "when FAILED or unreadable."),
    Column("reward_json", "string", "The reward as JSON when it is a dict, else null."),
    Column("advantage", "float64", "The group-normalised reward the trainer used (trained "
           "steps only; null for groups that were dropped)."),
    Column("label", "string", "`Sample.label`."),
    Column("prompt", "string", "`Sample.prompt` (chat messages as JSON)."),
    Column("response", "string", "`Sample.response`."),
    Column("prompt_length", "int64", "Prompt tokens: `len(tokens) - response_length`."),
    Column("response_length", "int64", "`Sample.response_length` (tokens)."),
    Column("tokens", "list<int32>", "`Sample.tokens`: prompt then response token ids."),
    Column("loss_mask", "list<int8>", "The loss mask, one entry per response token (1 trains); "
           "null means all ones."),
    Column("rollout_log_probs", "list<float32>", "The sampler's log probabilities, one per "
           "response token."),
    Column("weight_versions", "list<string>", "`Sample.weight_versions`."),
    Column("remove_sample", "bool", "`Sample.remove_sample`."),
    Column("finding_ids", "list<string>", "Ids of the contract findings of this step that "
           "point at this sample (`samples[g][e]...`)."),
    Column("metadata_json", "string", "`Sample.metadata` as JSON (values that are not JSON "
           "written as their `str`)."),
)


def _arrow_type(spelled: str) -> Any:
    import pyarrow as pa

    scalars = {"int64": pa.int64(), "int32": pa.int32(), "int8": pa.int8(),
               "float64": pa.float64(), "float32": pa.float32(), "string": pa.string(),
               "bool": pa.bool_()}
    if spelled.startswith("list<") and spelled.endswith(">"):
        return pa.list_(scalars[spelled[5:-1]])
    return scalars[spelled]


def arrow_schema() -> Any:
    """The ``pyarrow.Schema`` of :data:`COLUMNS` (every field nullable)."""
    import pyarrow as pa

    return pa.schema([pa.field(c.name, _arrow_type(c.type), nullable=True) for c in COLUMNS])


def markdown_table() -> str:
    """``| Column | Type | Meaning |`` rows of :data:`COLUMNS`, for docs/rollout_dumps.md."""
    rows = ["| Column | Type | Meaning |", "|---|---|---|"]
    rows += [f"| `{c.name}` | `{c.type}` | {c.meaning} |" for c in COLUMNS]
    return "\n".join(rows)
