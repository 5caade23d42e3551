"""Code ported from slime / SGLang, and private vime imports: VIM012.

See ``docs/contract.md`` §6a and §8 (vLLM's token-in/token-out response fields).
"""

from __future__ import annotations

from pathlib import PurePath

import libcst as cst
import libcst.matchers as m

from vime.contract import INVARIANTS
from vime_lint.static._cst import dotted_text, string_value
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FileContext, Rule
from vime_lint.static.analysis import is_upstream

__all__ = ["PortedSglangShape"]

_SGLANG_KEYS = ("meta_info", "output_token_logprobs")
_REQUEST_KEYS = ("input_ids", "return_logprob")
_SGLANG_ENDPOINT = "/" + "generate"


class PortedSglangShape(Rule):
    """No slime/SGLang API shapes and no private ``vime`` imports.

    ## What it does
    Reports ``import slime`` / ``from slime... import`` (and the same for ``miles``, a fork of
    slime) and imports of ``_private`` names or modules of ``vime`` from outside the package
    (errors), and SGLang response/request keys:
    ``"meta_info"`` and ``"output_token_logprobs"`` used as keys (``x[key]`` or
    ``x.get(key, ...)``), a request dict (``{...}`` or ``dict(...)``) with ``"input_ids"`` or
    ``"return_logprob"`` next to ``"sampling_params"``, and the SGLang ``"/generate"``
    endpoint, also at the end of an f-string URL built from ``args`` (warnings). An import of
    slime in the body of a ``try`` whose handler catches ``ImportError`` and goes on is a
    fallback and is not reported; one whose handler raises is.

    ## Why is this bad?
    vime talks to vLLM's ``/inference/v1/generate``, whose response carries
    ``choices[0].token_ids`` and ``logprobs.content``: code ported from slime parses keys
    that never arrive (failure kind: "SGLang response shape"). Private names change in any
    release.

    ## Example
    ```python
    from slime.utils.types import Sample
    logprobs = output["meta_info"]["output_token_logprobs"]
    ```

    ## Use instead
    ```python
    from vime.utils.types import Sample
    logprobs = [c["logprob"] for c in output["choices"][0]["logprobs"]["content"]]
    ```

    ## Known problems
    A request built one key at a time (``payload["input_ids"] = ids``) and a key held in a
    variable (``KEY = "meta_info"; out[KEY]``) are not seen.

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM012"]
    VALID = [
        Valid("from vime.utils.types import Sample\n"),
        Valid("url = base + '/inference/v1/generate'\n"),
        Valid("ids = tokenizer(text)['input_ids']\n"),
        Valid("""
            import milestones
            from slimer import x
        """),
        # A fallback import, vLLM's endpoint in an f-string, vLLM's request in dict(...),
        # vLLM's response read in a class hook.
        Valid("""
            try:
                from slime.utils.types import Sample
            except ImportError:
                from vime.utils.types import Sample
        """),
        Valid("url = f'http://{host}:{port}/inference/v1/generate'\n"),
        # A fallback import under an if inside the try (optional logging).
        Valid("""
            def log(args, data):
                try:
                    if args.use_tensorboard:
                        from slime.utils.tensorboard_utils import Adapter
                        Adapter(args).log(data)
                except Exception as exc:
                    print(f"no tensorboard: {exc}")
        """),
        # Another server's SGLang endpoint (a teacher the user deployed): not the rollout's.
        Valid("TEACHER_URL = f'{teacher.url}/generate'\n"),
        Valid("""
            try:
                from slime.utils.types import Sample
            except ImportError:
                Sample = None
        """),
        Valid("""
            payload = dict(token_ids=ids, sampling_params=sp)
            x = d.get('meta')
        """),
        Valid("""
            from vime.utils.types import Sample as S
            class Gen:
                async def __call__(self, args, sample, sampling_params):
                    out = await self._post(sample)
                    return [c['logprob'] for c in out['choices'][0]['logprobs']['content']]
        """),
    ]
    INVALID = [
        Invalid("from slime.utils.types import Sample\n", line=1, col=0, severity="error"),
        Invalid("import slime.rollout\n", line=1, col=0, severity="error"),
        # miles, a fork of slime: the same hook API under another package, not importable here.
        Invalid("from miles.utils.types import Sample\n", line=1, col=0, severity="error"),
        Invalid("import miles.rollout.base_types as bt\n", line=1, col=0, severity="error"),
        Invalid("from vime.rollout.vllm_rollout import _parse\n", line=1, col=0,
                severity="error"),
        Invalid("x = out['meta_info']['output_token_logprobs']\n", line=1, col=8,
                severity="warning"),
        Invalid("payload = {'input_ids': ids, 'sampling_params': sp}\n", line=1, col=10,
                severity="warning"),
        Invalid("url = f'{base}' + '/generate'\n", line=1, col=18, severity="warning"),
        # .get(key), dict(...) requests, an f-string endpoint, keys inside a class hook's
        # comprehension; an import under a try that does not catch ImportError.
        Invalid("lp = output.get('meta_info', {}).get('output_token_logprobs', [])\n",
                line=1, col=16, severity="warning"),
        Invalid("payload = dict(input_ids=ids, sampling_params=sp, return_logprob=True)\n",
                line=1, col=10, severity="warning"),
        Invalid("url = f'http://{args.sglang_router_ip}:{args.sglang_router_port}/generate'\n",
                line=1, col=6, severity="warning"),
        Invalid("""
            class Gen:
                def __init__(self, args):
                    self.args = args
                def url(self):
                    return f"http://{self.args.sglang_router_ip}:{self.args.sglang_router_port}/generate"
        """, line=5, col=15, severity="warning"),
        Invalid("""
            class Gen:
                async def __call__(self, args, sample, sampling_params):
                    out = await self._post(sample)
                    return [t for _, t in out['meta_info']['output_token_logprobs']]
        """, line=4, col=34, severity="warning"),
        Invalid("""
            try:
                from slime.utils.types import Sample
            except KeyError:
                pass
        """, line=2, col=4, severity="error"),
        # A handler that raises is no fallback: without slime the module still fails.
        Invalid("""
            try:
                from slime.utils.types import Sample
            except ImportError as exc:
                raise ImportError("this backend needs slime: pip install slime") from exc
        """, line=2, col=4, severity="error"),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self._guarded: set[int] = set()

    def visit_Try(self, node: cst.Try) -> None:
        """Imports in the body of a ``try`` whose handler catches ``ImportError`` (or
        ``ModuleNotFoundError``, ``Exception``, a bare ``except``) and goes on are a fallback:
        code that also runs where slime is not installed. A handler that raises (``raise
        ImportError("install slime")``) is no fallback: the import still fails here."""
        if not any(_catches_import_error(h) and not _raises(h) for h in node.handlers):
            return

        class _Imports(cst.CSTVisitor):   # also under an if or a with inside the try
            def __init__(self) -> None:
                self.found: set[int] = set()

            def visit_Import(self, imp: cst.Import) -> None:
                self.found.add(id(imp))

            def visit_ImportFrom(self, imp: cst.ImportFrom) -> None:
                self.found.add(id(imp))

            def visit_FunctionDef(self, fn: cst.FunctionDef) -> bool:
                return False   # runs later, outside this try

        imports = _Imports()
        node.body.visit(imports)
        self._guarded.update(imports.found)

    def _inside_vime(self) -> bool:
        parts = PurePath(self.context.path).parts
        return "vime" in parts or "vime_lint" in parts

    def visit_Import(self, node: cst.Import) -> None:
        if id(node) in self._guarded:
            return
        for alias in node.names:
            name = dotted_text(alias.name)
            if is_upstream(name):
                pkg = name.partition(".")[0]
                self.report(node, self.INVARIANT.render(
                    problem=f"`import {name}`: {pkg}'s API is not vime's; import from `vime`"),
                    severity="error")
            elif name.startswith("vime.") and not self._inside_vime() and any(
                    p.startswith("_") for p in name.split(".")):
                self.report(node, self.INVARIANT.render(
                    problem=f"`import {name}` imports a private vime module"), severity="error")

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or id(node) in self._guarded:
            return
        mod = dotted_text(node.module)
        if is_upstream(mod):
            self.report(node, self.INVARIANT.render(
                problem=f"`from {mod} import ...`: {mod.partition('.')[0]}'s API is not vime's; "
                "import the same "
                "names from `vime`"), severity="error")
            return
        if not (mod == "vime" or mod.startswith("vime.")) or self._inside_vime():
            return
        private = [p for p in mod.split(".") if p.startswith("_") and not p.startswith("__")]
        if not private and not isinstance(node.names, cst.ImportStar):
            private = [a.name.value for a in node.names if isinstance(a.name, cst.Name)
                       and a.name.value.startswith("_") and not a.name.value.startswith("__")]
        if private:
            self.report(node, self.INVARIANT.render(
                problem=f"`from {mod} import ...` uses private vime name(s) "
                f"{', '.join(private)}; use the public API"), severity="error")

    def visit_SubscriptElement(self, node: cst.SubscriptElement) -> None:
        sl = node.slice
        if isinstance(sl, cst.Index):
            key = string_value(sl.value)
            if key in _SGLANG_KEYS:
                self.report(sl.value, self.INVARIANT.render(
                    problem=f"{key!r} is an SGLang response key; vLLM returns choices[0] with "
                    "token_ids and logprobs.content"), severity="warning")

    def visit_Call(self, node: cst.Call) -> None:
        """``x.get("meta_info", ...)`` reads an SGLang key as ``x["meta_info"]`` does;
        ``dict(input_ids=..., sampling_params=...)`` builds an SGLang request."""
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "get" and node.args \
                and node.args[0].keyword is None:
            key = string_value(node.args[0].value)
            if key in _SGLANG_KEYS:
                self.report(node.args[0].value, self.INVARIANT.render(
                    problem=f"{key!r} is an SGLang response key; vLLM returns choices[0] with "
                    "token_ids and logprobs.content"), severity="warning")
        elif isinstance(func, cst.Name) and func.value == "dict":
            self._request(node, {a.keyword.value for a in node.args if a.keyword is not None})

    def visit_Dict(self, node: cst.Dict) -> None:
        self._request(node, {string_value(el.key) for el in node.elements
                             if isinstance(el, cst.DictElement)})

    def _request(self, node: cst.CSTNode, keys: set[str | None]) -> None:
        if "sampling_params" in keys:
            bad = sorted(k for k in keys if k in _REQUEST_KEYS)
            if bad:
                self.report(node, self.INVARIANT.render(
                    problem=f"request keys {', '.join(repr(b) for b in bad)} are SGLang's; "
                    "vLLM's /inference/v1/generate takes token_ids and sampling_params"),
                    severity="warning")

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        """``f"http://{args.sglang_router_ip}:{args.sglang_router_port}/generate"``: the
        endpoint after a formatted part that reads the launch's ``args`` (the rollout's own
        engines); a URL of another server (a teacher the user deployed on SGLang) is left."""
        last = node.parts[-1] if node.parts else None
        if len(node.parts) > 1 and isinstance(last, cst.FormattedStringText) \
                and last.value.endswith(_SGLANG_ENDPOINT) and "/v1/" not in last.value \
                and any(isinstance(p, cst.FormattedStringExpression)
                        and _reads_args(p.expression) for p in node.parts):
            self.report(node, self.INVARIANT.render(
                problem="'/generate' is SGLang's endpoint; vLLM serves /inference/v1/generate"),
                severity="warning")

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if string_value(node) == _SGLANG_ENDPOINT:
            self.report(node, self.INVARIANT.render(
                problem="'/generate' is SGLang's endpoint; vLLM serves /inference/v1/generate"),
                severity="warning")


#: ``args.x`` or ``self.args.x`` (any object's ``.args``): a read of the launch's arguments.
_ARGS_READ = m.Attribute(value=m.Name("args") | m.Attribute(attr=m.Name("args")))


def _reads_args(expr: cst.BaseExpression) -> bool:
    """``expr`` reads an attribute of ``args`` (``args.x``, ``self.args.x``)."""
    return bool(m.findall(expr, _ARGS_READ))


def _raises(handler: cst.ExceptHandler) -> bool:
    """The handler's own statements include a ``raise`` (it re-raises or raises another)."""
    return any(isinstance(stmt, cst.SimpleStatementLine)
               and any(isinstance(s, cst.Raise) for s in stmt.body)
               for stmt in handler.body.body)


def _catches_import_error(handler: cst.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    types = [e.value for e in handler.type.elements] if isinstance(handler.type, cst.Tuple) \
        else [handler.type]
    return any(isinstance(t, cst.Name) and t.value in ("ImportError", "ModuleNotFoundError",
                                                       "Exception") for t in types)
