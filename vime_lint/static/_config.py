"""``[tool.vime_lint]`` configuration in ``pyproject.toml`` (or a file given by ``--config``).

Usage::

    config = load_config(Path("pyproject.toml"))
    config.select, config.ignore, config.per_file_ignores, config.hooks

Keys (Ruff's spelling): ``select``, ``extend-select``, ``ignore``, ``per-file-ignores``
(``{glob: [codes]}``), ``hooks`` (``{dest or --arg: "pkg.mod.fn" | [..]}``), ``exclude``,
``extend-exclude``. Underscored spellings are accepted. An unknown key or a wrong type raises
:class:`ConfigError` naming the key and the file.

The key names follow Ruff's.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vime.contract import HOOKS, hook_for_arg
from vime_lint.static._files import safe_resolve

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["Config", "ConfigError", "find_project_root", "load_config", "resolve_config",
           "selection"]

_LIST_KEYS = ("select", "extend-select", "ignore", "exclude", "extend-exclude")
_KNOWN = (*_LIST_KEYS, "per-file-ignores", "hooks")


class ConfigError(ValueError):
    """Raised for an unreadable configuration file, an unknown key or a value of wrong type."""


@dataclass(frozen=True)
class Config:
    """The linter's settings from one file (empty when there is no ``[tool.vime_lint]``)."""

    #: The file read (None: none found).
    path: Path | None = None
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    #: Glob (relative to the project root) -> codes ignored in matching files.
    per_file_ignores: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: Hook dest -> dotted paths (``{"custom_rm_path": ("pkg.rm.score",)}``).
    hooks: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def find_project_root(start: Path) -> Path:
    """The nearest directory at or above ``start`` holding ``pyproject.toml`` or ``.git``.

    Falls back to ``start`` itself (its directory for a file).
    """
    here = safe_resolve(start)
    if not here.is_dir():
        here = here.parent
    for d in (here, *here.parents):
        if (d / "pyproject.toml").is_file() or (d / ".git").exists():
            return d
    return here


def _str_list(value: Any, key: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings, got {value!r}")
    return tuple(value)


def _hook_dest(key: str, where: str) -> str:
    if key in HOOKS:
        return key
    spec = hook_for_arg(key if key.startswith("--") else f"--{key.replace('_', '-')}")
    if spec is None:
        raise ConfigError(f"{where}: `hooks` names unknown hook `{key}`; known hooks: "
                          f"{', '.join(HOOKS)}")
    return spec.dest


def resolve_config(root: Path, config_path: Path | None) -> tuple[Config, Path]:
    """The configuration a run uses and the project root its paths are relative to:
    ``--config FILE`` (its folder becomes the root), else ``root/pyproject.toml``'s
    ``[tool.vime_lint]``, else the defaults.

    Raises:
        ConfigError: as :func:`load_config`.
    """
    if config_path is not None:
        return load_config(config_path), safe_resolve(config_path).parent
    if (root / "pyproject.toml").is_file():
        return load_config(root / "pyproject.toml"), root
    return Config(), root


def selection(config: Config, ns: Any,
              default_exclude: Sequence[str]) -> tuple[list[str], list[str], list[str]]:
    """``(select, ignore, exclude)`` of a run: the command line's ``--select`` / ``--exclude``
    replace the configuration's, ``--extend-select`` / ``--ignore`` / ``--extend-exclude`` add
    to it (ruff's rule). ``ns`` is the parsed command line of ``vime-lint rollout`` or
    ``types`` (``select``, ``extend_select``, ``ignore``, ``exclude``, ``extend_exclude``).

    Raises:
        ConfigError: ``--select`` was given with no code (``--select ''``), which would turn
            every rule off.
    """
    if ns.select is not None and not ns.select:
        raise ConfigError("--select names no rule code, which would turn every rule off; name "
                          "codes or prefixes (`--select VIM0,VIM101`) or leave --select out "
                          "to enable every rule")
    select = list(ns.select if ns.select is not None else (config.select or ("VIM",)))
    select += [*config.extend_select, *ns.extend_select]
    exclude = list(ns.exclude if ns.exclude is not None else (
        config.exclude if config.exclude is not None else default_exclude))
    exclude += [*config.extend_exclude, *ns.extend_exclude]
    return select, [*config.ignore, *ns.ignore], exclude


def load_config(path: Path) -> Config:
    """Read ``[tool.vime_lint]`` of ``path`` (a ``pyproject.toml``, or any TOML file whose
    top-level table holds the same keys).

    Raises:
        ConfigError: the file cannot be read or parsed, a key is unknown, a value has the
            wrong type; the message names the file and the key.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read configuration: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    tool = data.get("tool", {})
    section: Any = tool.get("vime_lint", tool.get("vime-lint")) if isinstance(tool, dict) else None
    if section is None:
        section = {} if path.name == "pyproject.toml" else {
            k: v for k, v in data.items() if k != "tool"}
    where = f"{path} [tool.vime_lint]"
    if not isinstance(section, dict):
        raise ConfigError(f"{where}: must be a table")
    values: dict[str, Any] = {}
    for raw_key, value in section.items():
        key = raw_key.replace("_", "-")
        if key not in _KNOWN:
            raise ConfigError(f"{where}: unknown key `{raw_key}`; known keys: {', '.join(_KNOWN)}")
        values[key] = value
    kw: dict[str, Any] = {"path": path}
    for key in _LIST_KEYS:
        if key in values:
            kw[key.replace("-", "_")] = _str_list(values[key], key, where)
    pfi = values.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise ConfigError(f"{where}: `per-file-ignores` must be a table of glob = [codes]")
    kw["per_file_ignores"] = {g: _str_list(c, f"per-file-ignores.{g}", where)
                              for g, c in pfi.items()}
    hooks = values.get("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError(f"{where}: `hooks` must be a table of hook = \"pkg.mod.fn\"")
    kw["hooks"] = {_hook_dest(k, where): _str_list(v, f"hooks.{k}", where)
                   for k, v in hooks.items()}
    return Config(**kw)
