"""Why each vime-lint rule has its severity: one line per code, shown on ``docs/rules.md``.

The rule: a finding is an **error** only where the code fails or silently corrupts training
at run time; everything else (code that works but is deprecated, fragile, slower, or loses a
signal the user may not want) is a **warning**. A rule whose forms differ reports each form
with its own severity (VIM002, VIM003, VIM004, VIM037).

Usage::

    SEVERITY_REASONS["VIM003"]      # "None, a tuple, a generator, ... raise VIM101; ..."
"""

from __future__ import annotations

from types import MappingProxyType

__all__ = ["SEVERITY_RULE", "SEVERITY_REASONS"]

#: The rule, as one paragraph (the top of docs/rules.md).
SEVERITY_RULE = (
    "A finding is an **error** only where the code fails or silently corrupts training at run "
    "time (an exception at the first call, a coroutine that never runs, a field that training "
    "reads but nothing sets, a value that is trained on wrongly); otherwise it is a "
    "**warning** (the code runs: a deprecated name, a fragile pattern, a slow call, a "
    "configuration that ignores a signal). A rule whose forms differ gives each form its own "
    "severity; the reason for each rule is in the table below.")

SEVERITY_REASONS: MappingProxyType[str, str] = MappingProxyType({
    "VIM001": "error: the first call raises (wrong mode, missing slot or default); warning: a "
              "stale positional name (`data_buffer`), which works because it is passed "
              "positionally (other positional names are matched by position: no finding)",
    "VIM002": "error when the launch that names the rollout function configures evaluation "
              "(the eval step is rejected); "
              "warning otherwise (no eval step runs)",
    "VIM003": "error: None, a tuple, a generator, a dict in train mode or a list in eval mode "
              "raise VIM101; warning: the bare list (train) or dict (eval) that call_rollout_fn "
              "wraps with a DeprecationWarning",
    "VIM004": "error: the call fails or awaits a non-coroutine; warning: a stale parameter "
              "name, which still binds positionally (other positional names are matched by "
              "position: no finding)",
    "VIM005": "warning: the call works but stalls the event loop",
    "VIM006": "error: positional fields bind by order (wrong data trained on), unknown "
              "keywords raise TypeError",
    "VIM007": "error: a string status breaks to_dict and every status comparison",
    "VIM008": "warning: the per-token lists may be grown elsewhere; runtime VIM108 fails hard",
    "VIM009": "warning: truncation is lost from the status, training still runs",
    "VIM010": "warning: arithmetic on rewards in a hook is often intended",
    "VIM011": "error: a None reward fails conversion to training data",
    "VIM012": "error: the upstream shapes raise at the first call",
    "VIM013": "warning: getattr with a default hides the list-vs-sample mistake but runs",
    "VIM014": "warning: tensors in metadata work in one process and fail only when shipped",
    "VIM015": "warning: loading by dotted path works; only pickling by reference fails",
    "VIM016": "warning: mutating args works in one process and drifts between them",
    "VIM017": "warning: expanding a group twice is usually a bug but runs",
    "VIM018": "warning: re-encoding runs; the log-probs drift",
    "VIM019": "warning: the run works on a reward the user may not mean",
    "VIM020": "error: the eval step reads the missing key and fails",
    "VIM021": "error: the coroutine never runs, or its object is used as the value",
    "VIM022": "warning: the mask is wrong only when the prompt is included",
    "VIM023": "error: a reward of another kind fails conversion",
    "VIM024": "error: a tensor or string reward fails conversion (or the always-on reward "
              "check) or is trained on wrongly; warning: a reward stored only on the eval "
              "path, whose samples are not converted to training data",
    "VIM025": "error: samples sharing one object that something writes into (vime does for "
              "tokens, loss_mask, rollout_log_probs and metadata) overwrite each other's data; "
              "warning: a shared object nothing writes, read by every sample alike",
    "VIM026": "warning: a mutable default leaks state between calls but runs",
    "VIM027": "warning: the full budget per turn overruns the context, which vLLM may clip; "
              "a budget less the prompt gives shorter answers but runs",
    "VIM028": "error: a group used as a Sample raises AttributeError",
    "VIM029": "error: the per-call loop closes clients, or raises inside a running loop",
    "VIM030": "warning: the run trains on zeros but does not fail",
    "VIM031": "error: a read raises AttributeError, a write of a near miss of a field is "
              "never read; warning: another name written and never read, or read by getattr "
              "with a default that then always wins (another module may store it)",
    "VIM032": "error: the stale flag is never read (truncation lost) or raises on read",
    "VIM033": "error: vime's objects have no such attribute (AttributeError); the user's own "
              "class attribute is not reported",
    "VIM034": "warning: the run works on labels that are all None",
    "VIM035": "warning: the reward model is skipped, the run works",
    "VIM036": "error: no tokens, response length or reward: conversion to training data "
              "fails; warning: only the status never set, which stays PENDING, warns at run "
              "time (VIM111) and trains as not truncated",
    "VIM037": "warning: a bare bool is wrapped at run time; error: None drops every group",
    "VIM038": "warning: the read raises AttributeError at run time, unless a "
              "--custom-config-path file sets the name (which the linter cannot see)",
    "VIM039": "warning: the option is accepted and ignored; nothing fails",
    "VIM057": "warning: rows by position are the groups for even groups of one-sample "
              "rollouts; with fan-out segments or uneven groups they are silently wrong",
    "VIM058": "warning: only a tokenizer that adds BOS (Llama, Gemma, Mistral) doubles it; "
              "the linter does not know the model (the run-time twin VIM176 is an error)",
    "VIM059": "warning: the run works; the reward and the trained tokens see different "
              "responses, which cutting only what the reward reads may mean",
    "VIM090": "warning: a bare noqa silences nothing",
    "VIM091": "warning: an unused suppression is noise",
    "VIM092": "warning: the file is not checked, which is not a fault of the code at run time "
              "(Python rejecting a file is a syntax error, exit 2, not VIM092)",
})
