"""A small population for the anonymeter-style attacks: training, control and an independent sample.

Two continuous columns make (almost) every record unique, so the original released as
is lets every attack succeed on its own records; four categorical columns (one with
missing values) and a secret that depends on ``x1`` give the control attack something
to learn from population patterns alone.
"""
from __future__ import annotations

import numpy as np
import pandas as pd


def population(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x1 = rng.normal(size=n)
    x2 = np.round(rng.normal(size=n), 4)
    x2[rng.random(n) < 0.05] = np.nan
    c1 = rng.choice(["a", "b", "c"], size=n)
    c2 = rng.choice(["u", "v"], size=n).astype(object)
    c2[rng.random(n) < 0.05] = None
    c3 = rng.choice(["p", "q", "r", "s"], size=n)
    secret = np.where(x1 + rng.normal(scale=0.7, size=n) > 0, "yes", "no")
    return pd.DataFrame({"x1": np.round(x1, 4), "x2": x2, "c1": c1, "c2": c2, "c3": c3, "secret": secret})


def splits(n: int = 600, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(training, control, independent): three disjoint samples of ``n`` from one population."""
    df = population(3 * n, seed)
    return (df.iloc[:n].reset_index(drop=True), df.iloc[n:2 * n].reset_index(drop=True),
            df.iloc[2 * n:].reset_index(drop=True))
