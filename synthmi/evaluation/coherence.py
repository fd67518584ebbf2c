"""The demographic-coherence experiment of Bun, Carmosino, Jain, Kaptchuk & Sivakumar.

A data release is *demographically coherent* when a predictor learned from it
behaves the same, within every sizeable subgroup, on people who were in the data
it was made from and on comparable people who were not (Bun et al., "Enforcing
Demographic Coherence", Sections 3-4, Figure 1, Definitions 2-5).

One trial of the experiment :math:`\\mathsf{DemCoh}_{\\mathcal{L}, X, \\mathcal{C}, \\rho,
W_1}(\\alpha)`:

1. split :math:`X` uniformly at random into halves :math:`X_a`, :math:`X_b`;
2. run the release algorithm on :math:`X_a` (``"raw"``: the data itself), and learn
   a confidence-rated predictor :math:`h: \\mathcal{X} \\to [-1, 1]` from the release
   (a scikit-learn classifier on the lens features :math:`\\rho` predicting the
   sensitive attribute, rescaled as :math:`h = 2\\hat P(\\text{positive}) - 1`);
3. for every subgroup :math:`C` with :math:`|C \\cap X| \\ge \\gamma`, compute the
   Wasserstein-1 distance between the predictions of :math:`h` on
   :math:`X_a \\cap C` and on :math:`X_b \\cap C`;
4. the trial fails (:math:`b = 0`) if any distance exceeds :math:`\\alpha`.

Repeating the trial estimates :math:`\\beta = \\Pr[b = 0]` (Definition 3), reported
with an exact Clopper-Pearson interval. Alongside, each trial also measures the same
:math:`h` on a fresh random split of :math:`X \\cap C` that ignores which half the
release saw: the distance splitting alone produces. An :math:`h` learned without
looking at :math:`X_a` in particular has both equal in distribution, so the excess
of the first over the second isolates what the release leaked (an addition to the
paper's experiment; its :math:`\\alpha` threshold applies to the raw distance).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from ..results import Result
from .._validate import (
    check_columns_exist,
    check_dataframe,
    check_random_state,
    check_scalar,
    param_error,
)
from ..errors import InputError, InputTypeError

__all__ = ["wasserstein_1", "clopper_pearson", "demographic_coherence", "CoherenceResult"]

_OWNER = "demographic_coherence"


def wasserstein_1(u: Any, v: Any) -> float:
    r"""Wasserstein-1 (earth mover's) distance between two empirical distributions on the line.

    .. math::

        W_1(P, Q) = \inf_\pi \sum_{i,j} |x_i - x_j|\, \pi(x_i, x_j)
                  = \int_{-\infty}^{\infty} |F_P(t) - F_Q(t)|\, dt

    (Bun et al., Definition 5; the CDF form is Vallender 1974), with
    :math:`P`, :math:`Q` the uniform distributions over the values in ``u`` and ``v``.
    Computed by ``scipy.stats.wasserstein_distance`` (the CDF form); this
    wrapper only refuses empty or non-finite samples, which SciPy would
    turn into NaN.
    """
    from scipy.stats import wasserstein_distance

    u = np.asarray(u, dtype=float).ravel()
    v = np.asarray(v, dtype=float).ravel()
    if u.size == 0 or v.size == 0:
        raise InputError("wasserstein_1 needs two non-empty samples.")
    if not (np.isfinite(u).all() and np.isfinite(v).all()):
        raise InputError("wasserstein_1 needs finite values.")
    return float(wasserstein_distance(u, v))


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    r"""Exact (Clopper & Pearson 1934) confidence interval for a binomial proportion.

    .. math::

        \Big[\,B\big(\tfrac{a}{2};\, k, n-k+1\big),\;
               B\big(1-\tfrac{a}{2};\, k+1, n-k\big)\Big],\qquad a = 1 - \text{level},

    with :math:`B(q; a, b)` the beta quantile, the lower end 0 when ``k = 0`` and
    the upper end 1 when ``k = n``.
    """
    a = 1.0 - level
    lo = 0.0 if k == 0 else float(stats.beta.ppf(a / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - a / 2, k + 1, n - k))
    return lo, hi


@dataclass
class CoherenceResult(Result):
    """Outcome of repeated demographic-coherence trials.

    Attributes
    ----------
    distances : DataFrame
        Trials x subgroups: the Wasserstein-1 distance between the predictor's
        outputs on :math:`X_a \\cap C` and :math:`X_b \\cap C`.
    sizes : Series
        :math:`|C \\cap X|` for each subgroup tested (all are >= gamma).
    excluded : Series
        Sizes of the subgroups left out because they have fewer than gamma records.
    failed : ndarray of bool
        Per trial: some subgroup's distance exceeded alpha (:math:`b = 0`).
    null_distances : DataFrame
        The same predictor's W1 between two halves of :math:`X \\cap C` drawn afresh at
        random (same sizes), ignoring which half the release saw: the distance that
        splitting alone produces for this :math:`h`. An :math:`h` that does not depend
        on the split has ``distances`` and ``null_distances`` equal in distribution;
        a rough :math:`h` (e.g. a forest on jittered values) has large both.
    alpha, gamma, level : float
    """

    distances: pd.DataFrame
    sizes: pd.Series
    excluded: pd.Series
    failed: np.ndarray
    null_distances: pd.DataFrame
    alpha: float
    gamma: int
    level: float = 0.95
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def n_trials(self) -> int:
        return int(self.failed.size)

    @property
    def beta(self) -> float:
        """Estimated probability that a trial fails (Definition 3's beta)."""
        return float(self.failed.mean())

    @property
    def beta_ci(self) -> tuple[float, float]:
        """Clopper-Pearson interval for beta at ``level``."""
        return clopper_pearson(int(self.failed.sum()), self.n_trials, self.level)

    @property
    def worst_subgroup(self) -> str:
        """Subgroup with the largest mean distance over trials."""
        return str(self.distances.mean().idxmax())

    @property
    def worst_distance(self) -> float:
        """Mean (over trials) distance of the worst subgroup."""
        return float(self.distances.mean().max())

    def to_frame(self) -> pd.DataFrame:
        """Per subgroup: size, mean / sd / max W1 over trials, share of trials above alpha,
        and the mean W1 of random re-splits (``mean_null_w1``) with the excess over it."""
        d = self.distances
        return pd.DataFrame(
            {
                "size": self.sizes,
                "mean_w1": d.mean(),
                "sd_w1": d.std(ddof=1) if len(d) > 1 else np.nan,
                "max_w1": d.max(),
                "share_above_alpha": (d > self.alpha).mean(),
                "mean_null_w1": self.null_distances.mean(),
                "excess_w1": d.mean() - self.null_distances.mean(),
            }
        )

    @property
    def _summary_title(self) -> str:
        return f"Demographic coherence: {self.n_trials} trials, alpha = {self.alpha:g}, gamma = {self.gamma}"

    def _summary_rows(self) -> pd.DataFrame:
        return self.to_frame()

    def _summary_notes(self) -> list[str]:
        lo, hi = self.beta_ci
        notes = [f"estimated beta = {self.beta:.3f}  ({self.level:.0%} Clopper-Pearson CI [{lo:.3f}, {hi:.3f}])",
                 f"worst subgroup: {self.worst_subgroup} (mean W1 = {self.worst_distance:.4f})"]
        if len(self.excluded):
            notes.append(f"excluded (< gamma records): {list(self.excluded.index)}")
        return notes

    def _dict_extra(self) -> dict[str, Any]:
        lo, hi = self.beta_ci
        return {"n_trials": self.n_trials, "beta": self.beta, "beta_ci": [lo, hi], "alpha": self.alpha,
                "gamma": self.gamma, "level": self.level, "excluded": list(map(str, self.excluded.index))}


def _subgroup_masks(data: pd.DataFrame, subgroups: Any) -> dict[str, np.ndarray]:
    """Boolean masks from a list of masks, a dict of masks, or categorical column names."""
    n = len(data)
    if isinstance(subgroups, str):
        subgroups = [subgroups]
    if isinstance(subgroups, Mapping):
        items = list(subgroups.items())
    else:
        subgroups = list(subgroups)
        if not subgroups:
            raise param_error("subgroups", _OWNER, "a non-empty list of masks or column names", subgroups)
        if all(isinstance(s, str) for s in subgroups):
            cols = check_columns_exist(data, subgroups, "subgroups", "data")
            levels = []
            for c in cols:
                s = data[c]
                lv = list(s.cat.categories) if isinstance(s.dtype, pd.CategoricalDtype) else sorted(s.dropna().unique().tolist(), key=str)
                levels.append(lv)
            items = []
            for cell in product(*levels):
                m = np.ones(n, dtype=bool)
                for c, v in zip(cols, cell):
                    m &= (data[c] == v).to_numpy()
                items.append((" & ".join(f"{c}={v}" for c, v in zip(cols, cell)), m))
        else:
            items = [(f"C{j}", s) for j, s in enumerate(subgroups)]
    out = {}
    for name, m in items:
        arr = np.asarray(m)
        if arr.dtype != bool or arr.shape != (n,):
            raise param_error(
                "subgroups", _OWNER, f"boolean masks of length len(data) = {n}", f"{arr.dtype} array of shape {arr.shape}"
            )
        out[str(name)] = arr
    return out


def _design(frame: pd.DataFrame, lens: list[str], levels: dict[str, list]) -> np.ndarray:
    """Numeric design matrix of the lens features: one-hot categoricals, raw numbers."""
    parts = []
    for c in lens:
        if c in levels:
            codes = pd.Categorical(np.asarray(frame[c], dtype=object), categories=levels[c]).codes
            oh = np.zeros((len(frame), len(levels[c])), dtype=float)
            ok = codes >= 0
            oh[np.flatnonzero(ok), codes[ok]] = 1.0
            parts.append(oh)
        else:
            parts.append(np.asarray(frame[c], dtype=float)[:, None])
    return np.hstack(parts)


def _make_model(model: Any, rng: np.random.Generator):
    from sklearn.base import clone

    seed = int(rng.integers(2**31 - 1))
    if model == "logistic":
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(max_iter=1000)
    if model == "forest":
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier(n_estimators=50, min_samples_leaf=1, random_state=seed, n_jobs=1)
    est = clone(model)
    if "random_state" in est.get_params():
        est.set_params(random_state=seed)
    return est


def demographic_coherence(
    data: pd.DataFrame,
    lens: Sequence[str],
    target: str,
    subgroups: Any,
    release: str | Callable[[pd.DataFrame, np.random.Generator], Any] = "raw",
    positive: Any = None,
    gamma: int = 200,
    alpha: float = 0.05,
    n_trials: int = 20,
    model: Any = "logistic",
    dist: str | Callable[[np.ndarray, np.ndarray], float] = "wasserstein",
    level: float = 0.95,
    random_state: int | np.random.Generator | None = None,
) -> CoherenceResult:
    r"""Run the demographic-coherence experiment (Bun et al., Figure 1) ``n_trials`` times.

    Parameters
    ----------
    data : DataFrame
        The dataset :math:`X`.
    lens : list of str
        Features :math:`\rho` the predictor sees.
    target : str
        The sensitive attribute the predictor guesses (binary).
    subgroups : list of boolean masks, dict name -> mask, or list of column names
        The collection :math:`\mathcal{C}`; column names mean all cells of their
        cross-classification (e.g. ``["race", "sex"]``).
    release : "raw" or callable
        The release algorithm run on :math:`X_a`: ``release(X_a, rng)`` returns a
        DataFrame with the lens and target columns, or a ``SyntheticData`` (all its
        copies are stacked). ``"raw"`` releases :math:`X_a` itself.
    positive : optional
        The target value that counts as positive (default: the last category of a
        Categorical target, else the largest value).
    gamma : int
        Size constraint: only subgroups with :math:`|C \cap X| \ge \gamma` are tested.
    alpha : float
        A trial fails when some subgroup's :math:`W_1` exceeds ``alpha``.
    n_trials : int
        Number of independent splits.
    model : "logistic", "forest" or a scikit-learn classifier
        The learner :math:`\mathcal{L}`; ``h(x) = 2 P(\text{positive} \mid x) - 1``.
    dist : "wasserstein" or callable
        The distance :math:`\mathsf{dist}` between the two samples of predictions:
        Wasserstein-1 (Definition 5, the paper's choice) or any ``dist(u, v) -> float``.
    level : float
        Confidence level of the Clopper-Pearson interval for beta.
    random_state : int, Generator or None

    Returns
    -------
    CoherenceResult
    """
    check_dataframe(data, "data")
    lens = check_columns_exist(data, lens, "lens", "data")
    if not lens:
        raise param_error("lens", _OWNER, "a non-empty list of columns", lens)
    check_columns_exist(data, [target], "target", "data")
    if target in lens:
        raise param_error("target", _OWNER, "a column outside the lens", target)
    gamma = check_scalar(gamma, "gamma", _OWNER, kind="int", lower=1)
    alpha = float(check_scalar(alpha, "alpha", _OWNER, lower=0.0))
    n_trials = check_scalar(n_trials, "n_trials", _OWNER, kind="int", lower=1)
    level = float(check_scalar(level, "level", _OWNER, lower=0.0, upper=1.0, lower_inclusive=False, upper_inclusive=False))
    if not (release == "raw" or callable(release)):
        raise param_error("release", _OWNER, "'raw' or a callable release(X_a, rng)", release)
    if not (model in ("logistic", "forest") or hasattr(model, "fit")):
        raise param_error("model", _OWNER, "'logistic', 'forest' or a scikit-learn classifier", model)
    if dist == "wasserstein":
        dist_fn = wasserstein_1
    elif callable(dist):
        dist_fn = dist
    else:
        raise param_error("dist", _OWNER, "'wasserstein' or a callable dist(u, v)", dist)
    rng = check_random_state(random_state)
    # Splits come from their own stream, so runs with the same random_state see the same
    # splits whatever the release and learner consume: releases compare trial by trial.
    base = int(rng.integers(2**62))
    split_rng = np.random.default_rng([base, 0])
    rng = np.random.default_rng([base, 1])

    y_all = data[target]
    if positive is None:
        if isinstance(y_all.dtype, pd.CategoricalDtype):
            positive = y_all.cat.categories[-1]
        else:
            positive = y_all.dropna().max()

    masks = _subgroup_masks(data, subgroups)
    sizes = pd.Series({k: int(m.sum()) for k, m in masks.items()}, dtype=np.int64)
    keep = sizes[sizes >= gamma]
    if keep.empty:
        raise param_error(
            "gamma", _OWNER, f"at most the size of some subgroup (largest has {int(sizes.max())} records)", gamma
        )
    excluded = sizes[sizes < gamma]
    levels = {}
    for c in lens:
        s = data[c]
        if isinstance(s.dtype, pd.CategoricalDtype):
            levels[c] = list(s.cat.categories)
        elif not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
            levels[c] = sorted(s.dropna().unique().tolist(), key=str)
    if data[lens].isna().any().any():
        raise InputError(f"The lens columns {lens} of 'data' have missing values; the predictor needs complete lens features.")

    n = len(data)
    half = n // 2
    X_all = _design(data, lens, levels)
    dists = np.empty((n_trials, len(keep)))
    null = np.empty((n_trials, len(keep)))
    for t in range(n_trials):
        perm = split_rng.permutation(n)
        ia, ib = np.sort(perm[:half]), np.sort(perm[half : 2 * half])
        X_a = data.iloc[ia]
        if release == "raw":
            rel = X_a
        else:
            rel = release(X_a.copy(), rng)
            if hasattr(rel, "copies") and not isinstance(rel, pd.DataFrame):
                rel = pd.concat(list(rel.copies), ignore_index=True)
            if not isinstance(rel, pd.DataFrame):
                raise InputTypeError(f"The release callable must return a DataFrame or SyntheticData. Got {type(rel).__name__} instead.")
            check_columns_exist(rel, lens + [target], "release output", "release")
        y_rel = (np.asarray(rel[target], dtype=object) == positive)
        ok = ~pd.isna(rel[target]).to_numpy()
        Xr = _design(rel, lens, levels)
        ok &= np.isfinite(Xr).all(axis=1)
        Xr, y_rel = Xr[ok], y_rel[ok]
        if y_rel.all() or not y_rel.any():
            # A release with one target value leads to a constant predictor.
            const = 1.0 if y_rel.all() else -1.0
            h = np.full(n, const)
        else:
            est = _make_model(model, rng)
            est.fit(Xr, y_rel.astype(int))
            pos_col = list(est.classes_).index(1)
            h = 2.0 * est.predict_proba(X_all)[:, pos_col] - 1.0
        in_a = np.zeros(n, dtype=bool)
        in_a[ia] = True
        in_b = np.zeros(n, dtype=bool)
        in_b[ib] = True
        for j, name in enumerate(keep.index):
            m = masks[name]
            ha, hb = h[m & in_a], h[m & in_b]
            dists[t, j] = float(dist_fn(ha, hb)) if ha.size and hb.size else 0.0
            # Null reference: the same h on a fresh random split of X ∩ C.
            hc = h[m & (in_a | in_b)][rng.permutation(ha.size + hb.size)]
            null[t, j] = float(dist_fn(hc[: ha.size], hc[ha.size :])) if ha.size and hb.size else 0.0
    distances = pd.DataFrame(dists, columns=list(keep.index))
    distances.index.name = "trial"
    failed = (dists > alpha).any(axis=1)
    null_distances = pd.DataFrame(null, columns=list(keep.index))
    null_distances.index.name = "trial"
    return CoherenceResult(
        distances=distances,
        sizes=keep,
        excluded=excluded,
        failed=failed,
        null_distances=null_distances,
        alpha=alpha,
        gamma=gamma,
        level=level,
        params={"lens": lens, "target": target, "model": model if isinstance(model, str) else repr(model),
                "dist": dist if isinstance(dist, str) else repr(dist), "n_trials": n_trials},
    )
