r"""Singling-out risk: does the release let an intruder isolate one person of the original?

Giomi et al. (2023), "A Unified Framework for Quantifying Privacy Risk in Synthetic
Data", PoPETs 2023(2), section 4.1 (after Cohen & Nissim 2020, "Towards formalizing
the GDPR's notion of singling out", PNAS); ``anonymeter.evaluators.singling_out_evaluator``
(1.1.0), the reference implementation this module follows.

The intruder writes predicates from the synthetic records and claims each one
describes exactly one person of the original. A predicate *singles out* a data set
when exactly one of its (distinct) records satisfies it. Predicates:

* **univariate**: for each column, ``is missing`` when exactly one synthetic record
  misses it; for a numeric column ``<= min`` and ``>= max``; ``== v`` for each value
  held by one synthetic record. Shuffled; those singling out the (deduplicated)
  release are kept, at most ``n_attacks``.
* **multivariate**: a random synthetic record and ``n_cols`` random columns give a
  conjunction of one term per column: ``is missing``; ``== v`` for a categorical or
  boolean column; for a numeric one ``>= v`` when :math:`v` is above the column's
  median in the release, else ``<= v`` (toward the extreme, where singling out is
  likelier). Generated in batches of 1000 until ``n_attacks`` distinct predicates
  single out the release (or ``max_attempts`` records were tried).

The main success count is the number of these predicates that single out the
(deduplicated) original; the control count the number singling out the
(deduplicated) control, rescaled when the two sizes differ (below); the naive
baseline draws ``n_attacks`` predicates at random (``n_cols`` random columns --
one in univariate mode -- a random value of each among the release's distinct
values, missing included, and a random operator: ``==``/``!=`` for categories, one
of ``== != < > <= >=`` for numbers). Every count is out of ``n_attacks``, also when
fewer predicates could be made (anonymeter warns; ``n_queries`` in the per-copy
rows says so). The risk is anonymeter's

.. math::

    \mathrm{risk} = \frac{\hat r_{\mathrm{main}} - \hat r_{\mathrm{control}}}{1 - \hat r_{\mathrm{control}}}

with Wilson rates and the propagated interval (:mod:`synthmi.evaluation._attack`).

Control of another size. The chance that a predicate singles out depends on the
data set's size, so anonymeter rescales the control count by :math:`f(n_o) / f(n_c)`,
with :math:`f(n) = A\, P(n; 0, w)` and

.. math::

    P(n; w_{\min}, w_{\max}) = \frac{(n w_{\min} + 1)(1 - w_{\min})^n - (n w_{\max} + 1)(1 - w_{\max})^n}{n + 1}

(the integral of the singling-out probability :math:`n w (1-w)^{n-1}` over the
predicate weight :math:`w`), :math:`(A, w)` fitted by least squares to the number of the
predicates that single out subsamples of the control of 10 sizes from
:math:`\min(1000, n_c)` to :math:`n_c`, 5 each (``size_correction="fitted"``, the
default). anonymeter fits with ``scipy.optimize.curve_fit`` from a fixed start; here
:math:`w` is searched on a grid (400 points, log-spaced on :math:`[10^{-7}, 1]`) with
:math:`A` in closed form for each, which finds the global least-squares minimum (on
Adult, curve_fit stopped at the :math:`w = 1` boundary for about half of the copies,
a factor of 0.25 where the others gave 2-3). The factor's own uncertainty is not in
the interval; the between-copy MC error reflects it. On Adult (19,537 training and
4,884 control records, an independent release of 5 copies) the risk was 0.013
(univariate) and 0.056 (multivariate) with this fit, against 0.19-0.20 with 1.1.0's.
The model is an extrapolation: on small frames with continuous columns the fit can
settle in the small-weight regime (factor :math:`n_o/n_c`) and overshoot, making the
residual negative (reported as 0). A control of the original's size needs no
correction and is the reliable design.

In anonymeter 1.1.0 (``_measure_queries_success``) the measured "success" is
``len(_evaluate_queries(...))``, the *number of predicates evaluated*, not the number
that single out: the data never enter the fit, which settles near :math:`w = 1`,
:math:`f(n) \propto 1/(n + 1)`, so the factor is about :math:`(n_c + 1)/(n_o + 1)`
whatever the release. With a control a quarter of the training set's size (an 80/20
holdout) the control count is divided by about 4 and a release independent of the
training records scores a clearly positive risk. ``size_correction="anonymeter-1.1.0"``
reproduces that fit exactly (the same curve_fit on the same constant series), for
comparison with the reference implementation; with a control of the original's size
(after deduplication) no rescaling is made and the two agree. The factor is reported per
copy (``control_size_factor``); a rescaled count is capped at ``n_attacks``.

Missing values: a missing cell satisfies only ``is missing`` (never ``==``, ``!=`` or
an order), as in polars, which anonymeter evaluates its predicates with.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy.optimize import curve_fit

from .._validate import check_option, check_scalar
from ._attack import (
    AttackResult,
    _is_numeric,
    attack_figures,
    check_attack_inputs,
    combine_copies,
    spawn,
)

__all__ = ["singling_out_risk", "singling_out_probability_integral"]

_OWNER = "singling_out_risk"
_BATCH = 1000

_DESCRIBE = (
    "Singling out ({mode}): the intruder writes conditions from the synthetic records (e.g. 'age >= 90 and "
    "occupation == X') that fit exactly one synthetic record, and claims each fits exactly one real person. The "
    "risk is how much more often such a claim holds for the people the release was made from than for people of "
    "the same population who were not in it (the control), as a share of the room left above the control's rate: "
    "0 = the release lets no one be isolated beyond what population patterns allow, 1 = every claim isolates. "
    "The naive baseline (random conditions) shows what chance alone gives."
)


def singling_out_probability_integral(n: Any, w_min: float, w_max: float) -> Any:
    r"""Integral of the singling-out probability :math:`n w (1-w)^{n-1}` over :math:`w \in [w_{\min}, w_{\max}]`.

    .. math::

        \frac{(n w_{\min} + 1)(1 - w_{\min})^n - (n w_{\max} + 1)(1 - w_{\max})^n}{n + 1}

    Source: ``anonymeter.evaluators.singling_out_evaluator.singling_out_probability_integral`` (1.1.0).
    """
    return ((n * w_min + 1) * (1 - w_min) ** n - (n * w_max + 1) * (1 - w_max) ** n) / (n + 1)


def _model(x: Any, w_eff: float, scale: float) -> Any:
    return scale * singling_out_probability_integral(x, 0.0, w_eff)


def _fit_factor(sizes: np.ndarray, successes: np.ndarray, n_control: int, n_original: int) -> float:
    r""":math:`f(n_o) / f(n_c)` with :math:`f = A\,P(n; 0, w)` fitted as anonymeter's ``_fit_model``."""
    w0 = 1.0 / sizes.max()
    p0 = (w0, 1.0 / singling_out_probability_integral(sizes.max(), 0.0, w0))
    popt, _ = curve_fit(_model, xdata=sizes, ydata=successes, bounds=(0, (1, np.inf)), p0=p0)
    f_c = _model(float(n_control), *popt)
    return float(_model(float(n_original), *popt) / f_c) if f_c > 0 else 1.0


def _subsample_sizes(n_control: int) -> np.ndarray:
    # anonymeter's _measure_queries_success: 10 sizes from min(1000, n) to n, 5 draws each
    return np.repeat(np.linspace(min(1000, n_control), n_control, 10).astype(int), 5)


def anonymeter_control_factor(n_queries: int, n_control: int, n_original: int) -> float:
    """anonymeter 1.1.0's rescaling of the control count (``size_correction="anonymeter-1.1.0"``).

    Reproduces ``fit_correction_term`` as released: its "successes" are ``n_queries`` at every
    subsample size (the number of predicates evaluated), so the fit sees no data (module docstring).
    """
    if n_control == n_original or n_queries == 0:
        return 1.0  # equal sizes: no rescaling; no predicate: nothing to rescale (1.1.0 gives 0/0)
    sizes = _subsample_sizes(n_control).astype(float)
    return _fit_factor(sizes, np.full(len(sizes), float(n_queries)), n_control, n_original)


def fitted_control_factor(control: "_Table", queries: tuple, n_original: int,
                          rng: np.random.Generator) -> float:
    """The rescaling fitted to the predicates' singling-out counts on subsamples of the control
    (``size_correction="fitted"``, the default): what anonymeter's ``fit_correction_term`` describes."""
    if control.n == n_original or len(queries[0]) == 0:
        return 1.0
    sizes = _subsample_sizes(control.n)
    draws = [rng.choice(control.n, size=int(m), replace=False) for m in sizes]
    successes = np.zeros(len(sizes))
    cols, ops, vals = queries
    for a in range(0, len(cols), 128):
        # which control records meet each predicate, once; each subsample's count is a column sum
        meets = control._meets(slice(None), cols[a:a + 128], ops[a:a + 128], vals[a:a + 128])
        for j, idx in enumerate(draws):
            successes[j] += np.count_nonzero(meets[:, idx].sum(axis=1) == 1)
    if not successes.any():
        return 1.0  # no predicate singles out the control at any size: 0 either way
    return _grid_fit_factor(sizes.astype(float), successes, control.n, n_original)


def _grid_fit_factor(sizes: np.ndarray, successes: np.ndarray, n_control: int, n_original: int) -> float:
    """The least-squares fit of A P(n; 0, w) over a grid of w (A in closed form for each w): the global
    minimum, where curve_fit from anonymeter's starting point can stop at the w = 1 boundary."""
    best, best_w = np.inf, 1.0
    for w in np.geomspace(1e-7, 1.0, 400):
        p = singling_out_probability_integral(sizes, 0.0, w)
        denom = float(p @ p)
        if denom <= 0:
            continue
        a = float(p @ successes) / denom
        sse = float(((successes - a * p) ** 2).sum())
        if sse < best:
            best, best_w = sse, w
    f_c = singling_out_probability_integral(float(n_control), 0.0, best_w)
    return float(singling_out_probability_integral(float(n_original), 0.0, best_w) / f_c) if f_c > 0 else 1.0


# --------------------------------------------------------------------------- encoding and predicates
# A batch of predicates is three (B, k) arrays: column index, operator code and value (a number, or the
# shared integer code of a category; NaN for "missing"). One term per column per predicate.
_ISNULL, _NOTNULL, _EQ, _NE, _LT, _LE, _GT, _GE = range(8)
_NUM_OPS = np.array([_EQ, _NE, _GT, _LT, _GE, _LE])
_CAT_OPS = np.array([_EQ, _NE])
#: rows scanned in stages: a predicate met twice there cannot single out (most are, so few need a full scan)
_STAGES = (256, 4096)


class _Table:
    """A deduplicated frame as a float matrix: numbers as they are, categories as shared codes, NaN missing."""

    def __init__(self, df: pd.DataFrame, kinds: dict[str, str], levels: dict[str, pd.Index]):
        self.n = len(df)
        # a fixed shuffle (not the caller's stream: it changes no result, only how soon a
        # predicate is found to match twice; see singles_out)
        df = df.iloc[np.random.default_rng(0).permutation(len(df))]
        cols = []
        for c, kind in kinds.items():
            if kind == "numerical":
                cols.append(df[c].to_numpy(dtype=float, na_value=np.nan))
            else:
                codes = levels[c].get_indexer(df[c].astype(object)).astype(float)
                codes[codes < 0] = np.nan
                cols.append(codes)
        # column-major: each stage reads whole columns
        self.A = np.asfortranarray(np.column_stack(cols)) if cols else np.empty((len(df), 0))

    def _meets(self, rows: slice, cols: np.ndarray, ops: np.ndarray, vals: np.ndarray) -> np.ndarray:
        """(B, |rows|) boolean: record meets every term of the predicate."""
        acc = np.ones((cols.shape[0], self.A[rows].shape[0]), dtype=bool)
        code = cols * 8 + ops
        for g in np.unique(code):
            qi, ti = np.nonzero(code == g)
            a = self.A[rows, g // 8][None, :]
            v = vals[qi, ti][:, None]
            op = g % 8
            if op == _ISNULL:
                m = np.isnan(a)
            elif op == _NOTNULL:
                m = ~np.isnan(a)
            elif op == _EQ:
                m = a == v
            elif op == _NE:
                m = (a != v) & ~np.isnan(a)  # a missing cell meets no comparison (polars: null)
            else:
                m = {_LT: np.less, _LE: np.less_equal, _GT: np.greater, _GE: np.greater_equal}[op](a, v)
            acc[qi] &= m
        return acc

    def singles_out(self, cols: np.ndarray, ops: np.ndarray, vals: np.ndarray, chunk: int = 512) -> np.ndarray:
        """Whether exactly one record meets each predicate (exact).

        A cascade for speed: a predicate met twice among the first rows cannot single out, so
        each stage scans more rows for the predicates still in doubt (the rows are in a fixed
        shuffled order, so the first ones are a random sample: most predicates drop out early).
        """
        out = np.zeros(cols.shape[0], dtype=bool)
        if cols.shape[0] == 0 or self.n == 0:
            return out
        todo = np.arange(cols.shape[0])
        for stop in _STAGES + (self.n,):
            rows = slice(0, min(stop, self.n))
            count = np.empty(len(todo), dtype=np.int64)
            for a in range(0, len(todo), chunk):
                q = todo[a:a + chunk]
                count[a:a + chunk] = self._meets(rows, cols[q], ops[q], vals[q]).sum(axis=1)
            if stop >= self.n:
                out[todo] = count == 1
                break
            todo = todo[count <= 1]
        return out


def _kinds(df: pd.DataFrame, cols: Sequence[str]) -> dict[str, str]:
    out = {}
    for c in cols:
        s = df[c]
        if pd.api.types.is_bool_dtype(s):
            out[c] = "boolean"
        elif _is_numeric(s):
            out[c] = "numerical"
        else:
            out[c] = "categorical"
    return out


def _levels(frames: list[pd.DataFrame], kinds: dict[str, str]) -> dict[str, pd.Index]:
    levels = {}
    for c, kind in kinds.items():
        if kind == "boolean":
            levels[c] = pd.Index([False, True], dtype=object)  # code 1 = True, as the boolean terms read it
        elif kind == "categorical":
            joined = pd.concat([f[c].astype(object) for f in frames], ignore_index=True)
            levels[c] = pd.Index(pd.unique(joined.dropna()), dtype=object)
    return levels


class _Kept:
    """anonymeter's ``UniqueSinglingOutQueries``: distinct predicates that single out, in arrival order."""

    def __init__(self, max_size: int):
        self.max_size = max_size
        self.seen: set = set()
        self.rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def extend(self, table: _Table, cols: np.ndarray, ops: np.ndarray, vals: np.ndarray) -> None:
        if len(self.rows) >= self.max_size:
            return
        for i in np.flatnonzero(table.singles_out(cols, ops, vals)):
            key = (cols[i].tobytes(), ops[i].tobytes(), np.nan_to_num(vals[i], nan=np.inf).tobytes())
            if key not in self.seen:
                self.seen.add(key)
                self.rows.append((cols[i], ops[i], vals[i]))
                if len(self.rows) >= self.max_size:
                    return

    def arrays(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not self.rows:
            return (np.empty((0, k), dtype=np.int64), np.empty((0, k), dtype=np.int64), np.empty((0, k)))
        return tuple(np.array(x) for x in zip(*self.rows))  # type: ignore[return-value]


def _univariate_queries(syn: _Table, kinds: dict[str, str], n_queries: int, rng: np.random.Generator):
    terms: list[tuple[int, int, float]] = []
    for j, kind in enumerate(kinds.values()):
        a = syn.A[:, j]
        missing = np.isnan(a)
        if missing.sum() == 1:
            terms.append((j, _ISNULL, np.nan))
        if kind == "numerical" and (~missing).any():
            terms += [(j, _LE, float(np.nanmin(a))), (j, _GE, float(np.nanmax(a)))]
        values, counts = np.unique(a[~missing], return_counts=True)
        terms += [(j, _EQ, float(v)) for v in values[counts == 1]]
    cols = [t[0] for t in terms]
    ops = [t[1] for t in terms]
    vals = [t[2] for t in terms]
    order = rng.permutation(len(cols))
    C = np.asarray(cols, dtype=np.int64)[order][:, None]
    O = np.asarray(ops, dtype=np.int64)[order][:, None]
    V = np.asarray(vals, dtype=float)[order][:, None]
    kept = _Kept(n_queries)
    for a in range(0, len(order), _BATCH):  # in the shuffled order, until enough are kept
        kept.extend(syn, C[a:a + _BATCH], O[a:a + _BATCH], V[a:a + _BATCH])
        if len(kept.rows) >= n_queries:
            break
    return kept.arrays(1)


def _pick_columns(rng: np.random.Generator, b: int, n_total: int, k: int) -> np.ndarray:
    """``b`` draws of ``k`` distinct columns (sorted within a draw, as anonymeter sorts them by name)."""
    return np.sort(np.argsort(rng.random((b, n_total)), axis=1)[:, :k], axis=1)


def _multivariate_queries(syn: _Table, kinds: dict[str, str], n_queries: int, n_cols: int,
                          max_attempts: int, rng: np.random.Generator):
    numeric = np.array([k == "numerical" for k in kinds.values()])
    with np.errstate(all="ignore"):
        medians = np.array([np.nanmedian(syn.A[:, j]) if numeric[j] and (~np.isnan(syn.A[:, j])).any()
                            else np.nan for j in range(syn.A.shape[1])])
    kept = _Kept(n_queries)
    attempts = 0
    batch = min(_BATCH, max_attempts)
    while len(kept.rows) < n_queries and attempts < max_attempts:
        rows = rng.integers(0, syn.n, size=batch)
        cols = _pick_columns(rng, batch, syn.A.shape[1], n_cols)
        vals = syn.A[rows[:, None], cols]
        is_num = numeric[cols]
        with np.errstate(invalid="ignore"):
            up = vals > medians[cols]  # toward the extreme: >= above the median, <= otherwise
        ops = np.where(is_num, np.where(up, _GE, _LE), _EQ)
        ops = np.where(np.isnan(vals), _ISNULL, ops)
        kept.extend(syn, cols, ops, vals)
        attempts += batch
    return kept.arrays(n_cols)


def _random_queries(syn: _Table, kinds: dict[str, str], n_queries: int, n_cols: int,
                    rng: np.random.Generator):
    """anonymeter's ``_random_queries``: the naive attacker's predicates."""
    kind_list = list(kinds.values())
    cols = _pick_columns(rng, n_queries, len(kind_list), n_cols)
    vals = np.empty(cols.shape)
    ops = np.empty(cols.shape, dtype=np.int64)
    for j, kind in enumerate(kind_list):
        at = cols == j
        m = int(at.sum())
        if m == 0:
            continue
        a = syn.A[:, j]
        uniq = np.unique(a[~np.isnan(a)])
        if np.isnan(a).any():
            uniq = np.append(uniq, np.nan)  # a missing value is one of the distinct values
        v = uniq[rng.integers(len(uniq), size=m)]
        choices = _NUM_OPS if kind == "numerical" else _CAT_OPS
        op = choices[rng.integers(len(choices), size=m)]
        if kind == "boolean":
            # anonymeter: `pl.col(c)` for ==, `~pl.col(c)` for != (the drawn value is not used)
            v = np.where(op == _EQ, 1.0, 0.0) + np.where(np.isnan(v), np.nan, 0.0)
            op = np.where(np.isnan(v), op, _EQ)
        op = np.where(np.isnan(v), np.where(op == _EQ, _ISNULL, _NOTNULL), op)
        vals[at], ops[at] = v, op
    return cols, ops, vals


def singling_out_risk(
    original: pd.DataFrame,
    synthetic: Any,
    control: pd.DataFrame,
    *,
    mode: str = "univariate",
    n_attacks: int = 500,
    n_cols: int = 3,
    columns: Sequence[str] | None = None,
    confidence_level: float = 0.95,
    random_state: Any = None,
    max_attempts: int = 1_000_000,
    size_correction: str = "fitted",
) -> AttackResult:
    r"""Singling-out risk of a release (anonymeter's singling-out attack, control-corrected).

    .. math::

        \mathrm{risk} = \frac{\hat r_{\mathrm{main}} - \hat r_{\mathrm{control}}}{1 - \hat r_{\mathrm{control}}}

    :math:`\hat r` the Wilson estimates of the share of the ``n_attacks`` predicates that single out
    the original (main) and the control (rescaled to the original's size). Source: Giomi et al.
    (2023), PoPETs 2023(2), section 4.1; ``anonymeter.evaluators.SinglingOutEvaluator`` (1.1.0).

    Parameters
    ----------
    original, synthetic, control : DataFrame
        As :func:`~synthmi.evaluation.linkability_risk`; ``synthetic`` may be a sequence of copies.
        Each is deduplicated first (a predicate singles out distinct records), as in anonymeter.
    mode : {"univariate", "multivariate"}
        The predicates (module docstring). anonymeter's ``evaluate()`` defaults to multivariate;
        a review usually runs both.
    n_attacks : int
        Predicates sought (and the denominator of every rate); anonymeter's default 500.
    n_cols : int
        Columns per multivariate predicate (and per naive one in that mode).
    columns : list of str, optional
        The columns the intruder uses; default all of the original's.
    confidence_level : float
        Of the Wilson intervals, in (0, 1).
    random_state : int, Generator or None
        Seeds the predicates.
    max_attempts : int
        Records tried at most per copy in multivariate mode (anonymeter's ``max_attempts``; its
        default of 10 million is minutes of work when few predicates single out). When reached,
        fewer than ``n_attacks`` predicates are used and ``n_queries`` says how many.
    size_correction : {"fitted", "anonymeter-1.1.0"}
        How the control count is rescaled when the control and the original differ in size
        (module docstring): fitted to the control's singling-out counts, or anonymeter 1.1.0's
        data-free fit (for comparison with it).

    Returns
    -------
    AttackResult
        ``figures["singling_out"]``, its interval, MC error and rates; ``label`` names the mode.
    """
    mode = check_option(mode, "mode", _OWNER, ("univariate", "multivariate"))
    size_correction = check_option(size_correction, "size_correction", _OWNER, ("fitted", "anonymeter-1.1.0"))
    original, copies, control, cols, level = check_attack_inputs(
        original, synthetic, control, columns, _OWNER, confidence_level)
    n = int(check_scalar(n_attacks, "n_attacks", _OWNER, kind="int", lower=1))
    n_cols = int(check_scalar(n_cols, "n_cols", _OWNER, kind="int", lower=1, upper=len(cols)))
    max_attempts = int(check_scalar(max_attempts, "max_attempts", _OWNER, kind="int", lower=1))
    ori = original[cols].drop_duplicates()
    ctrl = control[cols].drop_duplicates()
    rows = []
    for syn_df, rng in zip(copies, spawn(random_state, len(copies))):
        syn_df = syn_df[cols].drop_duplicates()
        kinds = _kinds(syn_df, cols)
        levels = _levels([syn_df, ori, ctrl], kinds)
        syn, t_ori, t_ctrl = (_Table(f, kinds, levels) for f in (syn_df, ori, ctrl))
        if mode == "univariate":
            queries = _univariate_queries(syn, kinds, n, rng)
            base_cols = 1
        else:
            queries = _multivariate_queries(syn, kinds, n, n_cols, max_attempts, rng)
            base_cols = n_cols
        n_queries = len(queries[0])
        n_main = int(t_ori.singles_out(*queries).sum())
        n_base = int(t_ori.singles_out(*_random_queries(syn, kinds, n, base_cols, rng)).sum())
        if size_correction == "fitted":
            factor = fitted_control_factor(t_ctrl, queries, t_ori.n, rng)
        else:
            factor = anonymeter_control_factor(n_queries, t_ctrl.n, t_ori.n)
        n_ctrl = min(int(t_ctrl.singles_out(*queries).sum()) * factor, float(n))
        row = attack_figures((n, n, n), n_main, n_ctrl, n_base, level)
        row.update(n_queries=n_queries, control_size_factor=factor)
        rows.append(row)
    settings = {"mode": mode, "n_attacks": n, "n_cols": n_cols if mode == "multivariate" else 1,
                "columns": cols, "confidence_level": level, "max_attempts": max_attempts,
                "size_correction": size_correction}
    return combine_copies("singling_out", f"singling_out[{mode}]", rows, level, settings,
                          _DESCRIBE.format(mode=mode))
