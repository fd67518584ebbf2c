"""Agency microdata: missing values, point masses, rules, survey weights, high-cardinality geography."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from synthmi.cli import main
from synthmi.data.agency import AGENCY_KEEP, AGENCY_QI, STATES, make_agency_data
from synthmi.evaluation import analyse, pmse
from synthmi.evaluation.combining import combine
from synthmi.models.cart import CartSynthesizer
from synthmi.models.glm import CategoricalModel, importance_ess_fraction, independence_mh, whitened_hmc
from synthmi.models.rubin import IMH_MIN_ESS_FRACTION, RubinSynthesizer
from synthmi.synthetic import SyntheticData

# the CLI test file: every quirk, few enough rows for the suite (51 states still all present)
N_CLI = 1000
KEEP_CLI = ["state", "employed", "occupation", "bmi", "weight"]


@pytest.fixture(scope="module")
def agency_csv(tmp_path_factory):
    df = make_agency_data(N_CLI, seed=3)
    path = tmp_path_factory.mktemp("agency") / "agency.csv"
    df.to_csv(path, index=False)
    return path, pd.read_csv(path)


def test_generator_is_deterministic_and_has_the_quirks():
    a = make_agency_data(2000, seed=5)
    pd.testing.assert_frame_equal(a, make_agency_data(2000, seed=5))
    assert list(a.columns) == ["age", "sex", "race", "state", "education_num", "marital_status", "employed",
                               "occupation", "hours_per_week", "income", "bmi", "smoked", "weight"]
    # skip pattern: hours and occupation missing exactly when not employed
    not_emp = (a["employed"] == "No").to_numpy()
    assert 0.03 < not_emp.mean() < 0.10
    assert np.array_equal(a["hours_per_week"].isna().to_numpy(), not_emp)
    assert np.array_equal(a["occupation"].isna().to_numpy(), not_emp)
    assert a["bmi"].isna().any()  # NHANES' own missing values
    zero = (a["income"] == 0).mean()
    assert 0.30 < zero < 0.45 and a["income"].isna().mean() > 0.03 and (a["income"].dropna() >= 0).all()
    assert set(a["state"].cat.categories) <= set(STATES) and a["state"].nunique() >= 45
    assert (a["weight"] > 0).all() and set(a["smoked"].unique()) <= {0.0, 1.0}
    with pytest.raises(ValueError, match="'n' parameter of make_agency_data"):
        make_agency_data(5)


def _within(copy_value: float, orig_value: float, n: int, what: str) -> None:
    """A copy's proportion against the original's: the copy is an n-draw from a model whose
    parameters carry posterior noise of the same size, so its sd about the original value
    is about sqrt(2 p (1 - p) / n); 4 sd."""
    p = max(orig_value, 1.0 / n)
    tol = 4 * np.sqrt(2 * p * (1 - p) / n)
    assert abs(copy_value - orig_value) <= tol, f"{what}: copy {copy_value:.4f} vs original {orig_value:.4f} (tol {tol:.4f})"


METHOD_ARGS = {
    "cart": [],
    # no transform for age or hours: the truncated predictive keeps them in the observed range by default
    "rubin": ["--transform", "income=log"],
    "dami": ["--transform", "income=log", "--transform", "hours_per_week=rank", "--mask", "age:K=2,sigma=3"],
}


@pytest.mark.slow
@pytest.mark.parametrize("method", sorted(METHOD_ARGS))
def test_cli_synthesizes_the_agency_file(agency_csv, tmp_path, method):
    path, orig = agency_csv
    out = tmp_path / method
    argv = ["synthesize", "--data", str(path), "--qi", ",".join(AGENCY_QI), "--keep", ",".join(KEEP_CLI),
            "--weights", "weight", "--semicont", "income=0", "--rule", "hours_per_week:employed == 'No'",
            "--method", method, "--m", "2", "--seed", "11", "--out", str(out), "--quiet", *METHOD_ARGS[method]]
    assert main(argv) == 0
    syn = SyntheticData.from_dir(out)
    assert syn.structure["weights"] == "weight"
    assert set(syn.structure["missing"]["two_part"]) == {"hours_per_week", "income"}
    n = len(orig)
    for copy in syn.copies:
        # kept columns, their missing values and the weight released unchanged
        for c in KEEP_CLI:
            # (the copy's text columns come back as Categoricals, the CSV's as objects)
            got = pd.Series(copy[c].astype(object).to_numpy(), name=c)
            pd.testing.assert_series_equal(got, orig[c].astype(object), check_dtype=False)
        # the skip rule holds in every copy
        assert copy.loc[copy["employed"] == "No", "hours_per_week"].isna().all()
        for c in ("hours_per_week", "income"):
            _within(copy[c].isna().mean(), orig[c].isna().mean(), n, f"{method} missing rate of {c}")
        _within((copy["income"] == 0).mean(), (orig["income"] == 0).mean(), n, f"{method} share of zero incomes")
        # rare categories keep their frequencies
        for level in ("Amer-Indian-Eskimo", "Other", "Asian-Pac-Islander"):
            _within((copy["race"] == level).mean(), (orig["race"] == level).mean(), n, f"{method} share of race {level}")
        # no negative values where the data have none, nothing outside the observed range (the
        # default bounds; synthmi.models.truncation); whole numbers stay whole
        for c in ("income", "hours_per_week", "age"):
            assert (copy[c].dropna() >= 0).all(), f"{method}: negative {c}"
            assert copy[c].min() >= orig[c].min() and copy[c].max() <= orig[c].max(), f"{method}: {c} out of range"
        assert np.all(np.mod(copy["age"], 1) == 0)
    if method != "cart":
        assert syn.diagnostics["max_r_hat"] <= 1.01


def test_two_part_column_and_na_level_by_hand():
    """A numeric QI with NAs and zeros becomes value / 0 / <NA> parts; a categorical QI with
    NAs gets <NA> as a level; a kept numeric with NAs enters through an indicator."""
    rng = np.random.default_rng(0)
    n = 400
    z = rng.normal(size=n)
    inc = np.where(rng.random(n) < 0.4, 0.0, np.exp(rng.normal(8, 1, n)))
    inc[rng.random(n) < 0.1] = np.nan
    grp = np.where(rng.random(n) < 0.5, "a", "b").astype(object)
    grp[rng.random(n) < 0.08] = None
    zk = z.copy()
    zk[:30] = np.nan
    df = pd.DataFrame({"inc": inc, "grp": pd.Categorical(grp, categories=["a", "b"]), "zk": zk})
    syn = CartSynthesizer().fit(df, ["grp", "inc"], keep=["zk"], semicont={"inc": [0]})
    assert syn.quasi_identifiers_ == ["grp", "inc_part", "inc"]
    assert syn.parts_["inc"]["levels"] == ["value", "0.0", "<NA>"]
    assert syn.na_level_columns_ == ["grp"] and syn.na_indicators_ == {"zk": "zk_NA"}
    assert list(syn.schema_["grp"].categories) == ["a", "b", "<NA>"]
    # the model frame: the indicator marks the 30 missing zk; zk filled with its observed mean
    assert syn.data_["zk_NA"].sum() == 30 and syn.data_["zk"].iloc[0] == pytest.approx(np.nanmean(zk))
    copies = syn.sample(3, random_state=1).copies
    before = df.copy()
    for c in copies:
        pd.testing.assert_series_equal(c["zk"], df["zk"])
        assert c["inc"].isna().any() and (c["inc"] == 0).any() and (c["inc"].dropna() >= 0).all()
        assert c["grp"].isna().any() and list(c["grp"].cat.categories) == ["a", "b"]
    pd.testing.assert_frame_equal(df, before)


def test_binary_and_integer_numeric_columns_stay_binary_and_integer():
    rng = np.random.default_rng(2)
    n = 300
    age = rng.integers(18, 80, n)
    df = pd.DataFrame({
        "age": age.astype(np.int64),
        "flag": (rng.random(n) < 1 / (1 + np.exp(-(age - 50) / 10))).astype(np.int64),
        "edu": rng.integers(1, 17, n).astype(np.int64),
        "z": rng.normal(size=n),
    })
    for syn in (CartSynthesizer(), RubinSynthesizer(progressbar=False)):
        c = syn.fit(df, ["age", "flag", "edu"], keep=["z"]).sample(2, random_state=3).copies[0]
        assert (c.dtypes == df.dtypes).all()
        assert set(c["flag"].unique()) <= {0, 1}
        assert c["edu"].dtype == np.int64


def test_bad_agency_inputs_name_the_parameter():
    df = make_agency_data(300, seed=1)[AGENCY_QI + AGENCY_KEEP]
    s = CartSynthesizer()
    with pytest.raises(ValueError, match="'weights' parameter of CartSynthesizer must name a column"):
        s.fit(df, AGENCY_QI, weights="nope")
    with pytest.raises(ValueError, match="weight column 'bmi' must hold positive finite values"):
        s.fit(df, AGENCY_QI, weights="bmi")
    with pytest.raises(ValueError, match="'semicont' parameter of CartSynthesizer names 'bmi'"):
        s.fit(df, AGENCY_QI, semicont={"bmi": [0]})
    with pytest.raises(ValueError, match="rule 'nonsense ==' for column 'hours_per_week' cannot be evaluated"):
        s.fit(df, AGENCY_QI, rules={"hours_per_week": "nonsense =="})
    with pytest.raises(ValueError, match="zeros\\? give them as a point mass"):
        RubinSynthesizer(transforms={"income": "log"}).fit(df, AGENCY_QI)


def test_cli_bad_agency_options_are_one_line_errors(agency_csv, tmp_path, capsys):
    path, _ = agency_csv
    base = ["synthesize", "--data", str(path), "--qi", "age,sex", "--out", str(tmp_path / "x"), "--quiet"]
    for extra, msg in [
        (["--method", "cart", "--transform", "age=log"], "'--transform' option is for dami, rubin"),
        (["--method", "rubin", "--transform", "age=sqrt"], "'--transform' option takes COLUMN=log|log1p|rank"),
        (["--method", "cart", "--semicont", "income"], "'--semicont' option takes COLUMN=VALUE"),
        (["--method", "cart", "--rule", "hours_per_week"], "'--rule' option takes COLUMN[=VALUE]:CONDITION"),
        (["--method", "cart", "--weights", "nope"], "'--weights' option names 'nope'"),
    ]:
        assert main(base + extra) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and msg in err[0], err
    assert not (tmp_path / "x").exists()


# ---- survey weights ------------------------------------------------------------------
def test_weighted_combined_estimate_matches_hand_computation():
    """Weighted mean (Hajek) per copy with its linearization variance, combined by Reiter's
    partial rule, computed by hand. The variance is the with-replacement estimator of the
    linearized total, n/(n-1) sum z_i^2 with z_i = w_i (x_i - qbar) / sum w (Binder 1983; R's
    svymean on svydesign(ids=~1, weights=~w)); with n = 6 the factor is 6/5."""
    w = np.array([1.0, 2.0, 4.0, 1.0, 3.0, 2.0])
    orig = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "w": w})
    copies = [orig.assign(x=[2.0, 2.0, 3.0, 5.0, 4.0, 6.0]), orig.assign(x=[1.0, 3.0, 2.0, 4.0, 6.0, 6.0])]
    q, u = [], []
    n = len(w)
    for c in copies:
        x = c["x"].to_numpy()
        qbar = (w * x).sum() / w.sum()
        q.append(qbar)
        z = w * (x - qbar) / w.sum()
        u.append(n / (n - 1) * ((z - z.mean()) ** 2).sum())
    # copy 1 by hand: qbar = 47/13; sum w^2 (x - qbar)^2 = 7622/169 (exact fractions), so
    # u = 6/5 * 7622/169 / 13^2
    assert q[0] == pytest.approx(47 / 13) and u[0] == pytest.approx(6 / 5 * 7622 / 169 / 169)
    m = 2
    qm, ubar, b = np.mean(q), np.mean(u), np.var(q, ddof=1)
    T = ubar + b / m  # Reiter (2003) partial synthesis
    df_ = (m - 1) * (1 + ubar / (b / m)) ** 2
    res = analyse("x ~ 1", family="gaussian", original=orig, synthetic=copies, rule="partial", weights="w")
    c = res.combined
    assert c.estimate[0] == pytest.approx(qm, rel=1e-10)
    assert c.se[0] == pytest.approx(np.sqrt(T), rel=1e-8)
    half = stats.t.ppf(0.975, df_) * np.sqrt(T)
    assert c.ci_lower[0] == pytest.approx(qm - half, rel=1e-8)
    assert res.weights == "w" and "design-based" in res.weights_note
    assert "weights:" in str(res.summary())
    # the same through combine() with the per-copy values
    assert combine(np.array(q)[:, None], np.array(u)[:, None], rule="partial").estimate[0] == pytest.approx(qm)


def test_weighted_regression_se_is_the_design_based_sandwich_with_n_over_n_minus_1():
    """A weighted slope's SE by hand: (X'WX)^-1 [n/(n-1) sum w_i^2 e_i^2 x_i x_i'] (X'WX)^-1
    (Binder 1983's linearization with the with-replacement n/(n-1) of R's svyglm on
    svydesign(ids=~1, weights=~w)); statsmodels' plain HC0 is that without n/(n-1)."""
    rng = np.random.default_rng(6)
    n = 12
    df = pd.DataFrame({"x": rng.normal(size=n), "w": rng.uniform(1, 5, n)})
    df["y"] = 1 + 2 * df["x"] + rng.normal(size=n)
    X = np.column_stack([np.ones(n), df["x"]])
    w, y = df["w"].to_numpy(), df["y"].to_numpy()
    bread = np.linalg.inv(X.T @ (w[:, None] * X))
    beta = bread @ X.T @ (w * y)
    e = y - X @ beta
    meat = n / (n - 1) * (X * (w * e)[:, None]).T @ (X * (w * e)[:, None])
    se = np.sqrt(np.diag(bread @ meat @ bread))
    res = analyse("y ~ x", family="gaussian", original=df, synthetic=[df, df.copy()], weights="w")
    np.testing.assert_allclose(res.original["params"].to_numpy(), beta, rtol=1e-10)
    np.testing.assert_allclose(res.original["bse"].to_numpy(), se, rtol=1e-8)


@pytest.mark.slow
def test_weighted_ci_covers_under_informative_sampling():
    """Reduced run of benchmarks/weights_coverage.py (600 replications there): with 40
    replications, coverage below 0.85 (33 or fewer of 40) has probability 0.0034 if the true rate
    is 0.95; the
    unweighted interval (biased by the design) almost never covers."""
    import importlib.util
    import pathlib

    spec = importlib.util.spec_from_file_location(
        "weights_coverage", pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "weights_coverage.py")
    import sys

    sys.path.insert(0, str(pathlib.Path(spec.origin).parent))
    try:
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.pop(0)
    rng = np.random.default_rng(7)
    pop = mod.population(rng)
    res = np.array([mod.one_replication(pop, rng, m=3) for _ in range(40)])
    assert res[:, 0].mean() >= 0.85
    assert res[:, 1].mean() <= 0.2


def test_weight_is_released_unchanged_and_not_a_predictor():
    df = make_agency_data(400, seed=2)[["age", "sex", "state", "weight"]]
    syn = RubinSynthesizer(progressbar=False).fit(df, ["age"], keep=["sex", "state"], weights="weight")
    assert "weight" not in syn.model_keep_
    assert syn.spec_["weight"].role == "weight" and "weight" in syn.spec_.released
    assert not any("weight" in n for n in syn.coefficient_names()["age"])
    out = syn.sample(1, random_state=0)
    pd.testing.assert_series_equal(out.copies[0]["weight"], df["weight"])
    asked = RubinSynthesizer(progressbar=False).fit(df, ["age"], keep=["sex", "state"], weights="weight",
                                                    weight_as_predictor=True)
    assert "weight" in asked.coefficient_names()["age"]


def test_utility_leaves_the_weight_out_and_states_its_design_rule(agency_csv, tmp_path, capsys):
    path, orig = agency_csv
    out = tmp_path / "cart"
    assert main(["synthesize", "--data", str(path), "--qi", "age,sex,race", "--keep", "state,employed,weight",
                 "--weights", "weight", "--method", "cart", "--m", "2", "--seed", "1", "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["utility", "--original", str(path), "--synthetic", str(out), "--tables", "1,2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "note: left out: survey weight 'weight' (released unchanged)"
    assert not any("weight" in line for line in lines[1:])
    # a 51-level variable among others: the full design has > 200 columns and is reduced by the rule
    res = pmse(orig, SyntheticData.from_dir(out).copies, variables=["age", "sex", "race", "state", "employed"])
    assert any("design reduced" in n for n in res.notes)
    assert any("main effect only" in n and "state" in n for n in res.notes)
    # the spec written with the copies gives the weight its role (it said "keep")
    import json

    assert json.loads((out / "metadata.json").read_text())["spec"]["columns"]["weight"]["role"] == "weight"
    # analyse reuses the recorded weight, as the report does (it was read as --weights none)
    ana = ["analyse", "--original", str(path), "--synthetic", str(out), "--formula", "age ~ sex", "--family", "gaussian"]
    assert main(ana) == 0
    assert "survey-weighted by 'weight'" in capsys.readouterr().out
    assert main(ana + ["--weights", "none"]) == 0
    assert "weights:" not in capsys.readouterr().out


# ---- the sampler for high-cardinality predictors --------------------------------------
def _sparse_multinomial(n=2000, levels=40, seed=0):
    """An 8-category outcome with a rare category and a 40-level predictor: empty cells."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, levels, n)
    eff = rng.normal(0, 0.5, (levels, 7))
    base = np.array([2.0, 1.0, 0.5, 0.0, -0.5, -1.0, -3.0])
    eta = np.column_stack([np.zeros(n), base + eff[g]])
    p = np.exp(eta - eta.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    X = np.column_stack([np.ones(n), (g[:, None] == np.arange(1, levels)[None]).astype(float)])
    uniq, inv = np.unique(X, axis=0, return_inverse=True)
    Y = np.zeros((uniq.shape[0], 8))
    np.add.at(Y, (inv.reshape(-1), y), 1.0)
    return CategoricalModel("logit", uniq, Y, prior_sd=10.0), y


@pytest.mark.slow
def test_hmc_converges_where_independence_mh_stalls():
    model, _ = _sparse_multinomial()
    rng = np.random.default_rng(1)
    mc = model.mode()
    # the pilot sees the degenerate importance weights ...
    assert importance_ess_fraction(model, mc, rng) < IMH_MIN_ESS_FRACTION
    imh = independence_mh(model, 300, rng, chains=2, warn=False, max_doublings=0, mode_cov=mc)
    assert imh.r_hat > 1.1
    # ... and HMC on the same exact posterior converges
    hmc = whitened_hmc(model, 300, rng, chains=2, mode_cov=mc)
    assert hmc.r_hat <= 1.01 and hmc.ess_bulk >= 400


def test_hmc_matches_exact_posterior_of_a_conjugate_case():
    """Binary logit, intercept only, k successes in n: under a flat prior on the logit
    theta, pi = expit(theta) ~ Beta(k, n - k), so E theta = digamma(k) - digamma(n - k) and
    Var theta = trigamma(k) + trigamma(n - k) (the N(0, 100^2) prior moves these by < 1e-4 sd).
    HMC's mean within 4 Monte Carlo se (ESS-based), its sd within 10% (the se of an sd
    from ESS >= 400 draws is about 1/sqrt(2 * 400) = 3.5%)."""
    from scipy.special import digamma, polygamma

    k, n = 120, 400
    model = CategoricalModel("logit", np.ones((1, 1)), np.array([[n - k, k]], dtype=float), prior_sd=100.0)
    res = whitened_hmc(model, 1000, np.random.default_rng(4), chains=2)
    draws = res.draws.reshape(-1)
    mean = digamma(k) - digamma(n - k)
    sd = np.sqrt(polygamma(1, k) + polygamma(1, n - k))
    assert abs(draws.mean() - mean) < 4 * sd / np.sqrt(res.ess_bulk)
    assert abs(draws.std() / sd - 1) < 0.1


def test_listed_two_part_predictor_brings_its_indicator():
    """A user who lists a two-part column as a predictor gets its zero indicator too (synthpop's
    padMis.syn copies the predictor-matrix entry to both): y jumps by 2 where income is positive,
    which the value column alone (zeros filled with the mean positive income) cannot carry."""
    rng = np.random.default_rng(0)
    n = 300
    z = rng.normal(size=n)
    inc = np.where(rng.random(n) < 0.4, 0.0, np.exp(rng.normal(1 + 0.3 * z, 0.5)))
    df = pd.DataFrame({"z": z, "inc": inc, "y": 2 * (inc > 0) + 0.1 * inc + rng.normal(size=n)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        listed = RubinSynthesizer(progressbar=False, models={"y": {"predictors": ["z", "inc"]}}).fit(
            df, ["inc", "y"], keep=["z"], semicont={"inc": [0]})
        default = RubinSynthesizer(progressbar=False).fit(df, ["inc", "y"], keep=["z"], semicont={"inc": [0]})
    preds = {c.column: list(c.predictors) for c in listed.conditionals_}
    assert "inc_part" in preds["y"] and "inc" in preds["y"]
    assert set(preds["y"]) == {p for c in default.conditionals_ if c.column == "y" for p in c.predictors}


def test_weights_not_a_predictor_warn_and_the_option_makes_them_one(tmp_path):
    """Mitra & Reiter (2006): the weight left out of the synthesis models is valid only when the
    design depends on modelled columns; the user is told, and --weight-as-predictor uses it."""
    df = make_agency_data(400, seed=3)[["age", "sex", "race", "weight"]]
    with pytest.warns(UserWarning, match="weight-as-predictor"):
        s = CartSynthesizer().fit(df, ["age", "sex"], keep=["race"], weights="weight")
    assert "weight" not in s.keep_
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        s = CartSynthesizer().fit(df, ["age", "sex"], keep=["race"], weights="weight",
                                                weight_as_predictor=True)
    assert "weight" in s.keep_


# ---- nested skip patterns: aliased design columns --------------------------------------
def _nested_skips(n=400, seed=3):
    """In the labour force (kept) -> employed (asked of the labour force) -> hours (asked of
    the employed): two nested skip patterns, as in the CPS."""
    rng = np.random.default_rng(seed)
    age = rng.integers(16, 80, n).astype(float)
    inlf = np.where(rng.random(n) < np.where(age > 65, 0.2, 0.75), "Yes", "No")
    employed = np.where(inlf == "Yes", np.where(rng.random(n) < 0.85, "Yes", "No"), None)
    hours = np.where(employed == "Yes", np.clip(np.round(rng.normal(38, 9, n)), 1, 99), np.nan)
    return pd.DataFrame({"age": age, "inlf": inlf, "employed": employed, "hours": hours})


def test_drop_aliased_keeps_the_first_of_collinear_columns_as_r_does():
    from synthmi.models.conditional import Encoder
    from synthmi.models.rubin import _drop_aliased

    # 6 rows; level 2 of g never occurs (its dummy is 0: aliased), x = 2 * [g == 1] (aliased
    # with g's dummy before it), u is free. R's lm(y ~ g + x + u) gives NA to g2 and x.
    g = np.array([0, 1, 1, 0, 1, 0])
    x = 2.0 * (g == 1)
    u = np.array([0.3, -1.0, 2.0, 0.5, 0.1, -0.7])
    encs = [Encoder("g", "categorical", n_levels=3), Encoder("x", "continuous", 0.0, 1.0),
            Encoder("u", "continuous", 0.0, 1.0)]
    out = _drop_aliased(np.ones((6, 1)), encs, {"g": g, "x": x, "u": u})
    assert [e.name for e in out] == ["g", "u"] and out[0].levels == (1,)
    assert out[0].labels() == ["g[1]"] and out[0].encode(np.array([0, 1, 2])).tolist() == [[0.0], [1.0], [0.0]]
    # in the linear predictor the left-out level contributes as the baseline (R predicts with 0)
    from synthmi.models.conditional import AdditiveDesign

    design = AdditiveDesign(np.ones((3, 1)), ["(Intercept)"], out, True)
    eta = design.prepare(np.array([1.0, 0.5, -2.0])).eta({"g": np.array([0, 1, 2]), "u": np.zeros(3)})
    assert eta.tolist() == [1.0, 1.5, 1.0]


@pytest.mark.slow
@pytest.mark.parametrize("method", ["rubin", "dami"])
def test_nested_skip_patterns_fit_with_aliased_levels_dropped(method):
    from synthmi.models.dami import DAMISynthesizer

    df = _nested_skips()
    if method == "rubin":
        syn = RubinSynthesizer(progressbar=False)
    else:
        syn = DAMISynthesizer(masks={"age": {"K": 2, "sigma_e": 5.0}}, random_state=1, progressbar=False)
    # before: "The predictors of a normal regression are collinear", naming no column
    syn.fit(df, ["age", "employed", "hours"], keep=["inlf"], rules={"hours": "employed != 'Yes'"})
    hours = next(c for c in syn.conditionals_ if c.column == "hours")
    # on the rows with hours, employed is always 'Yes': none of its dummies is identified
    assert not any(n.startswith("employed") for n in hours.coef_names), hours.coef_names
    copies = syn.sample(2, random_state=4).copies
    for c in copies:
        # the nested pattern is kept (the rule): hours only for the employed
        assert c["hours"].notna().sum() > 0 and c.loc[c["employed"] != "Yes", "hours"].isna().all()


@pytest.mark.parametrize("method", ["cart", "rubin"])
def test_too_few_rows_is_one_clear_error_before_any_other_check(method):
    df = _nested_skips(n=3, seed=1)  # 3 rows: 'inlf' or 'employed' is constant, which was the error given
    cls = CartSynthesizer if method == "cart" else RubinSynthesizer
    with pytest.raises(ValueError, match=f"^{cls.__name__} needs at least 10 rows to fit; the data have 3.$"):
        cls().fit(df, ["age", "employed"], keep=["inlf"])


def test_cli_rule_errors_name_the_option_and_come_before_fitting(agency_csv, tmp_path, capsys, monkeypatch):
    path, _ = agency_csv

    def no_fit(self, *a, **k):
        raise AssertionError("fit started before the rules were checked")

    monkeypatch.setattr(RubinSynthesizer, "fit", no_fit)
    base = ["synthesize", "--data", str(path), "--qi", "age,hours_per_week", "--keep", "employed,sex",
            "--method", "rubin", "--out", str(tmp_path / "x"), "--quiet"]
    for rule, msg in [
        ("hours_per_week:employd == 'No'", "cannot be evaluated on the data (the '--rule' option): name 'employd'"),
        ("hours:employed == 'No'", "The '--rule' option names 'hours', which is not a column"),
        # a column of the file that is not released (it said "not a column of the data")
        ("bmi:employed == 'No'", "The '--rule' option names 'bmi', which is not released: only the --qi and --keep"),
        ("employed=Nope:sex == 'Male'", "sets the value 'Nope', which is not one of the column's levels (the '--rule' option)"),
        # a word for a numeric column was written into the copies when the condition read a QI
        ("hours_per_week=abc:age < 16", "must set a number or None (missing) (the '--rule' option). Got 'abc'"),
    ]:
        assert main(base + ["--rule", rule]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and msg in err[0], err
    assert not (tmp_path / "x").exists()


def test_copula_messages_name_risk_dami_and_its_options():
    from synthmi.models.copula import GaussianCopulaImputer

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=40), "b": rng.normal(size=40),
                       "o": pd.Categorical(rng.integers(0, 3, 40), ordered=True),
                       "y": pd.Categorical(rng.choice(["u", "v"], 40))})
    # the ranked block is the continuous and ordinal columns (a, b, o): q_A - 1 = 2, the binary y is not in it
    with pytest.raises(ValueError, match=r"^The 'prior_df' parameter of GaussianCopulaImputer \(the copula of method "
                       r"'risk-dami'; --param prior_df=\.\.\.\) must be > q_A - 1 = 2 \(the number of continuous and "
                       r"ordinal columns, the ranked block, - 1\)\. Got 1 instead\.$"):
        GaussianCopulaImputer(n_iter=4, prior_df=1).fit(df)
    # 40 iterations cannot give 400 effective draws: the warning says how to run longer from the command line
    with pytest.warns(RuntimeWarning, match=r"^The copula of method 'risk-dami' \(GaussianCopulaImputer\): worst "
                      r"R-hat .*--param n_iter=N or n_iter=auto with a larger --max-seconds, --param chains=C"):
        GaussianCopulaImputer(n_iter=40, chains=2, random_state=1).fit(df[["a", "b"]])


def test_utility_prints_each_note_once_and_leaves_kept_only_tables_out(agency_csv, tmp_path, capsys):
    """Notes came once per copy (their numbers differ); a kept column's one-way table showed
    S_pMSE 0 unlabelled. Now: each note once, saying in how many copies; tables of kept columns
    only are not printed (a note names them) and are marked released_unchanged in the CSV."""
    path, orig = agency_csv
    out = tmp_path / "cart"
    assert main(["synthesize", "--data", str(path), "--qi", "age,sex,race", "--keep", "state,employed,weight",
                 "--weights", "weight", "--method", "cart", "--m", "3", "--seed", "1", "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["utility", "--original", str(path), "--synthetic", str(out), "--tables", "1,2",
                 "--out", str(tmp_path / "u.csv")]) == 0
    lines = capsys.readouterr().out.splitlines()
    notes = [line for line in lines if line.startswith("note:")]
    assert len(notes) == len(set(notes))
    reduced = [n for n in notes if "design reduced" in n]
    assert len(reduced) == 1 and reduced[0].endswith("; in all 3 copies"), notes
    rows = [line.split()[0] for line in lines if line.strip() and line.split()[-1][:1].isdigit()
            and not line.startswith(("note", "mean", "pMSE"))]
    assert "state" not in rows and "state:employed" not in rows and "employed" not in rows
    assert {"age", "sex", "race", "age:state", "race:employed"} <= set(rows)
    kept_note = [n for n in notes if n.startswith("note: not listed")]
    assert len(kept_note) == 1 and "(state, employed)" in kept_note[0] and "3 tables" in kept_note[0]
    tab = pd.read_csv(tmp_path / "u.csv").set_index("variables")
    assert tab.loc["state", "released_unchanged"] and tab.loc["state:employed", "released_unchanged"]
    assert tab.loc["state", "s_pmse"] == 0
    assert not tab.loc["age", "released_unchanged"] and not tab.loc["age:state", "released_unchanged"]


# ---- an income with a few negative values; missingness driven by a synthesized age ------
def _cps_income(n=2000, seed=11):
    """Income missing for children (a skip pattern on age, uniform on 0..85) and for 10% of
    the others at random; log-normal with 1% business losses (no log transform possible)."""
    rng = np.random.default_rng(seed)
    age = rng.integers(0, 86, n).astype(float)
    sex = rng.choice(["Male", "Female"], n)
    inc = np.round(np.exp(rng.normal(10 + 0.2 * (sex == "Male"), 1.0, n)))
    neg = rng.random(n) < 0.01
    inc[neg] = -np.round(np.exp(rng.normal(8, 1, neg.sum())))
    inc[(age < 15) | (rng.random(n) < 0.1)] = np.nan
    return pd.DataFrame({"age": age, "sex": sex, "income": inc})


def test_normal_model_misfit_warns_and_the_rank_transform_keeps_missing_rate_and_negatives():
    df = _cps_income()
    with pytest.warns(UserWarning) as rec:
        RubinSynthesizer(progressbar=False).fit(df, ["age", "income"], keep=["sex"])
    said = " ".join(str(w.message) for w in rec)
    # the trial: 515 negatives where the data have 21, and the missing rate 24.7% -> 13-14% because
    # the normal model of a flat age halves the share of children (on whom income is missing)
    assert "normal model of column 'income' does not fit" in said and "--transform income=rank" in said
    assert "values below zero" in said and "normal model of column 'age' does not fit" in said
    # the alternatives are named as a user gives them (--models is the option; there is no method 'tree')
    assert "--models tree" in said and "--models auto" in said and "method 'tree'" not in said
    m = 4
    syn = RubinSynthesizer(progressbar=False, transforms={"age": "rank", "income": "rank"})
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        copies = syn.fit(df, ["age", "income"], keep=["sex"]).sample(m, random_state=2).copies
    assert not any("does not fit" in str(w.message) for w in rec)
    n = len(df)
    for stat in (lambda d: d["income"].isna().mean(), lambda d: (d["income"] < 0).mean(),
                 lambda d: (d["age"] < 15).mean()):
        p = stat(df)
        got = np.mean([stat(c) for c in copies])
        # each copy: a Bernoulli(p) count plus an independent parameter draw of about the same
        # variance, p(1-p)/n each: the mean of m copies has sd sqrt(2 p (1-p) / (m n)); 4 sd
        assert abs(got - p) <= 4 * np.sqrt(2 * p * (1 - p) / (m * n)), (p, got)


def test_missing_rate_of_a_synthesized_column_is_kept_within_monte_carlo_error():
    """The missingness model (the two-part column's first part) given kept columns."""
    df = _cps_income(seed=12)
    df["child"] = np.where(df["age"] < 15, "yes", "no")
    m = 4
    copies = RubinSynthesizer(progressbar=False, transforms={"income": "rank"}).fit(
        df, ["income"], keep=["sex", "child"]).sample(m, random_state=3).copies
    p, n = df["income"].isna().mean(), len(df)
    got = np.mean([c["income"].isna().mean() for c in copies])
    assert abs(got - p) <= 4 * np.sqrt(2 * p * (1 - p) / (m * n)), (p, got)
