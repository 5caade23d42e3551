"""Lint one open document as ``vime-lint rollout`` would lint the file on disk.

Usage::

    linter = DocumentLinter()
    result = linter.lint(Path("/repo/my_rollout.py"), text)     # LintResult of the text
    linter.fixed(Path("/repo/my_rollout.py"), text)             # text after --fix, or None
    linter.hooks(Path("/repo/my_rollout.py"), text)             # {name: (def line, HookSpec)}
    linter.types(Path("/repo/my_rollout.py"))                   # VIM2xx findings of the saved file

The project (nearest ``pyproject.toml`` or ``.git`` above the file), its ``[tool.vime_lint]``
settings and launch-config hook discovery are the command's; they are read again when the
project's configuration file changes (its modification time), so a warm server lints a change
without rescanning the project. The rules that apply to each file are chosen once per project,
and the last result per file (lint, ``--fix``, hooks) is kept with its text: asking again about
an unchanged text (a save, a code action, a hover) does not lint it again.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from vime.contract.hooks import HookSpec
from vime_lint.static._model import Finding, LintResult

__all__ = ["DocumentLinter"]


@dataclass
class _Project:
    root: Path
    stamp: float
    config: Any
    settings: Any
    rules: list[Any]
    bindings: dict[Path, tuple[Any, ...]]
    base: Any
    #: path -> the rules that apply to it (``per-file-ignores`` resolved once)
    file_rules: dict[Path, list[Any]] = field(default_factory=dict)


@dataclass
class DocumentLinter:
    """Lints open documents per project; the project facts are cached (see the module doc)."""

    projects: dict[Path, _Project] = field(default_factory=dict)
    #: (path, kind) -> (project, text, result): the last answer per file, reused while both
    #: the text and the project are the same
    last: dict[tuple[Path, str], tuple[_Project, str, Any]] = field(default_factory=dict)

    def _cached(self, project: _Project, path: Path, kind: str, text: str) -> Any:
        hit = self.last.get((path, kind))
        if hit is not None and hit[0] is project and hit[1] == text:
            return hit[2]
        return None

    def forget(self, path: Path) -> None:
        """Drop the results kept for ``path`` (its document was closed)."""
        for kind in ("lint", "fix", "hooks"):
            self.last.pop((path, kind), None)

    def _project(self, path: Path) -> _Project:
        from vime_lint.static._config import find_project_root, resolve_config, selection
        from vime_lint.static._discovery import bind_targets, config_targets, scan_launch_files
        from vime_lint.static._engine import select_rules
        from vime_lint.static._files import DEFAULT_EXCLUDE
        from vime_lint.static._model import LintOptions
        from vime_lint.static._runner import Settings, check_selectors
        from vime_lint.static.rules import ALL_RULES

        root = find_project_root(path)
        pyproject = root / "pyproject.toml"
        stamp = pyproject.stat().st_mtime if pyproject.is_file() else 0.0
        known = self.projects.get(root)
        if known is not None and known.stamp == stamp:
            return known
        config, root = resolve_config(root, None)
        ns = SimpleNamespace(select=None, extend_select=[], ignore=[], exclude=None,
                             extend_exclude=[])
        select, ignore, exclude = selection(config, ns, DEFAULT_EXCLUDE)
        check_selectors([*select, *ignore])
        settings = Settings(paths=[], root=root, config=config, select=select, ignore=ignore,
                            exclude=exclude, cache=False, jobs=1)
        launch = scan_launch_files(root, exclude)
        targets = list(launch.targets)
        if config.hooks:
            targets += config_targets(config.hooks, "[tool.vime_lint] hooks")
        bindings, _ = bind_targets(root, targets)
        base = LintOptions(launch_flags=launch.flags, launch_found=launch.scanned > 0,
                           launch_files=launch.files)
        project = _Project(root, stamp, config, settings, select_rules(ALL_RULES, select, ignore),
                           bindings, base)
        self.projects[root] = project
        return project

    def _options(self, project: _Project, path: Path) -> Any:
        from vime_lint.static._files import safe_resolve
        from vime_lint.static._model import LintOptions

        b = project.base
        return LintOptions(hooks=project.bindings.get(safe_resolve(path), ()),
                           launch_flags=b.launch_flags, launch_found=b.launch_found,
                           launch_files=b.launch_files)

    def _rules(self, project: _Project, path: Path) -> list[Any]:
        from vime_lint.static._runner import _rules_for_file

        known = project.file_rules.get(path)
        if known is not None:
            return known
        try:
            rel = path.resolve().relative_to(project.root).as_posix()
        except ValueError:
            rel = path.name
        rules = project.file_rules[path] = list(_rules_for_file(project.rules, rel,
                                                                project.config))
        return rules

    def lint(self, path: Path, text: str, *, fix: bool = False) -> LintResult:
        """``text`` linted as the file ``path`` (findings, or ``failure`` for a syntax error).

        Raises:
            vime_lint.static._config.ConfigError: the project's ``[tool.vime_lint]`` is bad.
            vime_lint.static._runner.UnknownSelector: its ``select``/``ignore`` names no rule.
        """
        from vime_lint.static._engine import lint_source

        project = self._project(path)
        kind = "fix" if fix else "lint"
        hit = self._cached(project, path, kind, text)
        if hit is not None:
            return hit  # type: ignore[no-any-return]
        result = lint_source(text, str(path), self._options(project, path),
                             rules=self._rules(project, path), fix=fix)
        self.last[(path, kind)] = (project, text, result)
        return result

    def fixed(self, path: Path, text: str) -> str | None:
        """``text`` after every safe fix ``vime-lint rollout --fix`` makes, or None if none."""
        return self.lint(path, text, fix=True).fixed_source

    def hooks(self, path: Path, text: str) -> dict[str, tuple[int, HookSpec]]:
        """The module's hooks as ``vime-lint rollout --show-hooks`` finds them: name -> (1-based
        line of the ``def``, spec). Empty when the text does not parse."""
        import libcst as cst
        from libcst.metadata import PositionProvider

        from vime_lint.static._engine import file_context

        project = self._project(path)
        hit = self._cached(project, path, "hooks", text)
        if hit is not None:
            return dict(hit)
        try:
            module = cst.parse_module(text)
        except cst.ParserSyntaxError:
            return {}
        ctx, wrapper = file_context(str(path), module, self._options(project, path))
        positions = wrapper.resolve(PositionProvider)
        out: dict[str, tuple[int, HookSpec]] = {}
        for name, bindings in ctx.hooks.items():
            for b in bindings:
                hook = ctx.semantic.target(name, class_hook=b.spec.kind == "class")
                rng = positions.get(hook.node) if hook is not None else None
                if rng is not None:
                    out.setdefault(name, (rng.start.line, b.spec))
        self.last[(path, "hooks")] = (project, text, dict(out))
        return out

    def types(self, path: Path) -> list[Finding]:
        """``vime-lint types`` findings (VIM2xx) of the saved file ``path``.

        Raises:
            RuntimeError: mypy is not installed, or failed (its output in the message).
        """
        try:
            import mypy.api  # noqa: F401
        except ImportError:
            raise RuntimeError("vime-lint types needs mypy: pip install 'vime[types]'") from None
        from vime_lint.typecheck.check import TypesSettings, check_paths
        from vime_lint.typecheck.command import mypy_cache_dir

        project = self._project(path)
        settings = TypesSettings(paths=[path], root=project.root, config=project.config,
                                 select=project.settings.select,
                                 ignore=project.settings.ignore,
                                 exclude=project.settings.exclude,
                                 cache_dir=mypy_cache_dir(project.root, None, io.StringIO()))
        outcome = check_paths(settings)
        if outcome.problems:
            raise RuntimeError("; ".join(p.message for p in outcome.problems))
        return [f for r in outcome.results for f in r.findings]
