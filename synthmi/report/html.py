"""The disclosure review report: one self-contained HTML file.

:func:`render_report` turns a :class:`~synthmi.report.data.ReportData`
(aggregated tables only: coefficients, S_pMSE, risk summaries, provenance)
into an HTML string with inline CSS and figures embedded as base64 PNG, so the
file opens offline with no external resource. Nothing here reads the
confidential data; the one place that does is
:func:`synthmi.workflow.evaluate_release`, which keeps only aggregates.
"""
from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..evaluation.analysis import format_estimate
from ..evaluation.membership import PARTIAL_RELEASE_NOTE
from . import figures

if TYPE_CHECKING:  # pragma: no cover
    from .data import ReportData

__all__ = ["render_report", "write_report", "frame_to_html", "png_img"]

_CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0;color:#1a1a1a;background:#fafafa}
header{background:#17324d;color:#fff;padding:18px 32px}
header h1{margin:0 0 4px 0;font-size:22px}
header p{margin:0;font-size:13px;color:#cfe0f0}
main{max-width:1060px;margin:0 auto;padding:12px 32px 40px 32px}
section{background:#fff;border:1px solid #e2e2e2;border-radius:6px;padding:14px 20px;margin:16px 0}
h2{font-size:17px;margin:4px 0 10px 0;color:#17324d}
p.note{font-size:12.5px;color:#555;margin:6px 0}
table{border-collapse:collapse;font-size:12.5px;margin:6px 0}
th,td{border-bottom:1px solid #e6e6e6;padding:4px 10px;text-align:right}
th{background:#f0f4f8;text-align:center}
td:first-child,th:first-child{text-align:left}
img{max-width:100%;height:auto}
.kv td{text-align:left;vertical-align:top}
p.flag{color:#b00020;font-weight:600}
td.bad,span.bad{color:#b00020;font-weight:600}
tr.ref td{font-style:italic;color:#444;background:#f7f7f7}
ul.rel{margin:4px 0 8px 18px;padding:0;font-size:13px}
ul.rel li{margin:2px 0}
code{font-size:12px;background:#f3f3f3;padding:1px 3px}
"""


SUMMARY_LABELS = {
    "S_pMSE": "S_pMSE",
    "mean_ci_overlap": "mean CI overlap",
    "mean_std_diff": "mean std. difference",
    "expected_matches": "expected correct matches",
    "true_match_rate": "true-match rate",
    "share_above_threshold": "share I_i > threshold",
    "mean_I_i": "mean I_i",
    "records": "records",
}


def png_img(png: bytes, alt: str) -> str:
    """An ``<img>`` tag with the PNG embedded as a base64 data URI."""
    b64 = base64.b64encode(png).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{b64}">'


def format_estimate(v: Any, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "&ndash;"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if v != 0 and (abs(v) >= 1e5 or abs(v) < 10 ** (-digits)):
            return f"{v:.{digits}g}"
        return f"{v:.{digits}f}"
    return html.escape(str(v))


def frame_to_html(df: pd.DataFrame, digits: int = 3, index: bool = True, caption: str | None = None) -> str:
    """A small, escaped HTML table (pandas' to_html without its inline styles)."""
    cols = list(df.columns)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in ([df.index.name or ""] if index else []) + cols)
    rows = []
    # column-wise values keep each column's dtype (iterrows would turn ints into floats)
    values = [df[c].tolist() for c in cols]
    for i, idx in enumerate(df.index):
        cells = [f"<td>{html.escape(' / '.join(map(str, idx)) if isinstance(idx, tuple) else str(idx))}</td>"] if index else []
        cells += [f"<td>{format_estimate(v[i], digits)}</td>" for v in values]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _kv_table(d: dict[str, Any]) -> str:
    rows = []
    for k, v in d.items():
        if isinstance(v, (dict, list)):
            v = json.dumps(v, sort_keys=True, default=str)
            cell = f"<code>{html.escape(v)}</code>"
        else:
            cell = format_estimate(v)
        rows.append(f"<tr><td>{html.escape(str(k))}</td><td>{cell}</td></tr>")
    return f'<table class="kv"><tbody>{"".join(rows)}</tbody></table>'


def _analysis_table(coef: pd.DataFrame) -> str:
    """Per method: term, original estimate (CI), synthetic estimate (CI), std. diff, CI overlap."""
    parts = []
    for method, sub in coef.groupby("method", sort=False):
        ok = sub["estimable"].to_numpy(bool) if "estimable" in sub else np.ones(len(sub), dtype=bool)
        k = sub["copies_not_estimable"].to_numpy(int) if "copies_not_estimable" in sub else np.zeros(len(sub), dtype=int)
        t = pd.DataFrame(
            {
                "original est.": sub["est_orig"].to_numpy(float),
                "original 95% CI": [f"({format_estimate(a)}, {format_estimate(b)})" for a, b in zip(sub["ci_lower_orig"], sub["ci_upper_orig"])],
                # a term whose level is absent from a copy is not estimable: said so, never 0.000
                "synthetic est.": [f"{e:.3f}" if good else (f"not estimable ({n} copies)" if n else "not estimable")
                                   for e, good, n in zip(sub["est_syn"].to_numpy(float), ok, k)],
                "synthetic 95% CI": [f"({format_estimate(a)}, {format_estimate(b)})" if good else "" for a, b, good in
                                     zip(sub["ci_lower_syn"], sub["ci_upper_syn"], ok)],
                "std. diff": sub["std_diff"].to_numpy(float),
                "CI overlap": sub["ci_overlap"].to_numpy(float),
            },
            index=pd.Index(sub["term"].astype(str), name="term"),
        )
        parts.append(f"<h3 style='font-size:14px;margin:10px 0 2px 0'>{html.escape(str(method))}</h3>")
        parts.append(frame_to_html(t))
    return "".join(parts)


def _release_flags(releases: dict[str, Any]) -> str:
    """Red lines for releases that must not be read at face value: copies released although
    the sampler failed its convergence check, and copies whose analysis fit is separated."""
    out = []
    for label, meta in releases.items():
        if meta.get("unconverged"):
            fails = (meta.get("diagnostics_check") or {}).get("failures") or {}
            what = "; ".join(f"{c}: {f.get('problem', '')}" for c, f in fails.items())
            out.append(
                f"<p class='note flag'>UNCONVERGED: release <b>{html.escape(str(label))}</b> was written with "
                f"--accept-diagnostics although its posterior sampler failed the convergence check "
                f"({html.escape(what)}). Its copies may not come from the synthesis model.</p>"
            )
        check = meta.get("diagnostics_check") or {}
        if check.get("looser_than_default"):
            out.append(
                f"<p class='note flag'>LOOSER THRESHOLDS: release <b>{html.escape(str(label))}</b> passed its "
                f"convergence check with R-hat &le; {float(check.get('rhat_max', 0)):g} and ESS &ge; "
                f"{float(check.get('ess_min', 0)):g} ({html.escape(str(check.get('convergence', 'custom')))}), looser "
                "than the default of Vehtari et al. (2021): R-hat &le; 1.01, bulk and tail ESS &ge; 400.</p>"
            )
        unmod = meta.get("unmodified") or {}
        if unmod.get("allowed"):
            per_qi = unmod.get("per_qi") or {}
            figures = ", ".join(f"{html.escape(str(q))} {float(v.get('share', 0)):.1%} (kappa {float(v.get('kappa', 0)):.2f})"
                                for q, v in per_qi.items())
            driving = [str(q) for q in unmod.get("reproduced") or []]
            if unmod.get("cause") == "determined" and driving:
                what = (f"the synthesis reproduces {html.escape(', '.join(driving))}, which the kept columns nearly "
                        "determine: the release protects nothing on "
                        f"{'this quasi-identifier' if len(driving) == 1 else 'these quasi-identifiers'}")
            else:
                what = "the copies hold the original values of the quasi-identifiers: nothing was synthesized"
            out.append(
                f"<p class='note flag'>UNMODIFIED: release <b>{html.escape(str(label))}</b> was written with "
                f"--allow-unmodified although {float(unmod.get('max_share', 0)):.1%} of the records of a copy keep "
                f"their original quasi-identifier values (agreement beyond chance {float(unmod.get('max_kappa', 0)):.2f}"
                f" &gt; {float(unmod.get('threshold', 0)):g}"
                + (f"; per quasi-identifier, share unchanged: {figures}" if figures else "")
                + f"): {what}.</p>"
            )
        if meta.get("separated_copies"):
            out.append(
                f"<p class='note flag'>SEPARATED FIT: in release <b>{html.escape(str(label))}</b>, "
                f"{len(meta['separated_copies'])} cop{'y' if len(meta['separated_copies']) == 1 else 'ies'} give a "
                "separated analysis fit (constant or perfectly predicted outcome); its CI overlap and standardized "
                "difference are not meaningful.</p>"
            )
    return "\n".join(out)


def _flat(d: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Nested dicts/lists -> (path, value) rows ("releases > dami > params > masks > age")."""
    rows: list[tuple[str, Any]] = []
    if isinstance(d, dict):
        for k, v in d.items():
            rows += _flat(v, f"{prefix} \u203a {k}" if prefix else str(k))
    elif isinstance(d, list) and d and all(isinstance(x, (dict, list)) for x in d):
        for i, v in enumerate(d):
            rows += _flat(v, f"{prefix}[{i + 1}]")
    else:
        rows.append((prefix, d))
    return rows


def _provenance_table(prov: dict[str, Any]) -> str:
    """Provenance as readable rows: one line per fact; long lists of hashes shortened."""
    rows = []
    for path, v in _flat(prov):
        if isinstance(v, list):
            v = ", ".join((x[:12] + "\u2026") if isinstance(x, str) and len(x) > 40 else str(x) for x in v)
        elif isinstance(v, str) and len(v) == 64 and all(c in "0123456789abcdef" for c in v):
            v = v[:16] + "\u2026"
        rows.append(f"<tr><td>{html.escape(path)}</td><td>{format_estimate(v) if not isinstance(v, str) else html.escape(v)}</td></tr>")
    return f'<table class="kv"><tbody>{"".join(rows)}</tbody></table>'


def _mask_text(masks: Any) -> str:
    if not masks:
        return "none"
    if isinstance(masks, dict) and set(masks) & {"low", "medium", "high"}:
        return "; ".join(f"{g}: {_mask_text(m)}" for g, m in masks.items())
    parts = []
    for c, spec in (masks or {}).items():
        if isinstance(spec, dict):
            kv = ", ".join(f"{'sigma_e' if k == 'sigma_e' else k}={v}" for k, v in spec.items() if k != "kind" and v is not None)
            parts.append(f"{c} ({kv})")
        else:
            parts.append(f"{c} ({spec})")
    return "; ".join(parts)


def _tuning_li(tuning: Any) -> str:
    """How a tuned release was tuned (the spec's ``tuning`` record written by ``synthmi tune``): targets,
    objective, table rule, chosen masks and the validated figures with their Monte Carlo SE."""
    if not tuning:
        return ""
    fig, se = tuning.get("figures") or {}, tuning.get("figures_se") or {}
    figs = ", ".join(f"{k} {format_estimate(v)}" + (f" &plusmn; {format_estimate(se[k])}" if se.get(k) is not None else "")
                     for k, v in fig.items() if v is not None)
    ok = tuning.get("feasible_on_fresh_copies")
    return (f"<li><b>Tuned</b> by <code>{html.escape(str(tuning.get('by', 'synthmi tune')))}</code>: targets "
            f"{html.escape(', '.join(tuning.get('targets') or []) or 'none')}; objective "
            f"<code>{html.escape(str(tuning.get('objective')))}</code>"
            + (f", feasible only if the worst one- and two-way table S_pMSE &le; "
               f"{format_estimate(tuning['max_table_s_pmse'])}" if tuning.get("max_table_s_pmse") is not None else "")
            + f"; chosen masks {html.escape(_mask_text(tuning.get('masks')))}"
            + (f"; trees' minimum leaf size {html.escape(str(tuning['min_leaf']))}" if tuning.get("min_leaf") is not None else "")
            + (f"; other settings <code>{html.escape(json.dumps(tuning.get('params'), sort_keys=True, default=str))}</code>"
               if tuning.get("params") else "")
            + f"; {html.escape(str(tuning.get('figures_from', '')))} figures (mean &plusmn; MC SE over "
            f"{html.escape(str(tuning.get('replicates')))} replicates of {html.escape(str(tuning.get('m')))} copies): "
            f"{figs}"
            + ("" if ok is None else ("; targets and table rule held on them" if ok else
                                      "; <span class='bad'>the targets or the table rule missed on them</span>"))
            + f"; {html.escape(str(tuning.get('search_points')))} search points, stopped by "
            f"{html.escape(str(tuning.get('search_stopped_by')))}.</li>\n")


def _battery_html(data: "ReportData") -> str:
    """The battery: each release's criteria (declared and generic analyses, every table, worst S_pMSE)."""
    bat = getattr(data, "battery", pd.DataFrame())
    if bat is None or bat.empty:
        return ""
    from ..evaluation.battery import DEFAULT_MAX_TABLE_S_PMSE

    cols = [c for c in ("battery_ci_overlap", "generic_ci_overlap", "worst_one_way_s_pmse", "worst_two_way_s_pmse")
            if c in data.summary]
    head = frame_to_html(data.summary.set_index("method")[cols], digits=4) if cols else ""
    t = bat.pivot_table(index=["criterion", "name"], columns="method", values="value", sort=False)
    bad = [str(m) for m in data.summary["method"]
           if any(float(data.summary.set_index("method").loc[m].get(c, np.nan)) > DEFAULT_MAX_TABLE_S_PMSE
                  for c in ("worst_one_way_s_pmse", "worst_two_way_s_pmse"))]
    flag = (f"<p class='note flag'>{html.escape(', '.join(bad))}: a table S_pMSE above "
            f"{DEFAULT_MAX_TABLE_S_PMSE:g}, far above its null value 1; 'synthmi tune' treats such a release as "
            "infeasible whatever its overlap.</p>") if bad else ""
    return ("<section id='battery'><h2>Battery: analyses nobody declared</h2>" + flag + head
            + "<p class='note'>A release is judged by more than the declared analysis: generic regressions of each "
              "kept column on the quasi-identifiers (quadratic in numeric ones, factors for categorical ones; a second "
              "adds the interactions involving a numeric one and the other kept columns), every "
              "one- and two-way table's S_pMSE (tables of unchanged columns left out) "
              "(<code>synthmi.evaluation.battery</code>). <b>battery_ci_overlap</b>: mean CI overlap over the "
              "declared and generic analyses (each weighs the same). One release has no replicate seeds, so no "
              "Monte Carlo SE here; the frontier file and the tuning record carry them.</p>"
            + "<details><summary>every criterion</summary>" + frame_to_html(t, digits=4) + "</details></section>")


def _releases_html(releases: dict[str, dict[str, Any]]) -> str:
    """One paragraph and list per release, in plain language."""
    out = []
    for label, r in releases.items():
        unchanged = ("not applicable: the copies are fully synthetic (no row belongs to an original record)"
                     if r.get("fully_synthetic") else ", ".join(
            f"{c} {v:.1%}" if v is not None else f"{c} (copies not row-aligned)" for c, v in r["unchanged_share"].items()))
        diag = r.get("diagnostics") or {}
        fails = diag.get("failures") or []
        found = {k: v for k, v in diag.items() if k != "failures"}
        dtext = ("<span class='bad'>FAILED: " + html.escape("; ".join(fails)) + "</span>") if fails else (
            "passed (" + html.escape(", ".join(f"{k} {v:.3g}" for k, v in found.items())) + ")" if found
            else "none: plug-in copies, no posterior sampling" if r.get("plug_in")
            else "none reported by this method")
        pm = r.get("s_pmse_reading")
        pm_html = (f"<span class='bad'>{html.escape(pm)}</span>" if r.get("s_pmse_flag") else html.escape(pm or ""))
        params = {k: v for k, v in (r.get("params") or {}).items() if v is not None}
        out.append(f"""<h3 style='font-size:14px;margin:10px 0 2px 0'>{html.escape(label)}</h3>
<ul class="rel">
<li><b>Released verbatim</b> (the original's values): {html.escape(', '.join(r['verbatim']) or 'none')}.</li>
<li><b>Synthesized</b>: {html.escape(', '.join(r['synthesized']) or 'none')}, by {html.escape(r['how'])}; {r['copies']} copies.</li>
<li><b>Masks</b>: {html.escape(_mask_text(r.get('masks')))}{(' &middot; other settings: <code>' + html.escape(json.dumps(params, sort_keys=True, default=str)) + '</code>') if params else ''}.</li>
{_tuning_li(r.get('tuning'))}<li><b>Share of quasi-identifier values left unchanged</b> (mean over copies): {html.escape(unchanged or '&ndash;')}.</li>
<li><b>Analyse with</b> the <code>{html.escape(str(r.get('rule')))}</code> combining rule{' (fully synthetic: no row of a copy belongs to an original record)' if r.get('fully_synthetic') else ''}.</li>
<li><b>Survey weights</b>: {html.escape(r.get('weights_note') or 'none given; analyses unweighted')}.</li>
<li><b>S_pMSE</b>: {pm_html}.</li>
<li><b>Sampler diagnostics</b>: {dtext}.</li>
</ul>""")
    return "".join(out)


def _privacy_html(releases: dict[str, dict[str, Any]]) -> str:
    """The stated guarantee of every differentially private release (no data values)."""
    from ..privacy.dpsyn import continuous_lines

    out = []
    for label, r in releases.items():
        pv = r.get("privacy")
        if not pv:
            continue
        supp = r.get("suppressed_levels") or {}
        pooled = r.get("pooled_levels") or {}
        numeric = "".join(f"<li>{html.escape(line)}</li>" for line in continuous_lines(r.get("continuous") or {}))
        rare = "; ".join([f"{c}: {', '.join(map(str, v))}" for c, v in supp.items()]
                         + [f"{c}: {', '.join(map(str, v['levels']))} (pooled into {v['into']})" for c, v in pooled.items()])
        out.append(
            f"<p class='note'><b>Privacy guarantee of {html.escape(label)}</b>: {html.escape(str(pv.get('guarantee')))} "
            f"(epsilon {html.escape(str(pv.get('epsilon')))}, delta {html.escape(str(pv.get('delta')))}); neighbours: "
            f"{html.escape(str(pv.get('neighbours')))}; {html.escape(str(pv.get('composition')))}; "
            f"{html.escape(str(pv.get('conversion')))}. Noise: {html.escape(str(pv.get('noise')))}. "
            f"Declared levels below the noise threshold: {html.escape(rare or 'none')}. <b>This report is outside "
            f"that guarantee</b>: it reads the original records (its counts, utility and risk figures are exact "
            f"functions of them), so it is for the data holder and must not be published with the release.</p>"
            + (f"<p class='note'>Numeric columns of {html.escape(label)}, from its noisy counts only (part of the "
               f"release): the range the copies cover, and whether their mean moved, or people fell outside that "
               f"range, by more than the noise explains:</p><ul>{numeric}</ul>" if numeric else ""))
    full = [label for label, r in releases.items() if r.get("fully_synthetic")]
    if full:
        out.append(
            f"<p class='note'>{html.escape(', '.join(full))}: fully synthetic, so record-by-record matching does not "
            "apply (&ndash; above). <b>DCR closer than baseline 5%</b>: share of synthetic records closer to an original "
            "record than the baseline's 5% quantile of distances (about 0.05 if the release is no closer to the "
            "original than new records are); <b>repU</b>: share of original records unique on the quasi-identifiers "
            "and replicated as unique in a copy. Details under <a href='#no-alignment'>risk without row alignment</a>.</p>")
    return "".join(out)


def _summary_html(summary: pd.DataFrame, references: pd.DataFrame) -> str:
    both = pd.concat([summary, references], ignore_index=True) if not references.empty else summary
    t = both.set_index("method").rename(columns=SUMMARY_LABELS)
    html_t = frame_to_html(t)
    # reference rows in italics on grey (the report's releases come first)
    for name in references.get("method", pd.Series(dtype=str)):
        esc = html.escape(str(name))
        html_t = html_t.replace(f"<tr><td>{esc}</td>", f"<tr class='ref'><td>{esc}</td>")
    return html_t


def _impossible_html(imp: pd.DataFrame) -> str:
    if imp.empty:
        return "<p class='note'>No synthesized columns.</p>"
    t = imp.set_index(["method", "column"])
    body = frame_to_html(t)
    bad = int(imp["impossible"].sum())
    msg = (f"<p class='note flag'>{bad:,} impossible synthetic values (see the table).</p>" if bad
           else "<p class='note'>No impossible values.</p>")
    # mark non-zero counts in red
    import re as _re

    body = _re.sub(r"<td>([1-9][0-9,]*)</td>", r"<td class='bad'>\1</td>", body)
    return msg + body


def render_report(data: "ReportData") -> str:
    """The report as one HTML string (no external resources)."""
    s = data.settings
    title = f"Synthetic data disclosure review: {s.get('original', 'data')}"
    summary = data.summary.copy()
    summary_html = _summary_html(summary, getattr(data, "references", pd.DataFrame()))

    coef_png = figures.to_png(figures.coefficient_plot(data.coefficients, title=f"{s.get('formula', '')} ({s.get('family', '')})"))
    # fully synthetic releases have no record-level I_i (no row alignment)
    hist_html = (png_img(figures.to_png(figures.risk_histogram(data.individual_risk, data.subgroup_labels)),
                         "histogram of record-level risk") if data.individual_risk else "")

    above = data.summary["share_above_threshold"] if "share_above_threshold" in data.summary else None
    flags = _release_flags(data.provenance.get("releases", {}))
    if above is not None and np.any(np.nan_to_num(above.to_numpy(float)) > 0):
        flags += (f"<p class='note flag'>Some records have I_i above the review threshold "
                 f"({format_estimate(s.get('risk_threshold'))}); see the risk section.</p>")
    releases = getattr(data, "releases", {}) or {}
    for label, r in releases.items():
        if r.get("s_pmse_flag"):
            flags += f"<p class='note flag'>{html.escape(label)}: S_pMSE {html.escape(r['s_pmse_reading'])}.</p>"
        if (r.get("diagnostics") or {}).get("failures"):
            flags += (f"<p class='note flag'>{html.escape(label)}: sampler diagnostics failed "
                      f"({html.escape('; '.join(r['diagnostics']['failures']))}).</p>")
    imp = getattr(data, "impossible", pd.DataFrame())
    if not imp.empty and imp["impossible"].sum() > 0:
        flags += "<p class='note flag'>Some synthetic values are impossible for their column; see Utility.</p>"
    extra_sections = _extra_sections(data)
    privacy = _privacy_html(releases)

    body = f"""
<header><h1>{html.escape(title)}</h1>
<p>{html.escape(str(s.get('n_records', '')))} records &middot; quasi-identifiers: {html.escape(', '.join(s.get('quasi_identifiers', [])))}
&middot; methods: {html.escape(', '.join(summary['method'].astype(str)))} &middot; generated {html.escape(str(data.provenance.get('generated_utc', '')))}</p></header>
<main>
<section id="summary"><h2>Summary</h2>
{summary_html}
<p class="note"><b>S_pMSE</b>: standardized propensity-score mean squared error (pMSE / its null expectation; near 1 = copies indistinguishable from the original by a {html.escape(str(s.get('pmse_method', 'logit')))} model; mean over copies).
<b>CI overlap</b> (1 = identical intervals, &lt; 0 = disjoint) and <b>standardized difference</b> |b_orig - b_syn| / SE(b_orig) are averaged over the analysis coefficients, combined over the M copies by each release's combining rule (column <i>rule</i>).
<b>Expected correct matches</b> = sum of the record-level risks I_i; <b>true-match rate</b> = share of records whose unique match is the correct one.</p>
{privacy}
{flags}
</section>
{extra_sections['releases']}
{extra_sections['frontier']}
{_battery_html(data)}
<section id="utility"><h2>Utility: per-variable S_pMSE</h2>
{frame_to_html(data.per_variable)}
<p class="note">One-way S_pMSE per variable (continuous variables binned), mean over the M copies. Values far above 1 flag a variable whose distribution the copies miss; far below 1, one the copies reproduce almost exactly.</p>
{extra_sections['two_way']}
<h3 style='font-size:14px;margin:10px 0 2px 0'>Impossible values</h3>
{_impossible_html(imp)}
<p class="note">Counts over all copies of synthesized values outside the range observed in the original (the range itself is not shown), fractional where every original value is whole, or in a category the original does not have.</p>
</section>
<section id="coefficients"><h2>Analysis: original vs combined synthetic estimates</h2>
{png_img(coef_png, "coefficient plot")}
<p class="note">Analysis model: <code>{html.escape(str(s.get('formula', '')))}</code>, family {html.escape(str(s.get('family', '')))}; 95% intervals; synthetic estimates combined over M copies.</p>
{_analysis_table(data.coefficients)}
</section>
<section id="risk"><h2>Re-identification risk</h2>
{hist_html}
<p class="note">The intruder knows every record's quasi-identifiers and matches them against each copy (continuous ones within the tolerance {html.escape(json.dumps(s.get('tolerance'), default=str))}); I_i averages over the copies the probability that the matched record is the true one.
Risk subgroups are labelled on the original (k0 = {html.escape(str(s.get('k0')))}): low = at least k0 others share the categorical quasi-identifiers and are close on the continuous ones, medium = they share the categories but fewer than k0 are close, high = otherwise.</p>
{frame_to_html(data.risk_by_subgroup.set_index(['method', 'subgroup']).rename(columns=SUMMARY_LABELS)) if not data.risk_by_subgroup.empty else ''}
{extra_sections['no_alignment_note']}
</section>
{extra_sections['no_alignment']}
{_attack_risks_html(data)}
{extra_sections['attribute']}
<section id="settings"><h2>Settings</h2>{_kv_table(data.settings)}</section>
<section id="provenance"><h2>Provenance</h2>{_provenance_table(data.provenance)}
<p class="note">This report holds aggregates only (model coefficients, distances, counts and risk summaries); no record or cell value of the original data.</p></section>
</main>"""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{html.escape(title)}</title>"
        f"<style>{_CSS}</style></head><body>{body}</body></html>\n"
    )


#: plain-language names of the attack-risk columns (``<attack>_<figure>``)
_ATTACK_LABELS = {"auc": "AUC", "tpr_at_fpr_0.01": "TPR at FPR 0.01", "tpr_at_fpr_0.1": "TPR at FPR 0.1"}


def _attack_risks_html(data: "ReportData") -> str:
    """Membership inference (and any further attack) beside the reference releases: one row per
    release, one column per measure as ``value [95% CI]``."""
    tab = getattr(data, "attack_risks", pd.DataFrame())
    if tab is None or tab.empty:
        why = (data.settings or {}).get("membership_inference")
        if not why:
            return ""
        return ("<section id='attacks'><h2>Membership inference</h2><p class='note'>Membership inference "
                + html.escape(str(why)) + ". The singling-out, linkability and inference risks (anonymeter) need "
                "the same holdout as their control set.</p></section>")
    measures = [c for c in tab.columns if c != "method" and not c.endswith(("_ci_low", "_ci_high"))]
    head = "".join(f"<th>{html.escape(_attack_label(c))}</th>" for c in measures)
    rows = []
    for _, r in tab.iterrows():
        cls = " class='ref'" if str(r["method"]).startswith("reference:") else ""
        cells = "".join(f"<td>{format_estimate(r[c])} [{format_estimate(r.get(c + '_ci_low'))}, "
                        f"{format_estimate(r.get(c + '_ci_high'))}]</td>" for c in measures)
        rows.append(f"<tr{cls}><td>{html.escape(str(r['method']))}</td>{cells}</tr>")
    notes = "".join(f"<li><b>{html.escape(k)}</b>: {html.escape(v)}.</li>"
                    for k, v in (getattr(data, "attack_notes", {}) or {}).items())
    title = ("Membership inference, singling out, linkability and inference" if any("[" in c for c in measures)
             else "Membership inference")
    return (f"<section id='attacks'><h2>{title}</h2>"
            f"<table><thead><tr><th>release</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
            "<p class='note'>Can an intruder tell whether a person was in the data the release was made from? "
            "Each attack scores training records and real records of the population that were not used (the "
            "holdout), in equal numbers. <b>AUC</b>: the chance that the attack ranks a random training record "
            "above a random unused one; 0.5 is guessing, 1 recognises every training record. <b>TPR at FPR "
            "0.01</b>: the share of training records the intruder picks out while wrongly accusing 1% of the "
            "others (0.01 is guessing): a few records can be exposed even when the AUC is near 0.5. Each attack "
            "uses all the released copies at once (as an intruder holding the release would), with a 95% "
            "bootstrap interval over the records attacked (for the TPR, widened to contain the exact binomial "
            "interval of the training records picked out, which cannot collapse to [0, 0]). "
            + html.escape(PARTIAL_RELEASE_NOTE) + ". Reference rows: the original "
            "released as is (the worst case) and an independent release (real records of the population not "
            "used for synthesis, released in its place: the level of no membership signal). "
            + (_ANONYMETER_NOTE if any("[" in c for c in measures) else "")
            + f"What each attack assumes the intruder knows:</p><ul class='note'>{notes}</ul></section>")


#: the anonymeter columns' explanation (Giomi et al. 2023)
_ANONYMETER_NOTE = (
    "<b>Singling out, linkability, inference</b> (anonymeter's definitions, Giomi et al. 2023, after the "
    "Article 29 Working Party's anonymisation criteria): each attack is run against the people the release was "
    "made from and against the holdout (the control: same population, not used); the <b>risk</b> is how much "
    "more often it succeeds on the first, as a share of the room left above the control's success rate: 0 = "
    "the release exposes its own people no more than strangers, 1 = every attack succeeds. The risk and its "
    "95% interval are anonymeter's on the counts pooled over the copies. ")


def _attack_label(column: str) -> str:
    if "[" in column:  # anonymeter: singling_out[univariate], linkability[k=1], inference[<secret>]
        attack, _, what = column.partition("[")
        what = what[:-1]
        if attack == "inference":
            return f"inference of {what}: risk"
        if attack == "linkability":
            return "linkability: risk"
        return f"{attack.replace('_', ' ')} ({what}): risk"
    attack, _, figure = column.partition("_")
    return f"{attack}: {_ATTACK_LABELS.get(figure, figure)}"
def _frontier_battery_html(fr: pd.DataFrame | None) -> str:
    """The frontier file's points judged by the battery: figure and table, each criterion with its MC SE."""
    if fr is None or fr.empty or "battery_ci_overlap" not in fr:
        return ""
    pts = fr.copy()
    pts["method"] = pts["method"].astype(str).str.replace("frontier: ", "", regex=False)
    png = figures.to_png(figures.battery_map(pts, title="Frontier points judged by the battery"))
    crit = ["battery_ci_overlap", "mean_ci_overlap", "worst_one_way_s_pmse", "worst_two_way_s_pmse",
            "overall_s_pmse", "expected_matches", "true_match_rate"]
    shown = [c for c in crit if c in pts]
    t = pts[pts["method"] != "reference"].set_index(["method", "setting"])
    out = pd.DataFrame(index=t.index)
    for c in shown:
        se = t.get(f"{c}_se")
        out[c] = [format_estimate(v) + ("" if se is None or not np.isfinite(e) else f" \u00b1 {format_estimate(e)}")
                  for v, e in zip(t[c], se if se is not None else [np.nan] * len(t))]
    return (png_img(png, "battery against risk")
            + "<p class='note'>The frontier's points by the battery: left, mean CI overlap over the declared and "
              "generic analyses; right, the worst one-way (filled) and two-way (open) table S_pMSE, the dashed line "
              "the table rule above which 'synthmi tune' calls a release infeasible. Each figure is the mean over "
              "replicate seeds &plusmn; its Monte Carlo SE.</p>" + frame_to_html(out))


def _extra_sections(data: "ReportData") -> dict[str, str]:
    """The release descriptions, the risk-utility map, two-way S_pMSE heat map and attribute disclosure."""
    out = {"releases": "", "frontier": "", "two_way": "", "attribute": "", "no_alignment": "", "no_alignment_note": ""}
    na = getattr(data, "no_alignment", pd.DataFrame())
    if na is not None and not na.empty:
        labels = ", ".join(html.escape(str(m)) for m in na["method"])
        out["no_alignment_note"] = (
            f"<p class='note'>Fully synthetic releases ({labels}) are not matched record by record: none of their "
            "rows belongs to an original record. See <a href='#no-alignment'>risk without row alignment</a>.</p>")
        out["no_alignment"] = (
            "<section id='no-alignment'><h2>Risk without row alignment (fully synthetic releases)</h2>"
            + frame_to_html(na.set_index("method"), digits=4)
            + "<p class='note'><b>DCR</b>: Gower distance from a synthetic record to its closest original record "
              "(numeric columns scaled by their range, categories 0/1), for a sample of 2,000 synthetic records, "
              "beside the same distance for baseline records (real records not used for the release when a "
              "holdout is given, else each original record's closest other record). <b>Closer than baseline 5%</b>: "
              "share of synthetic records closer to the original than the baseline's 5% quantile; about 0.05 when "
              "the release is no closer to the original than new records of the population would be. "
              "<b>Exact copies</b>: share at distance 0. <b>repU</b>: share of original records unique on the "
              "quasi-identifiers and unique with the same values in a copy; <b>DiSCO</b> / <b>DCAP</b>: attribute "
              "disclosure of the target (see the attribute section for the definitions). Means over copies.</p></section>")
    releases = getattr(data, "releases", {}) or {}
    if releases:
        out["releases"] = ("<section id='releases'><h2>What each release is, in plain language</h2>"
                           + _releases_html(releases) + "</section>")
    refs = getattr(data, "references", pd.DataFrame())
    pts = data.summary.assign(setting=data.summary["method"])
    if not refs.empty:
        r = refs.assign(setting=refs["method"].str.replace("reference: ", "", regex=False)
                        .map({"original released as is": "original", "independent release": "independent"}),
                        method="reference")
        pts = pd.concat([pts, r], ignore_index=True)
    fr = getattr(data, "frontier", pd.DataFrame())
    note = ""
    if fr is not None and not fr.empty:
        fr = fr[fr["method"] != "reference"].assign(method=lambda d: "frontier: " + d["method"].astype(str))
        pts = pd.concat([fr, pts], ignore_index=True)
        note = " Points labelled 'frontier:' are other tuning settings of each method on these data (from the frontier file)."
    if "expected_matches" in pts:
        pts = pts[np.isfinite(pd.to_numeric(pts["expected_matches"], errors="coerce"))]
    # only when some release of this report has record-level risk (fully synthetic ones have none)
    has_release = bool(len(pts)) and bool((pts["method"].isin(data.summary["method"])).any())
    if "expected_matches" in pts and "mean_ci_overlap" in pts and has_release:
        png = figures.to_png(figures.frontier_plot(pts, ("expected_matches", "true_match_rate"),
                                                   title="Risk-utility map of these releases"))
        out["frontier"] = (f"<section id='frontier'><h2>Risk-utility map</h2>{png_img(png, 'risk-utility map')}"
                           "<p class='note'>Each release as a point: utility (mean CI overlap of the analysis) against "
                           "re-identification risk (left: expected correct matches; right: true-match rate). The "
                           "black star is the original released as is, the grey star an independent release "
                           "(each quasi-identifier permuted on its own: no record-level information). A release "
                           "above and to the left of another is better on both counts (Duncan, Keller-McNulty "
                           f"and Stokes 2001).{note}</p>" + _frontier_battery_html(fr) + "</section>")
    tw = getattr(data, "pmse_two_way", {}) or {}
    if tw:
        png = figures.to_png(figures.pmse_heatmap(tw))
        out["two_way"] = ("<h3 style='font-size:14px;margin:10px 0 2px 0'>Two-way tables</h3>"
                          + png_img(png, "two-way S_pMSE heat map")
                          + "<p class='note'>S_pMSE of every two-way table (continuous variables in 5 bins), mean "
                            "over copies (synthpop's utility.tables). Red: the copies miss that pair's association; "
                            "blue: closer to the original than a draw from a fitted model would be.</p>")
    att = getattr(data, "attribute", pd.DataFrame())
    if att is not None and not att.empty:
        t = att.set_index("method")
        html_t = frame_to_html(t, digits=4)
        for name in [m for m in att["method"] if str(m).startswith("reference:")]:
            esc = html.escape(str(name))
            html_t = html_t.replace(f"<tr><td>{esc}</td>", f"<tr class='ref'><td>{esc}</td>")
        tgt = html.escape(str(data.settings.get("target")))
        warn = "".join(f"<p class='note flag'>{html.escape(str(label))}: {html.escape(w)}</p>"
                       for label, r in (getattr(data, "releases", {}) or {}).items()
                       for w in r.get("attribute_warnings") or [])
        out["attribute"] = (
            f"<section id='attribute'><h2>Attribute disclosure of <code>{tgt}</code></h2>{warn}{html_t}"
            "<p class='note'>The intruder knows a person's quasi-identifiers and looks them up in a copy to learn "
            f"<code>{tgt}</code>. <b>DiSCO</b>: share of original records whose key shows one value of the target in "
            "the copy, and it is the person's own (synthpop's disclosure(); keys compared exactly"
            + (f", each continuous quasi-identifier cut into {int(data.settings['ngroups_keys'])} groups of the original "
               "and copies pooled (synthpop's ngroups_keys)" if data.settings.get("ngroups_keys") else "")
            + (f", the target cut into {int(data.settings['ngroups_target'])} groups of the original and copies "
               "pooled (synthpop's ngroups_target)" if data.settings.get("ngroups_target") else "")
            + "). <b>DCAP</b>: mean "
            "share of the key's synthetic records carrying the person's value. <b>TCAP</b> = DiSCO / share of records "
            "with a one-valued key. <b>repU</b>: records unique on the keys in both the original and the copy "
            "(identity). <b>Mean attribute risk A_i</b>: chance that a random matching record (the re-identification "
            "matching rule, with its tolerance) carries the person's value. All are means over copies; compare with "
            "the reference rows: a frequent target value is 'disclosed' even by an independent release.</p></section>")
    return out


def write_report(data: "ReportData", path: str | Path) -> Path:
    """Render and write the report; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(data), encoding="utf-8")
    return path
