"""Every invariant of the rollout contract, as data, under a permanent ``VIM###`` id.

The linter (``vime_lint.static``: one rule per static id), the load-time check (VIM100), the
runtime checker (``vime.contract.checks``: one check per runtime id) and the rules page all read
these records, so an id, its severity and its wording exist once. Ids are never reused: a
retired invariant keeps its record with ``status="removed"``.

Usage::

    from vime.contract.invariants import INVARIANTS
    inv = INVARIANTS["VIM108"]
    inv.severity                                   # "error"
    inv.render(where="samples[3][1].loss_mask", actual=17, expected=18)

See ``docs/contract.md`` §6.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from vime.contract.errors import Severity, Violation

__all__ = ["ALWAYS_ENFORCED", "BOUNDARIES", "Boundary", "Enforcement", "INVARIANTS", "Invariant",
           "LEGACY_ROLLOUT_RETURN", "Scope", "raw_rollout_return_severity"]

#: Where an invariant is checked: by the linter, when a hook is loaded, or on live values.
Scope = Literal["static", "load", "runtime", "probe", "template"]
#: ``"policy"``: ``--contract-check off|warn|raise`` decides what a finding does.
#: ``"always"``: the run cannot continue past it (conversion or the buffer would fail or corrupt
#: training), so the runtime raises whatever ``--contract-check`` says.
Enforcement = Literal["policy", "always"]
#: Runtime boundaries of docs/contract.md §6b.
Boundary = Literal["B0", "B1", "B2", "B3", "B4", "B5", "B6", "B7"]

BOUNDARIES: MappingProxyType[str, str] = MappingProxyType({
    "B0": "load_function (hook signatures)",
    "B1": "call_rollout_fn (rollout function result)",
    "B2": "each generate call",
    "B3": "reward function results",
    "B4": "other hook results",
    "B5": "train output before conversion",
    "B6": "eval output",
    "B7": "trainer hook results (loss, advantages, TIS, pg-loss reducer)",
})


@dataclass(frozen=True, slots=True)
class Invariant:
    """One rule of the contract.

    ``message_template`` is formatted with keyword fields by :meth:`render`; missing fields are
    left as ``{name}`` rather than raising, so a consumer can pass what it has.
    """

    #: Permanent id, ``"VIM###"``.
    id: str
    #: ``"static"`` (vime-lint), ``"load"`` (load_function), ``"runtime"`` (the checker) or
    #: ``"probe"`` (``vime-lint check``'s reward probes: ``vime_lint/check/probes.py``) or
    #: ``"template"`` (``vime-lint template MODEL_DIR``: ``vime_lint/template.py``).
    scope: Scope
    #: Default severity; some invariants report warnings for milder forms (see ``title``).
    severity: Severity
    #: Short name of the pattern (also the rule slug source), e.g. "loss-mask-length".
    slug: str
    #: One-line description of the rule.
    title: str
    #: Why it matters: the real failure it prevents.
    rationale: str
    #: The failure kind from the log of real user mistakes (docs/contract.md §6).
    bug_kind: str
    #: Message template, formatted with keyword fields.
    message_template: str
    #: One line that says how to fix it.
    fix: str
    #: Runtime boundaries where it is checked (empty for static ones).
    boundaries: tuple[Boundary, ...] = ()
    #: Ids of the same fact checked at another time (static <-> runtime).
    twins: tuple[str, ...] = ()
    #: ``"stable"``, ``"preview"`` or ``"removed"`` (retired ids stay mapped, never reused).
    status: str = "stable"
    #: ``"always"`` or ``"policy"`` (see :data:`Enforcement`); static ids are ``"policy"``.
    enforcement: Enforcement = "policy"

    def render(self, **fields: Any) -> str:
        """Format ``message_template``; unknown fields stay as ``{name}``."""
        return self.message_template.format_map(_Keep(fields))

    def violation(
        self,
        where: str,
        *,
        severity: Severity | None = None,
        fix: str | None = None,
        context: str = "",
        **fields: Any,
    ) -> Violation:
        """Build a :class:`Violation` of this invariant at ``where``."""
        return Violation(
            id=self.id,
            severity=severity or self.severity,
            where=where,
            message=self.render(**fields),
            fix=self.fix if fix is None else fix,
            context=context,
        )


class _Keep(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


#: Runtime ids the runtime enforces whatever ``--contract-check`` says: a batch that breaks one
#: cannot be converted to training data (VIM108/110/112/113/115, VIM103 for positional groups,
#: VIM162 for the conversion hooks), would serve a group twice from the buffer (VIM102/103), a
#: sync hook's coroutine would never run (VIM165), or the built-in generate would generate a
#: finished sample again (VIM140), or a trainer hook's result would reach ``backward()`` and the
#: optimiser step (VIM190-VIM193, boundary B7). The same ids are also checked per policy at their
#: boundaries (B7 has no policy form: it runs on every micro-batch).
#: VIM128 is the AttributeError a group from get_samples raises when used as a Sample: the
#: user's code stops there whatever ``--contract-check`` says (a plain list raised too).
#: VIM101: ``call_rollout_fn`` raises on a result that is no rollout output (None, a coroutine,
#: the other mode's output), which the manager could not use in any mode.
ALWAYS_ENFORCED: frozenset[str] = frozenset({
    "VIM101", "VIM102", "VIM103", "VIM108", "VIM110", "VIM112", "VIM113", "VIM115", "VIM128", "VIM140",
    "VIM150", "VIM162", "VIM165", "VIM186", "VIM190", "VIM191", "VIM192", "VIM193",
})


def _inv(id: str, scope: Scope, severity: Severity, slug: str, title: str, rationale: str,
         bug_kind: str, message: str, fix: str, boundaries: tuple[Boundary, ...] = (),
         twins: tuple[str, ...] = ()) -> Invariant:
    return Invariant(id, scope, severity, slug, title, rationale, bug_kind, message, fix,
                     boundaries, twins,
                     enforcement="always" if id in ALWAYS_ENFORCED else "policy")


_ALL: tuple[Invariant, ...] = (
    # ---- 6a: static (vime-lint) -------------------------------------------------------------
    _inv("VIM001", "static", "error", "rollout-function-signature",
         "The rollout/eval function is a module-level plain `def (args, rollout_id, data_source, evaluation=False)`.",
         "The manager calls it synchronously as fn(args, rollout_id, data_source, evaluation=...): "
         "an async def returns an un-run coroutine, a missing parameter fails the first call.",
         "signature drift (async, no data_source)",
         "rollout function `{name}` {problem}",
         "declare `def generate_rollout(args, rollout_id, data_source, evaluation=False)`",
         twins=("VIM100",)),
    _inv("VIM002", "static", "error", "evaluation-branch-missing",
         "The rollout function reads or forwards `evaluation`, and the eval path returns eval output.",
         "Eval steps call the same function with evaluation=True; ignoring it returns train "
         "output, which call_rollout_fn rejects mid-run.",
         "rejected by call_rollout_fn",
         "rollout function `{name}` {problem}",
         "branch on `evaluation` and return RolloutFnEvalOutput(data=...) on the eval path",
         twins=("VIM101",)),
    _inv("VIM003", "static", "error", "raw-rollout-return",
         "The rollout function returns RolloutFnTrainOutput / RolloutFnEvalOutput.",
         "A bare list or dict is only accepted with a DeprecationWarning; None, a tuple or a "
         "generator fail with a TypeError at the first step.",
         "runtime TypeError",
         "rollout function `{name}` returns {actual} instead of {expected}",
         "return RolloutFnTrainOutput(samples=groups) (train) or RolloutFnEvalOutput(data=...) (eval)",
         twins=("VIM101",)),
    _inv("VIM004", "static", "error", "hook-signature",
         "Other hooks match their HookSpec (def/async def, arity, keywords).",
         "A hook with the wrong arity or kind fails at its first call, often hours into a run; "
         "a sync reward function's result is awaited and crashes.",
         "signature vs call mode; async reward not awaited",
         "{hook} `{name}` {problem}; expected `{expected}`",
         "match the expected signature shown", twins=("VIM100",)),
    _inv("VIM005", "static", "warning", "blocking-call-in-async",
         "No blocking calls (requests, urlopen, time.sleep, subprocess) or long CPU-bound "
         "loops inside `async def`, nor in the module's sync helpers it calls.",
         "A blocking call, or seconds of pure-Python work, stalls the event loop that drives "
         "every concurrent generate and reward call, serialising the whole rollout.",
         "blocking work on the event loop",
         "{problem}",
         "use an async client (httpx.AsyncClient), `await asyncio.sleep`, or `await asyncio.to_thread(...)`"),
    _inv("VIM006", "static", "error", "sample-constructor",
         "`Sample(...)` is built with keywords and known fields only.",
         "Positional arguments bind to whatever field sits at that position, and field order "
         "changes between releases; an unknown keyword raises TypeError at run time.",
         "field order changes",
         "`Sample(...)` {problem}",
         "pass fields by keyword: Sample(prompt=..., label=...)", twins=("VIM105",)),
    _inv("VIM007", "static", "error", "stale-status-api",
         "`status` is set from `Sample.Status`, not strings.",
         "A string status breaks `to_dict` (needs `.value`) and every `status ==` comparison.",
         "to_dict needs .value",
         "{problem}", "use Sample.Status.COMPLETED / TRUNCATED / ABORTED / FAILED",
         twins=("VIM111",)),
    _inv("VIM008", "static", "warning", "tokens-without-loss-mask",
         "Code that grows `.tokens`/`.response_length` also updates `.loss_mask`/`.rollout_log_probs`.",
         "Growing the response without the per-token lists leaves them one turn short, and the "
         "trainer then masks or scores the wrong tokens.",
         "loss_mask / log-prob length mismatch",
         "`{name}` updates `.{field}` but never `.loss_mask` or `.rollout_log_probs`",
         "use sample.append_response_tokens(...), which keeps all per-token lists in step",
         twins=("VIM108", "VIM109")),
    _inv("VIM009", "static", "warning", "status-from-finish-reason",
         "A custom generate function derives `status` from the finish reason (`length`, `abort`).",
         "A truncated or aborted response left COMPLETED is rewarded and trained as if finished.",
         "status not set from finish reason",
         "generate function `{name}` {problem}",
         "map finish_reason length -> TRUNCATED and abort -> ABORTED (append_response_tokens with meta_info does it)",
         twins=("VIM111",)),
    _inv("VIM010", "static", "warning", "reward-arithmetic",
         "Filters, reward post-processing and loggers read rewards through `get_reward_value(args)`.",
         "`.reward` may be a dict read through --reward-key; arithmetic on it raises or, summed "
         "as a dict, silently compares wrong values.",
         "filter assumes numeric reward",
         "arithmetic on `.reward` in `{name}`", "use sample.get_reward_value(args)",
         twins=("VIM110",)),
    _inv("VIM011", "static", "error", "reward-returns-none",
         "A reward function returns a value on every path.",
         "A path that falls through returns None, which training cannot normalise.",
         "reward fn returns None",
         "reward function `{name}` can return None ({problem})",
         "return a float (or a dict with the --reward-key key) on every path",
         twins=("VIM150",)),
    _inv("VIM012", "static", "error", "slime-sglang-shapes",
         "No slime/SGLang API shapes (`from slime`, `meta_info`, `output_token_logprobs`, `/generate`) and no `_private` vime imports.",
         "Code ported from slime/SGLang parses response keys that vLLM never returns; private "
         "imports break on any release.",
         "SGLang response shape",
         "{problem}", "use vime's public API and vLLM's token-in/token-out response fields"),
    _inv("VIM013", "static", "warning", "getattr-on-group-element",
         "No `getattr(x, 'status'|'reward', default)` on group elements; iterate leaves with `iter_samples`.",
         "A group element may be a list of samples (fan-out); getattr with a default then "
         "quietly answers the default and the check is always false.",
         "aborted check false on nested group",
         "`getattr(..., {attr!r}, ...)` on a group element", "iterate with vime.rollout.base_types.iter_samples(group)"),
    _inv("VIM014", "static", "warning", "tensor-in-metadata",
         "No numpy/torch values stored in `metadata`/`train_metadata`.",
         "Metadata is dumped as JSON and sent between processes; arrays and tensors break both.",
         "metadata not JSON-serialisable",
         "{problem}", "store plain Python values (.item(), .tolist())", twins=("VIM116",)),
    _inv("VIM015", "static", "warning", "unpicklable-hook",
         "Hook targets are module-level `def`/`class` (no lambda, nested def, `partial`).",
         "Hooks are loaded by dotted path in Ray actors; a lambda or nested function cannot be "
         "named or pickled.",
         "user callable not picklable",
         "hook `{name}` is {problem}", "define the hook as a module-level function"),
    _inv("VIM016", "static", "warning", "args-mutation",
         "No attribute assignment on `args`.",
         "`args` is the run's shared configuration, copied into every actor; state stashed on it "
         "is lost or diverges between processes.",
         "shared configuration",
         "assignment to `args.{attr}` in `{name}`",
         "keep runtime state in a module-level object or the data source"),
    _inv("VIM017", "static", "warning", "group-expanded-twice",
         "No `range(args.n_samples_per_prompt)` expansion of groups from `get_samples`.",
         "get_samples already returns groups of n_samples_per_prompt copies; expanding again "
         "multiplies the group size.",
         "group expanded twice",
         "groups from get_samples expanded again by n_samples_per_prompt in `{name}`",
         "use the groups get_samples returns as they are", twins=("VIM103",)),
    _inv("VIM018", "static", "warning", "retokenisation-drift",
         "No decode -> re-template/encode of generated text inside a turn loop.",
         "Re-encoding decoded text does not reproduce the sampled tokens, so training log-probs "
         "drift from the sampler's.",
         "retokenisation drift",
         "generated text re-encoded in `{name}`", "keep token ids: append them with append_response_tokens"),
    _inv("VIM019", "static", "warning", "config-aware",
         "A reward function returning a dict runs with `--reward-key` configured.",
         "Without `--reward-key` the trainer cannot pick the score out of the dict: training "
         "runs on a missing signal.",
         "dict reward without reward_key; label missing",
         "{problem}", "{fix_hint}", twins=("VIM110", "VIM118", "VIM141")),
    _inv("VIM020", "static", "error", "eval-data-keys",
         "Eval data entries carry `rewards`, `truncated` and `samples`.",
         "Eval logging averages `rewards` and reads `truncated`; a missing key fails the eval step.",
         "upstream contract test",
         "eval data `{dataset}` is missing {missing}",
         "return {name: {'rewards': [...], 'truncated': [...], 'samples': [...]}}",
         twins=("VIM130",)),
    _inv("VIM021", "static", "error", "unawaited-coroutine",
         "A call to a known async function (a hook, `generate`, an `async def` of the module) is awaited.",
         "An un-awaited call returns a coroutine: the work never runs and the caller treats the "
         "coroutine as the result.",
         "coroutine returned instead of value",
         "call to async function `{call}` is not awaited", "add `await` (or wrap it with asyncio.gather / create_task)",
         twins=("VIM101", "VIM165")),
    _inv("VIM022", "static", "warning", "mask-from-full-tokens",
         "`loss_mask` / `rollout_log_probs` are sized by the response, not by the full `tokens`.",
         "`tokens` holds the prompt too: a mask of len(tokens) trains or misaligns the prompt.",
         "loss_mask length != response_length",
         "`.{field}` built from len(...tokens) in `{name}`",
         "size it by response_length (or use append_response_tokens)", twins=("VIM108", "VIM109")),
    # Static twins of failures reported in other frameworks (vime_lint/static/rules/).
    _inv("VIM023", "static", "error", "reward-return-kind",
         "Every return path of a reward function returns the same kind: a real number everywhere or a dict everywhere.",
         "A batch mixing float and dict rewards fails either way: with --reward-key a float is "
         "not subscriptable, without it a dict cannot be normalised, and the per-key reward "
         "columns misalign (verl-project/verl#1031: a compute_score returning a float on one "
         "path and a dict on another; GAIR-NLP/ToRL#19).",
         "mixed float and dict rewards",
         "reward function `{name}` returns {first} on one path and {second} on another",
         "return one kind on every path: a float everywhere, or a dict with the --reward-key "
         "key everywhere", twins=("VIM121",)),
    _inv("VIM024", "static", "error", "reward-returns-tensor",
         "A reward function returns Python numbers, and a rollout or custom generate function "
         "stores them in `sample.reward`: not strings, torch tensors, numpy arrays or numpy "
         "scalars other than float64.",
         "A tensor or array reward fails `float()` when it holds more than one element (\"only "
         "one element tensors can be converted to Python scalars\", shibing624/MedicalGPT#120), "
         "keeps GPU memory alive across Ray and compares as a tensor in filters; numpy scalars "
         "other than float64 (a float subclass) are not Python numbers and break json.dumps; a "
         "string reward fails the always-on reward check (VIM110).",
         "tensor reward",
         "{hook} `{name}` {does} {what} (`{code}`), not a Python number",
         "return float(x) (x.item() for a one-element tensor or array)",
         twins=("VIM122", "VIM110")),
    _inv("VIM025", "static", "error", "shared-sample-objects",
         "A dict or list bound outside a loop is not assigned to a Sample field inside it without a copy.",
         "Every sample built in the loop then holds the same object: a write through one "
         "sample (a response token, a metadata key) lands in all of them, silently "
         "(NovaSky-AI/SkyRL#1189).",
         "template object shared between samples",
         "`{target} = {value}` inside a loop gives every sample the same {kind} object "
         "`{value}` (bound outside the loop)",
         "copy it per sample: dict(x) / copy.deepcopy(x) for a dict, list(x) for a list",
         twins=("VIM123",)),
    _inv("VIM026", "static", "warning", "mutable-default-argument",
         "Hook functions, and the module's functions they call, have no mutable default arguments (`cache={}`, `seen=[]`).",
         "A default is built once, when the module is imported: every call of the hook, for "
         "every sample of every step in that process, shares and grows the same object, and "
         "other Ray actors hold a different one (NovaSky-AI/SkyRL#1189).",
         "template object shared between samples",
         "{where} has the mutable default `{param}={code}`: one object shared by every call",
         "default to None and build the object inside the function (or keep a deliberate cache "
         "at module level)"),
    _inv("VIM027", "static", "warning", "per-turn-token-budget",
         "A multi-turn loop does not ask for the whole --rollout-max-response-len on every turn, "
         "and no budget charges the prompt (len(sample.tokens)) to --rollout-max-response-len.",
         "The response budget is for the whole trajectory; asking every turn for all of it "
         "lets a multi-turn response grow to turns x budget, past the length training was "
         "sized for, until the engine rejects the context (NovaSky-AI/SkyRL#696, "
         "TIGER-AI-Lab/verl-tool#85). vime's built-in generate subtracts what a sample "
         "already holds; direct engine requests do not. `sample.tokens` holds the prompt "
         "too: subtracting its length from the response budget gives long prompts short "
         "answers or none (THUDM/slime#2140).",
         "observation overruns the budget",
         "{problem}",
         "ask for the budget that is left: args.rollout_max_response_len - "
         "sample.response_length (or call vime.rollout.vllm_rollout.generate, which does it)",
         twins=("VIM124",)),
    _inv("VIM028", "static", "error", "group-used-as-sample",
         "Elements of `get_samples(...)` / `RolloutFnTrainOutput.samples` (and `generate_and_rm_group(...)`'s value) are groups (list[Sample]), not Samples.",
         "get_samples returns list[list[Sample]]: iterating it yields groups, and reading or "
         "setting a Sample attribute on a group raises AttributeError (or, through getattr "
         "with a default, quietly answers the default) (radixark/miles#1056).",
         "group treated as a sample",
         "`{expr}` treats a group as a Sample: `{name}` holds {source}, a list[Sample]",
         "iterate the samples of each group: `for group in groups: for sample in group:`",
         twins=("VIM128",)),
    _inv("VIM029", "static", "error", "one-event-loop",
         "Hooks and the helpers they call never call `asyncio.run(...)` (or run a new event loop).",
         "asyncio.run creates and closes a loop per call: HTTP clients and engine connections "
         "made on one step's loop are used on the next step's and fail with \"Event loop is "
         "closed\"; inside an async hook it raises \"cannot be called from a running event "
         "loop\" at once (NovaSky-AI/SkyRL#868).",
         "event loop closed between steps",
         "`{call}` in {where}: {problem}",
         "use vime.utils.async_utils.run(coro) from sync code (one background loop per "
         "process), and `await` inside async code"),
    _inv("VIM030", "static", "warning", "swallowed-reward-failure",
         "A reward function does not turn a broad exception into a constant score.",
         "`except Exception: return 0.0` makes a broken scorer (a crashed verifier, an "
         "unreachable reward server, a bug) indistinguishable from a wrong answer: the step "
         "trains on zeros and nothing fails (verl-project/verl#4417, NVIDIA-NeMo/RL#2207).",
         "scorer failure scored as a wrong answer",
         "reward function `{name}` returns the constant `{value}` when {caught} is raised{via}",
         "let the exception propagate (or log and re-raise); catch only the errors that mean "
         "a wrong answer (e.g. ValueError from parsing). Returning None will mark a failed "
         "reward once vime's failure-as-data policy exists"),
    # ---- 6a: codes split from VIM006/VIM007/VIM019 (one code per rule; the old code stays an
    # alias in noqa and --ignore), required fields and the filter's return kind -------------
    _inv("VIM031", "static", "error", "unknown-sample-attribute",
         "Attributes read or written on a `Sample` are fields of `Sample`.",
         "Reading an attribute `Sample` does not have raises AttributeError at run time; "
         "writing one stores a value nothing reads, so the intended field keeps its default.",
         "field drift",
         "{problem}", "use a field listed in docs/contract.md §2 (metadata for your own data)"),
    _inv("VIM032", "static", "error", "stale-sample-flag",
         "No `.truncated` / `.aborted` booleans on samples: `status` says it.",
         "`.truncated`/`.aborted` are fields of an old API: a write is never read (the "
         "truncation never reaches the training data, which exports `truncated` from `status`), "
         "a read raises AttributeError.",
         "to_dict needs .value",
         "{problem}", "compare `sample.status` with Sample.Status.TRUNCATED / ABORTED"),
    _inv("VIM033", "static", "error", "stale-data-buffer",
         "No `.data_buffer` attribute of vime objects: the data source is `data_source`.",
         "`data_buffer` is the name of an old API; vime's objects have no such attribute, so "
         "the access raises AttributeError. An attribute the user's own class assigns is "
         "the user's and is not reported.",
         "stale API",
         "{problem}", "use `data_source` (the rollout function's third argument)"),
    _inv("VIM034", "static", "warning", "label-without-label-key",
         "A hook that reads `sample.label` runs with `--label-key` configured.",
         "Without `--label-key` the dataset's label column is not read, so `label` stays None "
         "and every score compares against None: training runs on a missing signal.",
         "dict reward without reward_key; label missing",
         "{problem}", "{fix_hint}", twins=("VIM141",)),
    _inv("VIM035", "static", "warning", "reward-set-before-custom-rm",
         "A custom generate function does not set `.reward` when `--custom-rm-path` scores it.",
         "With `--custom-rm-path` the reward function is skipped for samples that already "
         "have a reward, so the configured reward model never scores them.",
         "dict reward without reward_key; label missing",
         "{problem}", "{fix_hint}", twins=("VIM118",)),
    _inv("VIM036", "static", "error", "required-fields-never-set",
         "Samples returned by a rollout function have `tokens`, `response_length`, `reward` "
         "and `status` set on some train path (`evaluation=False`); the sample a "
         "custom generate function returns has "
         "`tokens`, `response_length` and `status`.",
         "A sample that reaches `RolloutFnTrainOutput` without tokens, a response length or a "
         "reward fails conversion to training data after the engines and the trainer have "
         "started; a generated sample without a response fails the generate boundary check. "
         "A status never set stays PENDING, which vime only warns about (VIM111) and trains "
         "as not truncated, so a response cut at the length limit trains as a finished one: "
         "that case alone is a warning (vime.contract.sample.UNSET_FIELD_SEVERITY).",
         "required field never set",
         "{hook} `{name}`: {problem}",
         "set the field (sample.reward = ..., Sample(tokens=...)), or produce the samples with "
         "vime's generate / generate_and_rm, which set them"),
    _inv("VIM037", "static", "warning", "filter-return-kind",
         "A dynamic sampling filter returns `DynamicFilterOutput` on every path.",
         "Another value (a bare bool) is wrapped as `DynamicFilterOutput(keep=bool(value))` "
         "with a warning at run time, and None drops the group; mixing kinds hides which path "
         "returns what.",
         "hook result kind",
         "dynamic sampling filter `{name}` returns {actual} (on {path}); expected "
         "DynamicFilterOutput", "return DynamicFilterOutput(keep=..., reason=...) on every path",
         twins=("VIM160",)),
    # ---- 6a: options a hook module declares (add_arguments; vime/config/hook_options.py)
    _inv("VIM038", "static", "warning", "unknown-args-option",
         "A hook module reads only `args` attributes that vime defines or that its own "
         "`add_arguments` declares.",
         "Another name raises AttributeError when the line runs, hours into a run, unless a "
         "`--custom-config-path` file happens to set it.",
         "unknown option",
         "`args.{attr}` in `{name}` is neither a vime option nor declared by this module's "
         "add_arguments{hint}",
         "declare it in the module's `add_arguments(parser)` (it is then a checked `vime train` "
         "option), or fix the name"),
    _inv("VIM039", "static", "warning", "unread-hook-option",
         "Every option a hook module declares in `add_arguments` is read somewhere in it.",
         "An option nothing reads is accepted and ignored: the user sets it and nothing "
         "changes.",
         "unknown option",
         "`{flag}` is declared by add_arguments but `args.{dest}` is never read in this module",
         "read it where it matters, or remove the declaration"),
    # ---- 6a: the agent function (--agent-function-path; vime_lint/static/rules/agent_*.py)
    _inv("VIM050", "static", "error", "agent-function-sync",
         "An `--agent-function-path` function is an `async def`.",
         "vime awaits `run(args, sample, base_url, api_key)` on the rollout's event loop; a plain "
         "`def` returns its value (or None) where a coroutine is awaited and the first sample "
         "fails, after the engines have started.",
         "signature vs call mode",
         "agent function `{name}` is a plain `def`; vime awaits it",
         "make it `async def {name}(args, sample, base_url, api_key, **kwargs)` and use an async "
         "client (openai.AsyncOpenAI, httpx.AsyncClient)",
         twins=("VIM100",)),
    _inv("VIM051", "static", "error", "agent-sync-client",
         "An agent function does not call the endpoint with a synchronous client (openai.OpenAI, httpx.Client, requests, httpx.post, ...).",
         "In inline mode (`--agent-function-mode inline`, the default) the endpoint that answers "
         "the agent runs on the same event loop as the agent: a blocking HTTP call to it blocks "
         "the loop that would serve it, so the call hangs until its timeout and the whole rollout "
         "stalls.",
         "blocking work on the event loop",
         "agent function `{name}` makes a blocking call `{call}`: in inline mode the endpoint "
         "runs on the event loop this call blocks",
         "use openai.AsyncOpenAI / httpx.AsyncClient and await the calls, or run the agent with "
         "--agent-function-mode subprocess",
         twins=("VIM005",)),
    _inv("VIM052", "static", "warning", "agent-returns-nothing",
         "An agent function returns a reward (a number or a dict) on some path.",
         "`run` returning None means \"unscored\": vime's reward function (--rm-type / "
         "--custom-rm-path) scores the trajectory instead. A body with no `return <value>` "
         "leaves every trajectory to that function, which is often not what the author meant "
         "(the agent computed a reward and dropped it).",
         "reward fn returns None",
         "agent function `{name}` never returns a value: every trajectory is unscored and goes "
         "to the reward function",
         "return the trajectory's reward (float or dict), or `return None` explicitly when the "
         "run's reward function should score it",
         twins=("VIM185",)),
    _inv("VIM055", "static", "error", "custom-loss-return-pair",
         "A `--custom-loss-function-path` function returns the pair `(loss, log_dict)`.",
         "The trainer unpacks `loss, log_dict = fn(args, batch, logits, sum_of_sample_mean)`: "
         "a bare loss tensor fails to unpack (or unpacks its first dimension) at the first "
         "micro-batch, after the rollout has already been generated.",
         "custom loss returns a bare tensor",
         "custom loss `{name}` returns {actual} instead of a `(loss, log_dict)` pair",
         "return `loss, {\"my_loss\": loss.detach()}` (a dict of names to numbers)",
         twins=("VIM190",)),
    _inv("VIM056", "static", "error", "advantage-hook-sets-advantages",
         "A `--custom-advantage-function-path` function sets `rollout_data[\"advantages\"]`.",
         "The advantage hook returns None and works in place: one that returns its advantages "
         "instead of storing them (or never stores them) leaves the trainer without advantages "
         "for the step.",
         "advantages returned instead of stored",
         "advantage function `{name}` {problem}",
         "assign `rollout_data[\"advantages\"] = [...]` (one 1-D tensor per sample) and return None",
         twins=("VIM191",)),
    _inv("VIM057", "static", "warning", "positional-groups",
         "Reward post-processing and conversion hooks group flat samples by `group_index`, "
         "not by position in rows of n_samples_per_prompt.",
         "These hooks get the flat samples of the step. Rows of n_samples_per_prompt by "
         "position are the prompt groups only when every rollout is one sample and the groups "
         "arrive whole and in order: a fan-out rollout's segments (several samples of one "
         "rollout_id), or a batch with uneven groups, puts samples of different prompts in "
         "one row, and every advantage computed from that row's mean is silently wrong "
         "(THUDM/slime#1414, radixark/miles#1573).",
         "uneven group sizes silently change GRPO advantages",
         "{problem}",
         "group by `sample.group_index` (one value per `rollout_id`), as vime's own "
         "normalisation does, e.g. collect the indices per group_index in a dict",
         twins=("VIM103", "VIM113")),
    _inv("VIM058", "static", "warning", "templated-text-special-tokens",
         "Text rendered by `apply_chat_template(..., tokenize=False)` is encoded with "
         "`add_special_tokens=False`.",
         "A chat template writes the BOS token itself; encoding its text again with special "
         "tokens (`add_special_tokens=True`, the default of `encode` and of calling the "
         "tokenizer) prefixes a second BOS for every tokenizer that adds one (Llama, Gemma, "
         "Mistral): every prompt is trained and sampled off the distribution the model was "
         "tuned on (NVIDIA-NeMo/RL#855, huggingface/trl#3856). A warning: tokenizers that add "
         "no BOS (Qwen) are not affected, and the linter does not know the model.",
         "chat template applied twice",
         "{problem}",
         "encode the rendered text with add_special_tokens=False, or tokenize once with "
         "apply_chat_template(..., tokenize=True)",
         twins=("VIM176",)),
    _inv("VIM059", "static", "warning", "response-text-cut",
         "A generate that cuts `sample.response` cuts the response tokens with it.",
         "The reward scores `sample.response` while training trains on `tokens` and "
         "`loss_mask`: a response text cut at a stop marker with every token kept rewards the "
         "cut text and pushes up the tokens after the marker too (modelscope/ms-swift#6803). "
         "A warning: cutting only what the reward reads can be meant.",
         "response text and tokens disagree",
         "{problem}",
         "cut the tokens too (sample.tokens, response_length, loss_mask and "
         "rollout_log_probs to the kept tokens), or leave sample.response whole and parse "
         "the answer in the reward"),
    _inv("VIM090", "static", "warning", "bare-noqa",
         "A `# noqa` comment names the codes it silences.",
         "A bare noqa hides every finding on the line, including ones added later.",
         "suppression hides new findings",
         "bare `# noqa` does not silence vime-lint", "name the code: `# noqa: VIM003`"),
    _inv("VIM091", "static", "warning", "unused-suppression",
         "A suppression comment silences a finding that exists.",
         "A stale suppression hides the next real finding on that line.",
         "stale suppression",
         "unused suppression of {codes}", "remove the code from the noqa comment"),
    _inv("VIM092", "static", "warning", "file-not-linted",
         "Every file given to the linter is linted (none is too large, too deeply nested or "
         "too slow for it).",
         "A file the linter skips is not checked at all: its contract violations surface at "
         "run time. The limits keep a hostile or generated file from crashing or stalling "
         "the linter (LibCST's native parser overflowed the stack on deep nesting).",
         "file silently unchecked",
         "{detail}",
         "split the file, simplify the nesting, or exclude it (`--extend-exclude`)"),
    # ---- 6b: load time and run time ---------------------------------------------------------
    _inv("VIM100", "load", "error", "hook-signature-at-load",
         "Every loaded hook's signature matches its HookSpec (names alone only warn).",
         "A wrong signature otherwise fails at the first call, after engines have started.",
         "fail at start, not mid-run",
         "{problem}", "change the definition to `{expected}`", boundaries=("B0",),
         twins=("VIM001", "VIM004")),
    _inv("VIM101", "runtime", "error", "rollout-result-type",
         "The rollout function returns the output type of its mode (legacy list/dict warn).",
         "Upstream wraps anything silently: a coroutine or None then fails far away.",
         "coroutine returned instead of value",
         "`{name}` ({mode}) returned {actual}; {hint}",
         "return RolloutFnTrainOutput(samples=...) for train and RolloutFnEvalOutput(data=...) for eval",
         boundaries=("B1",), twins=("VIM003", "VIM002")),
    _inv("VIM102", "runtime", "error", "samples-shape",
         "`samples` is non-empty, uniformly depth 2 or 3 (flat warns), every leaf a Sample.",
         "The manager flattens by looking at the first element; mixed depths scramble samples.",
         "filter assumes flat group",
         "{problem}", "return list[list[Sample]] (groups of samples)", boundaries=("B5",)),
    _inv("VIM103", "runtime", "error", "group-size",
         "Each group has exactly n_samples_per_prompt elements.",
         "Uneven groups silently change GRPO advantages (mean and std are per group).",
         "uneven group sizes silently change GRPO advantages",
         "has {actual} samples, expected n_samples_per_prompt={expected} — uneven groups "
         "silently change GRPO advantages",
         "keep failed samples and set remove_sample=True instead of dropping them",
         boundaries=("B5",), twins=("VIM017",)),
    _inv("VIM104", "runtime", "error", "group-count",
         "There are exactly rollout_batch_size groups (a warning for custom rollout functions).",
         "A different count changes the step's batch size and the optimiser step count.",
         "group expanded twice",
         "has {actual} groups, expected rollout_batch_size={expected}",
         "return exactly args.rollout_batch_size groups", boundaries=("B5",)),
    _inv("VIM105", "runtime", "error", "field-type",
         "Every Sample field has its contract type (an error for fields conversion reads).",
         "A wrong type fails far away, inside tensor building or logging.",
         "wrong types fail far away",
         "is {actual}, expected {expected}", "store a value of the declared type",
         boundaries=("B2", "B5"), twins=("VIM006",)),
    _inv("VIM106", "runtime", "error", "tokens",
         "`tokens` is a non-empty list of int (not bool), 0 <= t < vocab_size when known.",
         "Token ids become a LongTensor; anything else fails or indexes out of range.",
         "tensor building",
         "{problem}", "store the prompt token ids followed by the response token ids",
         boundaries=("B2", "B5")),
    _inv("VIM107", "runtime", "error", "response-length",
         "`response_length` is an int with 1 <= response_length <= len(tokens).",
         "tokens[-0:] is the whole sequence: a zero length trains the prompt; a length equal to "
         "len(tokens) with a prompt means the prompt is counted as response.",
         "prompt vs response confusion",
         "{problem}", "set response_length to the number of generated tokens at the end of tokens",
         boundaries=("B2", "B5")),
    _inv("VIM108", "runtime", "error", "loss-mask",
         "`loss_mask` is None or has response_length entries, each 0 or 1.",
         "A mask of the wrong length shifts which tokens are trained (or trains the prompt).",
         "loss_mask length != response_length",
         "{problem}", "extend loss_mask for every appended token, or use Sample.append_response_tokens()",
         boundaries=("B2", "B5"), twins=("VIM008", "VIM022")),
    _inv("VIM109", "runtime", "error", "rollout-log-probs",
         "`rollout_log_probs` is None or has response_length finite entries <= 0.",
         "Mismatched or placeholder log-probs corrupt importance ratios and PPO clipping.",
         "log-prob length mismatch; never filled; placeholder log-prob",
         "{problem}", "store one sampler log-prob per response token (append_response_tokens does it)",
         boundaries=("B2", "B5"), twins=("VIM008", "VIM022")),
    _inv("VIM110", "runtime", "error", "reward-value",
         "`reward` is a finite real, or a dict holding a finite real under --reward-key.",
         "None or a dict without --reward-key fails in normalisation or trains on garbage.",
         "aborted sample with reward None; dict reward without reward_key",
         "{problem}", "set a float reward, or pass --reward-key naming the dict key",
         boundaries=("B2", "B3", "B4", "B5"), twins=("VIM010", "VIM024")),
    _inv("VIM111", "runtime", "error", "status",
         "`status` is a Sample.Status; PENDING after generation and trainable ABORTED samples warn.",
         "The status decides truncation flags, partial-rollout recycling and filters.",
         "status not set from finish reason",
         "{problem}", "set status from the finish reason with Sample.Status members",
         boundaries=("B2", "B5"), twins=("VIM007", "VIM009")),
    _inv("VIM112", "runtime", "error", "optional-columns",
         "rollout_log_probs, teacher_log_probs, train_metadata, metadata['round_number']: all samples or none.",
         "The first sample decides whether a column exists; a later sample without it crashes "
         "conversion, a later one with it is silently ignored.",
         "first sample decides the column",
         "{field} is set on {present} of {total} samples ({detail})",
         "set it on every sample or on none",
         boundaries=("B5",)),
    _inv("VIM113", "runtime", "error", "group-index",
         "`group_index` is set on all samples or none; equal within a group, distinct across groups.",
         "group_index is the normalisation key: mixing it up normalises across prompts.",
         "normalisation key",
         "{problem}", "keep the group_index that get_samples assigned", boundaries=("B5",)),
    _inv("VIM114", "runtime", "error", "index-unique",
         "`index` is unique across rollouts (fan-out siblings may share it).",
         "index is the sort key and sample id; duplicates reorder and merge samples.",
         "sort key",
         "{problem}", "keep the index that get_samples assigned", boundaries=("B5",)),
    _inv("VIM115", "runtime", "error", "rollout-id-rule",
         "Fan-out siblings share a non-None rollout_id, group_index and reward.",
         "Siblings are one rollout: normalisation counts it once by rollout_id.",
         "fan-out siblings without shared rollout_id",
         "{problem}", "set the same rollout_id (and reward) on every segment of one rollout",
         boundaries=("B2", "B5")),
    _inv("VIM116", "runtime", "warning", "metadata-json",
         "`metadata` and `train_metadata` pass json.dumps.",
         "Debug dumps and logging serialise them; arrays and objects break both.",
         "metadata not JSON-serialisable",
         "{problem}", "store plain Python values (.item(), .tolist())", boundaries=("B5",),
         twins=("VIM014",)),
    _inv("VIM117", "runtime", "warning", "constant-reward",
         "Rewards are not all identical across the batch.",
         "With identical rewards every advantage is zero: the step learns nothing. One such "
         "batch now and then is expected (prompts the policy cannot solve yet, or always "
         "solves); the same on step after step is a reward that does not tell answers apart "
         "(a broken reward, missing labels) or prompts of the wrong difficulty.",
         "constant reward, no signal",
         "are all equal to {value} ({count} samples): every advantage is zero",
         "expected now and then on a batch of hard (or easy) prompts, where every answer is "
         "wrong (or right); when it repeats across steps, check the reward function and the "
         "labels (`vime-lint check` probes the reward) or give prompts the model sometimes "
         "solves",
         boundaries=("B5",)),
    _inv("VIM118", "runtime", "warning", "label-missing",
         "A label-based --rm-type has --label-key set and labels present.",
         "Without labels a label-based reward scores everything 0.",
         "label missing for reward",
         "{problem}", "pass --label-key naming the answer column", boundaries=("B5",)),
    _inv("VIM119", "runtime", "warning", "metrics",
         "`metrics` is None or a dict of finite reals with `/` in every key and no built-in clash.",
         "Unqualified keys collide with built-in metrics and are overwritten.",
         "log collisions",
         "{problem}", "name metrics rollout/<module>/<name> (eval/<module>/<name>)",
         boundaries=("B1",)),
    _inv("VIM120", "runtime", "warning", "finalize-bypassed",
         "With a sample filter or all-samples hook set, custom output goes through finalize_rollout_groups.",
         "Otherwise the configured hooks silently never run.",
         "custom rollout bypasses hooks",
         "{problem}", "return through vime.rollout.base_types.finalize_rollout_groups(...)",
         boundaries=("B5",)),
    _inv("VIM121", "runtime", "error", "reward-kind",
         "Within one train batch the rewards are all real numbers or all dicts (read through --reward-key), never a mix.",
         "Upstream reads `reward[--reward-key]` when the key is set and the bare value otherwise, "
         "so a mix crashes either way (a float is not subscriptable, a dict cannot be "
         "normalised), and per-kind bookkeeping misaligns: float- and dict-returning reward "
         "functions in one batch broke the reward columns in verl-project/verl#1031 (also "
         "GAIR-NLP/ToRL#19).",
         "mixed float and dict rewards",
         "{problem}",
         "return one kind from every reward function: a float everywhere, or a dict holding "
         "the --reward-key key everywhere",
         boundaries=("B5",), twins=("VIM110", "VIM023")),
    _inv("VIM122", "runtime", "error", "reward-python-number",
         "A reward (or reward[--reward-key]) is a Python number, not a torch tensor, numpy array or numpy scalar (numpy.float64, a float subclass, is tolerated).",
         "Tensors and arrays fail `float()` when they hold more than one element (\"only one "
         "element tensors can be converted to Python scalars\", shibing624/MedicalGPT#120), "
         "keep GPU memory alive across Ray, and compare as tensors in filters; numpy scalars "
         "other than float64 are not float and break json.dumps of dumps and metrics.",
         "tensor reward",
         "{problem}", "return float(x) (x.item() for a one-element tensor or array)",
         boundaries=("B5",), twins=("VIM110", "VIM150", "VIM024")),
    _inv("VIM123", "runtime", "error", "shared-mutable-objects",
         "No two samples hold the same `metadata` dict or `tokens`/`loss_mask`/`rollout_log_probs`/`teacher_log_probs` list object (fan-out siblings may share `metadata`).",
         "A list or dict shared between samples is written by both: one sample's response or "
         "reward bookkeeping lands in the other, silently (NovaSky-AI/SkyRL#1189). Fan-out "
         "siblings are one rollout, so sharing the rollout's metadata dict is allowed; their "
         "per-token lists are per sample.",
         "template object shared between samples",
         "{problem}",
         "give every sample its own object: copy.deepcopy(template), dict(template), list(xs)",
         boundaries=("B5",), twins=("VIM025",)),
    _inv("VIM124", "runtime", "error", "length-budget",
         "`response_length` <= --rollout-max-response-len and len(tokens) <= --rollout-max-context-len when set; a response ending in masked tokens warns.",
         "Multi-turn loops that append observations overrun the budgets the run was sized for "
         "(the engine then rejects the next request, TIGER-AI-Lab/verl-tool#85; training packs "
         "and pads by them); an observation appended after the last generated turn is never "
         "answered and only spends budget (NovaSky-AI/SkyRL#696).",
         "observation overruns the budget",
         "{problem}",
         "stop the turn loop when the budget is spent, and cut the last observation to what is "
         "left (or drop it)",
         boundaries=("B5",), twins=("VIM027",)),
    _inv("VIM125", "runtime", "error", "group-one-prompt",
         "All samples of a group share one prompt: tokens[:len(tokens) - response_length] (the first segment of a fan-out rollout).",
         "Group normalisation compares the samples of one prompt; a group holding two prompts "
         "normalises rewards across prompts and the advantages mean nothing.",
         "group mixes prompts",
         "{problem}",
         "build each group from copies of one prompt (keep the groups get_samples returns), and "
         "append responses after the prompt tokens",
         boundaries=("B5",)),
    _inv("VIM126", "runtime", "warning", "weight-versions",
         "If any sample of a step carries `weight_versions`, all do.",
         "Staleness metrics (rollout/staleness/*) and pop_oldest read weight_versions; samples "
         "without them silently drop out of the metrics or count as oldest "
         "(verl-project/uni-agent#103: versions not propagated, staleness reported constant). "
         "Nothing trains on them, so this is a warning.",
         "weight versions not propagated",
         "{problem}",
         "record the engine's weight version on every generate call (append_response_tokens "
         "with meta_info does it)",
         boundaries=("B5",)),
    _inv("VIM127", "runtime", "warning", "loss-mask-polarity",
         "The loss mask is not inverted: trainable tokens do not all carry the placeholder log-prob 0.0 while masked tokens carry real ones.",
         "An inverted mask trains on the environment's tokens and ignores the model's "
         "(mll-lab-nu/RAGEN#71: the state mask was inverted, gradients only reached the "
         "observations).",
         "inverted loss mask",
         "{problem}",
         "loss_mask is 1 for tokens the model generated and 0 for environment/tool tokens "
         "(append_response_tokens(trainable=...) sets both)",
         boundaries=("B5",), twins=("VIM108", "VIM109")),
    _inv("VIM128", "runtime", "error", "group-is-not-a-sample",
         "Groups from `get_samples` are used as lists of samples, not as Samples.",
         "get_samples returns list[list[Sample]]; code that treats a group as a Sample used to "
         "fail with a bare \"'list' object has no attribute\" far from the cause, or set nothing "
         "(radixark/miles#1056). The default data sources return SampleGroup lists that name "
         "the mistake.",
         "group treated as a sample",
         "`.{attr}`: this is a group of {n} samples (list[Sample]) from get_samples, not a "
         "Sample",
         "iterate `for group in groups: for sample in group:`",
         boundaries=("B1",), twins=("VIM013", "VIM028")),
    _inv("VIM130", "runtime", "error", "eval-data",
         "Eval data maps names to dicts of `rewards` (finite reals), `truncated` (bools), `samples` of equal length.",
         "Eval logging averages rewards per dataset; a missing key or uneven lists fail the eval step.",
         "upstream contract test; logging averages rewards",
         "{problem}", "return {name: {'rewards': [...], 'truncated': [...], 'samples': [...]}}",
         boundaries=("B6",), twins=("VIM020",)),
    _inv("VIM131", "runtime", "warning", "eval-on-training-prompts",
         "An eval dataset's samples are not the training prompts (`--prompt-data`).",
         "Held-out numbers measured on the prompts the policy trains on are training numbers: "
         "they rise with memorisation and say nothing about generalisation. The usual cause is "
         "a custom rollout whose eval branch calls data_source.get_samples(...) (training "
         "prompts) instead of data_source.eval_datasets() (the --eval-prompt-data sets).",
         "eval on training data",
         "{problem}",
         "evaluate on data_source.eval_datasets() ({name: samples} of --eval-prompt-data / "
         "--eval-config, as the default rollout does), not data_source.get_samples(...)",
         boundaries=("B6",)),
    _inv("VIM140", "runtime", "error", "generate-boundary",
         "A generate call receives PENDING/ABORTED samples and returns a Sample or non-empty list of Samples.",
         "Re-generating finished samples, or recycling aborted groups with stale tokens, trains "
         "on corrupted sequences.",
         "aborted groups recycled with stale tokens",
         "{problem}", "return the sample (or a non-empty list of samples) you were given, "
         "grown; before the next turn of a multi-turn generate, set sample.status = "
         "Sample.Status.PENDING (generate ends each turn COMPLETED or TRUNCATED)",
         boundaries=("B2",)),
    _inv("VIM141", "runtime", "warning", "reward-preset-by-generate",
         "Generate does not pre-set the reward while a reward model is configured.",
         "A pre-set reward makes the configured reward model silently skip the sample.",
         "custom RM silently skipped",
         "{problem}", "leave sample.reward None in generate, or drop --custom-rm-path/--rm-type",
         boundaries=("B2",)),
    _inv("VIM150", "runtime", "error", "reward-result",
         "A reward function returns a valid reward; a batch RM returns len(samples) of them.",
         "None or a wrong count misaligns rewards with samples.",
         "reward fn returns None; wrong number of rewards",
         "{problem}", "return one float (or dict) per sample, in order", boundaries=("B3",),
         twins=("VIM011",)),
    _inv("VIM160", "runtime", "error", "dynamic-filter-result",
         "The dynamic sampling filter returns DynamicFilterOutput (truthy values warn, None fails).",
         "None is falsy and silently drops every group.",
         "filter assumes numeric reward",
         "{problem}", "return DynamicFilterOutput(keep=..., reason=...)", boundaries=("B4",)),
    _inv("VIM161", "runtime", "error", "buffer-filter-result",
         "The buffer filter returns <= num_samples groups of n_samples_per_prompt, removed from the buffer.",
         "Groups left in the buffer are served twice: duplicated prompts.",
         "duplicated prompts",
         "{problem}", "pop the groups you return out of the buffer list", boundaries=("B4",)),
    _inv("VIM162", "runtime", "error", "hook-result-shape",
         "Sample hooks return a Sample or None; reward post-process two len(samples) lists; convert the required keys.",
         "Shape errors otherwise surface inside conversion with no pointer to the hook.",
         "shape errors at conversion",
         "{problem}", "return the documented shape", boundaries=("B4",)),
    _inv("VIM165", "runtime", "error", "sync-hook-returned-awaitable",
         "A sync hook does not return an awaitable.",
         "An async function registered where a sync one is called returns an un-run coroutine.",
         "async reward not awaited",
         "{hook} `{name}` returned {actual}", "declare it with plain def, or register it where async is expected",
         boundaries=("B3", "B4"), twins=("VIM021",)),
    # ---- 6b: failures reported in other frameworks (vime/contract/checks/field_reports.py) ----
    _inv("VIM170", "runtime", "warning", "completed-at-budget",
         "A COMPLETED sample's response_length is not exactly --rollout-max-response-len (at the budget it is TRUNCATED).",
         "A response that used the whole budget was almost always cut by the engine (finish "
         "reason `length`); left COMPLETED, its `truncated` flag is 0, so overlong filtering and "
         "penalties silently skip it and the cut answer is rewarded as finished "
         "(NVIDIA-NeMo/RL#4042, NVIDIA-NeMo/RL#3837, NovaSky-AI/SkyRL#111). A model that emits "
         "its end token exactly at the budget is COMPLETED legitimately, hence a warning; a sample "
         "whose last token is a stop token (the tokenizer's EOS id, which the rollout manager "
         "and vime-lint check read from --hf-checkpoint, or one of --rollout-stop-token-ids) "
         "is not reported.",
         "status not set from finish reason",
         "is COMPLETED but response_length={rl} equals --rollout-max-response-len={budget}: the "
         "engine most likely stopped on the budget, so the status should be TRUNCATED (the "
         "truncated flag and overlong filtering read it)",
         "set status from the finish reason (`length` -> Sample.Status.TRUNCATED; "
         "append_response_tokens(meta_info=...) does it); a last token equal to the tokenizer's "
         "EOS id (known with --hf-checkpoint) or in --rollout-stop-token-ids is not reported",
         boundaries=("B5",), twins=("VIM009",)),
    _inv("VIM171", "runtime", "warning", "no-group-signal",
         "Not every group of the batch has identical rewards (while the batch's rewards differ).",
         "With a group-mean baseline (grpo, gspo, cispo, reinforce_plus_plus_baseline) a group "
         "whose members all score the same has zero advantages; when that holds for every group "
         "the step's policy loss is zero although the rewards vary across prompts "
         "(huggingface/trl#3857, areal-project/AReaL#450). VIM117 covers a constant batch.",
         "constant reward, no signal",
         "are equal within each of the {groups} groups (zero reward std in every group) although "
         "they range from {lo} to {hi} across the batch: every {estimator} advantage is zero and "
         "the step learns nothing",
         "keep only groups with reward spread (--dynamic-sampling-filter-path "
         "vime.rollout.filter_hub.dynamic_sampling_filters.check_reward_nonzero_std), or give "
         "partial credit / prompts of a difficulty the model sometimes solves",
         boundaries=("B5",)),
    _inv("VIM172", "runtime", "warning", "prompt-budget",
         "The prompt part len(tokens) - response_length is at most --rollout-max-prompt-len (first segment of each rollout).",
         "The data source drops longer string prompts at load, but a message-list prompt, a "
         "custom data source or a generate function that rewrites the prompt bypasses the "
         "filter: over-long prompts then crowd out the response budget or overflow the "
         "sequence length training was sized for (verl-project/verl#1015, "
         "NovaSky-AI/SkyRL#1539).",
         "prompt over the budget",
         "holds {prompt} prompt tokens (len(tokens)={n} - response_length={rl}), more than "
         "--rollout-max-prompt-len={limit}",
         "shorten or drop such prompts before generation (or raise --rollout-max-prompt-len and "
         "the context budget with it)",
         boundaries=("B5",)),
    _inv("VIM173", "runtime", "warning", "placeholder-log-probs",
         "No run of 8 or more consecutive exact 0.0 rollout_log_probs on trainable tokens (loss_mask 1 or None).",
         "Exact 0.0 is the placeholder for tokens without a sampler log-prob (environment "
         "tokens, or log-probs never filled); a run of them where the mask trains means "
         "observation tokens are trained, or importance ratios use probability 1 "
         "(radixark/miles#418, NovaSky-AI/SkyRL#354, PrimeIntellect-ai/prime-rl#606). Extends "
         "VIM109, which checks length and finiteness: one exact 0.0 is no sign of a placeholder, "
         "since a pretrained model is often certain of a token (SmolLM2-135M-Instruct at "
         "temperature 0.7 gives float32 log-probs of exactly 0.0 in several samples per step).",
         "placeholder log-prob",
         "has {run} consecutive entries of exactly 0.0 at trainable positions ({trainable}) from "
         "index {start} to {end}: placeholder values, not sampler log-probs (observation tokens "
         "trained, or log-probs never filled)",
         "give environment/observation tokens loss_mask 0 (append_response_tokens(trainable=False) "
         "does it) and store the engine's log-prob for every generated token",
         boundaries=("B5",)),
    _inv("VIM174", "runtime", "warning", "label-kind",
         "The batch's labels are of one type, and no string label is empty or whitespace only.",
         "Reward functions are written for one label type: an int label where a str is expected "
         "raises inside the reward (the trajectory is then rejected or scored 0) and an empty "
         "label scores every response against nothing (areal-project/AReaL#1430).",
         "label missing for reward",
         "{problem}",
         "normalise labels to one type in the dataset or the data source (e.g. str(label))",
         boundaries=("B5",)),
    _inv("VIM175", "runtime", "warning", "empty-response-top-reward",
         "A sample with an empty response does not have the batch's maximum reward (while max > min).",
         "A reward function that scores empty output as correct (substring matching, an empty "
         "answer matching an empty label) teaches the policy to say nothing "
         "(PrimeIntellect-ai/verifiers#763, verl-project/verl#6793).",
         "reward hacking by empty output",
         "is {response!r} (response_length={rl}) but its reward {hi} is the batch maximum (min "
         "{lo}); {count} of the {top} top-reward samples have an empty response: the reward "
         "function scores empty output as correct",
         "score an empty or whitespace-only response 0 in the reward function, and check the "
         "labels for empty answers",
         boundaries=("B5",)),
    _inv("VIM176", "runtime", "error", "doubled-bos",
         "`tokens` does not start with the tokenizer's BOS token twice.",
         "A chat template that already writes BOS, encoded again with special tokens (or a "
         "template applied twice), prefixes every training sequence with a second BOS the model "
         "never saw in pretraining: every sequence silently changes (NVIDIA-NeMo/RL#855, "
         "NovaSky-AI/SkyRL#210). Checked when the BOS id is known (the rollout manager reads it "
         "from the --hf-checkpoint tokenizer).",
         "chat template applied twice",
         "starts with the BOS token id {bos} twice (tokens[0] == tokens[1] == {bos}): the prompt "
         "was templated with BOS and encoded again with special tokens",
         "encode a templated prompt with add_special_tokens=False (or tokenize once with "
         "apply_chat_template(..., tokenize=True))",
         boundaries=("B5",)),
    _inv("VIM177", "runtime", "warning", "special-token-text",
         "Responses do not contain the literal text of the EOS token (e.g. `<|im_end|>`).",
         "A response decoded without skipping special tokens ends in `<|im_end|>` / "
         "`<|endoftext|>` / `</s>`, so a format reward anchored at the end of the text "
         "(`...</answer>$`) scores every such sample 0 (verl-project/verl#715, "
         "huggingface/trl#2897; the latter asks for special tokens a reward does read, hence a "
         "warning). Checked when the EOS text is known (the rollout manager reads it from the "
         "--hf-checkpoint tokenizer).",
         "special tokens in the response text",
         "contains the end-of-sequence text {text!r} ({count} of {total} responses): it was "
         "decoded without skipping special tokens, so a reward that anchors its format at the "
         "end of the text fails on it",
         "pass --rollout-skip-special-tokens (the built-in generate then decodes without them), or "
         "strip the token in the reward function; ignore this if the reward reads special tokens",
         boundaries=("B5",)),
    # ---- 6b: failed samples (--hook-failure fail-sample; vime/contract/checks/failures.py) ----
    _inv("VIM180", "runtime", "error", "failed-sample-record",
         "A FAILED sample carries `metadata[\"vime_error\"]` = {hook: str, type: str, message: str, seconds: number >= 0}.",
         "With --hook-failure fail-sample a generate or reward call that raises or times out "
         "costs one sample, not the run; the record is what makes that failure data: the step's "
         "rollout/failed/<hook>/<type> metrics, the --max-failed-ratio stop message and the "
         "dumps read it. A FAILED sample without one is a failure nobody can count or explain "
         "(PrimeIntellect-ai/verifiers stores a typed error in the rollout state).",
         "failure without a record",
         "{problem}",
         "mark failures with vime.rollout.failures.mark_failed(sample, hook, exc, seconds), which "
         "sets the status, the record, a zero loss mask and remove_sample",
         boundaries=("B5",)),
    _inv("VIM181", "runtime", "error", "failed-sample-trainable",
         "A FAILED sample trains nothing: `remove_sample` is True or its `loss_mask` is all zero.",
         "A failed sample's tokens are whatever the hook left behind when it raised (a "
         "half-grown response, a prompt only); conversion zeroes its mask and leaves it out of "
         "the group's reward mean and std, so a rollout that marks a sample FAILED but keeps it "
         "trainable says two things at once (prime-rl masks errored rollouts for this reason).",
         "failed sample left trainable",
         "{problem}",
         "zero its loss mask and set remove_sample=True (mark_failed does both), or do not mark "
         "it FAILED",
         boundaries=("B5",)),
    # ---- 6b: the agent function (--agent-function-path; vime/contract/checks/agent.py) -------
    _inv("VIM185", "runtime", "error", "agent-result",
         "An agent function returns a real number, a dict of rewards, or None (unscored).",
         "The return value is the trajectory's reward: a string, a tensor or a response object "
         "cannot be normalised, and a coroutine means an un-awaited helper.",
         "reward fn returns None",
         "{problem}",
         "return a float (or a dict read through --reward-key), or None to let the run's reward "
         "function score the trajectory",
         boundaries=("B2",), twins=("VIM052", "VIM150")),
    _inv("VIM186", "runtime", "error", "agent-made-no-call",
         "An agent run makes at least one model call through the base_url and api_key it was given.",
         "A trajectory without a recorded call has no model tokens to train on; the usual cause "
         "is an agent that builds its client from the environment (OPENAI_BASE_URL, a "
         "hard-coded URL) instead of the base_url/api_key vime passed, so its calls went "
         "elsewhere.",
         "agent talks to the wrong server",
         "{problem}",
         "build the client from the arguments (AsyncOpenAI(base_url=base_url, api_key=api_key)) "
         "and await at least one model call on it before run returns",
         boundaries=("B2",)),
    _inv("VIM187", "runtime", "warning", "agent-call-in-flight",
         "An agent run has no model call still in flight when it returns.",
         "A call still running when `run` returns (a task the agent did not await) is not part "
         "of the trajectory: its tokens are dropped, and the reward was computed without it.",
         "coroutine returned instead of value",
         "{problem}",
         "await every call (asyncio.gather the agent's tasks) before returning",
         boundaries=("B2",)),
    # ---- 6b: trainer hook results (boundary B7, vime/contract/checks/trainer.py) ------------
    _inv("VIM190", "runtime", "error", "custom-loss-result",
         "A custom loss returns `(loss, log_dict)`: a finite scalar tensor that requires grad, "
         "and a dict of names to finite numbers.",
         "The trainer calls `loss.backward()` and logs `log_dict`: a loss without grad trains "
         "nothing, a NaN/inf loss or a non-scalar one corrupts or crashes the optimiser step, "
         "and a non-numeric log value breaks metrics.jsonl.",
         "custom loss result",
         "{problem}",
         "return `(loss, log_dict)` with `loss` a 0-d tensor computed from `logits` (so it "
         "requires grad) and `log_dict` mapping str names to floats or 0-d tensors",
         boundaries=("B7",), twins=("VIM055",)),
    _inv("VIM191", "runtime", "error", "custom-advantages-result",
         "A custom advantage function sets `rollout_data[\"advantages\"]`: one finite 1-D "
         "tensor of `response_lengths[i]` values per sample (and `returns` alike, if set).",
         "The policy loss multiplies each response token's ratio by its advantage: a missing "
         "key, a missing sample, one value per sample instead of one per token, or a NaN "
         "trains the wrong tokens or poisons every parameter.",
         "custom advantages result",
         "{problem}",
         "set `rollout_data[\"advantages\"] = [torch.full((r,), a) for ...]`: one 1-D tensor "
         "per sample with `response_lengths[i]` finite values (broadcast a per-sample value "
         "yourself)",
         boundaries=("B7",), twins=("VIM056",)),
    _inv("VIM192", "runtime", "error", "tis-result",
         "A TIS function returns `(pg_loss, modified_response_masks, tis_metrics)`: `pg_loss` "
         "of the shape it was given, one 0/1 mask per sample of its loss mask's shape, and a "
         "dict of names to per-token tensors or finite numbers.",
         "The trainer reduces `pg_loss` with sums over the masks it gets back: another shape "
         "misaligns tokens and samples, a non-0/1 mask re-weights tokens silently, and a "
         "non-finite value poisons the step.",
         "TIS function result",
         "{problem}",
         "return `pg_loss * weights` (same shape), the masks as 0/1 float tensors of each "
         "`loss_masks[i]`'s shape, and `{name: per-token tensor}` metrics",
         boundaries=("B7",)),
    _inv("VIM193", "runtime", "error", "pg-loss-reducer-result",
         "A pg-loss reducer factory returns a callable, and that callable turns the per-token "
         "policy loss into a finite scalar tensor.",
         "The reducer's output is the policy loss the optimiser steps on: a non-callable fails, "
         "a vector or NaN loss crashes `backward()` or corrupts the weights.",
         "pg-loss reducer result",
         "{problem}",
         "return a function `reduce(pg_loss) -> 0-d tensor` (e.g. a masked mean built from "
         "`loss_masks`)",
         boundaries=("B7",)),
    # ---- 6b: multi-turn token boundaries (boundary B2, vime/contract/checks/chat.py) ---------
    _inv("VIM194", "runtime", "warning", "token-boundary-drift",
         "The tokens of a multi-turn trajectory, outside the spans the engine generated, are the "
         "tokens the chat template renders for its messages.",
         "A trajectory built turn by turn (the engine's tokens kept, the next turn's text encoded "
         "on its own) can differ from what the template renders for the same conversation at "
         "turn boundaries: BPE merges across a turn's end, a template that rewrites earlier "
         "turns (dropped reasoning, re-rendered tool calls). The policy is then trained on "
         "sequences it never sees at inference (verl-project/verl#6921, huggingface/trl#5224, "
         "THUDM/slime#2263). Checked on 1 in --check-token-boundaries N trajectories.",
         "token drift at turn boundaries",
         "{problem}",
         "run `vime-lint template MODEL_DIR` to see where the template breaks; keep the "
         "engine's tokens and render only what follows them (the agent endpoint does), or fix "
         "the template so each turn's rendering is a prefix of the next",
         boundaries=("B2",)),
    # ---- 6c: types (`vime-lint types`: mypy on hooks given the contract's annotations) ------
    _inv("VIM200", "static", "error", "hook-return-type",
         "A hook returns a value of its contract return type on every path.",
         "vime reads the result as the contract's type: a tensor or numpy value for a reward, "
         "None on one path, or a list of samples where the output dataclass is due fails the "
         "runtime check or the conversion, or trains on a wrong value.",
         "wrong hook return type",
         "{context}; mypy: {detail}",
         "return the contract's type on every path (a Python `float(...)` for a reward, "
         "`RolloutFnTrainOutput(samples=...)` from a rollout function)"),
    _inv("VIM201", "static", "error", "contract-type-misuse",
         "Code in a hook (or a helper it passes its samples to) uses the contract's values only "
         "as their types allow.",
         "`Sample.prompt` may be a list of chat messages and `Sample.reward` a dict or None: an "
         "operation the type lacks raises in the middle of a rollout (AttributeError, "
         "TypeError) or computes on the wrong value. Only a contract value used against its "
         "type is this error; mypy's own strictness on the user's values (annotations, "
         "`object` from untyped containers, an unnarrowed `X | None`, a third-party API's "
         "types) is VIM204, off by default, and an attribute that is no `Sample` field is "
         "VIM031, as in `vime-lint rollout`. A call of one of vime's functions (or of a "
         "contract type's method, `data_source.get_samples(n)`) whose arguments do not fit "
         "its parameters (a missing `rollout_id` that shifts the others, a misspelt keyword) "
         "raises TypeError when the hook runs, and is this error too.",
         "value used as the wrong type",
         "{context}; mypy: {detail}",
         "narrow the value first (`isinstance(sample.prompt, str)`, "
         "`sample.get_reward_value(args)`) or convert it; call vime's functions with the "
         "parameters they take, in order (`finalize_rollout_groups(args, rollout_id, groups)`)"),
    _inv("VIM202", "static", "error", "contract-field-type",
         "A value stored in a field of `Sample` or of a contract output has the field's type.",
         "The conversion, the buffer and the logger read the field as its declared type: "
         "`status = \"completed\"` never equals `Sample.Status.COMPLETED`, a list or a string "
         "in `metrics` breaks the metric log.",
         "field set to the wrong type",
         "{context}; mypy: {detail}",
         "store a value of the field's declared type, which the finding names (a Python "
         "float for `reward`, a `Sample.Status` member for `status`, one float per key of "
         "`metrics`)"),
    _inv("VIM203", "static", "warning", "hook-annotation-conflict",
         "A hook's own annotation agrees with the contract's type (equal or narrower).",
         "vime passes and expects the contract's types whatever the annotation says: a "
         "conflicting annotation misleads readers and type checkers, and hides real errors.",
         "annotation contradicts the contract",
         "{context}; mypy: {detail}",
         "annotate with the contract's type (docs/contract.md §4) or a narrower one"),
    _inv("VIM204", "static", "warning", "mypy-strictness",
         "mypy's own strictness in a hook, where no contract type is violated (off by default).",
         "These are mypy's rules, not vime's: an empty list that needs an annotation, a value "
         "read from an untyped container seen as `object`, `None` into a typed local, an "
         "`Optional` (a `X | None`) used without narrowing where it is not certainly None, a "
         "union of modes (`RolloutFnTrainOutput | RolloutFnEvalOutput`, a fan-out `Sample | "
         "list[Sample]`) not narrowed, a third-party API's own types (the `openai` SDK's message "
         "TypedDicts). The code runs and trains as written in the usual launch; only "
         "`--extend-select VIM204` (or a select naming VIM204) reports them.",
         "mypy strictness",
         "{context}; mypy: {detail}",
         "annotate or narrow the value (`assert x is not None`, `isinstance`), or leave it: "
         "VIM204 is off by default"),
    # ---- 6d: reward probes (vime-lint check; vime_lint/check/probes.py) ----------------------
    _inv("VIM300", "probe", "error", "probe-gold-above-wrong",
         "A reward scores the right answer strictly above a wrong one.",
         "A reward that cannot tell the label's answer from another row's gives every sample of a "
         "group the same advantage: the run trains on noise and learns nothing.",
         "reward cannot rank",
         "{problem}", "check how the reward extracts the answer and compares it with the label"),
    _inv("VIM301", "probe", "error", "probe-no-answer-at-gold",
         "A response without the answer (empty, blank, the prompt echoed, cut short, \"I don't "
         "know.\") scores below the right answer.",
         "A reward that pays as much for no answer as for the answer is hacked in a few steps: "
         "the policy learns to say nothing.",
         "reward hacking",
         "{problem}", "score a response only on the answer it gives; give no credit when there "
         "is none"),
    _inv("VIM302", "probe", "warning", "probe-deterministic",
         "The same response scores the same twice.",
         "Random scores (random tie-breaking, sampling in a judge) add noise to every advantage; "
         "a run may still learn, slower.",
         "nondeterministic reward",
         "{problem}", "make the reward a function of the response and the label (fix seeds, "
         "temperature 0 for a judge)"),
    _inv("VIM303", "probe", "error", "probe-never-raises",
         "The reward returns a finite number for every plausible response; it does not raise.",
         "An exception in the reward stops the run (or fails the sample with --hook-failure "
         "fail-sample) the first time a policy writes that kind of answer; a NaN or inf "
         "reward (a division by an empty response's length) fails the reward check or turns "
         "its group's advantages NaN.",
         "reward raises",
         "{problem}", "handle responses without an answer (return the lowest reward) instead of "
         "raising"),
    _inv("VIM304", "probe", "error", "probe-final-answer",
         "When a response gives two answers, the last one counts, not the first.",
         "Grading the first answer rewards responses that guess early and change their mind, "
         "the opposite of what reasoning training wants.",
         "reward reads the wrong answer",
         "{problem}", "extract the last answer (the last \\boxed{}, the last number)"),
    _inv("VIM305", "probe", "error", "probe-unparseable-label",
         "A label the reward cannot parse never gives full credit.",
         "Full credit whenever the label cannot be parsed rewards every response for those "
         "rows: they push the policy in no useful direction.",
         "reward ignores the label",
         "{problem}", "give no credit (or fail the sample) when the label cannot be parsed"),
    _inv("VIM306", "probe", "warning", "probe-no-answer-above-wrong",
         "\"No answer\" does not score above a wrong answer.",
         "Often intended (abstaining is safer than being wrong), but it teaches the policy to "
         "give up on hard prompts; say so on purpose.",
         "reward cannot rank",
         "{problem}", "score a wrong answer at least as high as no answer, unless abstaining is "
         "what you want"),
    _inv("VIM307", "probe", "error", "probe-group-follows-samples",
         "A group reward follows its samples when the group is permuted, and gives equal "
         "responses equal rewards.",
         "A group reward that scores by position trains each sample on another sample's reward.",
         "reward by position",
         "{problem}", "compute each sample's reward from that sample (and the group's "
         "statistics), never from its position"),
    _inv("VIM308", "probe", "error", "probe-filter-keeps-signal",
         "A dynamic sampling filter keeps groups whose rewards differ (mixed 0/1 rewards, "
         "distinct continuous rewards).",
         "A filter that drops the groups with a learning signal leaves GRPO only groups whose "
         "advantages are all zero (or starves the batch: the rollout keeps generating to replace "
         "every dropped group). An error for mixed 0/1 rewards; a warning when only continuous "
         "rewards are dropped (a filter written for 0/1 rewards).",
         "filter drops signal",
         "{problem}", "keep a group when the spread of its rewards is above a small tolerance "
         "(vime.rollout.filter_hub.dynamic_sampling_filters.check_reward_nonzero_std)"),
    _inv("VIM309", "probe", "warning", "probe-filter-float-noise",
         "A dynamic sampling filter that drops groups of equal rewards also drops them when the "
         "rewards differ only by float noise.",
         "Rewards computed in floating point (a mean of per-test scores, a length penalty) are "
         "equal up to about 1e-9; a filter testing `std == 0.0` exactly keeps such groups, whose "
         "advantages are noise amplified by the normalisation.",
         "exact float comparison",
         "{problem}", "compare the spread with a tolerance (`pstdev(rewards) > 1e-6`), as "
         "vime.rollout.filter_hub.dynamic_sampling_filters.STD_EPS does"),
    _inv("VIM310", "probe", "warning", "probe-reads-unset-field",
         "A reward reads only what the rollout has set at reward time: no `Sample` field that "
         "is still unset (`reward`, `teacher_log_probs`, ...) and no `metadata` key the "
         "prompt rows do not carry.",
         "Such a read gives None, a default or a KeyError on every sample: the reward silently "
         "scores something else than intended (a `.get` default for every row), or raises.",
         "reads unset field",
         "{problem}", "read the field where it is set (the data row's metadata through "
         "--metadata-key, the label, the response), or set it before the reward runs (a "
         "custom generate)"),
    _inv("VIM311", "probe", "warning", "probe-substring-answer",
         "A wrong answer that holds the label as a substring (the label followed by a digit, a "
         "list of candidates with the label among them) scores below the right answer.",
         "A reward that tests `label in response` pays `41` for the label `4` and a response "
         "that lists many numbers: the run does not fail, but it silently rewards wrong "
         "answers, and the policy learns to list guesses.",
         "substring match",
         "{problem}", "extract the final answer (the last number, the last \\boxed{}) and "
         "compare it with the whole label, not `label in response`"),
    # ---- 6e: chat templates (vime-lint template MODEL_DIR; vime_lint/template.py) ----------
    _inv("VIM350", "template", "warning", "template-prefix-stable",
         "Each turn's rendering is a prefix of the rendering of the conversation one message "
         "longer.",
         "A template that rewrites an earlier turn when a later one is added (re-orders system "
         "messages, re-renders tool calls, drops or moves a message) gives a multi-turn "
         "trajectory that is not what the template renders for the whole conversation: the "
         "agent endpoint must start a new segment at every such turn, the prefix loss mask "
         "(SFT) cannot be placed, and a custom multi-turn generate trains on other tokens than "
         "the template's.",
         "template rewrites earlier turns",
         "{problem}",
         "render each message independently of the ones after it (no look-ahead on "
         "`messages`), or accept one segment per turn"),
    _inv("VIM351", "template", "warning", "template-keeps-reasoning",
         "An assistant turn's reasoning (`<think>` block) is still rendered once a later turn "
         "is added.",
         "Thinking templates that drop earlier reasoning (verl-project/verl#6854) make every "
         "turn's context differ from the trajectory the model generated: a turn-by-turn "
         "trajectory trains on reasoning the template would never show, and each agent call "
         "becomes a new segment.",
         "template drops earlier reasoning",
         "{problem}",
         "keep the reasoning of earlier turns (many thinking templates have a keyword for it, "
         "pass it with --apply-chat-template-kwargs), or train one segment per turn"),
    _inv("VIM352", "template", "warning", "template-token-boundary",
         "The token ids of each turn's rendering are a prefix of the ids of the next one (no "
         "BPE merge across a turn boundary).",
         "When the text is a prefix but its tokens are not, a trajectory that keeps the "
         "engine's tokens and encodes the next turn on its own differs from a fresh encoding "
         "of the conversation at that boundary (verl-project/verl#6921).",
         "BPE merge at a turn boundary",
         "{problem}",
         "end the template's turns with a special token (e.g. `<|im_end|>`) so no merge "
         "crosses them; vime's agent endpoint keeps the engine's tokens either way"),
    _inv("VIM353", "template", "warning", "template-generation-prompt",
         "The generation prompt (`add_generation_prompt=True`) is, in text and in tokens, the "
         "start of the assistant turn the template renders once the reply is added.",
         "The engine generates after the generation prompt; if the rendered turn starts "
         "differently (a `<think>` opener only in the prompt, a header rendered another way, a "
         "merge of the header's last token with the reply), the trained sequence is not the "
         "one the engine saw.",
         "generation prompt differs from the rendered turn",
         "{problem}",
         "make the template's generation prompt the exact header it renders for an assistant "
         "turn"),
    _inv("VIM354", "template", "warning", "template-bos-once",
         "The template writes the BOS token once, at the start of the conversation.",
         "A BOS written before every message, or in the middle of the sequence, puts a token "
         "the model saw only at position 0 in pretraining inside every multi-turn sequence "
         "(NVIDIA-NeMo/RL#855).",
         "BOS repeated",
         "{problem}",
         "write `{{ bos_token }}` once, before the loop over messages"),
    _inv("VIM355", "template", "error", "template-end-token",
         "Each rendered assistant turn contains a token the engine stops on (EOS, or the "
         "model's generation_config eos ids), where the loss mask of the turn ends.",
         "If the template closes a turn with a token the engine does not stop on, every "
         "response runs on to the length limit, past the turn's end, and is trained there: "
         "every sample of the run is corrupted.",
         "end of turn is not a stop token",
         "{problem}",
         "pass the turn's end token as --rollout-stop-token-ids ID, or set the tokenizer's "
         "eos_token to it"),
    _inv("VIM356", "template", "warning", "template-bos-missing",
         "When the tokenizer adds a BOS by default, the rendered prompt starts with it.",
         "vime encodes a rendered prompt without special tokens (the template writes them): a "
         "template without `{{ bos_token }}` for a tokenizer that adds one gives prompts "
         "without the BOS the model expects.",
         "BOS missing",
         "{problem}",
         "write `{{ bos_token }}` at the start of the template"),
)

#: Every invariant, keyed by id, in id order.
INVARIANTS: MappingProxyType[str, Invariant] = MappingProxyType({i.id: i for i in _ALL})


#: The raw values ``call_rollout_fn`` still accepts from a rollout function, by mode (VIM101's
#: legacy form): a bare list of groups on the train path, a bare dict on the eval path, each
#: wrapped with a DeprecationWarning. Any other raw value fails the step.
LEGACY_ROLLOUT_RETURN: MappingProxyType[str, type] = MappingProxyType({"train": list,
                                                                       "eval": dict})


def raw_rollout_return_severity(kind: type | None, mode: Literal["train", "eval"] | None
                                ) -> Severity:
    """The severity of a rollout function returning a raw value of type ``kind`` (``list``,
    ``dict``; None: another value) on the ``mode`` path, decided once for VIM101 (run time),
    VIM003 (``vime-lint rollout``) and VIM200 (``vime-lint types``): a warning for the legacy
    form of :data:`LEGACY_ROLLOUT_RETURN`, else an error. ``mode`` None: a path that
    ``evaluation`` does not split, which every train step takes (a list there is the eval
    path's error, VIM002's to report)."""
    return "warning" if kind is not None and kind is LEGACY_ROLLOUT_RETURN[mode or "train"] \
        else "error"
