"""``--config FILE.yaml``: a YAML mapping of argument names (or dests) to values.

Usage::

    values, extra = load_config(get_parser(), "run.yaml")
    parser.set_defaults(**values)    # the command line still wins
    # extra: the file's vllm-<flag> keys, {"<flag>": "VALUE"} for the vLLM servers

Keys are checked strictly: an unknown key is an error naming it and the file (with the closest
known name), values are coerced with the argument's own type and choices, a ``store_false``
flag may be given by its option name (``disable-rewards-normalization: true``). Errors go
through ``parser.error`` (usage, message, exit status 2).
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from vime.config.parser import VLLM_PASSTHROUGH_PREFIX, _json_dict, _json_value

__all__ = ["load_config"]


def _config_names(parser: argparse.ArgumentParser) -> dict[str, tuple[argparse.Action, bool]]:
    """name -> (action, given by the option name of a store_false flag)."""
    names: dict[str, tuple[argparse.Action, bool]] = {}
    for action in parser._actions:
        if action.dest in ("help", "config"):
            continue
        names[action.dest] = (action, False)
        names[action.dest.replace("_", "-")] = (action, False)
        for opt in action.option_strings:
            inverted = isinstance(action, argparse._StoreFalseAction)
            names[opt.lstrip("-")] = (action, inverted)
            names[opt.lstrip("-").replace("-", "_")] = (action, inverted)
    return names


def _coerce(action: argparse.Action, value: Any, inverted: bool,
            where: str) -> Any:
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        if not isinstance(value, bool):
            raise ValueError(f"{where}: expected true or false, got {value!r}")
        return (not value) if inverted else value
    convert: Callable[[str], Any] | None = action.type  # type: ignore[assignment]

    def one(item: Any) -> Any:
        if item is None:
            return None
        try:
            if convert in (_json_dict, _json_value):
                if isinstance(item, str):
                    return convert(item)
                if convert is _json_dict and not isinstance(item, Mapping):
                    raise ValueError(f"expected a mapping, got {item!r}")
                return dict(item) if isinstance(item, Mapping) else item
            if convert is None or convert is str:
                if not isinstance(item, str):
                    raise ValueError(f"expected a string, got {item!r}")
                return item
            if convert is int and (isinstance(item, bool) or not isinstance(item, (int, str))):
                raise ValueError(f"expected an integer, got {item!r}")
            if convert is float and (isinstance(item, bool)
                                     or not isinstance(item, (int, float, str))):
                raise ValueError(f"expected a number, got {item!r}")
            return convert(item)
        except (ValueError, TypeError, argparse.ArgumentTypeError) as exc:
            raise ValueError(f"{where}: {exc}") from None

    if action.nargs in ("+", "*") or isinstance(action, argparse._AppendAction):
        items = value if isinstance(value, list) else [value]
        out = [one(v) for v in items]
    else:
        if isinstance(value, list):
            raise ValueError(f"{where}: expected one value, got a list")
        out = one(value)
    if action.choices is not None:
        for v in out if isinstance(out, list) else [out]:
            if v is not None and v not in action.choices:
                choices = ", ".join(map(str, action.choices))
                raise ValueError(f"{where}: invalid choice {v!r} (choose from {choices})")
    return out


def load_config(parser: argparse.ArgumentParser, path: str) -> tuple[dict[str, Any],
                                                                      dict[str, str | bool]]:
    """Read ``--config`` -> (dest -> value, vLLM passthrough). Errors via ``parser.error``."""
    from vime.config.yaml_file import YamlFileError, read_yaml

    file = Path(path)
    if not file.exists():
        parser.error(f"argument --config: file {path!r} does not exist")
    try:
        doc = read_yaml(file) or {}
    except YamlFileError as exc:
        parser.error(f"argument --config: {exc}")
    if not isinstance(doc, Mapping):
        parser.error(f"argument --config: {path}: expected a mapping of argument names to "
                     f"values, got {type(doc).__name__}")
    names = _config_names(parser)
    values: dict[str, Any] = {}
    extra: dict[str, str | bool] = {}
    for raw_key, value in doc.items():
        key = str(raw_key).lstrip("-")
        if key in names:
            action, inverted = names[key]
            try:
                values[action.dest] = _coerce(action, value, inverted,
                                              f"key {raw_key!r} in {path}")
            except ValueError as exc:
                parser.error(f"argument --config: {exc}")
        elif key.replace("_", "-").startswith(VLLM_PASSTHROUGH_PREFIX[2:]):
            flag = key.replace("_", "-")[len(VLLM_PASSTHROUGH_PREFIX) - 2:]
            extra[flag] = value if isinstance(value, bool) else str(value)
        elif key == "config":
            parser.error(f"argument --config: key {raw_key!r} in {path}: config files do not "
                         "nest")
        else:
            close = difflib.get_close_matches(key, list(names), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            parser.error(f"argument --config: unknown key {raw_key!r} in {path}{hint}")
    return values, extra
