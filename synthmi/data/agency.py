"""An agency-style survey file built from Adult and NHANES: the test bed for messy microdata.

``make_agency_data(n, seed)`` returns a frame with the quirks a statistical
agency's person file has and the tidy demonstration files lack:

========================  =========================================================
column                    what it is
========================  =========================================================
``age``                   Adult age in years (whole numbers, 17-90)
``sex``                   Adult sex (Female / Male)
``race``                  Adult race, 5 levels, two of them rare (about 1%)
``state``                 51 levels (50 states and DC) drawn with 2020 Census
                          population shares, tilted by race: geography with rare
                          cells (Wyoming about 0.2%)
``education_num``         Adult's integer-coded education (1-16)
``marital_status``        Adult marital status (7 levels)
``employed``              Yes / No (No: Adult workclass missing, without pay or
                          never worked)
``occupation``            Adult occupation; missing when not employed (skip pattern
                          in a column that is usually kept)
``hours_per_week``        Adult hours; missing when not employed (skip pattern, rule
                          ``employed == 'No'`` -> missing)
``income``                annual income in dollars, zero-heavy (about 40% zeros),
                          4-6% item non-response; never negative
``bmi``                   NHANES body mass index of a donor of the same sex and
                          5-year age band (NHANES' own missing values kept)
``smoked``                NHANES "smoked 100 cigarettes" as 0/1 (binary numeric)
``weight``                Adult's CPS final weight ``fnlwgt`` (a survey weight)
========================  =========================================================

``income`` is constructed (Adult has only an income class): zero with a
probability that rises for the young, the old, women and people not employed
and falls in the >50K class; otherwise log-normal around a mean that rises with
education, hours and the >50K class. Everything is deterministic given ``seed``;
nothing large is shipped, the frame is generated from the bundled files.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from ..errors import ParameterError

__all__ = ["make_agency_data", "STATES", "AGENCY_QI", "AGENCY_KEEP", "AGENCY_RULES"]

# 2020 Census resident population (thousands), 50 states and DC.
_STATE_POP = {
    "AL": 5024, "AK": 733, "AZ": 7152, "AR": 3011, "CA": 39538, "CO": 5774, "CT": 3606, "DE": 990,
    "DC": 690, "FL": 21538, "GA": 10712, "HI": 1455, "ID": 1839, "IL": 12813, "IN": 6786, "IA": 3190,
    "KS": 2938, "KY": 4506, "LA": 4658, "ME": 1362, "MD": 6177, "MA": 7030, "MI": 10077, "MN": 5706,
    "MS": 2961, "MO": 6155, "MT": 1084, "NE": 1962, "NV": 3105, "NH": 1378, "NJ": 9289, "NM": 2118,
    "NY": 20201, "NC": 10439, "ND": 779, "OH": 11799, "OK": 3959, "OR": 4237, "PA": 13003, "RI": 1097,
    "SC": 5119, "SD": 887, "TN": 6910, "TX": 29146, "UT": 3272, "VT": 643, "VA": 8631, "WA": 7705,
    "WV": 1794, "WI": 5894, "WY": 577,
}
STATES: list[str] = sorted(_STATE_POP)

#: the quasi-identifiers and kept columns the tests and benchmarks use
AGENCY_QI = ["age", "sex", "race", "hours_per_week", "income"]
AGENCY_KEEP = ["state", "education_num", "marital_status", "employed", "occupation", "bmi", "smoked", "weight"]
#: synthpop-style structural rule: hours worked is missing when not employed
AGENCY_RULES = {"hours_per_week": {"rule": "employed == 'No'", "value": None}}


def make_agency_data(n: int = 40_000, seed: int = 0) -> pd.DataFrame:
    """The agency test file with ``n`` rows (see the module docstring).

    Parameters
    ----------
    n : int
        Rows; drawn from Adult's 48,842 records without replacement (with
        replacement above that).
    seed : int
        Seeds every draw; same seed -> identical frame.
    """
    from . import load_adult, load_nhanes

    if not isinstance(n, (int, np.integer)) or n < 100:
        raise ParameterError(f"The 'n' parameter of make_agency_data must be an integer >= 100. Got {n!r} instead.", parameter='n', owner='make_agency_data')
    rng = np.random.default_rng(seed)
    adult = load_adult(recode=False)
    rows = rng.choice(len(adult), size=n, replace=n > len(adult))
    a = adult.iloc[rows].reset_index(drop=True)

    employed = ~(a["workclass"].isna() | a["workclass"].astype(object).isin(["Without-pay", "Never-worked"]))
    age = a["age"].to_numpy(dtype=float)
    female = (a["sex"].astype(str) == "Female").to_numpy()
    rich = (a["income"].astype(str).str.startswith(">")).to_numpy()
    edu = a["education_num"].to_numpy(dtype=float)
    hours = a["hours_per_week"].to_numpy(dtype=float)

    # geography: population shares tilted by race (a fixed tilt, so the frame does not depend on n)
    tilt_rng = np.random.default_rng(20201)
    races = list(a["race"].cat.categories)
    share = np.array([_STATE_POP[s] for s in STATES], dtype=float)
    state = np.empty(n, dtype=object)
    race = a["race"].astype(str).to_numpy()
    for r in races:
        p = share * np.exp(tilt_rng.normal(0.0, 0.6, size=len(STATES)))
        p /= p.sum()
        idx = np.flatnonzero(race == r)
        state[idx] = np.asarray(STATES, dtype=object)[rng.choice(len(STATES), size=idx.size, p=p)]

    # zero-heavy income (dollars, rounded to 10)
    eta0 = -0.9 + 1.4 * (age < 25) + 1.2 * (age >= 62) + 0.5 * female + 2.5 * (~employed.to_numpy()) - 0.9 * rich
    zero = rng.random(n) < 1.0 / (1.0 + np.exp(-eta0))
    h = np.where(np.isnan(hours), 40.0, hours)
    mu = 9.7 + 0.08 * (edu - 10) + 0.7 * rich + 0.012 * (h - 40)
    income = np.where(zero, 0.0, np.round(np.exp(mu + 0.7 * rng.standard_normal(n)) / 10) * 10)
    income[rng.random(n) < 0.04 + 0.03 * rich] = np.nan

    # NHANES donors of the same sex and 5-year age band
    nh = load_nhanes(recode=False)
    nh_band = (np.clip(nh["age"].to_numpy(dtype=float), 20, 80) // 5).astype(int)
    nh_female = (nh["gender"].astype(str) == "Female").to_numpy()
    band = (np.clip(age, 20, 80) // 5).astype(int)
    donor = np.empty(n, dtype=np.int64)
    for f in (False, True):
        for b in np.unique(band):
            idx = np.flatnonzero((female == f) & (band == b))
            pool = np.flatnonzero((nh_female == f) & (nh_band == b))
            donor[idx] = pool[rng.integers(0, pool.size, size=idx.size)]
    bmi = nh["bmi"].to_numpy(dtype=float)[donor]
    smoked = (nh["smoked_100_cigarettes"].astype(str).to_numpy()[donor] == "yes").astype(float)

    out = pd.DataFrame({
        "age": age,
        "sex": a["sex"].astype(str).to_numpy(),
        "race": race,
        "state": state,
        "education_num": edu.astype(np.int64),
        "marital_status": a["marital_status"].astype(str).to_numpy(),
        "employed": np.where(employed, "Yes", "No"),
        "occupation": a["occupation"].astype(object).where(employed, None).to_numpy(),
        "hours_per_week": np.where(employed, hours, np.nan),
        "income": income,
        "bmi": bmi,
        "smoked": smoked,
        "weight": a["fnlwgt"].to_numpy(dtype=float),
    })
    for c in ("sex", "race", "state", "marital_status", "employed", "occupation"):
        vals = out[c]
        out[c] = pd.Categorical(vals, categories=sorted(vals.dropna().unique(), key=str))
    return out
