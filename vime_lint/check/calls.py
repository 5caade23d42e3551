"""Calling user hooks in the dry run: await async ones, turn a crash into one message.

A hook that raises a ``ContractError`` with findings ends its stage (:class:`StageFindings`);
any other exception ends its stage as :class:`HarnessError`, naming the hook, the exception and
the file and line it came from: the dry run reports it as an error in the user's code (exit
status 1); raised while loading, it is exit status 2. An exception that comes from the engine
(an HTTP error status, no answer, a missing route: :func:`engine_failure`) is an
:class:`EngineFailure` instead, reported as what it is, not as a mistake in the hook.

Every hook call of the dry run is built from the contract (:func:`contract_arguments`, from
the hook's ``HookSpec`` in ``vime.contract.hooks``): a change of a hook's parameters there
changes what the dry run passes, as it changes what the runtime's call site must pass.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
import sys
import traceback
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from vime.contract.checks.settings import CheckContext
from vime.contract.errors import ContractError, ContractWarning, Violation
from vime.contract.hooks import HOOKS, HookSpec
from vime.contract.signature import optional_kwargs

__all__ = ["EngineFailure", "HarnessError", "StageFindings", "call_by_contract", "call_hook",
           "contract_arguments", "contract_findings", "defined_at", "engine_failure",
           "hook_label", "in_context", "is_user_file", "loaded_object", "raised_at",
           "user_origin", "warning_findings"]

_ID_RE = re.compile(r"\bVIM\d{3}\b")


class HarnessError(Exception):
    """A hook cannot be loaded (exit status 2) or raised while it ran (reported, status 1);
    the message says why. Raised by :func:`call_hook`, it also carries ``label`` (the hook
    called), ``detail`` (``raised TYPE: TEXT at FILE:LINE in NAME``) and ``origin`` (the user
    file and line the exception came from, None when not known), so the dry run can name the
    user's hook that raised it when ``label`` is vime's (the default rollout running an
    agent)."""

    def __init__(self, message: str, *, label: str | None = None, detail: str | None = None,
                 origin: tuple[str, int] | None = None) -> None:
        super().__init__(message)
        self.label, self.detail, self.origin = label, detail, origin


class EngineFailure(HarnessError):
    """The engine behind a hook's generate calls failed while the hook ran (an HTTP error
    status, a timeout, no connection, a route missing): an engine or transport failure, not an
    error in the hook's code. Reported as an error (status 1) under its own heading."""


#: (module, class) of the exceptions that mean "the engine or the connection to it failed";
#: looked up in ``sys.modules``, so this module imports neither.
_ENGINE_ERRORS = (("vime.utils.http_utils", "HTTPError"),
                  ("vime.ray.engine_control", "EngineRegistrationError"))


def engine_failure(exc: BaseException) -> BaseException | None:
    """The engine error in ``exc``'s chain (``exc`` itself, its ``__cause__`` or
    ``__context__``): vime's :class:`vime.utils.http_utils.HTTPError` or
    :class:`vime.ray.engine_control.EngineRegistrationError`; None when there is none."""
    kinds: tuple[type[BaseException], ...] = tuple(
        getattr(sys.modules[m], name) for m, name in _ENGINE_ERRORS
        if m in sys.modules and hasattr(sys.modules[m], name))
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if kinds and isinstance(current, kinds):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _engine_message(label: str, err: BaseException) -> str:
    status = getattr(err, "status", None)
    hint = ""
    if status in (401, 403):
        hint = ("; the engine wants an API key the request did not carry (vime sends "
                "args.engine_api_key, else VIME_ENGINE_API_KEY: set it to the engine's key)")
    return (f"engine failure while {label} ran: {type(err).__name__}: {err}{hint} (an engine "
            "or transport failure, not an error in the hook's code)")


class StageFindings(Exception):
    """User code raised a ``ContractError`` with findings: the stage stops, the run goes on."""

    def __init__(self, violations: Sequence[Violation], label: str) -> None:
        super().__init__(label)
        self.violations = list(violations)
        self.label = label


def raised_at(exc: BaseException) -> str:
    """`` at FILE:LINE in NAME`` of the innermost frame of ``exc``'s traceback, or ``""``."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    last = frames[-1]
    return f" at {last.filename}:{last.lineno} in {last.name}"


@functools.cache
def _library_roots() -> tuple[str, ...]:
    """Folders whose files are not the user's: vime's and vime_lint's packages, the standard
    library and the installed packages."""
    import sysconfig
    from pathlib import Path

    import vime
    import vime_lint

    roots = {str(Path(m.__file__).resolve().parent) for m in (vime, vime_lint) if m.__file__}
    roots.update(str(Path(p).resolve()) for key in ("stdlib", "platstdlib", "purelib",
                                                      "platlib")
                 if (p := sysconfig.get_paths().get(key)))
    return tuple(sorted(roots))


def is_user_file(filename: str) -> bool:
    """True for a file of the user's code (not vime's, the standard library's or an installed
    package's; not ``<frozen ...>`` or ``<string>``)."""
    import os

    if not filename or filename.startswith("<"):
        return False
    path = os.path.realpath(filename)
    return not any(path == r or path.startswith(r + os.sep) for r in _library_roots())


def user_origin(exc: BaseException) -> tuple[BaseException, traceback.FrameSummary | None]:
    """The exception to report for ``exc`` and the user's frame to name.

    The exception: the first one of ``exc``'s ``raise ... from`` chain (``__cause__``) raised in
    the user's code (vime's agent step re-raises the agent's error as a RuntimeError), else
    ``exc``. The frame: the deepest frame in a user file of that exception's traceback, else of
    the chain's (innermost first); None when no frame is the user's."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not e for e in chain):
        chain.append(current)
        current = current.__cause__
    frames = {id(e): [f for f in traceback.extract_tb(e.__traceback__)
                      if is_user_file(f.filename)] for e in chain}
    for e in chain:
        tb = traceback.extract_tb(e.__traceback__)
        if tb and is_user_file(tb[-1].filename):
            return e, tb[-1]
    for e in (exc, *reversed(chain)):
        if frames[id(e)]:
            return exc, frames[id(e)][-1]
    return exc, None


def _crash(label: str, exc: BaseException) -> HarnessError:
    """The :class:`HarnessError` of hook ``label`` that raised ``exc``: the exception's text
    at the user's frame (:func:`user_origin`), else at the innermost frame."""
    shown, frame = user_origin(exc)
    text = f"{type(shown).__name__}: {shown}"
    if frame is None:
        at = raised_at(exc)
    elif f"{frame.filename}:{frame.lineno}" in text:   # the text names it already
        at = ""
    else:
        at = f" at {frame.filename}:{frame.lineno} in {frame.name}"
    detail = f"raised {text}{at}"
    return HarnessError(f"{label} {detail}", label=label, detail=detail,
                        origin=(frame.filename, frame.lineno or 0) if frame is not None
                        else None)


def call_hook(label: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call a user hook (running it to completion on vime's background event loop,
    :func:`vime.utils.async_utils.run`, when it is async).

    Raises:
        StageFindings: the hook raised a ``ContractError`` with findings.
        EngineFailure: it raised because the engine failed (:func:`engine_failure`).
        HarnessError: it raised anything else (message: ``label``, the error, where).
    """
    from vime.utils.async_utils import run

    try:
        result = fn(*args, **kwargs)
        if inspect.iscoroutinefunction(fn) and inspect.isawaitable(result):
            # vime's background loop, as in training: what a hook starts on it (the agent
            # endpoint, the shared HTTP client) outlives the call
            result = run(_await(result))
        return result
    except ContractError as exc:
        if not exc.violations:
            raise HarnessError(f"{label} raised ContractError: {exc}{raised_at(exc)}") from exc
        raise StageFindings(exc.violations, label) from exc
    except Exception as exc:
        err = engine_failure(exc)
        if err is not None:
            raise EngineFailure(_engine_message(label, err)) from exc
        raise _crash(label, exc) from exc


async def _await(awaitable: Any) -> Any:
    return await awaitable


def contract_arguments(spec: HookSpec, fn: Callable[..., Any], args: Any,
                       **inputs: Any) -> tuple[list[Any], dict[str, Any]]:
    """``(positional, keywords)`` that the runtime's call site passes ``fn`` as hook ``spec``.

    ``spec.params`` in order, positionally except those in ``spec.keyword_passed`` (by
    keyword): ``args`` is ``args``, each other one the value of that name in ``inputs``; then
    the ``spec.optional_kwargs`` given in ``inputs`` that ``fn`` accepts (``optional_kwargs``).

    Raises:
        KeyError: a name of ``spec.params`` (other than ``args``) has no value in ``inputs``
            (the message names the hook, the name and the parameters).
        ValueError: a name in ``inputs`` is neither a parameter nor an optional keyword of
            ``spec`` (a caller's typo, or a parameter the contract no longer has).
    """
    unknown = sorted(set(inputs) - set(spec.params) - set(spec.optional_kwargs))
    if unknown:
        raise ValueError(f"{spec.arg}: {unknown} are neither parameters {list(spec.params)} nor "
                         f"optional keywords {list(spec.optional_kwargs)} of this hook")
    missing = [p for p in spec.params if p != "args" and p not in inputs]
    if missing:
        raise KeyError(f"{spec.arg}: no value for its parameters {missing} (the contract's "
                       f"parameters are {list(spec.params)})")
    values = {p: args if p == "args" else inputs[p] for p in spec.params}
    positional = [values[p] for p in spec.positional]
    keywords = {p: values[p] for p in spec.params if p in spec.keyword_passed}
    keywords.update(optional_kwargs(fn, spec, **{k: v for k, v in inputs.items()
                                                 if k in spec.optional_kwargs}))
    return positional, keywords


def call_by_contract(label: str, spec: HookSpec, fn: Callable[..., Any], args: Any,
                     **inputs: Any) -> Any:
    """:func:`call_hook` with the arguments of :func:`contract_arguments`.

    Raises:
        StageFindings, EngineFailure, HarnessError: the hook raised (:func:`call_hook`).
        KeyError, ValueError: ``inputs`` do not fit ``spec`` (:func:`contract_arguments`).
    """
    positional, keywords = contract_arguments(spec, fn, args, **inputs)
    return call_hook(label, fn, *positional, **keywords)


def defined_at(obj: Any) -> str | None:
    """``FILE:LINE`` of the ``def`` (or ``class``) behind hook ``obj``: a function (decorators
    unwrapped, the line of ``def`` itself, not of its first decorator), a method, a
    ``functools.partial``, a class, an instance's ``__call__``; None when Python cannot tell
    (a builtin, code without a source file)."""
    target = obj
    for _ in range(8):
        if isinstance(target, functools.partial):
            target = target.func
        elif inspect.ismethod(target):
            target = target.__func__
        else:
            break
    target = inspect.unwrap(target) if inspect.isfunction(target) else target
    if not (inspect.isfunction(target) or inspect.isclass(target)):
        call = next((vars(c)["__call__"] for c in type(target).__mro__
                     if "__call__" in vars(c)), None)
        if not inspect.isfunction(call):
            return None
        target = call
    try:
        file = inspect.getsourcefile(target)
        lines, start = inspect.getsourcelines(target)
    except (OSError, TypeError):
        return None
    if not file:
        return None
    for i, text in enumerate(lines):
        if text.lstrip().startswith(("def ", "async def ", "class ")):
            return f"{file}:{start + i}"
    return f"{file}:{start}"


def loaded_object(path: str) -> Any:
    """The object ``"pkg.mod.attr"`` names when its module is already imported (a hook that
    failed its signature check at load), else None."""
    module_name, _, attr = path.rpartition(".")
    module = sys.modules.get(module_name)
    return getattr(module, attr, None) if module is not None else None


def hook_label(dest: str, path: str) -> str:
    """``--custom-rm-path `my.mod.fn``` for messages."""
    return f"{HOOKS[dest].arg} `{path}`"


def contract_findings(exc: ContractError) -> list[Violation]:
    """The findings of ``exc``.

    Raises:
        HarnessError: ``exc`` carries a message but no findings.
    """
    if exc.violations:
        return list(exc.violations)
    raise HarnessError(str(exc)) from exc


def warning_findings(caught: Sequence[warnings.WarningMessage], where: str) -> list[Violation]:
    """ContractWarnings raised while user code ran, as findings (id read from the text)."""
    out = []
    for w in caught:
        if issubclass(w.category, ContractWarning):
            text = str(w.message)
            match = _ID_RE.search(text)
            out.append(Violation(match.group(0) if match else "VIM100", "warning", where,
                                 f"ContractWarning: {text}"))
    return out


def in_context(found: Sequence[Violation], dest: str, path: str) -> list[Violation]:
    """``found`` with the hook, its argument and "(vime-lint check dry run)" as context."""
    text = CheckContext(dest, path, 0).describe() + " (vime-lint check dry run)"
    return [dataclasses.replace(v, context=v.context or text) for v in found]
