"""DA-MI joint-predictive test fixtures shared by the parametric and the tree tests: three dependent
categorical QIs, and the exact joint predictive of the mixed three-column fixtures (age continuous and
masked, sex binary, edu three levels) by a midpoint rule over age."""
from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd
from scipy.special import expit


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


def dependent_frame(n: int = 300, seed: int = 0) -> pd.DataFrame:
    """Three strongly dependent categorical QIs (binary a, 3-level ordinal b, binary c) given z."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n)
    a = (rng.random(n) < expit(0.8 * z)).astype(int)
    b = np.digitize(1.5 * a + 0.5 * z + rng.logistic(size=n), [0.3, 1.6])
    c = (rng.random(n) < expit(-1.5 + 1.4 * b - 1.0 * a)).astype(int)
    return pd.DataFrame({
        "z": z,
        "a": pd.Categorical.from_codes(a, ["a0", "a1"]),
        "b": pd.Categorical.from_codes(b, ["lo", "mid", "hi"], ordered=True),
        "c": pd.Categorical.from_codes(c, ["c0", "c1"]),
    })
