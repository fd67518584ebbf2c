r"""Membership inference against a release: can an intruder tell who was in the training data?

The intruder holds a *candidate* record of the population and the released
copies, and guesses whether the candidate was one of the records the release
was made from (a *member*). The review plays that game with known answers:
members are records of ``train`` (the rows the release was made from),
non-members are records of ``holdout`` (real records of the same population
not used for the release), in equal numbers. Each attack gives every candidate
a score (higher = "more likely a member"); the review reports

* the **AUC**: the chance that a random member scores above a random
  non-member, ties counted 1/2 (the Mann-Whitney statistic),

  .. math::

      \mathrm{AUC} = \frac{1}{n_1 n_0} \sum_{i \in M} \sum_{j \in N}
      \Big(1[s_i > s_j] + \tfrac12 1[s_i = s_j]\Big);

  0.5 is guessing, 1 is certain membership for every record;
* the **TPR at a low FPR** (0.01, 0.1): the share of members flagged when at most
  that share of non-members is flagged, read off the ROC curve at that FPR (linear
  between its vertices: the randomised threshold test whose error on non-members is
  exactly the FPR, the same tie convention as the AUC). An attack can be
  weak on average (AUC near 0.5) and still single out a few records with
  confidence: the TPR at FPR 0.01 measures that (Carlini et al. 2022, "Membership
  inference attacks from first principles", IEEE S&P: report TPR at low FPR).

Attacks
-------
``"distance"``
    The intruder knows the candidate's values on ``columns``:
    :math:`s(x) = -\min_{y \in \text{release}} d(x, y)` over the records of all :math:`M`
    copies (the intruder holds them all), with Gower's distance (the encoding
    and nearest-record search of :mod:`synthmi.evaluation.dcr`). A release that
    copies or closely perturbs its training records puts members nearer to a
    released record than non-members are.
``"domias"``
    DOMIAS (van Breugel, Sun, Qian & van der Schaar 2023, "Membership inference
    attacks against synthetic data through overfitting detection", AISTATS,
    Eq. 2): the intruder also holds a *reference* sample of the population (records
    not in ``train``) and scores the density ratio

    .. math::

        s(x) = \frac{p_{\mathrm{syn}}(x)}{p_{\mathrm{ref}}(x)}

    (their Eq. 1 is :math:`p_{\mathrm{syn}}` alone), :math:`p_{\mathrm{syn}}` the release's
    density, the equal mixture :math:`\frac1M \sum_j \hat p_j` of the copies' densities: a generator that overfits puts
    more mass near its members than the population has there. Both densities are,
    by default, k-nearest-neighbour densities (``density="knn"``, k = 1, Loftsgaarden &
    Quesenberry 1965: they resolve an exact copy of a single record; the release's density
    is then one kNN density of all copies' pooled rows, see ``membership_inference``'s
    ``density``), or (``density="kde"``)
    Gaussian kernel density estimates, both on one encoding of the mixed columns:
    numeric columns standardised by the reference's mean and standard deviation
    (missing -> 0, the mean, plus a 0/1 missingness column), categorical ones
    one-hot (missing is a level); an isotropic kernel whose bandwidth each density
    chooses by likelihood cross-validation on its own sample (:func:`cv_bandwidth`,
    Silverman 1986 section 3.4.4; the DOMIAS authors likewise select their density
    estimator of the synthetic data by the likelihood of held-out synthetic records),
    among Scott's rule :math:`h = n^{-1/(d+4)}` (Scott 1992, *Multivariate Density
    Estimation*, Eq. 6.42, for standardised data; :math:`n` the sample a density is
    estimated from, :math:`d` the encoded dimension; what
    ``sklearn.neighbors.KernelDensity(bandwidth="scott")`` computes, ``bandwidth="scott"``)
    and its halvings: Scott's rule is tuned to a normal density and oversmooths near-identical
    records, which is what DOMIAS must see. Densities are evaluated here exactly by chunks in log space (the ratio is taken as a
    difference of log densities, which no underflow turns into 0/0). The reference is
    ``reference`` if given, else half of the holdout, kept apart from the evaluated
    non-members (a record cannot be both the intruder's population sample and a
    candidate).

Uncertainty
-----------
The headline figures are those of the attack on the whole release (all M copies,
as above): averaging one-copy attacks would understate the risk of releasing M
copies (a CART release of 5 copies: one-copy AUC 0.69 on average, 0.87 with all
five; TPR at FPR 0.01 0.21 vs 0.47). The one-copy figures are kept as
``*_per_copy`` (mean over the copies, the same candidates) with Monte Carlo error
:math:`\mathrm{sd}/\sqrt{M}` (copy to copy: the release's own randomness). The 95%
interval is a percentile bootstrap over candidates (members and non-members
resampled separately, ``n_boot`` times; Efron & Tibshirani 1993, ch. 13) of the
whole-release figure: it carries the sampling of the candidates. For a TPR at a
fixed FPR it is widened to contain the Clopper-Pearson interval of the members
above the threshold (the percentile interval collapses to [0, 0] when none is;
see ``_tpr_interval``). Under no
membership signal the AUC's sampling sd is
:math:`\sqrt{(n_1 + n_0 + 1) / (12 n_1 n_0)}` (the Mann-Whitney null variance).

Only aggregates are kept: no candidate's score, distance or value.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy.special import logsumexp
from scipy.stats import rankdata

from .._validate import (check_columns_exist, check_copies, check_dataframe, check_option, check_random_state,
                         check_scalar, param_error)
from ..results import Result
from .coherence import clopper_pearson
from .dcr import _encode, gower_nearest

__all__ = ["MembershipResult", "membership_inference", "auc_mann_whitney", "tpr_at_fpr", "ATTACKS",
           "holdout_positions", "PARTIAL_RELEASE_NOTE"]

_OWNER = "membership_inference"

#: the attacks and what the intruder is assumed to know (plain language, for the report)
ATTACKS: dict[str, str] = {
    "distance": ("the intruder knows a person's values on the compared columns and the released copies; "
                 "a person whose record has a released record very close to it is guessed to be in the "
                 "training data"),
    "domias": ("the intruder also holds a sample of real records of the same population (not the training "
               "records) and compares how dense the release is around a person's record with how dense the "
               "population is there (DOMIAS); more release than population density = guessed in the "
               "training data"),
}


def auc_mann_whitney(member_scores: np.ndarray, non_member_scores: np.ndarray) -> float:
    r"""AUC of scores (members higher) by the Mann-Whitney statistic, ties counted 1/2.

    .. math:: \mathrm{AUC} = \frac{R_1 - n_1 (n_1 + 1) / 2}{n_1 n_0}

    with :math:`R_1` the sum of the members' mid-ranks in the pooled scores (Mann &
    Whitney 1947; Hanley & McNeil 1982, Radiology 143, Eq. 2 and its rank form).
    """
    m = np.asarray(member_scores, dtype=float)
    n = np.asarray(non_member_scores, dtype=float)
    ranks = rankdata(np.concatenate([m, n]))  # average ranks: a tie counts 1/2
    return float((ranks[: len(m)].sum() - len(m) * (len(m) + 1) / 2.0) / (len(m) * len(n)))


def tpr_at_fpr(member_scores: np.ndarray, non_member_scores: np.ndarray, fpr: float) -> float:
    """TPR of the ROC curve at ``fpr`` (flag "member" when the score is at least a threshold).

    The ROC's vertices are those of the thresholds at each distinct score (a tied block
    enters at once); between two vertices the curve is the straight line of the
    randomised test (flag the tied block with a probability), so the value is the TPR of
    the test whose FPR is exactly ``fpr`` -- the convention under which the area under
    the curve is the Mann-Whitney AUC with ties 1/2.
    """
    m = np.asarray(member_scores, dtype=float)
    n = np.asarray(non_member_scores, dtype=float)
    thresholds = np.unique(np.concatenate([m, n]))[::-1]
    m_sorted, n_sorted = np.sort(m), np.sort(n)
    # share of each side with score >= threshold, for decreasing thresholds
    tpr = np.r_[0.0, (len(m) - np.searchsorted(m_sorted, thresholds, side="left")) / len(m)]
    fp = np.r_[0.0, (len(n) - np.searchsorted(n_sorted, thresholds, side="left")) / len(n)]
    k = int(np.searchsorted(fp, fpr, side="right") - 1)  # last vertex with FPR <= fpr
    if fp[k] >= fpr or k + 1 >= len(fp):
        return float(tpr[k])
    w = (fpr - fp[k]) / (fp[k + 1] - fp[k])
    return float(tpr[k] + w * (tpr[k + 1] - tpr[k]))


#: why a partially synthetic release can score high (the report's and ``disclosure``'s membership note)
PARTIAL_RELEASE_NOTE = (
    "For a partially synthetic release (some columns synthesized, the others released unchanged) the attacks use "
    "every released column, the kept ones included: a member's kept values appear verbatim in the release, so "
    "membership is visible through them however well the synthesized columns are masked. A high AUC then measures "
    "that real exposure of the kept columns, not a flaw of the synthesizer")


def _tpr_interval(tpr: float, n: int, boot_low: float, boot_high: float, level: float = 0.95) -> tuple[float, float]:
    r"""95% interval of a TPR at fixed FPR: the union of the bootstrap percentile interval and Clopper-Pearson's.

    .. math::

        \Big[\min\big(q_{0.025}, B(0.025; \lfloor x\rfloor, n - \lfloor x\rfloor + 1)\big),\;
              \max\big(q_{0.975}, B(0.975; \lceil x\rceil + 1, n - \lceil x\rceil)\big)\Big],
        \qquad x = n\,\widehat{\mathrm{TPR}},

    with :math:`q` the bootstrap percentiles and :math:`B` the beta quantile (Clopper & Pearson 1934,
    :func:`synthmi.evaluation.coherence.clopper_pearson`). Why both: at a low FPR few members pass the
    threshold, and when none does in the sample every bootstrap resample has none either, so the percentile
    interval collapses to [0, 0] (250 members and 250 non-members on an independent release: true TPR 0.01,
    0 flagged in about one sample in eight) and misses the truth. Clopper-Pearson on the number of members
    above the threshold (:math:`x`; fractional when the ROC is interpolated, hence the floor and the ceiling)
    cannot collapse (at :math:`x = 0` its upper end is :math:`1 - 0.025^{1/n}`, 0.0146 at :math:`n = 250`)
    but holds the threshold fixed; the bootstrap carries the threshold's own sampling (the non-members).
    Their union is the wider of the two at each end, so it is at least as conservative as either.
    """
    x = tpr * n
    cp_low, _ = clopper_pearson(int(np.floor(x + 1e-9)), n, level)
    _, cp_high = clopper_pearson(int(min(np.ceil(x - 1e-9), n)), n, level)
    return float(min(boot_low, cp_low)), float(max(boot_high, cp_high))


def holdout_positions(n: int, share: float, seed: int) -> np.ndarray:
    """Sorted positions of ``round(share * n)`` of ``n`` rows, a uniform draw without replacement
    from a stream of its own (``SeedSequence([seed, 26])``, not a synthesizer's): the rows a
    release is not made from, for membership inference (``synthesize --holdout-share``, ``tune``)."""
    k = int(round(float(share) * int(n)))
    if not (0.0 < float(share) < 1.0) or k < 1 or n - k < 2:
        raise param_error("holdout_share", "holdout_positions",
                          f"a share in (0, 1) that holds out at least 1 of the {n} rows and leaves 2", share)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 26]))
    return np.sort(rng.choice(int(n), size=k, replace=False))


def split_at(data: pd.DataFrame, positions: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(training rows, held-out rows) of ``data`` at the held-out row ``positions``, both with a
    fresh 0..n-1 index (copies are row-aligned with the training rows): the one split that
    ``synthesize --holdout-share``, a recorded holdout, ``tune`` and ``frontier`` share."""
    held = np.zeros(len(data), dtype=bool)
    held[np.asarray(positions, dtype=np.int64)] = True
    return data.iloc[~held].reset_index(drop=True), data.iloc[held].reset_index(drop=True)


def _check_not_training_records(train: pd.DataFrame, holdout: pd.DataFrame, cols: list[str],
                                name: str = "holdout", against: str = "train") -> None:
    r"""Refuse a holdout that repeats the training records (fail closed).

    Non-members that are members make every attack look like guessing (AUC 0.5 for a
    release that copies its training records). Rows cannot be told from their twins, so
    the test compares the share :math:`s_h` of holdout records with an exact twin among
    the training records (on ``cols``) with the share :math:`s_t` of training records
    twinned among themselves -- what a genuine holdout from the same population shows
    (on categorical-only data both are large) -- and refuses when :math:`s_h \ge 0.5`
    and :math:`s_h - s_t \ge 0.3`: the training file itself (:math:`s_h = 1`) or a file
    containing it (e.g. the input of ``--holdout-share 0.2``: :math:`s_h \ge 0.8`).
    Only the two shares are reported, no value. The same rule keeps DOMIAS's user-given
    reference apart from the non-members (``against="holdout"``).
    """
    keys_t = pd.util.hash_pandas_object(train[cols], index=False)
    keys_h = pd.util.hash_pandas_object(holdout[cols], index=False)
    s_h = float(keys_h.isin(set(keys_t.to_numpy())).mean()) if len(keys_h) else 0.0
    s_t = float(keys_t.duplicated(keep=False).mean()) if len(keys_t) else 0.0
    if s_h >= 0.5 and s_h - s_t >= 0.3:
        why = ("real records of the population NOT used for the release (a holdout or reference that "
               "repeats the training records makes members look like non-members and every attack "
               "like guessing)") if against == "train" else (
               "real records of the population apart from the holdout (a non-member that is also in "
               "DOMIAS's reference sample finds itself there and looks like a non-member for that reason)")
        raise param_error(name, _OWNER, why,
                          f"a {name} of which {s_h:.0%} of its records are records of '{against}' (exact twins on "
                          f"the compared columns; {s_t:.0%} of the {against} records have a twin among themselves)")


def _null_auc_sd(n1: int, n0: int) -> float:
    """Sampling sd of the AUC when members and non-members score alike (Mann-Whitney null)."""
    return float(np.sqrt((n1 + n0 + 1) / (12.0 * n1 * n0)))


@dataclass
class MembershipResult(Result):
    """Membership inference AUC and TPR at low FPR of one attack (aggregates only).

    Attributes
    ----------
    figures : dict
        ``membership_auc``, ``membership_tpr_at_fpr_0.01``, ``membership_tpr_at_fpr_0.1``
        (the attack on the whole release), each with ``_ci_low`` / ``_ci_high`` (95% bootstrap
        over candidates), ``_per_copy`` (the one-copy attack, mean over copies) and
        ``_per_copy_mc_error`` (sd over copies / sqrt(M)); the same under the
        attack's name (``distance_auc``, ``domias_tpr_at_fpr_0.01``, ...); the settings
        (``attack``, ``n_members``, ``n_non_members``, ``n_reference``, ``copies``,
        ``columns``) and ``null_auc_sd``, the AUC's sd under no membership signal.
    per_copy : DataFrame
        One row per copy: ``auc`` and ``tpr_at_fpr_<a>``.
    note : str
        What the intruder is assumed to know and what the numbers mean.
    """

    figures: dict[str, Any]
    per_copy: pd.DataFrame = field(repr=False)
    note: str = ""

    @property
    def _summary_title(self) -> str:  # type: ignore[override]
        return f"Membership inference ({self.figures['attack']} attack)"

    def _summary_rows(self) -> dict[str, Any]:
        # the attack-named copies of the figures are for tables of several attacks (to_dict)
        attack = self.figures["attack"] + "_"
        return {k: v for k, v in self.figures.items() if not k.startswith(attack)}

    def _summary_notes(self) -> list[str]:
        return [self.note]

    def to_frame(self) -> pd.DataFrame:
        """The figures of each copy (one row per copy)."""
        return self.per_copy.copy()

    def _dict_extra(self) -> dict[str, Any]:
        return {**self.figures, "per_copy": self.per_copy.to_dict(orient="records"), "note": self.note}

    def report(self) -> str:
        f = self.figures
        lines = [f"Membership inference, {f['attack']} attack ({f['n_members']} members vs {f['n_non_members']} "
                 f"non-members, {f['copies']} copies)",
                 f"  AUC {f['membership_auc']:.3f} (95% CI {f['membership_auc_ci_low']:.3f} to "
                 f"{f['membership_auc_ci_high']:.3f}; 0.5 = guessing, 1 = every member recognised)"]
        for a in f["fpr"]:
            key = f"membership_tpr_at_fpr_{a:g}"
            lines.append(f"  TPR at FPR {a:g}: {f[key]:.3f} (95% CI {f[key + '_ci_low']:.3f} to "
                         f"{f[key + '_ci_high']:.3f}; {a:g} = guessing)")
        lines.append("  " + self.note)
        return "\n".join(lines)


def _kde_encode(frames: list[pd.DataFrame], columns: Sequence[str], reference: pd.DataFrame) -> list[np.ndarray]:
    """One numeric matrix per frame: numerics standardised by ``reference`` (missing -> 0 plus a
    missingness column where any frame has one), categoricals one-hot over the levels of all frames."""
    blocks: list[list[np.ndarray]] = [[] for _ in frames]
    for c in columns:
        s = reference[c]
        numeric = (pd.api.types.is_numeric_dtype(s) and not isinstance(s.dtype, pd.CategoricalDtype)
                   and not pd.api.types.is_bool_dtype(s))
        if numeric:
            v = s.to_numpy(dtype=float)
            mu = float(np.nanmean(v)) if np.isfinite(v).any() else 0.0
            sd = float(np.nanstd(v)) if np.isfinite(v).any() else 1.0
            sd = sd if sd > 0 else 1.0
            any_missing = any(f[c].isna().any() for f in frames)
            for b, f in zip(blocks, frames):
                x = (f[c].to_numpy(dtype=float) - mu) / sd
                miss = np.isnan(x)
                b.append(np.where(miss, 0.0, x)[:, None])
                if any_missing:
                    b.append(miss.astype(float)[:, None])
        else:
            levels = pd.Index(pd.unique(pd.concat([f[c].astype(object) for f in frames], ignore_index=True)
                                        .fillna("\0missing")))
            for b, f in zip(blocks, frames):
                codes = levels.get_indexer(f[c].astype(object).fillna("\0missing"))
                b.append(np.eye(len(levels))[codes])
    return [np.hstack(b) if b else np.empty((len(f), 0)) for b, f in zip(blocks, frames)]


def _log_kde(points: np.ndarray, query: np.ndarray, bandwidth: Any = "scott", chunk: int = 256) -> np.ndarray:
    r"""log of the Gaussian KDE of ``points`` at each query row, bandwidth by Scott's rule (or ``bandwidth``).

    .. math:: \hat p(x) = \frac{1}{n (2\pi h^2)^{d/2}} \sum_{i=1}^n \exp\!\Big(-\frac{\lVert x - x_i\rVert^2}{2h^2}\Big),
        \qquad h = n^{-1/(d+4)}
    """
    n, d = points.shape
    h = n ** (-1.0 / (d + 4)) if bandwidth == "scott" else float(bandwidth)
    const = -np.log(n) - 0.5 * d * np.log(2 * np.pi * h * h)
    sq_p = (points ** 2).sum(axis=1)
    out = np.empty(len(query))
    for a in range(0, len(query), chunk):
        q = query[a:a + chunk]
        d2 = (q ** 2).sum(axis=1)[:, None] + sq_p[None, :] - 2.0 * q @ points.T
        out[a:a + chunk] = logsumexp(-np.maximum(d2, 0.0) / (2 * h * h), axis=1) + const
    return out


#: the bandwidths likelihood cross-validation chooses among: Scott's rule times these factors
CV_FACTORS = 2.0 ** -np.arange(0, 8)


def cv_bandwidth(points: np.ndarray, rng: np.random.Generator, n_validation: int = 500) -> float:
    r"""The Gaussian KDE bandwidth of largest leave-one-out log-likelihood (likelihood cross-validation).

    .. math::

        \hat h = \arg\max_{h \in H} \frac{1}{|V|} \sum_{i \in V} \log \hat p_{-i}(x_i; h), \qquad
        \hat p_{-i}(x; h) = \frac{1}{(n - 1)(2\pi h^2)^{d/2}} \sum_{j \ne i}
        \exp\!\Big(-\frac{\lVert x - x_j \rVert^2}{2h^2}\Big),

    over the grid :math:`H = \{h_S 2^{-k}: k = 0, \dots, 7\}` (:math:`h_S = n^{-1/(d+4)}`, Scott's rule) and
    a random subset :math:`V` of at most ``n_validation`` of the points (for speed; every point is a
    neighbour). Source: Silverman (1986), *Density Estimation*, section 3.4.4 (likelihood
    cross-validation; Habbema, Hermans & van den Broek 1974; Duin 1976). It is how the DOMIAS authors
    select their own density estimator of the synthetic data (a BNAF flow, early-stopped on the
    likelihood of held-out synthetic records; van Breugel et al. 2023, code ``domias/evaluator.py``).
    Points with an exact twin make the leave-one-out likelihood grow without bound as :math:`h \to 0` (a
    twin's kernel term stays 1 while the normaliser grows), so on data where most records are twinned the
    choice is the grid's floor :math:`h_S / 128`, which bounds it; on a 5,000-record sample of Adult's ten
    coarse columns (35% of records twinned, 26 encoded dimensions) the choice is :math:`h_S / 8`.
    """
    n, d = points.shape
    if n < 3:
        return n ** (-1.0 / (d + 4))
    v = np.sort(rng.choice(n, size=min(n_validation, n), replace=False))
    q = points[v]
    d2 = np.maximum((q ** 2).sum(axis=1)[:, None] + (points ** 2).sum(axis=1)[None, :] - 2.0 * q @ points.T, 0.0)
    d2[np.arange(len(v)), v] = np.inf  # leave the point itself out
    grid = n ** (-1.0 / (d + 4)) * CV_FACTORS
    score = [float(np.mean(logsumexp(-d2 / (2 * h * h), axis=1) - np.log(n - 1) - 0.5 * d * np.log(2 * np.pi * h * h)))
             for h in grid]
    return float(grid[int(np.argmax(score))])


#: the floor on a nearest-neighbour distance, in the encoding's standardised units (see :func:`_log_knn`)
KNN_DISTANCE_FLOOR = 1e-9


def _log_knn(points: np.ndarray, query: np.ndarray, k: int = 1) -> np.ndarray:
    r"""log of the k-nearest-neighbour density of ``points`` at each query row, up to the constant :math:`\log V_d`.

    .. math::

        \hat p(x) = \frac{k}{n\, V_d\, r_k(x)^d}, \qquad
        \log \hat p(x) + \log V_d = \log k - \log n - d \log \max\big(r_k(x), r_{\min}\big),

    :math:`r_k(x)` the Euclidean distance from :math:`x` to its k-th nearest point, :math:`V_d` the unit
    ball's volume in :math:`d` dimensions (Loftsgaarden & Quesenberry 1965, "A nonparametric estimate of a
    multivariate density function", Ann. Math. Statist. 36, Eq. 2). :math:`V_d` cancels in DOMIAS's ratio, so
    it is left out. :math:`r_{\min}` = :data:`KNN_DISTANCE_FLOOR` (standardised units): an exact duplicate
    (:math:`r = 0`) gets a finite, highest density and no ratio is ever 0/0. The query rows are not among
    ``points`` (the caller keeps candidates out of both samples), so no point counts itself.
    """
    from scipy.spatial import cKDTree

    n, d = points.shape
    dist, _ = cKDTree(points).query(query, k=[k])
    r = np.maximum(dist[:, 0], KNN_DISTANCE_FLOOR)
    return np.log(k) - np.log(n) - d * np.log(r)


def _sample_rows(df: pd.DataFrame, size: int, rng: np.random.Generator) -> pd.DataFrame:
    return df.iloc[np.sort(rng.choice(len(df), size=min(size, len(df)), replace=False))]


def membership_inference(
    train: pd.DataFrame,
    holdout: pd.DataFrame,
    synthetic: Any,
    *,
    attack: str = "distance",
    reference: pd.DataFrame | None = None,
    columns: Sequence[str] | None = None,
    fpr: Sequence[float] = (0.01, 0.1),
    sample: int = 1000,
    density_sample: int = 25000,
    n_boot: int = 200,
    bandwidth: Any = "cv",
    density: str = "knn",
    k: int = 1,
    random_state: Any = None,
) -> MembershipResult:
    r"""Membership inference AUC and TPR at low FPR of one attack against a release.

    Parameters
    ----------
    train : DataFrame
        The records the release was made from (the members).
    holdout : DataFrame
        Real records of the same population not used for the release (the
        non-members; for ``attack="domias"`` without ``reference``, half of them are
        the intruder's reference sample instead).
    synthetic : DataFrame, list of DataFrames or SyntheticData
        The released copies (any row count); the headline attacks them all at once, the
        ``*_per_copy`` figures one at a time (mean over copies).
    attack : {"distance", "domias"}
        See the module docstring.
    reference : DataFrame, optional
        DOMIAS's population sample (records not in ``train``); default: half of ``holdout``.
    columns : list of str, optional
        Columns the intruder knows (default: the copies' columns).
    fpr : sequence of float
        False positive rates at which the TPR is reported, each in (0, 1).
    sample : int
        Candidates per side (members and non-members, equal numbers: the smaller of
        this, the train rows and the non-member rows).
    density_sample : int
        Released rows DOMIAS's density of the release is estimated from, split equally over the
        copies (``ceil(density_sample / M)`` rows of each), and the most rows of the reference
        (a sample, for speed). A budget per release, not per copy, so the attack sees as much
        released data whether it comes in one copy or in M: at the old 5,000 rows *per copy*
        a one-copy release (e.g. the original released as is) was judged from 13% of Adult's
        training records while a five-copy release gave the attack 25,000 rows. The default
        25,000 costs what 5 copies of 5,000 did.
    n_boot : int
        Bootstrap resamples of the candidates for the 95% intervals.
    bandwidth : "cv", "scott" or float
        DOMIAS's kernel bandwidth in standardised units (``density="kde"`` only). ``"cv"`` (default):
        each density (the copy's, the reference's) its own bandwidth by likelihood cross-validation on its own sample
        (:func:`cv_bandwidth`), as the DOMIAS authors select their density estimator by the
        likelihood of held-out synthetic records; ``"scott"``: Scott's rule for both. Measured
        (benchmarks/results/domias_bandwidth.json; 80/20 split, the training rows released as is vs an
        independent release, 1000 members and non-members): NHANES AUC 0.84 (Scott) -> 0.93 (cv),
        independent 0.48 -> 0.49; Adult 0.54 -> 0.55 from 5,000 released rows (13% of the members
        in the density sample), 0.58 -> 0.67 from 25,000 (the default; 14 CPU s for both
        releases) and 0.59 -> 0.72 from the whole copy (40,000 rows), independent 0.50 -> 0.49. A smooth density
        is a weaker detector of copied records than the distance attack (AUC 1.0 on a copy).
    density : {"knn", "kde"}
        DOMIAS's density estimator. ``"kde"``: the Gaussian kernel densities above (``bandwidth``).
        ``"knn"`` (default): the k-nearest-neighbour density (Loftsgaarden & Quesenberry 1965; :func:`_log_knn`) on
        the same encoding, so the score is

        .. math::

            \log \frac{\hat p_{\mathrm{syn}}(x)}{\hat p_{\mathrm{ref}}(x)}
            = \log \frac{n_{\mathrm{ref}}}{n_{\mathrm{syn}}}
              + d\,\big(\log r_{k,\mathrm{ref}}(x) - \log r_{k,\mathrm{syn}}(x)\big),

        distances floored at 1e-9 standardised units (an exact copy: a finite, top score). The
        release's density is ONE kNN density of the pooled sample of all copies' sampled rows (the
        mixture :math:`\frac1M\sum_j \hat p_j` of kNN densities would be dominated by the copy
        with the nearest point, each estimated from a sample M times smaller: the pooled sample is
        the kNN estimate of the same mixture density from all the rows the attack holds). The
        per-copy figures use each copy's sample alone. Candidates are never in either sample
        (members are ``train`` rows, the synthetic sample comes from the copies; non-members and
        the reference are disjoint halves of ``holdout``), so none counts itself; a user-given
        ``reference`` must not contain ``holdout`` records (a non-member in it would find itself
        at distance 0 and look like a non-member for that reason).
    k : int
        Neighbours of the kNN density (``density="knn"``). Default 1: a copied single record is
        resolved only by its nearest neighbour (with :math:`k > 1` the radius is set by other
        records and an exact copy of a unique record no longer stands out).

        Why kNN is the default (benchmarks/results/domias_density.json; benchmarks/disclosure_attacks.py's
        split of three equal parts, 1000 members and 1000 non-members, AUC with 95% CI):

        ==========================  ===================  ===================  ===================
        release                     distance attack      DOMIAS kde (cv)      DOMIAS knn (k = 1)
        ==========================  ===================  ===================  ===================
        NHANES original as is       1.000                0.766 (0.744-0.788)  1.000 (1.000-1.000)
        NHANES independent          0.473 (0.452-0.496)  0.486 (0.458-0.515)  0.485 (0.455-0.521)
        NHANES CART (5 copies)      0.748                0.658                0.751 (0.727-0.778)
        Adult original as is        0.747 (0.732-0.762)  0.661 (0.639-0.684)  0.751 (0.731-0.772)
        Adult independent           0.510 (0.489-0.533)  0.501 (0.482-0.530)  0.497 (0.470-0.524)
        Adult CART (5 copies)       0.635 (0.619-0.656)  0.580 (0.560-0.602)  0.607 (0.587-0.628)
        ==========================  ===================  ===================  ===================

        kNN reaches the distance attack's ceiling on the original (Adult's 0.75 is that ceiling: half
        the control records have an exact twin among the members) and on CART, keeps the independent
        release at 0.5 (CI covering it), is above the KDE on every CART release, and costs 0.2 CPU s
        where the KDE costs 7 on Adult. TPR at FPR 0.01 on Adult's original: 0.27 (knn) vs 0.05 (kde).
    random_state : int, Generator or None
        Seed of the candidate sampling, the reference split and the bootstrap.

    Returns
    -------
    MembershipResult
    """
    check_option(attack, "attack", _OWNER, ATTACKS)
    check_dataframe(train, "train")
    check_dataframe(holdout, "holdout")
    copies = check_copies(synthetic, "synthetic")
    cols = list(copies[0].columns) if columns is None else check_columns_exist(copies[0], columns, "columns",
                                                                               "synthetic")
    if not cols:
        raise param_error("columns", _OWNER, "a non-empty list of columns", columns)
    check_columns_exist(train, cols, "columns", "train")
    check_columns_exist(holdout, cols, "columns", "holdout")
    for j, c in enumerate(copies):
        check_columns_exist(c, cols, "columns", f"synthetic[{j}]")
    if reference is not None:
        if attack != "domias":
            raise param_error("reference", _OWNER, "None unless attack='domias' (only DOMIAS uses a population "
                              "sample)", "a DataFrame")
        check_dataframe(reference, "reference")
        check_columns_exist(reference, cols, "columns", "reference")
    if isinstance(fpr, (int, float)):
        fpr = (fpr,)
    fprs = tuple(float(check_scalar(a, "fpr", _OWNER, lower=0.0, upper=1.0,
                                            lower_inclusive=False, upper_inclusive=False))
                 for a in fpr)
    if not fprs:
        raise param_error("fpr", _OWNER, "a non-empty sequence of rates in (0, 1)", fpr)
    sample = int(check_scalar(sample, "sample", _OWNER, kind="int", lower=2))
    density_sample = int(check_scalar(density_sample, "density_sample", _OWNER, kind="int", lower=2))
    n_boot = int(check_scalar(n_boot, "n_boot", _OWNER, kind="int", lower=20))
    check_option(density, "density", _OWNER, ("kde", "knn"))
    k_nn = int(check_scalar(k, "k", _OWNER, kind="int", lower=1))
    if bandwidth not in ("scott", "cv"):
        bandwidth = float(check_scalar(bandwidth, "bandwidth", _OWNER, lower=0.0, lower_inclusive=False))
    rng = check_random_state(random_state)
    _check_not_training_records(train, holdout, cols)
    if reference is not None:
        # DOMIAS's population density estimated on members would divide their signal away
        _check_not_training_records(train, reference, cols, "reference")
        _check_not_training_records(holdout, reference, cols, "reference", against="holdout")

    non_member_pool = holdout[cols]
    ref = None
    if attack == "domias":
        if reference is None:
            if len(holdout) < 4:
                raise param_error("holdout", _OWNER, "at least 4 records (half is DOMIAS's reference sample, half "
                                  "the non-members)", f"{len(holdout)} records")
            perm = rng.permutation(len(holdout))
            half = len(holdout) // 2
            ref = holdout[cols].iloc[np.sort(perm[:half])]
            non_member_pool = holdout[cols].iloc[np.sort(perm[half:])]
        else:
            ref = reference[cols]
    n = min(sample, len(train), len(non_member_pool))
    if n < 2:
        raise param_error("holdout", _OWNER, "at least 2 non-member records (and train at least 2 rows)",
                          f"{len(non_member_pool)} non-members and {len(train)} train rows")
    members = _sample_rows(train[cols], n, rng)
    non_members = _sample_rows(non_member_pool, n, rng)

    # scores[j] = (member scores, non-member scores) against copy j; pooled = against the whole release
    scores: list[tuple[np.ndarray, np.ndarray]] = []
    if attack == "distance":
        scale_ref = pd.concat([train[cols], holdout[cols]], ignore_index=True)
        for cp in copies:
            enc, _, _ = _encode([members, non_members, cp[cols]], cols, scale_ref)
            scores.append((-gower_nearest(enc[0], enc[2]), -gower_nearest(enc[1], enc[2])))
        # the nearest released record in any copy: the largest per-copy score
        pooled = (np.max([m_s for m_s, _ in scores], axis=0), np.max([n_s for _, n_s in scores], axis=0))
    else:
        ref_s = _sample_rows(ref, density_sample, rng)
        per_copy = -(-density_sample // len(copies))  # ceil: the release's budget over its copies
        syn_s = [_sample_rows(cp[cols], per_copy, rng) for cp in copies]
        enc = _kde_encode([members, non_members, ref_s, *syn_s], cols, ref_s)
        cand = np.vstack([enc[0], enc[1]])
        if density == "knn":
            for e in (enc[2], *enc[3:]):
                if len(e) < k_nn:
                    raise param_error("k", _OWNER, f"at most the rows of the smallest density sample ({len(e)})",
                                      k_nn)
            log_ref = _log_knn(enc[2], cand, k_nn)
            log_syn = [_log_knn(e, cand, k_nn) for e in enc[3:]]
            # the release's density: one kNN density of the pooled rows of all copies (see ``density``)
            log_release = _log_knn(np.vstack(enc[3:]), cand, k_nn)
        else:
            # "cv": each density its own bandwidth, by likelihood cross-validation on its own sample
            log_ref = _log_kde(enc[2], cand, cv_bandwidth(enc[2], rng) if bandwidth == "cv" else bandwidth)
            log_syn = [_log_kde(e, cand, cv_bandwidth(e, rng) if bandwidth == "cv" else bandwidth) for e in enc[3:]]
            # the release's density: the equal mixture of the copies' densities
            log_release = logsumexp(np.vstack(log_syn), axis=0) - np.log(len(log_syn))
        for ls in log_syn:
            s = ls - log_ref  # log p_syn - log p_ref: the ratio's order
            scores.append((s[:n], s[n:]))
        s = log_release - log_ref
        pooled = (s[:n], s[n:])

    def figures_of(pairs):
        rows = []
        for m_s, n_s in pairs:
            rows.append([auc_mann_whitney(m_s, n_s)] + [tpr_at_fpr(m_s, n_s, a) for a in fprs])
        return np.asarray(rows)

    per = figures_of(scores)  # copies x (1 + len(fprs))
    whole = figures_of([pooled])[0]
    boot = np.empty((n_boot, per.shape[1]))
    for b in range(n_boot):
        i_m, i_n = rng.integers(0, n, n), rng.integers(0, n, n)
        boot[b] = figures_of([(pooled[0][i_m], pooled[1][i_n])])[0]
    lo, hi = np.quantile(boot, [0.025, 0.975], axis=0)
    for k, a in enumerate(fprs, start=1):
        lo[k], hi[k] = _tpr_interval(whole[k], n, lo[k], hi[k])
    m_copies = len(copies)
    mc = per.std(axis=0, ddof=1) / np.sqrt(m_copies) if m_copies > 1 else np.full(per.shape[1], np.nan)
    names = ["auc"] + [f"tpr_at_fpr_{a:g}" for a in fprs]
    figures: dict[str, Any] = {"attack": attack}
    if attack == "domias":
        figures["density"] = density
        if density == "knn":
            figures["k"] = k_nn
    for k, name in enumerate(names):
        for prefix in ("membership", attack):
            figures[f"{prefix}_{name}"] = float(whole[k])
            figures[f"{prefix}_{name}_ci_low"] = float(lo[k])
            figures[f"{prefix}_{name}_ci_high"] = float(hi[k])
            figures[f"{prefix}_{name}_per_copy"] = float(per[:, k].mean())
            figures[f"{prefix}_{name}_per_copy_mc_error"] = float(mc[k])
    figures.update({
        "n_members": n, "n_non_members": n, "n_reference": 0 if ref is None else int(min(len(ref), density_sample)),
        "copies": m_copies, "columns": len(cols), "fpr": list(fprs), "null_auc_sd": _null_auc_sd(n, n),
    })
    per_copy = pd.DataFrame(per, columns=names)
    per_copy.index.name = "copy"
    note = (f"Assumed: {ATTACKS[attack]}. The AUC is the chance that the attack ranks a random training record "
            f"above a random record of the population that was not used: 0.5 means the release tells the intruder "
            f"nothing about who was in the data (sampling sd about {figures['null_auc_sd']:.3f} here), 1 that it "
            f"tells every time. The TPR at FPR 0.01 is the share of training records the intruder identifies "
            f"while wrongly accusing 1% of the others (0.01 = guessing). The attack uses all {m_copies} released "
            f"copies at once; one copy alone gives AUC {figures['membership_auc_per_copy']:.3f} on average.")
    return MembershipResult(figures, per_copy, note)
