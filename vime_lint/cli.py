"""The ``vime-lint`` command line.

Usage::

    vime-lint rollout src/ --select VIM0 --output-format full
    vime-lint rollout - --stdin-filename my_rollout.py < my_rollout.py
    vime-lint rollout --fix --diff my_rollout.py
    vime-lint rollout --show-hooks .
    vime-lint rules                 # every rule: code, name, severity, fix
    vime-lint rule VIM001           # one rule's documentation
    vime-lint check ...             # the dry-run harness (vime_lint.runtime.harness)
    vime-lint rescore RUN_DIR --rm-type math   # re-score dumped samples (vime_lint.rescore)
    vime-lint template MODEL_DIR    # a chat template over several turns (vime_lint.template)
    vime-lint server                # the language server (LSP over stdio, vime_lint.lsp)
    vime-lint --version

Exit codes: 0 clean, 1 findings (or fixes with ``--exit-non-zero-on-fix``), 2 usage,
configuration or parse errors.

Start-up imports only the standard library and ``vime.contract``; LibCST is imported when a
command needs it.

Options and exit codes follow Ruff's.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from vime_lint import __version__
from vime_lint.options import FORMATS, codes

__all__ = ["main"]


def _build_parser() -> argparse.ArgumentParser:
    from vime.contract import CONTRACT_VERSION

    parser = argparse.ArgumentParser(
        prog="vime-lint",
        description="Contract linter for vime rollout code (static: `rollout`; dry run: `check`).",
        epilog="exit status, every command: 0 clean; 1 findings; 2 bad arguments or input "
               "(each command's --help says which).")
    parser.add_argument("--version", action="version",
                        version=f"vime-lint {__version__} (contract version {CONTRACT_VERSION})")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    ro = sub.add_parser("rollout", help="lint rollout modules (files or directories)",
                        epilog="exit status: 0 no findings (or --exit-zero); 1 findings, "
                               "errors or warnings (with --diff: a diff to show; what it "
                               "cannot fix is counted on stderr); 2 bad arguments, a "
                               "configuration or parse error, no Python file under the paths.")
    ro.add_argument("paths", nargs="*", type=Path, metavar="PATH",
                    help="files or directories; `-` reads stdin")
    ro.add_argument("--stdin-filename", help="the name to report for `-`")
    ro.add_argument("--select", type=codes, default=None, help="codes or prefixes to enable")
    ro.add_argument("--extend-select", type=codes, default=[], help="more codes to enable")
    ro.add_argument("--ignore", type=codes, default=[], help="codes or prefixes to disable")
    ro.add_argument("--output-format", choices=FORMATS, default="concise")
    ro.add_argument("--show-fixes", action=argparse.BooleanOptionalAction, default=True,
                    help="concise output: print each finding's fix on the lines after it "
                         "(`help:`, and `fix:` when --fix or --unsafe-fixes can apply one); "
                         "--no-show-fixes prints one line per finding")
    ro.add_argument("--statistics", action="store_true", help="counts per rule")
    ro.add_argument("--fix", action="store_true", help="apply safe fixes")
    ro.add_argument("--unsafe-fixes", action="store_true", help="also apply unsafe fixes")
    ro.add_argument("--diff", action="store_true",
                    help="print the fixes as a diff, write nothing (implies --fix)")
    ro.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")
    ro.add_argument("--exit-non-zero-on-fix", action="store_true",
                    help="exit 1 when fixes were applied, even if nothing remains")
    ro.add_argument("--exclude", type=lambda s: [p for p in s.split(",") if p], default=None,
                    help="glob patterns replacing the default excludes")
    ro.add_argument("--extend-exclude", type=lambda s: [p for p in s.split(",") if p],
                    default=[], help="more glob patterns to exclude")
    ro.add_argument("--force-exclude", action="store_true",
                    help="apply excludes to paths given explicitly (pre-commit)")
    ro.add_argument("--no-cache", action="store_true",
                    help="lint every file again instead of reusing results of unchanged files "
                         "from .vime_lint_cache/ (keyed by file content, configuration and "
                         "vime-lint version)")
    ro.add_argument("--show-hooks", action="store_true",
                    help="print the hooks found and how, then exit")
    ro.add_argument("--config", type=Path, default=None,
                    help="a pyproject.toml or TOML file with [tool.vime_lint]")
    sub.add_parser("rules", help="list every rule")
    rule = sub.add_parser("rule", help="print one rule's documentation")
    rule.add_argument("code", help="a code (VIM001) or rule name")
    sub.add_parser("check", help="dry-run the hooks of a launch command (imports and runs them)",
                   add_help=False)
    sub.add_parser("rescore", help="score a run's dumped samples again with another reward",
                   add_help=False)
    sub.add_parser("server", help="serve diagnostics, fixes and rule texts to an editor (LSP "
                                  "over stdio; the `lsp` extra)", add_help=False)
    from vime_lint.typecheck.command import add_parser as add_types_parser

    add_types_parser(sub)
    from vime_lint.template import add_parser as add_template_parser

    add_template_parser(sub)
    return parser


def _cmd_check(argv: Sequence[str]) -> int:
    try:
        from vime_lint.runtime import harness
    except ImportError as exc:
        print(f"vime-lint check: the runtime harness is not available ({exc}); "
              "it lives in vime_lint/runtime/harness.py", file=sys.stderr)
        return 2
    return int(harness.main(list(argv)))


def _cmd_server(argv: Sequence[str]) -> int:
    try:
        from vime_lint.lsp.server import main as serve
    except ImportError as exc:
        print(f"vime-lint server: {exc.name or exc} is not installed; install the language "
              "server's extra: pip install 'vime[lsp]'", file=sys.stderr)
        return 2
    return serve(list(argv))


def _cmd_rules(out: TextIO) -> int:
    from vime.contract.invariants import INVARIANTS
    from vime_lint.static.rules import ALL_RULES
    from vime_lint.static.rules._docs import fix_availability

    for r in ALL_RULES:
        inv = r.INVARIANT
        kinds = fix_availability(r) if any(c.fixed for c in r.INVALID) else "none"
        # fix: `--fix` applies it; fix*: only `--unsafe-fixes` does (it may change behaviour)
        fix = "fix " if "safe" in kinds.split(", ") else "fix*" if kinds != "none" else "    "
        out.write(f"{r.code()}  {r.slug():<28} {inv.severity:<7} {fix}  {inv.title}\n")
    out.write("(fix: `vime-lint rollout --fix` or `--diff` applies its fix to the shapes it "
              "has one for, not to every finding; fix*: only with `--unsafe-fixes`, the fix "
              "may change what the code does)\n")
    out.write("\nload-time and runtime ids (`vime train`, `vime-lint check`; "
              "`vime-lint rule ID` explains one):\n")
    for inv in INVARIANTS.values():
        if inv.scope != "static" and inv.status != "removed":
            out.write(f"{inv.id}  {inv.slug:<28} {inv.severity:<7} {inv.scope:<7}  "
                      f"{inv.title}\n")
    return 0


def _cmd_rule(code: str, out: TextIO) -> int:
    from vime.contract.explain import checked_by, explain
    from vime.contract.invariants import INVARIANTS
    from vime_lint.static.rules import rules_for_code
    from vime_lint.static.rules._docs import rule_markdown

    found = rules_for_code(code)
    inv = INVARIANTS.get(code.strip().upper())
    if not found and inv is not None:  # runtime/load ids, static ones without a rule yet
        out.write(explain(inv))
        return 0
    if not found:
        print(f"vime-lint: unknown rule `{code}` (see `vime-lint rules`)", file=sys.stderr)
        return 2
    out.write("\n".join(rule_markdown(r) for r in found))
    for r in found:
        twins = r.INVARIANT.twins
        out.write("\nChecked by: " + "; ".join(checked_by(r.INVARIANT)) + "\n")
        if twins:
            out.write(f"Twins (checked at another time): {', '.join(twins)} "
                      f"(`vime-lint rule {twins[0]}`)\n")
    return 0


def _cmd_rollout(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from vime_lint.static._config import (
        ConfigError,
        find_project_root,
        resolve_config,
        selection,
    )
    from vime_lint.static._files import DEFAULT_EXCLUDE, is_excluded
    from vime_lint.static._output import render, statistics, summary
    from vime_lint.static._runner import Settings, UnknownSelector, run

    paths: list[Path] = ns.paths or [Path(".")]
    stdin = None
    if any(str(p) == "-" for p in paths):
        stdin = sys.stdin.buffer.read()
    first = next((p for p in paths if str(p) != "-"), None)
    start = Path(ns.stdin_filename).parent if (first is None and ns.stdin_filename) else (
        first or Path("."))
    root = find_project_root(start if start.exists() else Path("."))
    try:
        config, root = resolve_config(root, ns.config)
        select, ignore, exclude = selection(config, ns, DEFAULT_EXCLUDE)
    except ConfigError as exc:
        print(f"vime-lint: {exc}", file=err)
        return 2
    fix = ns.fix or ns.diff
    settings = Settings(paths=paths, root=root, config=config, select=select,
                        ignore=ignore, fix=fix,
                        unsafe_fixes=ns.unsafe_fixes, write=not ns.diff,
                        force_exclude=ns.force_exclude, exclude=exclude, stdin=stdin,
                        stdin_filename=ns.stdin_filename, cache=not ns.no_cache)
    try:
        outcome = run(settings)
    except UnknownSelector as exc:
        print(f"vime-lint: {exc}", file=err)
        return 2
    if ns.show_hooks:
        return _show_hooks(outcome, out)
    if stdin is None and not outcome.results and not outcome.problems and not (
            ns.force_exclude and any(is_excluded(p, root, exclude) for p in paths)):
        # (pre-commit passing only excluded files with --force-exclude is a clean run)
        where = ", ".join(str(p) for p in paths)
        print(f"vime-lint: no Python files found under {where} (nothing was linted; check "
              "the path and --exclude)", file=err)
        return 2
    for p in outcome.problems:
        loc = f"{p.path}:{p.line}:{p.col}" if p.line else p.path
        print(f"{loc}: error: {p.message}", file=err)
        if p.source_line:
            line, col = _window(p.source_line.expandtabs(), max(p.col - 1, 0))
            print(f"    {line}\n{' ' * (col + 4)}^", file=err)
    fixed = sum(r.fixes_applied for r in outcome.results)
    if fix and not ns.unsafe_fixes:  # never silent about a fix it did not apply
        unsafe = sum(1 for r in outcome.results for f in r.findings if f.edits and not f.fix_safe)
        if unsafe:
            print(f"vime-lint: {unsafe} fix(es) not applied: they are unsafe (they may change "
                  "what the code does); add --unsafe-fixes to apply them", file=err)
    if ns.diff:
        for r in outcome.results:
            if r.fixed_source is not None:
                out.writelines(difflib.unified_diff(
                    r.source.splitlines(keepends=True), r.fixed_source.splitlines(keepends=True),
                    fromfile=r.path, tofile=r.path))
        left = sum(len(r.findings) for r in outcome.results)   # after the diff's fixes
        if left:   # a diff shows only what it fixes: never silent about the rest
            print(f"vime-lint: {left} finding(s) remain that the diff does not fix; run "
                  "without --diff to see them", file=err)
    elif stdin is not None and fix:
        for r in outcome.results:
            if r.path == (ns.stdin_filename or "-"):
                out.write(r.fixed_source if r.fixed_source is not None else r.source)
    else:
        out.write(render(outcome.results, ns.output_format, outcome.rules,
                         show_fixes=ns.show_fixes))
        if ns.statistics:
            out.write(statistics(outcome.results))
        if ns.output_format in ("concise", "full"):
            out.write(summary(outcome.results, fixed=fixed, unsafe_fixes=ns.unsafe_fixes,
                              problems=len(outcome.problems)))
    remaining = sum(len(r.findings) for r in outcome.results)
    if ns.diff:
        remaining = sum(r.fixed_source is not None for r in outcome.results)
    if outcome.problems:
        return 2
    if ns.exit_zero:
        return 0
    if remaining or (ns.exit_non_zero_on_fix and fixed):
        return 1
    return 0


def _window(line: str, col: int, width: int = 120) -> tuple[str, int]:
    """At most ``width`` characters of a source line around column ``col`` (0-based), with
    ``...`` where it was cut, and the caret's column in what is shown."""
    if len(line) <= width:
        return line, col
    start = max(0, min(col - width // 2, len(line) - width))
    shown = line[start:start + width]
    prefix = "..." if start else ""
    suffix = "..." if start + width < len(line) else ""
    return prefix + shown + suffix, col - start + len(prefix)


def _show_hooks(outcome: object, out: TextIO) -> int:
    import libcst as cst
    from libcst.metadata import PositionProvider

    from vime_lint.static._engine import file_context
    from vime_lint.static._files import safe_resolve
    from vime_lint.static._model import LintOptions
    from vime_lint.static._runner import RunOutcome

    assert isinstance(outcome, RunOutcome)

    order = {"a": "launch scripts/configs", "b": "[tool.vime_lint] hooks",
             "c": "Protocol annotations", "d": "conventional names"}
    out.write("Hook discovery order: " + "; ".join(f"({k}) {v}" for k, v in order.items()) + "\n")
    for r in outcome.results:
        if r.failure is not None:
            continue
        try:
            module = cst.parse_module(r.source)
        except Exception:  # noqa: BLE001 - reported by the lint run already
            continue
        resolved = safe_resolve(Path(r.path))
        ctx, wrapper = file_context(r.path, module,
                                    LintOptions(hooks=outcome.bindings.get(resolved, ())))
        positions = wrapper.resolve(PositionProvider)
        for name, bindings in ctx.hooks.items():
            for b in bindings:
                hook = ctx.semantic.target(name, class_hook=b.spec.kind == "class")
                rng = positions.get(hook.node) if hook is not None else None
                where = f"{r.path}:{rng.start.line}" if rng else f"{r.path}: (not defined)"
                via = f", {hook.via}" if hook is not None and hook.via else ""
                out.write(f"{where}: {name} -> {b.spec.arg} [{b.source}{via}]\n")
    for t in outcome.missing:
        out.write(f"(not found): {t.dotted} -> {t.spec.arg} [{t.source}]\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``vime-lint``; return the exit code (0 clean, 1 findings, 2 errors). Output cut
    short by the reader (``vime-lint rule VIM036 | head``) ends quietly with 1."""
    try:
        return _main(argv)
    except BrokenPipeError:
        # Python's advice: point stdout at devnull so the flush at exit does not raise again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def _main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "check":
        return _cmd_check(args[1:])
    if args and args[0] == "rescore":
        from vime_lint.rescore import main as rescore

        return rescore(args[1:])
    if args and args[0] == "server":
        return _cmd_server(args[1:])
    parser = _build_parser()
    try:
        ns = parser.parse_args(args)
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else 2
    if ns.command == "rollout":
        return _cmd_rollout(ns, sys.stdout, sys.stderr)
    if ns.command == "types":
        from vime_lint.typecheck.command import run_command

        return run_command(ns, sys.stdout, sys.stderr)
    if ns.command == "template":
        from vime_lint.template import run_command as run_template

        return run_template(ns, sys.stdout, sys.stderr)
    if ns.command == "rules":
        return _cmd_rules(sys.stdout)
    if ns.command == "rule":
        return _cmd_rule(ns.code, sys.stdout)
    parser.print_help(sys.stderr)
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
