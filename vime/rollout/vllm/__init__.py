"""The default rollout: generate with vLLM over HTTP, score, filter, batch (docs/contract.md
§8). Its public face is :mod:`vime.rollout.vllm_rollout`, which re-exports the names below;
import from there (``--rollout-function-path vime.rollout.vllm_rollout.generate_rollout``).

One job per module:

- ``state``: per-process state (engines, semaphore, tokenizer, in-flight work, abort flag,
  step counters) and the router's address (``get_model_url``).
- ``client``: one sample's engine call with the retry of engine failures (``generate``).
- ``sampling``: sampling parameters, generate + reward of one sample or one group
  (``sampling_params_from_args``, ``generate_and_rm``, ``generate_and_rm_group``).
- ``abort``: stop and drain the step's in-flight work, pick the groups to recycle (``abort``).
- ``train_loop``: the over-sampling train step (``generate_rollout_async``).
- ``evaluation``: the eval step (``eval_rollout``).
- ``rollout_fn``: the ``--rollout-function-path`` entry point (``generate_rollout``).

Requests go to ``args.vllm_router_ip:args.vllm_router_port`` (a vllm-router, or a single engine
itself); control calls (abort) go to every engine behind it, which registration finds with the
router's ``GET /workers`` and checks with ``GET /openapi.json``. Concurrency is bounded by one
semaphore of ``vllm_server_concurrency * num_engines`` requests, and the shared, pooled aiohttp
client (``vime.utils.http_utils``) lives on the process's background loop
(``vime.utils.async_utils.run``). The step's metrics are described in
:mod:`vime.rollout.rollout_metrics`.

The structure and names (a ``GenerateState``-like state, the over-sampling loop,
abort-and-recycle) follow upstream slime's ``slime/rollout/sglang_rollout.py``.
"""
