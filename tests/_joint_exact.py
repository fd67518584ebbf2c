"""The exact joint predictive of the mixed three-column DA-MI fixtures (age continuous and masked, sex
binary, edu three levels), by a midpoint rule over age: shared by the parametric and the tree tests."""
from __future__ import annotations

from typing import Callable

import numpy as np


def exact_mixed_joint(preps, ev, n: int, log_age: Callable[[float], np.ndarray], points: int = 1601):
    r"""Per record: P(sex, edu) (n, 2, 3), the midpoints of the age grid, and the age weights (n, t, 2, 3).

    .. math:: p(y, s, e \mid z, W) \propto p(y \mid z)\, N(\bar w; y, v)\, p(s \mid y)\, p(W_s \mid s)\,
        p(e \mid y, s)\, p(W_e \mid e),

    ``log_age(y)`` the (n,) log density of age's own model at the value y (any constant dropped)."""
    _, ps, pe = preps
    w_bar, v = ev["age"][1], ev["age"][2]
    ys = np.linspace(preps[0].lo, preps[0].hi, points)
    mid = 0.5 * (ys[1:] + ys[:-1])
    logw = np.empty((n, mid.size, 2, 3))
    for t, y in enumerate(mid):
        ya = np.full(n, y)
        base = log_age(y) - 0.5 * (w_bar - y) ** 2 / v
        lps = ps.log_probs(ps.eta({"age": ya})) + ev["sex"][1]
        for s in (0, 1):
            lpe = pe.log_probs(pe.eta({"age": ya, "sex": np.full(n, s)})) + ev["edu"][1]
            logw[:, t, s, :] = base[:, None] + lps[:, [s]] + lpe
    w = np.exp(logw - logw.max(axis=(1, 2, 3), keepdims=True))
    w /= w.sum(axis=(1, 2, 3), keepdims=True)
    return w.sum(axis=1), mid, w
