"""``--agent-function-path`` in the default rollout: the generate step that runs the user's
agent against the endpoint and turns its calls into samples.

When ``--agent-function-path mod.run`` is set, the default rollout's generate step (in place of
the built-in generate) does, for each sample:

1. open a session on this process's endpoint (started on first use, 127.0.0.1);
2. ``reward = await run(args, sample, base_url, api_key)`` (``--agent-function-mode inline``,
   on the rollout's event loop) or the same call in a fresh Python process (``subprocess``);
3. close the session and assemble its calls (:mod:`vime.agent.assemble`): one ``Sample`` per
   segment, always returned as a fan-out list (one element when the context was never
   rewritten), siblings sharing ``rollout_id``;
4. the reward: a returned number or dict goes on every segment; None lets the run's reward
   (``--rm-type`` / ``--custom-rm-path``) score the last segment, and its value goes on every
   segment (with ``--group-rm`` the group is scored as usual).

The step's metrics ``rollout/agent/calls``, ``/context_rewrites``, ``/dropped_calls``,
``/budget_refusals`` and ``/sampling_overrides`` are counted here and added to the train
step's metrics by the default rollout (:func:`step_metrics`). In evaluation only the last
segment (the final answer) is returned.

Usage::

    vime train ... --agent-function-path examples.openai_agent.run_agent
"""

from __future__ import annotations

import asyncio
import os
import pickle
import sys
import tempfile
from argparse import Namespace
from collections import Counter
from collections.abc import Mapping
from typing import Any

from vime.agent.assemble import Segment, context_rewrites, segment_calls, status_of_finish
from vime.agent.blocking import BlockWatch, TrackedRun, blocked_message
from vime.agent.calls import CallServer
from vime.agent.render import RequestError, render_text
from vime.agent.server import EndpointServer, create_app
from vime.agent.sessions import Session, SessionStore
from vime.config import arg
from vime.contract import checks as rt
from vime.contract.checks.agent import check_vim186
from vime.contract.checks.enforced import require
from vime.contract.hooks import HOOKS
from vime.contract.signature import optional_kwargs
from vime.utils.types import Sample

__all__ = ["AGENT_GENERATE_PATH", "METRIC_NAMES", "Endpoint", "agent_line", "generate",
           "get_endpoint", "samples_of", "step_metrics", "token_trajectories"]

#: The dotted path of :func:`generate` (what messages name as the generate function).
AGENT_GENERATE_PATH = "vime.agent.generate.generate"


class Endpoint:
    """This process's endpoint for one ``args``: the session store, the call server, uvicorn."""

    def __init__(self, args: Namespace, tokenizer: Any) -> None:
        from vime.agent.responses import load_tool_parser

        self.args = args
        self.store = SessionStore()
        #: Trajectories assembled so far (for --check-token-boundaries).
        self.trajectories = 0
        self.run_params: dict[str, dict[str, Any]] = {}
        stop = {int(t) for t in (arg(args, "rollout_stop_token_ids") or [])}
        if getattr(tokenizer, "eos_token_id", None) is not None:
            stop.add(int(tokenizer.eos_token_id))
        parser_name = arg(args, "agent_tool_parser")
        parser = load_tool_parser(parser_name, tokenizer) if parser_name else None
        self.calls = CallServer(args, tokenizer, stop_ids=stop, tool_parser=parser)
        app = create_app(self.calls, self.store, self._run_params)
        self.server = EndpointServer(app, port=int(arg(args, "agent_endpoint_port") or 0))
        #: Inline agent runs that hold the loop (vime.agent.blocking); set once it listens.
        self.watch: BlockWatch | None = None

    def pick_for_token_check(self) -> bool:
        """Whether this trajectory is one of the 1 in ``--check-token-boundaries N`` compared
        with the chat template (the first, then every N-th; never with N = 0)."""
        from vime.config.parser import DEFAULT_TOKEN_BOUNDARY_CHECK

        every = arg(self.args, "check_token_boundaries")
        every = DEFAULT_TOKEN_BOUNDARY_CHECK if every is None else int(every)
        if every <= 0:
            return False
        self.trajectories += 1
        return (self.trajectories - 1) % every == 0

    def _run_params(self, session: Session) -> Mapping[str, Any]:
        params = self.run_params.get(session.key)
        if params is None:  # closed between the request's arrival and its call
            raise RequestError("the session closed (the agent's run returned)", status=401)
        return params

    def open(self, sample: Sample, sampling_params: Mapping[str, Any]) -> Session:
        """A session for ``sample``; its calls are sampled with ``sampling_params``."""
        session = self.store.open(index=sample.index, router_key=sample.session_id)
        self.run_params[session.key] = dict(sampling_params)
        return session

    def close(self, session: Session) -> Session:
        """Close ``session``; later calls are refused and in-flight ones dropped."""
        self.run_params.pop(session.key, None)
        return self.store.close(session.key)


_ENDPOINTS: dict[int, Endpoint] = {}
_LOCK: dict[int, asyncio.Lock] = {}


async def get_endpoint(args: Namespace) -> Endpoint:
    """The endpoint of ``args`` in this process (started, listening, on first use)."""
    from vime.rollout.vllm.state import get_state

    endpoint = _ENDPOINTS.get(id(args))
    if endpoint is not None and endpoint.args is args:
        return endpoint
    lock = _LOCK.setdefault(id(args), asyncio.Lock())
    async with lock:
        endpoint = _ENDPOINTS.get(id(args))
        if endpoint is None or endpoint.args is not args:
            state = await get_state(args)
            endpoint = Endpoint(args, state.tokenizer)
            await endpoint.server.start()
            assert endpoint.server.sock is not None
            endpoint.watch = BlockWatch(endpoint.server.sock)
            _ENDPOINTS[id(args)] = endpoint
    return endpoint


def _fresh(sample: Sample) -> Sample:
    """A sibling of ``sample``: the same fields, its own lists (metadata shared, as fan-out
    siblings may)."""
    copy = Sample.from_dict(sample.to_dict())
    copy.metadata = sample.metadata
    copy.spec_info, copy.prefix_cache_info = Sample.SpecInfo(), Sample.PrefixCacheInfo()
    return copy


def token_trajectories(calls: CallServer, session: Session, segments: list[Segment],
                       samples: list[Sample]) -> list[tuple[str, list[int], list[tuple[int, int]],
                                                           str]]:
    """What the token-boundary check (VIM194) compares, one entry per segment whose last call
    was a chat call: ``(where, tokens, spans, text)``, ``spans`` the ``[start, end)`` ranges of
    each call's completion in the segment's tokens, ``text`` the last call's messages rendered
    as the endpoint renders a call from scratch. A segment whose messages the template refuses
    now is left out (its call was served, so the template accepted them then)."""
    out = []
    for seg, s in zip(segments, samples, strict=False):
        last = session.calls[seg.calls[-1]]
        if last.messages is None:
            continue
        spans = []
        for i in seg.calls:
            call = session.calls[i]
            spans.append((len(call.prompt_ids), len(call.prompt_ids) + len(call.completion_ids)))
        try:
            text = render_text(calls.tokenizer, last.messages, tools=last.tools,
                               template_kwargs=calls.template_kwargs)
        except RequestError:
            continue
        out.append((f"agent trajectory (index={s.index}, {len(seg.calls)} call(s))",
                    seg.tokens, spans, text))
    return out


def samples_of(args: Namespace, sample: Sample, segments: list[Segment], tokenizer: Any
               ) -> list[Sample]:
    """One ``Sample`` per segment: the first is ``sample`` itself, the others siblings; all
    share ``rollout_id`` (``sample.rollout_id``, else its ``index``).

    Returns:
        ``list[Sample]``, ``len == len(segments)`` (>= 1).
    """
    skip = bool(arg(args, "rollout_skip_special_tokens"))
    rollout_id = sample.rollout_id if sample.rollout_id is not None else sample.index
    out = []
    for k, seg in enumerate(segments):
        s = sample if k == 0 else _fresh(sample)
        s.tokens = seg.tokens
        s.response_length = len(seg.response_ids)
        s.loss_mask = list(seg.loss_mask)
        s.rollout_log_probs = list(seg.rollout_log_probs)
        s.weight_versions = list(seg.weight_versions)
        s.response = str(tokenizer.decode(seg.response_ids, skip_special_tokens=skip))
        s.status = Sample.Status[status_of_finish(seg.finish_reason)]
        s.rollout_id = rollout_id
        out.append(s)
    return out


async def _run_subprocess(path: str, args: Namespace, sample: Sample, base_url: str,
                          api_key: str, kwargs: dict[str, Any]) -> Any:
    """``run(...)`` in a fresh ``python -m vime.agent.worker`` process; its return value or its
    error comes back through a pickle file."""
    with tempfile.TemporaryDirectory(prefix="vime-agent-") as tmp:
        request, result = os.path.join(tmp, "in.pkl"), os.path.join(tmp, "out.pkl")
        with open(request, "wb") as fh:
            pickle.dump((path, args, sample, base_url, api_key, kwargs), fh)
        proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "vime.agent.worker",
                                                    request, result)
        try:
            code = await proc.wait()
        except asyncio.CancelledError:
            proc.kill()
            await proc.wait()
            raise
        if not os.path.exists(result):
            raise RuntimeError(f"--agent-function-path {path}: the agent process exited with "
                               f"status {code} and no result (sample index={sample.index})")
        with open(result, "rb") as fh:
            ok, value = pickle.load(fh)
    if not ok:
        raise RuntimeError(f"--agent-function-path {path} raised in its process (sample "
                           f"index={sample.index}):\n{value}")
    return value


async def _score(args: Namespace, samples: list[Sample], result: Any, rollout_id: int | None,
                 evaluation: bool) -> None:
    if result is None:
        if arg(args, "group_rm"):
            return
        from vime.rollout.rm_hub import async_rm

        result = await async_rm(args, samples[-1])
        rt.check_reward_result(result, args, hook_path=arg(args, "custom_rm_path"),
                               rollout_id=rollout_id, evaluation=evaluation,
                               index=samples[-1].index)
    for s in samples:
        s.reward = result


#: Agent metrics per ``(id(args), rollout_id)``, read (and cleared) by :func:`step_metrics`.
_METRICS: dict[tuple[int, int | None], Counter[str]] = {}

#: The metrics :func:`step_metrics` reports (every one, 0 when nothing happened).
METRIC_NAMES = ("rollout/agent/calls", "rollout/agent/context_rewrites",
                "rollout/agent/dropped_calls", "rollout/agent/budget_refusals",
                "rollout/agent/sampling_overrides")


def step_metrics(args: Namespace, rollout_id: int | None) -> dict[str, float]:
    """The agent metrics of train step ``rollout_id`` (cleared once read); ``{}`` when
    ``--agent-function-path`` is not set.

    - ``rollout/agent/calls``: model calls recorded in trajectories;
    - ``rollout/agent/context_rewrites``: calls whose prompt did not extend an earlier call's
      sequence (each opened one more sample of its trajectory);
    - ``rollout/agent/dropped_calls``: calls not recorded because the client disconnected
      mid-call or the agent had returned;
    - ``rollout/agent/budget_refusals``: calls answered ``length`` without an engine call
      (the trajectory's ``--rollout-max-response-len`` was used up);
    - ``rollout/agent/sampling_overrides``: request fields served with the run's value
      (temperature, top_p, top_k).
    """
    if not arg(args, "agent_function_path"):
        return {}
    found = _METRICS.pop((id(args), rollout_id), Counter())
    return {name: float(found[name]) for name in METRIC_NAMES}


def _count(args: Namespace, rollout_id: int | None, session: Session,
           segments: list[Segment], in_flight: int) -> None:
    metrics = _METRICS.setdefault((id(args), rollout_id), Counter())
    metrics["rollout/agent/calls"] += len(session.calls)
    metrics["rollout/agent/context_rewrites"] += context_rewrites(segments)
    # calls still in flight when the session closed are dropped too: the closed session
    # refuses to record them, whenever the endpoint notices (a disconnect, or their answer)
    metrics["rollout/agent/dropped_calls"] += session.dropped + in_flight
    metrics["rollout/agent/budget_refusals"] += session.budget_refusals
    metrics["rollout/agent/sampling_overrides"] += sum(session.overrides.values())


def agent_line(fn: Any, exc: BaseException) -> str:
    """`` at FILE:LINE in NAME``: the innermost frame of ``exc``'s traceback in the file that
    defines the agent ``fn`` (its line that made the failing call, e.g. an SDK request the
    endpoint answered with 400), or ``""`` when no frame is in that file."""
    import inspect
    import traceback
    from pathlib import Path

    try:
        source = inspect.getsourcefile(inspect.unwrap(fn))
    except TypeError:
        return ""
    if not source:
        return ""
    target = Path(source).resolve()
    mine = [f for f in traceback.extract_tb(exc.__traceback__)
            if Path(f.filename).resolve() == target]
    return f" at {mine[-1].filename}:{mine[-1].lineno} in {mine[-1].name}" if mine else ""


async def generate(args: Namespace, sample: Sample, sampling_params: dict[str, Any],
                   evaluation: bool = False) -> Sample | list[Sample]:
    """Run the agent of ``--agent-function-path`` on ``sample`` (see the module docstring).

    Returns:
        ``list[Sample]``: one per segment of the trajectory, sharing ``rollout_id`` and reward;
        ``sample`` itself, ABORTED, when the step was aborted while the agent ran.

    Raises:
        ContractError: VIM185 (what run returned), VIM186 (no call reached the endpoint).
        RuntimeError: the agent raised (chained; in subprocess mode its traceback), or an
            inline agent held the event loop :data:`vime.agent.blocking.BLOCKED_AGENT_SECS`
            (a synchronous client: :func:`vime.agent.blocking.blocked_message`).
    """
    from vime.rollout.vllm.state import get_state
    from vime.utils.misc import load_function

    path = str(arg(args, "agent_function_path"))
    fn = load_function(path, hook="agent_function_path")
    state = await get_state(args)
    endpoint = await get_endpoint(args)
    session = endpoint.open(sample, sampling_params)
    base_url = endpoint.server.base_url(session.key)
    kwargs = optional_kwargs(fn, HOOKS["agent_function_path"], evaluation=evaluation)
    tracked: TrackedRun | None = None
    try:
        if arg(args, "agent_function_mode") == "subprocess":
            result = await _run_subprocess(path, args, sample, base_url, session.key, kwargs)
        else:
            coro = fn(args, sample, base_url, session.key, **kwargs)
            if asyncio.iscoroutine(coro) and endpoint.watch is not None:
                # a synchronous client in the agent holds the loop the endpoint runs on:
                # found after BLOCKED_AGENT_SECS, its call answered with the fix, raised below
                tracked = TrackedRun(coro)
                with endpoint.watch.watching(tracked, path):
                    result = await tracked
            else:
                result = await coro
    except Exception as exc:
        endpoint.close(session)
        if state.aborted:
            sample.status = Sample.Status.ABORTED
            return sample
        if tracked is not None and tracked.blocked_for:
            raise RuntimeError(f"{blocked_message(path, tracked.blocked_for)} (sample index="
                               f"{sample.index}{agent_line(fn, exc)})") from exc
        raise RuntimeError(f"--agent-function-path {path} raised on sample index="
                           f"{sample.index}{agent_line(fn, exc)}: {type(exc).__name__}: "
                           f"{exc}") from exc
    except BaseException:
        endpoint.close(session)
        raise
    in_flight = session.in_flight
    endpoint.close(session)
    if state.aborted:
        sample.status = Sample.Status.ABORTED
        return sample
    if tracked is not None and tracked.blocked_for:   # the agent caught its client's error
        raise RuntimeError(f"{blocked_message(path, tracked.blocked_for)} (sample index="
                           f"{sample.index})")
    rid = state.rollout_id
    rt.check_agent_result(result, args, hook_path=path, rollout_id=rid, index=sample.index,
                          calls=len(session.calls), in_flight=in_flight, fn=fn)
    no_call = check_vim186(len(session.calls), f"agent run (index={sample.index})", fn)
    require([no_call] if no_call is not None else [])   # always: nothing to train on
    segments = segment_calls(session.calls)
    _count(args, rid, session, segments, in_flight)
    samples = samples_of(args, sample, segments, endpoint.calls.tokenizer)
    picked = endpoint.pick_for_token_check()
    if picked:
        rt.check_token_boundaries(token_trajectories(endpoint.calls, session, segments, samples),
                                  endpoint.calls.tokenizer, args, hook_path=path,
                                  rollout_id=rid)
    if evaluation:  # an eval sample is the trajectory's final answer: its last segment
        samples = samples[-1:]
    await _score(args, samples, result, rid, evaluation)
    return samples
