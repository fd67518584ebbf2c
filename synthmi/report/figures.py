"""Matplotlib figures for the disclosure review report and the paper exhibits.

Every function takes plain, already-aggregated tables (coefficients, risk
values, tuning curves) and returns a :class:`matplotlib.figure.Figure`; none
of them sees a confidential row. :func:`to_png` turns a figure into PNG bytes
(for base64 embedding in the HTML report) and :func:`save_png` writes one to
disk with fixed metadata so that re-runs produce the same file.
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import Mapping, Sequence

import matplotlib
from ..errors import ParameterError

matplotlib.use("Agg")  # headless: the report and `make figures` never open a window

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

__all__ = [
    "battery_map",
    "coefficient_plot",
    "risk_histogram",
    "tuning_curves",
    "line_plot",
    "frontier_plot",
    "pmse_heatmap",
    "to_png",
    "save_png",
    "METHOD_COLORS",
]

#: one colour per method across every exhibit, so a reader can follow a method between figures
METHOD_COLORS = {
    "original": "#000000",
    "unperturbed": "#000000",
    "dami": "#1b9e77",
    "da-mi": "#1b9e77",
    "cart": "#d95f02",
    "rubin": "#7570b3",
    "norm+logit": "#7570b3",
    "risk-dami": "#e7298a",
    "bootstrap": "#66a61e",
}
_FALLBACK = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d"]

# Fixed PNG metadata: matplotlib otherwise stamps its version only, but being
# explicit keeps files byte-stable across runs of the same environment.
_PNG_META = {"Software": "synthmi"}


def _color(name: str, i: int) -> str:
    return METHOD_COLORS.get(str(name).lower(), _FALLBACK[i % len(_FALLBACK)])


def _palette(names) -> dict[str, str]:
    """A distinct colour per name: the fixed colour of a known method, else an unused one."""
    out: dict[str, str] = {}
    for n in names:
        c = METHOD_COLORS.get(str(n).lower())
        if c is not None and c not in out.values():
            out[n] = c
    spare = [c for c in _FALLBACK + ["#1f78b4", "#b15928", "#6a3d9a", "#999999"] if c not in out.values()]
    for n in names:
        if n not in out:
            out[n] = spare.pop(0) if spare else "#333333"
    return out


def _log_x_at(ax, values: pd.Series) -> None:
    """Log x axis ticked exactly at the settings plotted (e.g. sigma_e = 1, 2, 4, ...)."""
    ax.set_xscale("log")
    xs = sorted(values.dropna().unique())
    ax.set_xticks(xs)
    ax.set_xticklabels([f"{v:g}" for v in xs])
    ax.minorticks_off()


def to_png(fig: Figure, dpi: int = 110) -> bytes:
    """PNG bytes of ``fig`` (the figure is closed afterwards)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata=_PNG_META, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def save_png(fig: Figure, path: str | Path, dpi: int = 110) -> Path:
    """Write ``fig`` as PNG to ``path`` and close it."""
    path = Path(path)
    path.write_bytes(to_png(fig, dpi=dpi))
    return path


def coefficient_plot(coef: pd.DataFrame, title: str | None = None) -> Figure:
    """Original vs combined-synthetic estimates with their confidence intervals.

    Parameters
    ----------
    coef : DataFrame
        One row per (method, term) with columns ``method``, ``term``,
        ``est_orig``, ``ci_lower_orig``, ``ci_upper_orig``, ``est_syn``,
        ``ci_lower_syn``, ``ci_upper_syn`` (the layout of
        ``AnalysisResults.to_frame()`` with a ``method`` column added).
    """
    need = ["method", "term", "est_orig", "ci_lower_orig", "ci_upper_orig", "est_syn", "ci_lower_syn", "ci_upper_syn"]
    missing = [c for c in need if c not in coef.columns]
    if missing:
        raise ParameterError(f"The 'coef' parameter of coefficient_plot is missing columns {missing}.", parameter='coef', owner='coefficient_plot')
    methods = list(dict.fromkeys(coef["method"]))
    terms = list(dict.fromkeys(coef["term"]))
    n_series = len(methods) + 1
    height = 0.8 / n_series
    fig, ax = plt.subplots(figsize=(7.5, min(7.0, 0.16 * len(terms) * n_series + 1.2)))
    orig = coef.drop_duplicates("term").set_index("term").loc[terms]
    y0 = np.arange(len(terms))[::-1].astype(float)

    def draw(y, est, lo, hi, color, label, marker):
        ax.errorbar(est, y, xerr=[est - lo, hi - est], fmt=marker, color=color, ecolor=color,
                    capsize=3, lw=1.4, ms=5, label=label)

    draw(y0 + 0.4 - height / 2, orig["est_orig"].to_numpy(float), orig["ci_lower_orig"].to_numpy(float),
         orig["ci_upper_orig"].to_numpy(float), "#000000", "original", "s")
    colors = _palette(methods)
    for i, m in enumerate(methods):
        sub = coef[coef["method"] == m].set_index("term").reindex(terms)
        y = y0 + 0.4 - height * (i + 1.5)
        draw(y, sub["est_syn"].to_numpy(float), sub["ci_lower_syn"].to_numpy(float),
             sub["ci_upper_syn"].to_numpy(float), colors[m], str(m), "o")
    ax.axvline(0.0, color="#999999", lw=0.8, ls=":")
    ax.set_yticks(y0)
    ax.set_yticklabels(terms)
    ax.set_xlabel("coefficient (95% CI)")
    ax.legend(loc="best", fontsize=8, frameon=False)
    ax.set_title(title or "Original vs combined synthetic estimates")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def risk_histogram(
    individual: Mapping[str, Sequence[float]],
    subgroups: Sequence[str] | None = None,
    title: str | None = None,
) -> Figure:
    """Histogram of the record-level re-identification risk I_i per method.

    ``individual`` maps a method name to the I_i values (one per original
    record). With ``subgroups`` (low / medium / high label per record, in the
    same order) each method's histogram is stacked by risk subgroup. The
    y-axis is logarithmic because most records have I_i = 0.
    """
    names = list(individual)
    if not names:
        raise ParameterError("The 'individual' parameter of risk_histogram must hold at least one method.", parameter='individual', owner='risk_histogram')
    bins = np.linspace(0.0, 1.0, 21)
    fig, axes = plt.subplots(1, len(names), figsize=(3.6 * len(names) + 0.6, 3.2), sharey=True, squeeze=False)
    sub_colors = {"low": "#a6d96a", "medium": "#fdae61", "high": "#d7191c"}
    for j, name in enumerate(names):
        ax = axes[0, j]
        vals = np.asarray(individual[name], dtype=float)
        if subgroups is not None:
            labels = np.asarray(pd.Series(subgroups).astype(str))
            groups = [g for g in ("low", "medium", "high") if np.any(labels == g)]
            ax.hist([vals[labels == g] for g in groups], bins=bins, stacked=True,
                    color=[sub_colors[g] for g in groups], label=[f"{g} risk" for g in groups])
            ax.legend(fontsize=7, frameon=False, title="subgroup (original)", title_fontsize=7)
        else:
            ax.hist(vals, bins=bins, color=_color(name, j))
        ax.set_yscale("log")
        ax.set_xlabel("$I_i$ (probability of correct match)")
        ax.set_title(f"{name}: sum $I_i$ = {vals.sum():.1f}", fontsize=9)
    axes[0, 0].set_ylabel("records (log scale)")
    fig.suptitle(title or "Record-level re-identification risk", fontsize=10)
    fig.tight_layout()
    return fig


def tuning_curves(
    table: pd.DataFrame,
    value: str,
    x: str = "sigma_e",
    line: str = "K",
    panel: str = "M",
    references: pd.DataFrame | None = None,
    ylabel: str | None = None,
    title: str | None = None,
    logx: bool = True,
) -> Figure:
    """Curves of ``value`` against the masking tuning, one panel per M.

    ``table`` has columns ``panel`` (e.g. M), ``x`` (e.g. sigma_e), ``line``
    (e.g. K), ``value`` and optionally ``value + "_se"`` (Monte Carlo standard
    error, drawn as a band). ``references`` (columns ``panel``, ``method``,
    ``value``) adds horizontal lines for methods without tuning (CART,
    norm+logit).
    """
    panels = sorted(table[panel].unique())
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.6), sharey=True, squeeze=False)
    lines = sorted(table[line].unique())
    cmap = plt.get_cmap("viridis")
    for j, pv in enumerate(panels):
        ax = axes[0, j]
        sub = table[table[panel] == pv]
        for i, lv in enumerate(lines):
            s = sub[sub[line] == lv].sort_values(x)
            col = cmap(i / max(1, len(lines) - 1) * 0.85)
            ax.plot(s[x], s[value], "o-", color=col, lw=1.6, ms=4, label=f"{line} = {lv}")
            if f"{value}_se" in s:
                se = s[f"{value}_se"].to_numpy(float)
                ax.fill_between(s[x], s[value] - 2 * se, s[value] + 2 * se, color=col, alpha=0.15, lw=0)
        if references is not None:
            ref = references[references[panel] == pv]
            for i, (_, r) in enumerate(ref.iterrows()):
                ax.axhline(r[value], color=_color(r["method"], i + 3), ls="--", lw=1.2, label=str(r["method"]))
        if logx:
            _log_x_at(ax, sub[x])
        ax.set_xlabel({"sigma_e": r"masking noise $\sigma_e$"}.get(x, x))
        ax.set_title(f"{panel} = {pv}", fontsize=10)
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel(ylabel or value)
    axes[0, -1].legend(fontsize=7, frameon=False, loc="best")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def line_plot(
    table: pd.DataFrame,
    x: str,
    y: str,
    group: str,
    panel: str | None = None,
    logx: bool = False,
    logy: bool = False,
    ylabel: str | None = None,
    title: str | None = None,
    references: Mapping[str, float] | None = None,
) -> Figure:
    """Generic grouped line plot (DP accuracy vs eps, TVD vs eps, ...).

    Rows with the same ``x`` and ``group`` (e.g. several seeds) are averaged.
    ``references`` draws labelled horizontal lines (published peers).
    """
    panels = [None] if panel is None else list(dict.fromkeys(table[panel]))
    ncols = len(panels) if len(panels) <= 2 else 2
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols + 0.4, 3.3 * nrows + 0.3), squeeze=False, sharey=True)
    flat = axes.ravel()
    for ax in flat[len(panels):]:
        ax.set_visible(False)
    for j, pv in enumerate(panels):
        ax = flat[j]
        sub = table if pv is None else table[table[panel] == pv]
        colors = _palette([str(g) for g in dict.fromkeys(table[group])])
        for i, (g, s) in enumerate(sub.groupby(group, sort=False)):
            agg = s.groupby(x, as_index=False)[y].mean().sort_values(x)
            ax.plot(agg[x], agg[y], "o-", color=colors[str(g)], lw=1.5, ms=4, label=str(g))
        for k, (name, v) in enumerate((references or {}).items()):
            ax.axhline(v, color="#777777", ls=[":", "--", "-."][k % 3], lw=1, label=name)
        if logx:
            _log_x_at(ax, sub[x])
        if logy:
            ax.set_yscale("log")
        ax.set_xlabel(x)
        if pv is not None:
            ax.set_title(f"{panel} = {pv}", fontsize=9)
        ax.grid(alpha=0.3)
    for r in range(nrows):
        axes[r, 0].set_ylabel(ylabel or y, fontsize=9)
    flat[0].legend(fontsize=7, frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


_RISK_LABELS = {
    "expected_matches": "expected correct matches (sum of I_i)",
    "true_match_rate": "true-match rate (unique correct matches / N M)",
    "disco": "DiSCO (share of records whose target is disclosed)",
    "high_risk_mean_risk": "mean I_i, high-risk subgroup",
}


def frontier_plot(
    points: pd.DataFrame,
    risks: Sequence[str] = ("expected_matches", "true_match_rate"),
    utility: str = "mean_ci_overlap",
    title: str | None = None,
    front: pd.Series | None = None,
) -> Figure:
    """The R-U confidentiality map (Duncan, Keller-McNulty and Stokes 2001): one panel per risk.

    ``points`` has ``method``, ``setting``, the measures and their Monte Carlo
    standard errors (``<measure>_se``, drawn as error bars in both
    directions); rows with ``method == "reference"`` are drawn as black
    (original released as is) and grey (independent release) stars. Points
    on the non-dominated front (``front``, e.g. from
    :func:`synthmi.evaluation.frontier.pareto_front`) are ringed. A
    reference below the methods' utility range is pinned to the bottom edge
    and its value given in the legend. x axes are symmetric-log (risk can be 0).
    """
    ref = points[points["method"] == "reference"]
    pts = points[points["method"] != "reference"]
    methods = list(dict.fromkeys(pts["method"]))
    colors = _palette(methods)
    fig, axes = plt.subplots(1, len(risks), figsize=(5.2 * len(risks), 4.2), squeeze=False, sharey=True)
    u = pts[utility].to_numpy(dtype=float)
    lo = np.nanmin(u) - 0.06 if len(u) else 0.0
    hi = max(1.02, np.nanmax(u) + 0.02) if len(u) else 1.0
    for ax, risk in zip(axes[0], risks):
        for mth in methods:
            s = pts[pts["method"] == mth]
            ax.errorbar(s[risk], s[utility], xerr=s.get(f"{risk}_se"), yerr=s.get(f"{utility}_se"), fmt="o",
                        ms=4.5, color=colors[mth], ecolor=colors[mth], elinewidth=0.8, capsize=2, label=mth, alpha=0.9)
            if front is not None:
                on = s[front.reindex(s.index).fillna(False).to_numpy(dtype=bool)]
                ax.plot(on[risk], on[utility], "o", ms=9, mfc="none", mec="#000000", mew=0.9)
        for _, r in ref.iterrows():
            yv = float(r[utility])
            shown = min(max(yv, lo + 0.01), hi)
            col = "#000000" if r["setting"] == "original" else "#888888"
            lab = f"{r['setting']} (reference)" + ("" if yv == shown else f", overlap {yv:.2f} off scale")
            ax.plot([r[risk]], [shown], "*", ms=13, color=col, label=lab, zorder=5)
        ax.set_xscale("symlog", linthresh=1.0 if risk == "expected_matches" else 1e-4)
        ax.set_xlabel(_RISK_LABELS.get(risk, risk), fontsize=9)
        ax.set_ylim(lo, hi)
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel({"mean_ci_overlap": "mean CI overlap (higher = more useful)",
                           "s_pmse": "S_pMSE (1 = as from the correct model; below 1: near-copies)",
                           "s_pmse_log_distance": "|log S_pMSE| (lower = closer to the correct model)"}.get(utility, utility),
                          fontsize=9)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if front is not None:
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], marker="o", ls="", ms=9, mfc="none", mec="#000000"))
        labels.append("non-dominated (on the frontier)")
    axes[0, -1].legend(handles, labels, fontsize=7, frameon=False, loc="lower right")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def battery_map(points: pd.DataFrame, risk: str = "expected_matches", bound: float | None = 10.0,
                title: str | None = None) -> Figure:
    """The battery beside risk: mean CI overlap over the battery (left) and the worst one- and
    two-way table S_pMSE (right, log scale, 1 = the null; the dashed line is the table rule's
    ``bound``) against ``risk``, each point with its Monte Carlo SE bars. References (``method ==
    "reference"``) are left out: the original has S_pMSE 0 by construction."""
    pts = points[points["method"] != "reference"]
    methods = list(dict.fromkeys(pts["method"]))
    colors = _palette(methods)
    fig, axes = plt.subplots(1, 2, figsize=(10.4, 4.2), squeeze=False)
    ax_u, ax_s = axes[0]
    for mth in methods:
        s = pts[pts["method"] == mth]
        x, xe = s[risk], s.get(f"{risk}_se")
        ax_u.errorbar(x, s["battery_ci_overlap"], xerr=xe, yerr=s.get("battery_ci_overlap_se"), fmt="o", ms=4.5,
                      color=colors[mth], elinewidth=0.8, capsize=2, label=mth, alpha=0.9)
        for col, mk in (("worst_one_way_s_pmse", "o"), ("worst_two_way_s_pmse", "s")):
            if col in s:
                ax_s.errorbar(x, s[col], xerr=xe, yerr=s.get(f"{col}_se"), fmt=mk, ms=4.5, color=colors[mth],
                              mfc="none" if mk == "s" else colors[mth], elinewidth=0.8, capsize=2, alpha=0.9)
    if bound is not None:
        ax_s.axhline(bound, ls="--", color="#aa0000", lw=0.9, label=f"table rule: infeasible above {bound:g}")
    ax_s.axhline(1.0, ls=":", color="#555555", lw=0.8)
    ax_s.set_yscale("log")
    for ax in (ax_u, ax_s):
        ax.set_xscale("symlog", linthresh=1.0 if risk == "expected_matches" else 1e-4)
        ax.set_xlabel(_RISK_LABELS.get(risk, risk), fontsize=9)
        ax.grid(alpha=0.3)
    ax_u.set_ylabel("mean CI overlap over the battery (declared + generic)", fontsize=9)
    ax_s.set_ylabel("worst table S_pMSE (filled: one-way, open: two-way)", fontsize=9)
    ax_u.legend(fontsize=7, frameon=False, loc="lower right")
    ax_s.legend(fontsize=7, frameon=False, loc="upper right")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def pmse_heatmap(tables: Mapping[str, pd.DataFrame], title: str | None = None) -> Figure:
    """Two-way table S_pMSE as heat maps, one panel per release (synthpop's ``utility.tables`` plot).

    The colour scale is logarithmic and centred on 1 (the null of a copy from a
    fitted model): blue below (closer to the original than a model draw), red
    above (the copies miss that pair's association). Cells show the values.
    """
    from matplotlib.colors import LogNorm

    names = list(tables)
    n = max(len(names), 1)
    size = max(len(next(iter(tables.values()))) if tables else 1, 1)
    fig, axes = plt.subplots(1, n, figsize=(0.55 * size * n + 1.6 * n, 0.55 * size + 1.4), squeeze=False)
    vals = np.concatenate([t.to_numpy(dtype=float).ravel() for t in tables.values()]) if tables else np.array([1.0])
    vals = vals[np.isfinite(vals) & (vals > 0)]
    # symmetric log range around 1, at least 10x either way, at most 1000x
    span = min(max(1.0, float(np.nanmax(np.abs(np.log10(vals))))), 3.0) if len(vals) else 1.0
    norm = LogNorm(vmin=10 ** -span, vmax=10 ** span)
    im = None
    for ax, name in zip(axes[0], names):
        t = tables[name]
        a = t.to_numpy(dtype=float)
        shown = np.where(np.isfinite(a) & (a > 0), a, np.nan)
        im = ax.imshow(np.clip(shown, 10 ** -span, 10 ** span), cmap="RdBu_r", norm=norm)
        ax.set_xticks(range(len(t.columns)))
        ax.set_xticklabels(t.columns, rotation=45, ha="right", fontsize=7)
        ax.set_yticks(range(len(t.index)))
        ax.set_yticklabels(t.index, fontsize=7)
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                if np.isfinite(a[i, j]):
                    ax.text(j, i, f"{a[i, j]:.2g}", ha="center", va="center", fontsize=6)
        ax.set_title(str(name), fontsize=9)
    if im is not None:
        fig.colorbar(im, ax=list(axes[0]), shrink=0.8, label="two-way S_pMSE (1 = null)")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig
