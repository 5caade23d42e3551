"""vime.utils.data: JSONL/Parquet readers, slicing, keys, bad records, length filter, shuffling."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from vime.utils.data import Dataset, parse_data_path, read_rows

pytestmark = pytest.mark.unit

RECORDS = [
    {"input": f"What is {i} + {i}?", "answer": str(2 * i), "metadata": {"i": i},
     "tools": [{"name": "calc"}] if i % 2 else None}
    for i in range(10)
]


def _jsonl(path: Path, records: list[Any], extra_lines: dict[int, str] | None = None) -> Path:
    lines = [json.dumps(r) for r in records]
    for at, text in sorted((extra_lines or {}).items()):
        lines.insert(at, text)
    path.write_text("\n".join(lines) + "\n")
    return path


def _parquet(path: Path, records: list[dict[str, Any]]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(records), path)
    return path


@pytest.fixture(params=["jsonl", "parquet"])
def data_file(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    if request.param == "jsonl":
        return _jsonl(tmp_path / "d.jsonl", RECORDS)
    return _parquet(tmp_path / "d.parquet", [{**r, "tools": json.dumps(r["tools"])}
                                             for r in RECORDS])


def test_both_formats_give_prompts_labels_metadata_tools(data_file: Path) -> None:
    ds = Dataset(str(data_file), label_key="answer")
    assert len(ds) == 10
    s = ds[3]
    assert (s.prompt, s.label, s.metadata) == ("What is 3 + 3?", "6",
                                               {"i": 3, "tools": [{"name": "calc"}]})
    assert "tools" not in ds[2].metadata  # None / "null" tools: no key
    assert all(x.group_index is None and x.index is None for x in ds.samples)


@pytest.mark.parametrize(("suffix", "expected"), [
    ("@[2:5]", [2, 3, 4]), ("@[:3]", [0, 1, 2]), ("@[-2:]", [8, 9]), ("@[7:]", [7, 8, 9]),
    ("@[:]", list(range(10))), ("@[20:]", []),
])
def test_row_slicing(data_file: Path, suffix: str, expected: list[int]) -> None:
    ds = Dataset(str(data_file) + suffix)
    assert [s.metadata["i"] for s in ds.samples] == expected


def test_parse_data_path_errors() -> None:
    assert parse_data_path("a@b.jsonl").path == "a@b.jsonl"
    with pytest.raises(ValueError, match=r"'d.jsonl@\[1:x\]': malformed row slice"):
        parse_data_path("d.jsonl@[1:x]")


def test_custom_keys_and_missing_keys(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "k.jsonl", [{"q": "hi", "a": "yo", "meta": {"x": 1},
                                          "fns": '[{"name": "f"}]'}, {"q": "second"}])
    ds = Dataset(str(path) + "@[:1]", input_key="q", label_key="a", metadata_key="meta",
                 tool_key="fns")
    assert (ds[0].prompt, ds[0].label, ds[0].metadata) == ("hi", "yo",
                                                            {"x": 1, "tools": [{"name": "f"}]})
    with pytest.raises(KeyError, match=rf"{path}:2: record has no label key 'a' \(--label-key\)"):
        Dataset(str(path), input_key="q", label_key="a")
    with pytest.raises(KeyError, match=rf"{path}:1: record has no input key 'prompt'"):
        Dataset(str(path), input_key="prompt")


@pytest.mark.parametrize(("record", "needle"), [
    ({"input": 5}, "key 'input' must be a string or a list of messages, got int"),
    ({"input": [{"content": "x"}]}, "key 'input' is a list but not of message dicts"),
    ({"input": "x", "metadata": [1]}, "key 'metadata' must be a mapping"),
    ({"input": "x", "tools": {"a": 1}}, "key 'tools' must be a list of tools"),
])
def test_malformed_fields_name_file_and_line(tmp_path: Path, record: dict[str, Any],
                                             needle: str) -> None:
    path = _jsonl(tmp_path / "m.jsonl", [{"input": "ok"}, record])
    with pytest.raises(ValueError, match=f"{path}:2: {needle}"):
        Dataset(str(path))


def test_bad_jsonl_records_skipped_and_counted_by_default(tmp_path: Path,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    path = _jsonl(tmp_path / "b.jsonl", RECORDS[:3], {1: "{not json", 3: "[1, 2]", 4: "   "})
    with caplog.at_level(logging.WARNING, logger="vime.utils.data"):
        ds = Dataset(str(path))
    assert len(ds) == 3 and ds.num_bad_records == 2
    assert "skipped 2 undecodable record(s)" in caplog.text


def test_bad_jsonl_record_strict_mode_names_file_line_reason(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "b.jsonl", RECORDS[:3], {1: "{not json"})
    with pytest.raises(ValueError, match=rf"{path}:2: bad record: invalid JSON"):
        Dataset(str(path), skip_bad_records=False)
    path = _jsonl(tmp_path / "c.jsonl", RECORDS[:1], {1: "[1]"})
    with pytest.raises(ValueError, match=rf"{path}:2: bad record: expected a JSON object, got list"):
        list(read_rows(str(path), skip_bad_records=False))


def test_unsupported_format_and_missing_file(tmp_path: Path) -> None:
    (tmp_path / "d.csv").write_text("a\n")
    with pytest.raises(ValueError, match="unsupported format '.csv'; use a .jsonl or .parquet"):
        Dataset(str(tmp_path / "d.csv"))
    with pytest.raises(FileNotFoundError, match="nope.jsonl"):
        Dataset(str(tmp_path / "nope.jsonl"))


def test_chat_template_and_length_filter(tmp_path: Path, chatml_tokenizer: Any,
                                         caplog: pytest.LogCaptureFixture) -> None:
    path = _jsonl(tmp_path / "t.jsonl", [{"input": "Hello"}, {"input": "Hello there " * 30}])
    with caplog.at_level(logging.INFO, logger="vime.utils.data"):
        ds = Dataset(str(path), tokenizer=chatml_tokenizer, apply_chat_template=True,
                     max_length=20, apply_chat_template_kwargs={"enable_thinking": False})
    assert [s.prompt for s in ds.samples] == ["<|im_start|>user\nHello<|im_end|>\n"
                                              "<|im_start|>assistant\n"]
    assert ds.num_too_long == 1 and "dropped 1 prompt(s) longer than 20 tokens" in caplog.text
    assert ds[0].apply_chat_template_kwargs == {"enable_thinking": False}
    with pytest.raises(ValueError, match="need a tokenizer"):
        Dataset(str(path), max_length=20)


def test_list_prompts_skip_length_filter_with_warning(tmp_path: Path,
                                                      chatml_tokenizer: Any) -> None:
    path = _jsonl(tmp_path / "l.jsonl", [{"input": [{"role": "user", "content": "x " * 50}]}])
    with pytest.warns(UserWarning, match="1 message-list prompt"):
        ds = Dataset(str(path), tokenizer=chatml_tokenizer, max_length=5)
    assert len(ds) == 1 and ds[0].prompt == [{"role": "user", "content": "x " * 50}]


def test_shuffle_is_deterministic_per_epoch(tmp_path: Path) -> None:
    path = str(_jsonl(tmp_path / "s.jsonl", [{"input": str(i)} for i in range(50)]))
    a, b = Dataset(path, seed=7), Dataset(path, seed=7)
    orders = []
    for epoch in range(3):
        a.shuffle(epoch)
        b.shuffle(epoch)
        assert [s.prompt for s in a.samples] == [s.prompt for s in b.samples]
        orders.append([s.prompt for s in a.samples])
    assert len({tuple(o) for o in orders}) == 3  # each epoch differs
    assert sorted(orders[0]) == sorted(str(i) for i in range(50))
    c = Dataset(path, seed=6)
    c.shuffle(1)  # seed 6 + epoch 1 == seed 7 + epoch 0
    assert [s.prompt for s in c.samples] == orders[0]
