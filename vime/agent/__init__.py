"""Train any agent: an OpenAI-compatible endpoint that records token ids and log-probs.

An agent written against the OpenAI API (the ``openai`` SDK, httpx, any framework) is run with
``--agent-function-path mod.run``: ``async def run(args, sample, base_url, api_key, **kwargs)``
gets a ``base_url``/``api_key`` of vime's endpoint (one session per trajectory), and its calls
become ``Sample``\\ s whose tokens, loss mask and log-probs are the engine's own.

Modules, in data-flow order: :mod:`~vime.agent.server` (the ASGI app and uvicorn),
:mod:`~vime.agent.sessions` (one session per trajectory), :mod:`~vime.agent.calls` (one call:
render, sampling policy, engine, answer), :mod:`~vime.agent.render` (chat template and the
token splice), :mod:`~vime.agent.params` (request sampling fields within the run's limits),
:mod:`~vime.agent.engine` (the engine call through vime's client),
:mod:`~vime.agent.responses` (OpenAI response bodies, vLLM tool parsers),
:mod:`~vime.agent.assemble` (calls -> samples, pure), :mod:`~vime.agent.generate` (the
rollout's generate step), :mod:`~vime.agent.worker` (subprocess mode).

Importing this package imports nothing heavy; FastAPI, uvicorn and vLLM load when the endpoint
starts.
"""
