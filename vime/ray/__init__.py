"""Ray-side processes of vime: vLLM engines (``engine``), their HTTP control
(``engine_control``), the request router (``router``) and the rollout manager (``rollout``).

Nothing heavy is imported here; import the submodule you need.
"""
