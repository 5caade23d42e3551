"""Reward models: ``async_rm`` for one sample, ``batched_async_rm`` for a list, built-in types.

Usage::

    reward = await async_rm(args, sample)           # --rm-type / metadata["rm_type"] /
                                                    # --custom-rm-path / sample.custom_rm_path
    rewards = await batched_async_rm(args, group)   # len(group) rewards, in order

Which reward runs, first match wins: ``sample.custom_rm_path``, ``--custom-rm-path`` (loaded
with the load-time signature check), ``sample.metadata["rm_type"]``, ``--rm-type``. Built-in
types: ``math`` (last number vs label), ``f1`` (token F1), ``random`` (0 or 1), ``remote_rm``
(POST ``{prompt, response, label}`` to ``--rm-url``); the ``boxed_`` prefix grades only the last
``\\boxed{...}`` of the response. ``deepscaler``, ``dapo``, ``gpqa``, ``ifbench`` are named by the
contract but not in v1 (``NotImplementedError``).

Names and dispatch order follow upstream slime's ``slime/rollout/rm_hub/__init__.py``; see
``docs/contract.md`` §5.
"""

from __future__ import annotations

import inspect
import random
from argparse import Namespace
from collections.abc import Sequence
from typing import Any

from vime.config import arg
from vime.contract.checks.enforced import require
from vime.contract.checks.hook_results import batch_reward_shape_problems
from vime.rollout.rm_hub.f1 import f1_score
from vime.rollout.rm_hub.math_rm import extract_boxed, math_reward
from vime.utils.types import Sample

__all__ = ["BUILTIN_RM_TYPES", "NOT_IN_V1_RM_TYPES", "async_rm", "batched_async_rm",
           "remote_rm"]

#: Built-in ``--rm-type`` values (each also with the ``boxed_`` prefix).
BUILTIN_RM_TYPES = ("math", "f1", "random", "remote_rm")
#: Contract rm types not implemented in v1.
NOT_IN_V1_RM_TYPES = ("deepscaler", "dapo", "gpqa", "ifbench")


async def remote_rm(args: Namespace, sample: Sample, **kwargs: Any) -> float | dict[str, Any]:
    """POST ``{"prompt", "response", "label"}`` to ``--rm-url``; the JSON body is the reward (a
    number, or a dict read through ``--reward-key``).

    Raises:
        ValueError: ``--rm-url`` is not set, or the body is neither a number nor a dict.
        vime.utils.http_utils.HTTPError: the request failed after retries.
    """
    from vime.utils.http_utils import post

    url = arg(args, "rm_url")
    if not url:
        raise ValueError("--rm-type remote_rm needs --rm-url (the reward server's URL)")
    body = await post(url, {"prompt": sample.prompt, "response": sample.response,
                            "label": sample.label})
    if isinstance(body, bool) or not isinstance(body, (int, float, dict)):
        raise ValueError(f"remote reward model {url} returned {type(body).__name__} {body!r:.200}"
                         "; expected a number or a JSON object")
    return body if isinstance(body, dict) else float(body)


def _rm_type(args: Namespace, sample: Sample) -> str:
    rm_type = (sample.metadata or {}).get("rm_type") or arg(args, "rm_type")
    if not rm_type:
        raise ValueError(f"sample index={sample.index}: no reward model: set --rm-type (e.g. "
                         "math), --custom-rm-path, or metadata['rm_type']")
    return str(rm_type)


async def _builtin(args: Namespace, sample: Sample, rm_type: str, **kwargs: Any
                   ) -> float | dict[str, Any]:
    boxed = rm_type.startswith("boxed_")
    base = rm_type[len("boxed_"):] if boxed else rm_type
    if base == "math":
        return math_reward(sample.response, sample.label, boxed=boxed)
    response = sample.response
    if boxed:
        response = extract_boxed(response) or ""
    if base == "f1":
        return f1_score(response, sample.label)
    if base == "random":
        return float(random.randint(0, 1))
    if base == "remote_rm":
        if boxed:
            sample = Sample.from_dict({**sample.to_dict(), "response": response})
        return await remote_rm(args, sample, **kwargs)
    if base in NOT_IN_V1_RM_TYPES:
        raise NotImplementedError(f"--rm-type {rm_type} is not implemented in vime v1; use "
                                  "--custom-rm-path with your own reward function")
    raise NotImplementedError(f"unknown --rm-type {rm_type!r} (sample index={sample.index}); "
                              f"built-in: {', '.join(BUILTIN_RM_TYPES)} (optionally boxed_...), "
                              "or use --custom-rm-path")


async def async_rm(args: Namespace, sample: Sample, **kwargs: Any) -> float | dict[str, Any]:
    """The reward of one sample (see the module docstring for which reward runs).

    Raises:
        ContractError: the custom RM cannot be loaded or has the wrong signature (VIM100), or
            it is a plain ``def`` returning a coroutine (VIM165).
        ValueError: no reward model configured; a label-based RM without a label.
        NotImplementedError: an rm type that v1 does not have.
    """
    path = sample.custom_rm_path or arg(args, "custom_rm_path")
    if path:
        from vime.utils.misc import load_function

        fn = load_function(path, hook="custom_rm_path")
        result = fn(args, sample, **kwargs)
        return await result if inspect.isawaitable(result) else result  # type: ignore[no-any-return]
    return await _builtin(args, sample, _rm_type(args, sample), **kwargs)


async def batched_async_rm(args: Namespace, samples: Sequence[Sample], **kwargs: Any
                           ) -> list[float | dict[str, Any]]:
    """Rewards of several samples, in order: one call of the batch ``--custom-rm-path`` function
    ``(args, samples, **kwargs)``, or :func:`async_rm` per sample concurrently.

    Raises:
        ContractError: VIM150 when the batch RM returns None, a string/dict, or not
            ``len(samples)`` values; VIM100 signature errors at load.
    """
    import asyncio

    samples = list(samples)
    path = arg(args, "custom_rm_path")
    if not path:
        return list(await asyncio.gather(*(async_rm(args, s, **kwargs) for s in samples)))
    from vime.utils.misc import load_function

    fn = load_function(path, hook="custom_rm_path", group_rm=True)
    result = fn(args, samples, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    require(batch_reward_shape_problems(result, len(samples),
                                        where=f"{path} (--custom-rm-path, batch) result"))
    return list(result)
