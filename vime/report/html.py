"""``vime report RUN_DIR``: one static, self-contained HTML page about a run's health and
about every sample of a dumped step ("why didn't this sample train?").

Usage::

    $ vime report runs/demo/grpo                   # -> runs/demo/grpo/report.html
    $ vime report runs/demo/grpo --step 12 --control runs/demo/control --out /tmp/r.html

    path = write_report("runs/demo/grpo")          # vime train --report calls this

The page has no server and loads nothing: plots are inline SVG (matplotlib), the sample search
is a few lines of inline JavaScript. ``#q=index:5`` (or ``group:3``, ``failed``, any text) in the
URL pre-fills the search. Its sections, in order (their ids): ``health``, ``failures``,
``findings``, ``groups``, ``lengths``, ``reward``, ``control``, ``fates``, ``samples``.

Exit status of the command: 0 written; 2 bad arguments or a folder that is no run.
"""

from __future__ import annotations

import argparse
import html
import io
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vime.report.data import ReportData, collect
from vime.report.fates import FATES

__all__ = ["SECTIONS", "main", "render", "write_report"]

#: ``(id, title)`` of every section, in page order.
SECTIONS = (
    ("health", "Health"),
    ("failures", "Failed samples by hook and error"),
    ("findings", "Contract findings"),
    ("groups", "Groups per step: zero spread, stale, filtered"),
    ("lengths", "Truncation and response length"),
    ("reward", "Reward"),
    ("control", "Shuffled-reward control"),
    ("fates", "Sample fates per dumped step"),
    ("samples", "Why didn't this sample train?"),
)

#: Labels of the health figures (keys of ``ReportData.health``).
HEALTH_LABELS = {
    "steps_logged": "train steps logged",
    "steps_dumped": "steps dumped (--dump-rollouts)",
    "watchdog_reports": "stalls: steps the watchdog reported (--rollout-watchdog-secs)",
    "engine_retries": "engine failures: generate requests retried",
    "failed_samples": "FAILED samples",
    "failed_groups_dropped": "groups dropped because all their samples failed",
    "contract_findings": "contract findings",
    "zero_spread_groups": "zero-spread groups (every reward equal: no signal)",
    "stale_groups": "groups dropped as stale (--max-staleness)",
    "filtered_groups": "groups dropped by the dynamic filter",
}

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em auto;max-width:1200px;color:#222}
h1{font-size:1.5em} h2{border-bottom:1px solid #ccc;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0} td,th{border:1px solid #ddd;padding:2px 6px;
text-align:left;vertical-align:top} th{background:#f4f4f4}
.bad{color:#b00020;font-weight:600} .ok{color:#1b7f3b}
.tok{font-family:monospace;font-size:12px;word-break:break-all}
.tp{color:#555;background:#eef} .tr1{background:#cfc} .tr0{background:#fcc;text-decoration:line-through}
.fate-trained{color:#1b7f3b} .fate-failed,.fate-stale,.fate-filtered{color:#b00020}
.fate-masked,.fate-removed{color:#a65f00} .muted{color:#777} svg{max-width:100%;height:auto}
#q{width:30em;font-size:1em;padding:3px}
"""

_JS = """
function vimeFilter(){
  var q=document.getElementById('q').value.trim().toLowerCase(), n=0;
  var rows=document.querySelectorAll('#sample-table tbody tr.sample');
  var m=q.match(/^(index|group):\\s*(-?\\d+)$/);
  rows.forEach(function(r){
    var show;
    if(!q) show=true;
    else if(m) show=r.getAttribute('data-'+m[1])===m[2];
    else if(/^-?\\d+$/.test(q)) show=r.getAttribute('data-index')===q||r.getAttribute('data-group')===q;
    else show=r.textContent.toLowerCase().indexOf(q)>=0;
    r.style.display=show?'':'none'; var d=r.nextElementSibling; if(d) d.style.display=show?'':'none';
    if(show) n++;
  });
  document.getElementById('match-count').textContent=n+' of '+rows.length+' samples';
}
window.addEventListener('DOMContentLoaded',function(){
  var h=decodeURIComponent(location.hash||''); var i=h.indexOf('q=');
  if(i>=0) document.getElementById('q').value=h.slice(i+2);
  document.getElementById('q').addEventListener('input',vimeFilter); vimeFilter();
});
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return _e(value)


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _series(records: Sequence[dict[str, Any]], key: str) -> list[tuple[int, float]]:
    from vime.utils.plot import metric_series

    return metric_series(records, key)


def _plot(curves: Sequence[tuple[str, list[tuple[int, float]]]], ylabel: str,
          band: list[tuple[int, float]] | None = None) -> str:
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 2.6))
    drawn = False
    for label, points in curves:
        if points:
            xs, ys = zip(*points, strict=True)
            ax.plot(xs, ys, label=label, linewidth=1.3)
            drawn = True
            if band is not None and label == curves[0][0]:
                sd = dict(band)
                lo = [y - sd.get(x, 0.0) for x, y in points]
                hi = [y + sd.get(x, 0.0) for x, y in points]
                ax.fill_between(xs, lo, hi, alpha=0.2, label=f"{label} +/- std")
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if drawn:
        ax.legend(fontsize=8)
    return _svg(fig)


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], *, table_id: str = "") -> str:
    attr = f' id="{table_id}"' if table_id else ""
    out = [f"<table{attr}><thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head)
           + "</tr></thead><tbody>"]
    out += ["<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows]
    return "\n".join(out) + "</tbody></table>"


def _health(d: ReportData) -> str:
    rows = []
    for key, label in HEALTH_LABELS.items():
        value = d.health[key]
        bad = value > 0 and key not in ("steps_logged", "steps_dumped")
        rows.append([_e(label), f'<span class="{"bad" if bad else "ok"}" data-health="{key}">'
                                f"{value:g}</span>"])
    note = ("" if d.dumped_steps else "<p class='muted'>No rollout dumps: run with "
            "<code>--dump-rollouts</code> for failed samples, findings, fates and the sample "
            "table; figures below come from metrics.jsonl.</p>")
    return note + _table(["", "count"], rows)


def _failures(d: ReportData) -> str:
    if not d.failures:
        return "<p class='ok'>No FAILED samples in the dumped steps.</p>"
    return _table(["hook", "error type", "samples", "lowest-index example"], [
        [_e(f.hook), _e(f.type), f'<span data-failed="{_e(f.hook)}/{_e(f.type)}">{f.count}</span>',
         f"step {f.step}, sample index={_e(f.index)}: {_e(f.message[:300])}"]
        for f in d.failures])


def _findings(d: ReportData) -> str:
    if not d.findings:
        return "<p class='ok'>No contract findings in the dumped steps.</p>"
    return _table(["id", "severity", "findings", "steps", "first (step, where, message)"], [
        [_e(f.id), _e(f.severity), f'<span data-finding="{_e(f.id)}">{f.count}</span>',
         str(f.steps), f"step {f.step}: {_e(f.where)} {_e(f.message[:300])}"]
        for f in d.findings])


def _groups(d: ReportData) -> str:
    rows = [[str(s), f'<span data-zero-spread="{s}">{p["zero_spread_groups"]}</span>',
             str(p["stale_groups"]), str(p["filtered_groups"])] for s, p in d.per_step.items()]
    table = _table(["step", "zero-spread groups", "stale groups dropped",
                    "filtered groups dropped"], rows) if rows else ""
    stale = _series(d.records, "rollout/staleness/dropped_groups")
    zero = [(s, float(p["zero_spread_groups"])) for s, p in d.per_step.items()]
    drops = [(k, _series(d.records, k)) for k in sorted({k for r in d.records for k in r
                                                        if k.startswith(
                                                            "rollout/dynamic_filter/drop_")})]
    curves = [("zero-spread groups (dumps)", zero), ("stale groups dropped", stale), *drops]
    plot = _plot(curves, "groups") if any(c for _, c in curves) else ""
    return (table + plot) or "<p class='muted'>No group figures (no dumps, no filter).</p>"


def _lengths(d: ReportData) -> str:
    trunc = _series(d.records, "rollout/truncated_ratio")
    lengths = [(k.rsplit("/", 1)[-1] + " response length", _series(d.records, k))
               for k in ("rollout/response_len/mean", "rollout/response_len/max")]
    if not trunc and not any(c for _, c in lengths):
        return "<p class='muted'>No length metrics logged.</p>"
    return _plot([("truncated ratio", trunc)], "fraction") + _plot(lengths, "tokens")


def _reward(d: ReportData) -> str:
    mean = _series(d.records, "rollout/raw_reward")
    if not mean:
        return "<p class='muted'>No rollout/raw_reward logged.</p>"
    std = _series(d.records, "rollout/raw_reward_std")
    evals = sorted({k for r in d.records for k in r if k.startswith("eval/")
                    and not k.startswith("eval/vllm_rollout") and "-" not in k})
    curves = [("train reward mean", mean), *[(k, _series(d.records, k)) for k in evals]]
    last = mean[-1][1]
    return (f'<p>last step: mean reward <span data-reward-last="1">{last:.4g}</span>'
            + (f", std {std[-1][1]:.4g}" if std else "") + "</p>" + _plot(curves, "reward",
                                                                         band=std))


def _control(d: ReportData) -> str:
    if not d.control_records:
        return ("<p class='muted'>No control run given (<code>vime report RUN_DIR --control "
                "CONTROL_RUN_DIR</code>; the demo's <code>--control</code> runs GRPO on shuffled "
                "rewards).</p>")
    curves = []
    for label, recs in (("run", d.records), ("control (shuffled rewards)", d.control_records)):
        keys = sorted({k for r in recs for k in r if k.startswith("eval/") and "-" not in k
                       and not k.startswith("eval/vllm_rollout")})
        for k in keys[:2]:
            curves.append((f"{label}: {k}", _series(recs, k)))
        if not keys:
            curves.append((f"{label}: train reward", _series(recs, "rollout/raw_reward")))
    return ("<p>The difference between the two curves is what the reward taught.</p>"
            + _plot(curves, "accuracy / reward"))


def _fates(d: ReportData) -> str:
    if not d.per_step:
        return "<p class='muted'>No dumps (run with <code>--dump-rollouts</code>).</p>"
    rows = [[str(s), str(p["samples"]),
             *[f'<span data-fate-count="{s}:{f}">{p[f]}</span>' for f in FATES]]
            for s, p in d.per_step.items()]
    return _table(["step", "samples", *FATES], rows, table_id="fate-table")


def _tokens(r: dict[str, Any]) -> str:
    tokens = r.get("tokens") or []
    pl = int(r.get("prompt_length") or 0)
    mask = r.get("loss_mask")
    resp = tokens[pl:]
    mask = [1] * len(resp) if mask is None else list(mask)
    prompt = " ".join(str(t) for t in tokens[:pl])
    parts = [f'<span class="tr{1 if (mask[i] if i < len(mask) else 0) else 0}">{t}</span>'
             for i, t in enumerate(resp)]
    return (f'<div class="tok">prompt ({pl}): <span class="tp">{prompt}</span></div>'
            f'<div class="tok">response ({len(resp)}; green trains, red is masked): '
            + " ".join(parts) + "</div>")


def _samples(d: ReportData) -> str:
    if d.samples_step is None:
        return "<p class='muted'>No dumps (run with <code>--dump-rollouts</code>).</p>"
    head = (f"<p>Step {d.samples_step}: {len(d.samples)} samples. Search by "
            "<code>index:N</code>, <code>group:N</code>, a number (index or group) or any text "
            "(a fate, an error). Legend: prompt tokens in blue, response tokens green where "
            "the loss mask is 1 and red where it is 0.</p>"
            '<input id="q" type="search" placeholder="index:5, group:3, failed ..."> '
            '<span id="match-count"></span>')
    out = [head, '<table id="sample-table"><thead><tr><th>index</th><th>group</th><th>fate</th>'
           "<th>why</th><th>status</th><th>reward</th><th>advantage</th><th>findings</th>"
           "</tr></thead><tbody>"]
    for r in d.samples:
        fate = r["fate"]
        out.append(
            f'<tr class="sample" data-index="{_e(r["index"])}" data-group="{_e(r["group_index"])}"'
            f' data-fate="{_e(fate)}"><td>{_e(r["index"])}</td><td>{_e(r["group_index"])}</td>'
            f'<td class="fate-{_e(fate)}">{_e(fate)}</td><td>{_e(r.get("fate_reason") or "")}</td>'
            f'<td>{_e(r["status"])}</td><td>{_fmt(r.get("reward"))}</td>'
            f'<td>{_fmt(r.get("advantage"))}</td><td>{_e(" ".join(r.get("finding_ids") or []))}'
            "</td></tr>")
        out.append(f'<tr class="detail"><td colspan="8"><details><summary>prompt, response, '
                   f'tokens</summary><pre>{_e(r.get("prompt"))}</pre><pre>{_e(r.get("response"))}'
                   f"</pre>{_tokens(r)}</details></td></tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


_RENDER = {"health": _health, "failures": _failures, "findings": _findings, "groups": _groups,
           "lengths": _lengths, "reward": _reward, "control": _control, "fates": _fates,
           "samples": _samples}


def render(d: ReportData) -> str:
    """The page's HTML for collected data (:func:`vime.report.data.collect`)."""
    nav = " · ".join(f'<a href="#{i}">{_e(t)}</a>' for i, t in SECTIONS)
    body = [f"<section id='{i}'><h2>{_e(t)}</h2>\n{_RENDER[i](d)}\n</section>"
            for i, t in SECTIONS]
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>vime report: {_e(d.run_dir)}</title><style>{_CSS}</style>"
            f"<script>{_JS}</script></head><body>"
            f"<h1>vime report: {_e(d.run_dir)}</h1><nav>{nav}</nav>\n" + "\n".join(body)
            + "</body></html>\n")


def write_report(run_dir: str | Path, *, out: str | Path | None = None,
                 control: str | Path | None = None, step: int | None = None) -> Path:
    """Collect and render a run's report; returns the file written (default
    ``RUN_DIR/report.html``).

    Raises:
        FileNotFoundError, ValueError: as :func:`vime.report.data.collect`.
    """
    target = Path(out) if out else Path(run_dir) / "report.html"
    page = render(collect(run_dir, control=control, step=step))
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(target)
    return target


def main(argv: list[str] | None = None) -> int:
    """``vime report RUN_DIR [--step N] [--control DIR] [--out FILE]``."""
    parser = argparse.ArgumentParser(prog="vime report", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", help="a vime train --run-dir")
    parser.add_argument("--step", type=int, default=None,
                        help="the dumped step whose samples are listed (default: the last)")
    parser.add_argument("--control", default=None,
                        help="the run folder of a control run (e.g. shuffled rewards)")
    parser.add_argument("--out", default=None, help="the page (default: RUN_DIR/report.html)")
    try:
        ns = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    try:
        path = write_report(ns.run_dir, out=ns.out, control=ns.control, step=ns.step)
    except (FileNotFoundError, ValueError) as exc:
        print(f"vime report: {exc}", file=sys.stderr)
        return 2
    print(f"vime report: wrote {path}")
    return 0
