"""``synthmi analyse --family poisson|negbin``: a count response from the command line.

A new user analysing randhie's doctor visits could only pick gaussian; the table the
command writes must equal statsmodels' GLM fitted directly to the CSV and to the copies.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from synthmi.cli import main
from synthmi.evaluation import combine
from synthmi.spec import ReleaseSpec
from synthmi.synthetic import SyntheticData


def _visits(n=200, seed=5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 80, n)
    sex = rng.choice(["F", "M"], n)
    visits = rng.poisson(np.exp(-0.5 + 0.02 * age + 0.3 * (sex == "F")))
    return pd.DataFrame({"age": age, "sex": sex, "visits": visits})


def _design(df):
    return sm.add_constant(pd.DataFrame({"sex[T.M]": (df["sex"] == "M").astype(float),
                                         "age": df["age"].astype(float)}))


def test_cli_poisson_round_trip(tmp_path, capsys):
    csv = tmp_path / "visits.csv"
    _visits().to_csv(csv, index=False)
    out = tmp_path / "syn"
    assert main(["synthesize", "--data", str(csv), "--qi", "age,sex", "--keep", "visits", "--method", "cart",
                 "--m", "2", "--seed", "1", "--out", str(out), "--quiet"]) == 0
    table = tmp_path / "table.csv"
    assert main(["analyse", "--original", str(csv), "--synthetic", str(out), "--formula", "visits ~ age + sex",
                 "--family", "poisson", "--out", str(table), "--quiet"]) == 0
    assert "[poisson]" in capsys.readouterr().out
    got = pd.read_csv(table, index_col="term")
    original = pd.read_csv(csv)
    ref = sm.GLM(original["visits"], _design(original), family=sm.families.Poisson()).fit()
    names = {"Intercept": "const", "age": "age", "sex[T.M]": "sex[T.M]"}
    for t, name in names.items():
        assert got.loc[t, "est_orig"] == pytest.approx(ref.params[name], rel=1e-8)
        assert got.loc[t, "se_orig"] == pytest.approx(ref.bse[name], rel=1e-8)
    fits = [sm.GLM(c["visits"], _design(c), family=sm.families.Poisson()).fit()
            for c in SyntheticData.from_dir(out).copies]
    order = list(names.values())
    comb = combine(np.array([f.params[order] for f in fits]), np.array([f.bse[order] ** 2 for f in fits]),
                   rule="partial")
    np.testing.assert_allclose(got.loc[list(names), "est_syn"], comb.estimate, rtol=1e-8)
    np.testing.assert_allclose(got.loc[list(names), "ci_upper_syn"], comb.ci_upper, rtol=1e-8)


def test_cli_count_family_errors_and_spec(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["analyse", "--original", "x.csv", "--synthetic", "syn", "--family", "gamma"])
    assert "'poisson', 'negbin'" in capsys.readouterr().err
    # a spec may declare a count analysis
    d = ReleaseSpec.draft(_visits(), quasi_identifiers=["age", "sex"]).to_dict()
    d["analyses"] = [{"formula": "visits ~ age", "family": "negbin"}]
    assert ReleaseSpec.from_dict(d).analyses[0]["family"] == "negbin"
