r"""Empirical lower bound on epsilon: a membership test on neighbouring inputs.

The exact audit (:mod:`synthmi.privacy.audit`) proves the Beta-posterior
mechanisms' guarantees by enumeration; a mechanism whose output law has no closed
form (DPSyn, DP k-means) can still be *checked* by running it many times on two
neighbouring data sets and testing which one produced each output (Jagielski,
Ullman & Oprea 2020, "Auditing Differentially Private Machine Learning: How
Private is Private SGD?", NeurIPS, Algorithm 2; Nasr, Song, Thakurta, Papernot &
Carlini 2021, "Adversary Instantiation: Lower Bounds for Differentially Private
Machine Learning", IEEE S&P).

**Why it is a bound.** If :math:`M` is :math:`(\varepsilon, \delta)`-DP, every
test that guesses "the canary is in" from one output, with true and false
positive rates :math:`\mathrm{TPR} = P(\text{guess in} \mid D)` and
:math:`\mathrm{FPR} = P(\text{guess in} \mid D')`, obeys
:math:`\mathrm{TPR} \le e^{\varepsilon}\mathrm{FPR} + \delta` and, applied to the
complementary event, :math:`1 - \mathrm{FPR} \le e^{\varepsilon}(1 - \mathrm{TPR}) + \delta`
(Kairouz, Oh & Viswanath 2015, Theorem 2.1; JUO 2020, Section 2). With one-sided
Clopper-Pearson bounds :math:`\mathrm{TPR}_{lo} \le \mathrm{TPR}` and
:math:`\mathrm{FPR}_{hi} \ge \mathrm{FPR}` from :math:`R` runs on each data set,

.. math::

    \hat\varepsilon_{lb} = \max\Big(0,\;
        \log\frac{\mathrm{TPR}_{lo} - \delta}{\mathrm{FPR}_{hi}},\;
        \log\frac{\mathrm{TNR}_{lo} - \delta}{\mathrm{FNR}_{hi}}\Big),
    \qquad \mathrm{TNR}_{lo} = 1 - \mathrm{FPR}_{hi},\;
    \mathrm{FNR}_{hi} = 1 - \mathrm{TPR}_{lo},

is below the true :math:`\varepsilon` with probability at least the stated
``confidence``: each Clopper-Pearson bound is one-sided at level
:math:`(1 - \text{confidence})/2`, so both hold together with probability
``confidence`` or more (Bonferroni), and both directions of the inequality are
then valid at once. A bound above the claimed :math:`\varepsilon` therefore proves
a bug (at that confidence); a bound below it proves nothing about the guarantee:
the test, the canary or the number of runs may simply be too weak.

**Threshold.** The test flags "in" when the score (a statistic of the canary in
the output) is on one side of a threshold. Side and threshold are chosen on the
first half of the runs of each data set (maximising the same bound there) and the
bound is computed on the other half only, so the choice costs no confidence (no
multiple-testing correction is needed; JUO 2020 split their trials the same way).

**Canaries (worst cases).** Each mechanism is audited under the neighbouring
relation its guarantee is stated for, on a small public data set the audit builds:

* ``"dpsyn"`` (add/remove one record): one declared categorical column, ``n``
  records over three levels, and a canary holding a fourth declared level nobody
  else holds (one column: the whole budget goes to the one marginal that holds the
  canary). Rare-level suppression is switched off (``theta_min = theta_scale = 0``,
  public tuning choices) so the release keeps the level; the score is the level's
  cell in the released one-way marginal (post-processing of its noisy count).
* ``"kmeans"`` (substitution): two numeric columns on a declared [0, 100] box,
  ``n`` records near the low corner, one record at the low corner swapped for the
  canary at the high corner (the largest l1 move, :math:`2c`); one cluster, one
  Lloyd iteration (the canary's whole influence on the one centre); the score is
  minus the distance of the nearest released centre to the canary.
* ``"beta"`` (substitution, n public): counts :math:`k` vs :math:`k + 1`, the
  pair at which the exact audit finds the largest privacy loss; the score is the
  released candidate index (or theta for ``posterior_sample``).
"""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import beta as beta_dist

from ..domain import PublicDomain
from .._validate import check_epsilon, check_option, check_scalar, param_error
from ..results import Result

__all__ = [
    "EmpiricalAuditResult", "clopper_pearson", "epsilon_from_rates", "epsilon_lower_bound", "empirical_privacy_audit",
    "MECHANISMS",
]

_OWNER = "empirical_privacy_audit"
MECHANISMS = ("dpsyn", "kmeans", "beta")


# --------------------------------------------------------------------------- statistics
def clopper_pearson(successes: Any, trials: Any, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    r"""One-sided Clopper-Pearson bounds for a binomial proportion, each at level ``alpha``.

    .. math::

        p_{lo} = B^{-1}(\alpha;\, x,\, m - x + 1), \qquad
        p_{hi} = B^{-1}(1 - \alpha;\, x + 1,\, m - x),

    with :math:`p_{lo} = 0` at :math:`x = 0` and :math:`p_{hi} = 1` at :math:`x = m`
    (Clopper & Pearson 1934; :math:`B^{-1}` the Beta quantile). Each holds with
    probability at least :math:`1 - \alpha` whatever :math:`p`.
    """
    x = np.asarray(successes, dtype=float)
    m = np.asarray(trials, dtype=float)
    with np.errstate(invalid="ignore"):
        lo = np.where(x > 0, beta_dist.ppf(alpha, np.maximum(x, 1e-300), m - x + 1), 0.0)
        hi = np.where(x < m, beta_dist.ppf(1.0 - alpha, x + 1, np.maximum(m - x, 1e-300)), 1.0)
    return lo, hi


def epsilon_from_rates(tpr_low: Any, fpr_high: Any, delta: float) -> np.ndarray:
    r"""The epsilon a test with these rate bounds rules out (module docstring):

    .. math::

        \max\Big(0,\; \log\frac{\mathrm{TPR}_{lo} - \delta}{\mathrm{FPR}_{hi}},\;
        \log\frac{1 - \mathrm{FPR}_{hi} - \delta}{1 - \mathrm{TPR}_{lo}}\Big).

    A non-positive numerator contributes nothing (0); a zero denominator cannot
    arise from Clopper-Pearson bounds on finite runs (they stay inside (0, 1)).
    """
    t = np.asarray(tpr_low, dtype=float)
    f = np.asarray(fpr_high, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where((t > delta) & (f > 0), np.log(np.maximum(t - delta, 1e-300) / f), 0.0)
        b = np.where((1.0 - f > delta) & (t < 1), np.log(np.maximum(1.0 - f - delta, 1e-300) / (1.0 - t)), 0.0)
    return np.maximum(0.0, np.maximum(a, b))


def _bounds_at(z_in: np.ndarray, z_out: np.ndarray, thresholds: np.ndarray, delta: float, alpha: float):
    """For the test 'z >= t' at each t: TP, FP counts and the bound."""
    zi, zo = np.sort(z_in), np.sort(z_out)
    tp = zi.size - np.searchsorted(zi, thresholds, side="left")
    fp = zo.size - np.searchsorted(zo, thresholds, side="left")
    tpr_lo, _ = clopper_pearson(tp, zi.size, alpha)
    _, fpr_hi = clopper_pearson(fp, zo.size, alpha)
    return tp, fp, tpr_lo, fpr_hi, epsilon_from_rates(tpr_lo, fpr_hi, delta)


def _choose_test(s_in: np.ndarray, s_out: np.ndarray, delta: float, alpha: float) -> tuple[int, float]:
    """Side (+1: flag high scores, -1: low) and threshold maximising the bound on these runs."""
    best = (-1.0, 1, math.inf)
    for side in (1, -1):
        z_in, z_out = side * s_in, side * s_out
        cand = np.unique(np.concatenate([z_in, z_out]))
        eps = _bounds_at(z_in, z_out, cand, delta, alpha)[4]
        i = int(np.argmax(eps))
        if eps[i] > best[0]:
            best = (float(eps[i]), side, float(cand[i]))
    return best[1], best[2]


@dataclass
class EmpiricalAuditResult(Result):
    """Outcome of :func:`epsilon_lower_bound` / :func:`empirical_privacy_audit`.

    ``to_frame()``: one row with the claim, the bound, the test and its counts on the
    evaluation half of the runs. ``figures``: the same as a dict.
    """

    mechanism: str
    epsilon: float
    delta: float
    confidence: float
    runs: int
    selection_runs: int
    evaluation_runs: int
    side: str
    threshold: float
    true_positives: int
    false_positives: int
    tpr_low: float
    fpr_high: float
    epsilon_lower_bound: float
    statistic: str = ""
    neighbours: str = ""
    wall_seconds: float = float("nan")
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def exceeds_claim(self) -> bool:
        """True when the lower bound is above the claimed epsilon: the claim is refuted."""
        return self.epsilon_lower_bound > self.epsilon

    @property
    def figures(self) -> dict[str, Any]:
        return {
            "mechanism": self.mechanism, "claimed_epsilon": self.epsilon, "claimed_delta": self.delta,
            "epsilon_lower_bound": self.epsilon_lower_bound, "confidence": self.confidence,
            "exceeds_claim": self.exceeds_claim, "runs_per_data_set": self.runs,
            "selection_runs": self.selection_runs, "evaluation_runs": self.evaluation_runs,
            "test": f"flag 'canary in' when score {self.side} {self.threshold:.6g}",
            "threshold": self.threshold, "true_positives": self.true_positives,
            "false_positives": self.false_positives, "tpr_low": self.tpr_low, "fpr_high": self.fpr_high,
            "wall_seconds": self.wall_seconds,
        }

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([self.figures])

    @property
    def _summary_title(self) -> str:
        return f"Empirical privacy audit of '{self.mechanism}'"

    def _summary_rows(self) -> dict[str, Any]:
        return self.figures

    def _summary_notes(self) -> list[str]:
        head = (
            f"With {self.confidence:.0%} confidence the mechanism's true epsilon is at least "
            f"{self.epsilon_lower_bound:.3g} (claimed: epsilon = {self.epsilon:g}, delta = {self.delta:g}; "
            f"{self.runs} runs on each of two neighbouring data sets, {self.neighbours})."
        )
        if self.exceeds_claim:
            verdict = ("The lower bound is ABOVE the claimed epsilon: the claimed guarantee is false (a bug in the "
                       "mechanism or its accounting), up to the stated confidence.")
        else:
            verdict = ("The lower bound is below the claimed epsilon. That is consistent with the claim but does not "
                       "prove it: the test sees one statistic of one canary in a limited number of runs, so it can "
                       "only reveal a leak at least this large.")
        return [head, verdict, f"Statistic: {self.statistic}." if self.statistic else ""]

    def _dict_extra(self) -> dict[str, Any]:
        return {"settings": dict(self.settings), "neighbours": self.neighbours, "statistic": self.statistic}


def epsilon_lower_bound(
    scores_with: Any,
    scores_without: Any,
    epsilon: float,
    delta: float = 0.0,
    confidence: float = 0.95,
    *,
    mechanism: str = "custom",
    statistic: str = "",
    neighbours: str = "",
) -> EmpiricalAuditResult:
    r"""Lower bound on epsilon from scores of the canary on runs with and without it.

    Parameters
    ----------
    scores_with, scores_without : array-like of float
        One score per run on the data set with the canary (:math:`D`) and without it
        (:math:`D'`), the runs independent; at least 4 of each. The first half of each
        chooses the test's side and threshold, the second half gives the bound.
    epsilon, delta : float
        The claimed guarantee (epsilon > 0, 0 <= delta < 1); delta enters the bound.
    confidence : float
        Probability (in (0, 1)) that the reported bound is below the true epsilon.

    Returns
    -------
    EmpiricalAuditResult
        The bound :math:`\hat\varepsilon_{lb}` of the module docstring, the test and
        its counts.
    """
    eps = check_epsilon(epsilon, _OWNER)
    delta = float(check_scalar(delta, "delta", _OWNER, lower=0.0, upper=1.0, upper_inclusive=False))
    conf = float(check_scalar(confidence, "confidence", _OWNER, lower=0.0, upper=1.0,
                              lower_inclusive=False, upper_inclusive=False))
    s_in = np.asarray(scores_with, dtype=float).ravel()
    s_out = np.asarray(scores_without, dtype=float).ravel()
    for name, s in (("scores_with", s_in), ("scores_without", s_out)):
        if s.size < 4:
            raise param_error(name, _OWNER, "at least 4 scores (half choose the test, half bound epsilon)",
                              f"{s.size} scores")
        if not np.all(np.isfinite(s)):
            raise param_error(name, _OWNER, "finite", "non-finite scores")
    # Each of the two proportions' bound at level alpha: both hold with probability >= confidence.
    alpha = (1.0 - conf) / 2.0
    h_in, h_out = s_in.size // 2, s_out.size // 2
    side, thr = _choose_test(s_in[:h_in], s_out[:h_out], delta, alpha)
    tp, fp, tpr_lo, fpr_hi, lb = _bounds_at(side * s_in[h_in:], side * s_out[h_out:], np.array([thr]), delta, alpha)
    return EmpiricalAuditResult(
        mechanism=mechanism, epsilon=eps, delta=delta, confidence=conf, runs=int(min(s_in.size, s_out.size)),
        selection_runs=h_in + h_out, evaluation_runs=(s_in.size - h_in) + (s_out.size - h_out),
        side=">=" if side > 0 else "<=", threshold=float(side * thr), true_positives=int(tp[0]),
        false_positives=int(fp[0]), tpr_low=float(tpr_lo[0]), fpr_high=float(fpr_hi[0]),
        epsilon_lower_bound=float(lb[0]), statistic=statistic, neighbours=neighbours,
    )


# --------------------------------------------------------------------------- mechanisms
def _dpsyn_scores(epsilon: float, delta: float, runs: int, n: int, rngs) -> tuple[np.ndarray, np.ndarray, dict]:
    from .dpsyn import DPSynSynthesizer

    levels = ["a", "b", "c", "canary"]
    base = pd.DataFrame({"x": np.resize(levels[:3], n)})  # public audit data: n records over three levels
    with_canary = pd.concat([base, pd.DataFrame({"x": ["canary"]})], ignore_index=True)
    domain = PublicDomain({"x": {"kind": "categorical", "levels": levels, "missing": False}})

    def score(frame: pd.DataFrame, rng: np.random.Generator) -> float:
        m = DPSynSynthesizer(epsilon=epsilon, delta=delta, theta_min=0.0, theta_scale=0.0,
                             random_state=rng).fit(frame, domain=domain)
        col = m._columns[0]
        code = col.levels.index("canary")
        g, w = m._groups[0], np.clip(m._weights[0], 0.0, None)
        cell = float(m.marginals_[0].table[g[code]])
        members = g == g[code]
        # the level's share of its released cell (the whole cell when it is alone in it)
        share = w[code] / w[members].sum() if members.sum() > 1 and w[members].sum() > 0 else 1.0
        return cell * share

    s_in = np.array([score(with_canary, rngs[0]) for _ in range(runs)])
    s_out = np.array([score(base, rngs[1]) for _ in range(runs)])
    info = {"statistic": "the canary level's cell in the released one-way marginal",
            "neighbours": "add/remove one record (the canary, sole holder of a declared level)",
            "settings": {"n_records_without_canary": n, "columns": 1, "theta_min": 0.0, "theta_scale": 0.0}}
    return s_in, s_out, info


def _kmeans_scores(epsilon: float, runs: int, n: int, rngs) -> tuple[np.ndarray, np.ndarray, dict]:
    from .kmeans import DPKMeans

    grid = np.linspace(0.0, 20.0, n - 1)
    base = pd.DataFrame({"u": grid, "v": grid[::-1]})
    low = pd.DataFrame({"u": [0.0], "v": [0.0]})
    canary = np.array([100.0, 100.0])
    without = pd.concat([base, low], ignore_index=True)
    with_canary = pd.concat([base, pd.DataFrame({"u": [100.0], "v": [100.0]})], ignore_index=True)
    domain = PublicDomain({c: {"kind": "continuous", "bounds": [0.0, 100.0], "missing": False} for c in ("u", "v")})

    def score(frame: pd.DataFrame, rng: np.random.Generator) -> float:
        km = DPKMeans(n_clusters=1, epsilon=epsilon, n_iter=1, clip_norm=2.0, init=np.zeros((1, 2)),
                      random_state=rng).fit(frame, domain=domain)
        return -float(np.min(np.linalg.norm(km.cluster_centers_ - canary, axis=1)))

    s_in = np.array([score(with_canary, rngs[0]) for _ in range(runs)])
    s_out = np.array([score(without, rngs[1]) for _ in range(runs)])
    info = {"statistic": "minus the distance of the nearest released centre to the canary",
            "neighbours": "substitution of one record (a record at the low corner by the canary at the high corner)",
            "settings": {"n_records": n, "columns": 2, "n_clusters": 1, "n_iter": 1, "clip_norm_scaled": 2.0}}
    return s_in, s_out, info


def _beta_scores(epsilon: float, delta: float, runs: int, n: int, rngs, mechanism: str,
                 prior: tuple[float, float]) -> tuple[np.ndarray, np.ndarray, dict]:
    from .audit import audit_privacy_loss
    from .dp_bayes import PrivateBetaPosterior

    mech = PrivateBetaPosterior(epsilon=epsilon, mechanism=mechanism, delta=delta if mechanism == "smooth" else None,
                                prior=prior)
    k_out, k_in = audit_privacy_loss(mech, n).worst_pair  # a public computation: no data involved
    s_in = np.asarray(mech.draw_outputs(n, k_in, runs, rngs[0]), dtype=float)
    s_out = np.asarray(mech.draw_outputs(n, k_out, runs, rngs[1]), dtype=float)
    info = {"statistic": "the released candidate index" if mechanism != "posterior_sample" else "the released theta",
            "neighbours": f"substitution of one record (n = {n} public): k = {k_in} vs k = {k_out} ones, the exact "
                          f"audit's worst pair",
            "settings": {"n": n, "k_with": int(k_in), "k_without": int(k_out), "beta_mechanism": mechanism,
                         "prior": list(prior)}}
    return s_in, s_out, info


def empirical_privacy_audit(
    mechanism: str,
    epsilon: float,
    delta: float | None = None,
    runs: int = 1000,
    confidence: float = 0.95,
    seed: int | None = 0,
    *,
    n: int = 50,
    beta_mechanism: str = "global",
    prior: tuple[float, float] = (1.0, 1.0),
) -> EmpiricalAuditResult:
    r"""Run one of the toolkit's DP releases ``runs`` times on each of two neighbouring
    data sets and bound its epsilon from below (module docstring).

    Parameters
    ----------
    mechanism : {"dpsyn", "kmeans", "beta"}
        The release audited, with its worst-case canary (module docstring).
    epsilon : float
        Claimed epsilon (> 0); the mechanism is run at it.
    delta : float, optional
        Claimed delta: required by ``"dpsyn"`` (in (0, 1)) and by ``"beta"`` with
        ``beta_mechanism="smooth"``; the pure-DP releases claim delta = 0.
    runs : int
        Runs on each data set (>= 4); half choose the test, half give the bound. The
        bound can exceed at most about :math:`\log(R/2)` (no false positive among
        :math:`R/2` runs), so large claimed epsilons need many runs to be refuted.
    confidence : float
        Probability that the bound is below the true epsilon (in (0, 1)).
    seed : int or None
        Seed of the audit's noise (the audit data are public and made up: the seed
        protects nothing); ``None`` draws OS entropy.
    n : int
        Records of the audit data set without the canary (>= 4).
    beta_mechanism, prior
        The Beta-posterior mechanism and prior audited when ``mechanism="beta"``.
    """
    mechanism = check_option(mechanism, "mechanism", _OWNER, MECHANISMS)
    eps = check_epsilon(epsilon, _OWNER)
    runs = int(check_scalar(runs, "runs", _OWNER, kind="int", lower=4))
    n = int(check_scalar(n, "n", _OWNER, kind="int", lower=4))
    needs_delta = mechanism == "dpsyn" or (mechanism == "beta" and beta_mechanism == "smooth")
    if needs_delta:
        if delta is None or isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0.0 < delta < 1.0:
            raise param_error("delta", _OWNER, f"in the open interval (0, 1) for mechanism {mechanism!r}", delta)
        claimed_delta = float(delta)
    else:
        if delta not in (None, 0, 0.0):
            raise param_error("delta", _OWNER, f"None or 0 for the pure-DP mechanism {mechanism!r}", delta)
        claimed_delta = 0.0
    if seed is not None:
        seed = int(check_scalar(seed, "seed", _OWNER, kind="int", lower=0))
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2)]
    start = time.perf_counter()
    with warnings.catch_warnings():
        # every run is seeded on purpose (reproducible audit on made-up data): the
        # user-seed warning of each release says nothing here
        warnings.simplefilter("ignore", UserWarning)
        if mechanism == "dpsyn":
            s_in, s_out, info = _dpsyn_scores(eps, claimed_delta, runs, n, rngs)
        elif mechanism == "kmeans":
            s_in, s_out, info = _kmeans_scores(eps, runs, n, rngs)
        else:
            s_in, s_out, info = _beta_scores(eps, claimed_delta, runs, n, rngs, beta_mechanism, tuple(prior))
    wall = time.perf_counter() - start
    res = epsilon_lower_bound(s_in, s_out, eps, claimed_delta, confidence, mechanism=mechanism,
                              statistic=info["statistic"], neighbours=info["neighbours"])
    res.wall_seconds = wall
    res.settings = {**info["settings"], "seed": seed}
    return res
