"""The agent endpoint as an ASGI app (FastAPI) served by uvicorn on 127.0.0.1.

Routes, each also under ``/sessions/<key>`` (the ``base_url`` handed to the agent is
``http://127.0.0.1:<port>/sessions/<key>/v1``, and ``<key>`` is its ``api_key`` too):

- ``POST /v1/chat/completions``: non-streaming, or ``"stream": true`` for server-sent events;
- ``POST /v1/completions``: a string prompt or token ids;
- ``GET /v1/models``; ``GET /health``.

A request names its session by the path or by ``Authorization: Bearer <key>``; an unknown or
closed session, or a path key and a bearer key that disagree, gets HTTP 401. While the engine works, the handler watches the connection: a
client that goes away cancels the engine call (the engine aborts the request) and nothing is
recorded; a call is recorded only once its whole answer is ready and the client is still
connected (for a stream: after the last event was sent).

Usage::

    endpoint = EndpointServer(create_app(calls, store, run_params_of))
    await endpoint.start()                 # binds 127.0.0.1:<free port> (or --agent-endpoint-port)
    endpoint.base_url(session.key)         # "http://127.0.0.1:41234/sessions/vime-3-.../v1"
    await endpoint.stop()
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from vime.agent.calls import Answer, CallServer
from vime.agent.render import RequestError
from vime.agent.responses import chat_chunks, error_body
from vime.agent.sessions import Session, SessionStore

__all__ = ["EndpointServer", "create_app"]

#: ``run_params_of(session) -> the run's sampling_params`` for that session's sample.
RunParams = Callable[[Session], Mapping[str, Any]]


def create_app(calls: CallServer, store: SessionStore, run_params_of: RunParams) -> Any:
    """The FastAPI app of one endpoint (see the module docstring)."""
    app = FastAPI(title="vime agent endpoint", docs_url=None, redoc_url=None,
                  openapi_url=None)

    def failure(message: str, status: int, kind: str = "invalid_request_error",
                param: str | None = None) -> Any:
        return JSONResponse(error_body(message, kind, param), status_code=status)

    def session_of(request: Request, key: str | None) -> Session | None:
        """The open session named by the path's key and the bearer key; None (a 401) when
        neither names an open one, or when both are given and disagree (a key in the path
        never overrides the one the client authenticates with)."""
        auth = request.headers.get("authorization", "")
        bearer = auth[7:].strip() if auth.lower().startswith("bearer ") else None
        if key is not None and bearer and bearer != key:
            return None
        key = key if key is not None else bearer
        return store.get(key) if key else None

    async def disconnected(request: Request) -> None:
        while True:
            message = await request.receive()
            if message["type"] == "http.disconnect":
                return

    async def serve(request: Request, key: str | None,
                    work: Callable[[Session, Mapping[str, Any]], Awaitable[Answer]]) -> Any:
        session = session_of(request, key)
        if session is None:
            return failure("unknown or closed session: use the api_key and base_url vime handed "
                           "to the agent", 401, "authentication_error")
        try:
            body = await request.json()
        except ValueError:
            return failure("the request body is not JSON", 400)
        if not isinstance(body, dict):
            return failure("the request body must be a JSON object", 400)
        task = asyncio.ensure_future(work(session, body))
        watch = asyncio.ensure_future(disconnected(request))
        try:
            await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watch.cancel()
        if not task.done():  # the client went away: abort the engine call, record nothing
            task.cancel()
            with contextlib.suppress(BaseException):
                await task   # the engine call counts itself dropped (CallServer._generate)
            return Response(status_code=499)
        if watch.done() and not watch.cancelled() or (
                not body.get("stream") and await request.is_disconnected()):
            # the call finished, but its client is gone (in the same loop turn, or since):
            # nobody reads the answer, so the trajectory must not hold it either
            session.dropped += 1
            return Response(status_code=499)
        try:
            answer = task.result()
        except RequestError as exc:
            return failure(str(exc), exc.status, param=exc.param)
        if not body.get("stream"):
            if not answer.commit() and answer.record is not None:
                return failure("the session closed while the call ran", 401,
                               "authentication_error")
            return JSONResponse(answer.body)
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        async def events() -> AsyncIterator[str]:
            for chunk in chat_chunks(answer.body, include_usage):
                yield chunk
            answer.commit()  # reached only after the last event went out

        if answer.body.get("object") != "chat.completion":
            return failure("stream=true is served for chat completions only", 400,
                           param="stream")
        return StreamingResponse(events(), media_type="text/event-stream")

    async def chat(s: Session, b: Mapping[str, Any]) -> Answer:
        return await calls.chat(s, b, run_params_of(s))

    async def completion(s: Session, b: Mapping[str, Any]) -> Answer:
        return await calls.completion(s, b, run_params_of(s))

    models = {"object": "list", "data": [{"id": str(calls.args.hf_checkpoint), "object": "model",
                                          "owned_by": "vime"}]}

    @app.post("/v1/chat/completions")
    async def chat_root(request: Request) -> Any:
        return await serve(request, None, chat)

    @app.post("/sessions/{key}/v1/chat/completions")
    async def chat_session(key: str, request: Request) -> Any:
        return await serve(request, key, chat)

    @app.post("/v1/completions")
    async def completion_root(request: Request) -> Any:
        return await serve(request, None, completion)

    @app.post("/sessions/{key}/v1/completions")
    async def completion_session(key: str, request: Request) -> Any:
        return await serve(request, key, completion)

    @app.get("/v1/models")
    async def models_root() -> Any:
        return models

    @app.get("/sessions/{key}/v1/models")
    async def models_session(key: str) -> Any:
        return models

    @app.get("/health")
    async def health() -> Any:
        return {"status": "ok", "open_sessions": len(store)}

    return app


class EndpointServer:
    """uvicorn serving ``app`` on 127.0.0.1 inside the running event loop."""

    def __init__(self, app: Any, port: int = 0) -> None:
        self.app = app
        self.requested_port = int(port)
        self.port = 0
        #: The listening socket (after :meth:`start`).
        self.sock: socket.socket | None = None
        self._server: Any = None
        self._task: asyncio.Task[Any] | None = None

    async def start(self) -> None:
        """Bind 127.0.0.1 (port 0: a free one) and start serving; returns once it listens.

        Raises:
            OSError: the port is taken.
            RuntimeError: uvicorn stopped before it started listening.
        """
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.requested_port))
        self.port = int(sock.getsockname()[1])
        self.sock = sock
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off",
                                timeout_keep_alive=30)
        self._server = uvicorn.Server(config)
        self._task = asyncio.ensure_future(self._server.serve(sockets=[sock]))
        while not self._server.started:
            if self._task.done():
                self._task.result()
                raise RuntimeError("the agent endpoint stopped before it started listening")
            await asyncio.sleep(0.01)

    def base_url(self, key: str) -> str:
        """The OpenAI ``base_url`` of session ``key``."""
        return f"http://127.0.0.1:{self.port}/sessions/{key}/v1"

    async def stop(self) -> None:
        """Stop serving (open connections are closed)."""
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            await self._task
