"""Goodness-of-fit helpers shared by the privacy tests (not a test module)."""
from __future__ import annotations

import numpy as np
from scipy import stats

# Every goodness-of-fit test in the privacy suite runs at level ALPHA with a fixed seed:
# a correct sampler fails with probability 0.001 per seed, and a wrong one (checked in
# the power tests) is rejected with p far below it.
ALPHA = 1e-3


def chisquare_pvalue(draws: np.ndarray, support: np.ndarray, pmf: np.ndarray, min_expected: float = 5.0) -> float:
    """Pearson chi-square p-value of integer ``draws`` against ``pmf`` on ``support``.

    Cells with expected count < ``min_expected`` are pooled (from the tails inward) into
    one cell; mass outside ``support`` joins that pooled cell too.
    """
    draws = np.asarray(draws)
    n = draws.size
    pmf = np.asarray(pmf, dtype=float)
    idx = np.searchsorted(support, draws)
    inside = (idx < support.size) & (support[np.minimum(idx, support.size - 1)] == draws)
    counts = np.bincount(idx[inside], minlength=support.size).astype(float)
    expected = n * pmf
    keep = expected >= min_expected
    obs = list(counts[keep])
    exp = list(expected[keep])
    rest_obs = n - sum(obs)
    rest_exp = n - sum(exp)
    if rest_exp >= 1e-9 * n:
        obs.append(rest_obs)
        exp.append(rest_exp)
    obs_a, exp_a = np.array(obs), np.array(exp)
    exp_a *= obs_a.sum() / exp_a.sum()
    return float(stats.chisquare(obs_a, exp_a).pvalue)
