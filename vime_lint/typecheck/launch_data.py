"""What a launch's own dataset says about ``Sample.prompt``: text, when every row's prompt is.

Without ``--apply-chat-template`` a sample's ``prompt`` is the record's ``--input-key`` value
as the data gives it: a string stays a string, a list of messages stays a list
(``vime.utils.data.Dataset``). So a launch whose ``--prompt-data`` file holds a string at the
input key in every row gives its hooks text prompts, whatever the chat template.

The launch file is read for the values of ``--prompt-data`` and ``--input-key`` (a shell
script's ``--prompt-data x.jsonl`` or ``--prompt-data=x.jsonl``, a YAML/TOML key
``prompt_data: x.jsonl``); a path is taken relative to the project root (then to the launch
file's folder). The prompts count as text only when all of these hold, else nothing is
narrowed (the contract's ``str | list[dict[str, Any]]`` stays):

- the launch (with the configs it names) sets no other source of samples: no
  ``--eval-prompt-data``, ``--eval-config``, ``--eval-input-key``, ``--data-source-path``,
  ``--disable-rollout-global-dataset``, and does not forward its arguments (``"$@"``);
- ``--input-key``, when set, is set in the launch file itself, to one literal value;
- the value is a literal path (no ``$VAR``) to a local JSONL file of at most
  :data:`MAX_DATA_BYTES`, read whole with vime's own reader (``vime.utils.data.read_rows``,
  row slice included);
- it has at least one row, and every row holds a string at the input key.

Usage::

    prompt_data_file(root, "scripts/run.sh")     # Path("/repo/data/train.jsonl") or None
    prompts_are_text(root, "scripts/run.sh", launch.files["scripts/run.sh"])  # True
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["MAX_DATA_BYTES", "OTHER_SOURCES", "prompt_data_file", "prompts_are_text"]

#: Larger datasets are not read (nothing is narrowed for them).
MAX_DATA_BYTES = 32 * 1024 * 1024
#: Flags that bring samples from somewhere other than ``--prompt-data``.
OTHER_SOURCES = ("--eval-prompt-data", "--eval-config", "--eval-input-key",
                 "--data-source-path", "--disable-rollout-global-dataset")


def _value(text: str, flag: str) -> str | None:
    """The single literal value given to ``--flag`` (or the ``flag_name:`` key) in ``text``;
    None when absent, given more than once with different values, or not a literal."""
    key = flag.removeprefix("--")
    pattern = re.compile(
        rf"(?:(?<![\w-])--{re.escape(key)}(?:[ \t]*=[ \t]*|[ \t]+)"
        rf"|^[ \t-]*[\"']?{key.replace('-', '[-_]')}[\"']?[ \t]*[:=][ \t]*)"
        r"[\"']?(?P<value>[^\s\"'#\\]+)", re.MULTILINE)
    values = {m["value"] for m in pattern.finditer(text)}
    if len(values) != 1:
        return None
    (value,) = values
    return None if "$" in value or "`" in value or value.startswith("-") else value


def _launch_text(root: Path, rel: str) -> str | None:
    try:
        return (root / rel).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def prompt_data_file(root: Path, rel: str) -> Path | None:
    """The local file the launch at ``rel`` (root-relative) gives to ``--prompt-data``, the
    ``@[start:end]`` suffix removed; None when it names none or not a literal one."""
    text = _launch_text(root, rel)
    spec = _value(text, "--prompt-data") if text is not None else None
    if spec is None:
        return None
    path = re.sub(r"@\[[^\]]*\]$", "", spec)
    for base in (root, (root / rel).parent):
        candidate = Path(path) if Path(path).is_absolute() else base / path
        if candidate.is_file():
            return candidate
    return None


def prompts_are_text(root: Path, rel: str, flags: frozenset[str]) -> bool:
    """Whether every prompt the launch at ``rel`` (root-relative) gives its hooks is a string,
    read from its ``--prompt-data`` file; ``flags`` are the launch's ``--flags`` with those of
    the configs it names (``LaunchConfig.files``). See the module's conditions."""
    from vime_lint.static._discovery import FORWARDED_ARGS

    if flags & {*OTHER_SOURCES, FORWARDED_ARGS}:
        return False
    text = _launch_text(root, rel)
    if text is None:
        return False
    key = _value(text, "--input-key")
    if key is None and "--input-key" in flags:
        return False  # set, but not here as one literal value (a config it names, a variable)
    file = prompt_data_file(root, rel)
    if file is None or file.suffix not in (".jsonl", ".json"):
        return False
    try:
        if file.stat().st_size > MAX_DATA_BYTES:
            return False
    except OSError:
        return False
    spec = _value(text, "--prompt-data") or ""
    suffix = spec[len(re.sub(r"@\[[^\]]*\]$", "", spec)):]
    from vime.utils.data import read_rows

    rows = 0
    try:
        for _where, record in read_rows(f"{file}{suffix}"):
            rows += 1
            if not isinstance(record.get(key or "input"), str):
                return False
    except (OSError, ValueError):
        return False
    return rows > 0
