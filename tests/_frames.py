"""Small seeded frames shared by the command-line tests (issue 30)."""
from __future__ import annotations

import numpy as np
import pandas as pd


def wage_frame(n: int = 80, seed: int = 0) -> pd.DataFrame:
    """A complete wage-style file (no missing value anywhere): age, sex, edu, hours, y."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 80, n)
    return pd.DataFrame({
        "age": age,
        "sex": rng.choice(["F", "M"], n),
        "edu": rng.choice(["low", "mid", "high"], n),
        "hours": np.round(rng.normal(40, 6, n) + 0.1 * (age - 50), 1),
        "y": rng.choice(["no", "yes"], n),
    })
