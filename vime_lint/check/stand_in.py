"""The scripted engine stand-in of ``vime-lint check`` (:mod:`vime_lint.check.engine`): a
FastAPI app with the routes vime's built-in generate uses, answering with scripted tokens.

Imported only when a dry run needs it (FastAPI at import time). No ``from __future__ import
annotations`` here: FastAPI reads the handlers' annotations (``Request``) at run time.
"""

from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request

from vime.ray.engine_control import ABORT_PATHS, GENERATE_PATH

__all__ = ["stand_in_app"]


def stand_in_app(tokenizer: Any, replies: Sequence[str]) -> Any:
    """The FastAPI app of the scripted engine stand-in (routes in the module doc).

    ``tokenizer`` encodes the ``replies`` (``encode(text, add_special_tokens=False)``,
    ``eos_token_id``), given in turn, request after request."""
    app = FastAPI(title="vime-lint check engine stand-in", openapi_url=None, docs_url=None,
                  redoc_url=None)
    count = {"n": 0}
    eos = getattr(tokenizer, "eos_token_id", None)

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {}

    @app.get("/version")
    def version() -> dict[str, str]:
        return {"version": "vime-lint stand-in"}

    @app.get("/openapi.json")
    def openapi() -> dict[str, Any]:
        # no sampling-params schema: the built-in generate then checks no keys
        return {"paths": {GENERATE_PATH: {}, ABORT_PATHS[0]: {}}}

    @app.post(ABORT_PATHS[0])
    def abort() -> dict[str, Any]:
        return {}

    @app.post(GENERATE_PATH)
    async def generate(request: Request) -> dict[str, Any]:
        body = await request.json()
        text = replies[count["n"] % len(replies)]
        count["n"] += 1
        ids = [int(t) for t in tokenizer.encode(text, add_special_tokens=False)]
        if eos is not None:
            ids.append(int(eos))
        budget = (body.get("sampling_params") or {}).get("max_tokens")
        finish = "stop"
        if isinstance(budget, int) and len(ids) > budget:
            ids, finish = ids[:max(budget, 0)], "length"
        content = [{"token_id": t, "logprob": -0.5 - 0.01 * i} for i, t in enumerate(ids)]
        return {"choices": [{"token_ids": ids, "logprobs": {"content": content},
                             "finish_reason": finish}],
                "usage": {"prompt_tokens": len(body.get("token_ids") or []),
                          "completion_tokens": len(ids)}}

    return app
