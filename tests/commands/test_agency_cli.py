"""Agency microdata through the command line: per-variable settings as one mechanism, errors in
command-line terms, no value outside the data's range by default."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from synthmi.cli import cli_message, main
from synthmi.data.agency import make_agency_data
from synthmi.models.cart import CartSynthesizer
from synthmi.models.conditional import parse_models, per_variable_setting
from synthmi.models.rubin import RubinSynthesizer
from synthmi.spec import ReleaseSpec
from synthmi.synthetic import SyntheticData


@pytest.fixture(scope="module")
def small():
    return make_agency_data(300, seed=1)[["age", "sex", "income", "employed", "weight"]]


# ---- per-variable settings: models= entries, transforms= / semicont=, the spec, the CLI ----------
@pytest.mark.slow
def test_models_entries_transform_and_semicont_equal_the_flat_parameters(small):
    """The same settings given as models entries or as transforms= / semicont= build the same
    model (parts, transform of the value model) and the same copies."""
    flat = RubinSynthesizer(progressbar=False, transforms={"income": "log"}).fit(
        small, ["age", "income"], keep=["sex", "employed"], semicont={"income": [0]})
    per_var = RubinSynthesizer(progressbar=False, models={"income": {"transform": "log", "semicont": 0}}).fit(
        small, ["age", "income"], keep=["sex", "employed"])
    for s in (flat, per_var):
        assert s.parts_["income"]["levels"] == ["value", "0.0", "<NA>"]
        assert {c.column: c.transform for c in s.conditionals_}["income"] == "log"
    a, b = flat.sample(2, random_state=4).copies, per_var.sample(2, random_state=4).copies
    for x, y in zip(a, b):
        pd.testing.assert_frame_equal(x, y)


def test_spec_models_reach_cart_and_rubin(small):
    spec = ReleaseSpec.from_roles(small, ["age", "income"], ["sex", "employed"])
    spec.models = {"income": {"semicont": [0], "transform": "log"}}
    cart = CartSynthesizer().fit(small, spec)
    assert list(cart.parts_["income"]["levels"]) == ["value", "0.0", "<NA>"]
    rub = RubinSynthesizer(progressbar=False).fit(small, spec)
    assert {c.column: c.transform for c in rub.conditionals_}["income"] == "log"
    assert rub.parts_["income"]["levels"] == ["value", "0.0", "<NA>"]


def test_per_variable_setting_merges_and_refuses_disagreement():
    specs = parse_models({"x": {"transform": "log"}, "y": {"semicont": [0, 1]}, "z": "normal"}, ["x", "y", "z"], "T")
    assert per_variable_setting(specs, "transform", {"z": "rank"}, "transforms", "T") == {"z": "rank", "x": "log"}
    assert per_variable_setting(specs, "semicont", None, "semicont", "T") == {"y": [0.0, 1.0]}
    # the same value twice is fine; a different one is an error naming both sources
    assert per_variable_setting(specs, "transform", {"x": "log"}, "transforms", "T") == {"x": "log"}
    with pytest.raises(ValueError, match="'x' has the transform 'rank' from the 'transforms' parameter of T and 'log'"):
        per_variable_setting(specs, "transform", {"x": "rank"}, "transforms", "T")
    with pytest.raises(ValueError, match="transform of column 'x' in the 'models' parameter of T must be one of"):
        parse_models({"x": {"transform": "sqrt"}}, ["x"], "T")
    with pytest.raises(ValueError, match="point masses \\('semicont'\\) of column 'x'"):
        parse_models({"x": {"semicont": "zero"}}, ["x"], "T")


def test_cli_per_variable_options_apply_with_a_spec(small, tmp_path):
    """--semicont / --weights / --rule used to be dropped silently when a --spec was given."""
    data = tmp_path / "d.csv"
    small.to_csv(data, index=False)
    spec = ReleaseSpec.from_roles(small, ["age", "income"], ["sex", "employed", "weight"])
    spec.save(tmp_path / "spec.json")
    out = tmp_path / "syn"
    assert main(["synthesize", "--data", str(data), "--spec", str(tmp_path / "spec.json"), "--method", "cart",
                 "--semicont", "income=0", "--weights", "weight", "--m", "2", "--seed", "1", "--out", str(out),
                 "--quiet"]) == 0
    syn = SyntheticData.from_dir(out)
    assert syn.structure["weights"] == "weight" and "income" in syn.structure["missing"]["two_part"]


# ---- errors in command-line terms -------------------------------------------------------------
def test_errors_name_the_command_line_options(tmp_path, capsys):
    df = make_agency_data(200, seed=2)
    data = tmp_path / "a.csv"
    df.to_csv(data, index=False)
    out = str(tmp_path / "x.json")
    cases = [
        (["subgroups", "--data", str(data), "--qi", "age,sex", "--k0", "0", "--out", out], "The '--k0' option must be >= 1"),
        (["subgroups", "--data", str(data), "--qi", "age,sex", "--k0", "3", "--tol", "age=-1", "--out", out],
         "The '--tol' option must be >= 0 for column 'age'"),
        (["subgroups", "--data", str(data), "--qi", "age,nope", "--k0", "3", "--out", out],
         "The '--qi' option names columns not in the data: ['nope']"),
    ]
    for argv, msg in cases:
        assert main(argv) == 1
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert msg in err, err
        assert "parameter" not in err and "risk_subgroups" not in err


def test_cli_message_rewrites_only_names_the_verb_has():
    """The command line restates an error from its fields (parameter -> option, from the
    table), never by parsing its text."""
    import argparse

    from synthmi._validate import param_error
    from synthmi.errors import ParameterError

    p = argparse.ArgumentParser()
    for flag in ("--tol", "--target", "--target-tol", "--threshold", "--param"):
        p.add_argument(flag)
    assert cli_message(param_error("target_tolerance", "attribute_disclosure", ">= 0.0", -1.0), p) == \
        "The '--target-tol' option must be >= 0.0. Got -1.0 instead."
    assert cli_message(ParameterError("The 'target' parameter of attribute_disclosure must be a column.",
                                      parameter="target", owner="attribute_disclosure"), p) == \
        "The '--target' option must be a column."
    # a name without an option of this verb, and one the user typed with --param, stay as they are
    assert cli_message(param_error("k0", "f", ">= 1", 0), p) == "The 'k0' parameter of f must be >= 1. Got 0 instead."
    assert cli_message(param_error("threshold", "C", "<= 1", 2), p, {"threshold"}) == \
        "The 'threshold' parameter of C must be <= 1. Got 2 instead."
    # an error without fields keeps its text: nothing is parsed
    assert cli_message(ParameterError("The 'tolerance' parameter must be >= 0"), p) == \
        "The 'tolerance' parameter must be >= 0"


# ---- the joint predictive with a two-part column ---------------------------------------------
def _two_part_setup():
    """A zero-heavy 'inc' (two parts: value / 0) visited first, then a masked binary 'g' whose
    model depends on inc: g's mask evidence must flow back to inc's part and value."""
    from scipy.special import expit

    from synthmi.models import DAMISynthesizer
    from synthmi.models.predictive import Prepared

    rng = np.random.default_rng(11)
    n = 300
    z = rng.normal(size=n)
    zero = rng.random(n) < expit(-0.3 + 0.8 * z)
    inc = np.where(zero, 0.0, np.exp(rng.normal(1.0 + 0.3 * z, 0.5)))
    g = (rng.random(n) < expit(-1.5 + 3.0 * (inc > 0) + 0.5 * np.log1p(inc))).astype(int)
    df = pd.DataFrame({"z": z, "inc": inc, "g": pd.Categorical.from_codes(g, ["g0", "g1"])})
    syn = DAMISynthesizer(masks={"g": {"alpha": 4.0}}, grid=None, w_tilde="reuse", random_state=1,
                          progressbar=False).fit(df, quasi_identifiers=["inc", "g"], keep=["z"], semicont={"inc": [0]})
    theta = syn._posterior_draws(1, np.random.default_rng(2))
    preps = [Prepared(cond, theta[j][0]) for j, cond in enumerate(syn.conditionals_)]
    ev = syn._evidence(np.random.default_rng(3))
    return syn, preps, ev


def _exact_part_g(syn, preps, ev):
    """Exact joint predictive P(part = l, g = k) per record: the value part integrates the
    truncated-normal latent of inc against g's model on an 800-point midpoint rule."""
    from scipy.stats import norm

    part_c, inc_c, g_c = syn.conditionals_
    pp, pi, pg = preps
    n = syn.n_
    fill = inc_c.part[1]
    lp_part = pp.log_probs(pp.eta({}))  # (n, 2): value, 0.0
    out = np.zeros((n, 2, 2))
    # part = "0.0": inc takes the fill for later models
    vals = {"inc_part": np.ones(n, dtype=np.int64), "inc": np.full(n, fill)}
    out[:, 1, :] = np.exp(lp_part[:, [1]] + pg.log_probs(pg.eta(vals)))
    # part = "value": integrate over the latent y ~ N(eta, sigma) truncated to [lo, hi]
    eta = pi.eta({"inc_part": np.zeros(n, dtype=np.int64)})
    ys = np.linspace(pi.lo, pi.hi, 801)
    mid, h = 0.5 * (ys[1:] + ys[:-1]), np.diff(ys)[0]
    mass = norm.cdf((pi.hi - eta) / pi.sigma) - norm.cdf((pi.lo - eta) / pi.sigma)
    acc = np.zeros((n, 2))
    for y in mid:
        dens = norm.pdf((y - eta) / pi.sigma) / pi.sigma / mass
        v = {"inc_part": np.zeros(n, dtype=np.int64), "inc": inc_c.to_raw(np.full(n, y))}
        acc += dens[:, None] * np.exp(pg.log_probs(pg.eta(v))) * h
    out[:, 0, :] = np.exp(lp_part[:, [0]]) * acc
    out *= np.exp(ev["g"][1])[:, None, :]
    return out / out.sum(axis=(1, 2), keepdims=True)


def test_joint_predictive_draws_two_part_columns_exactly():
    """Pooled (part, g) frequencies over 300 records x 120 replicates: the within-record Gibbs
    sweeps match the exact joint (pooled chi-square p > 1e-3; total variation below 0.02, the
    Monte Carlo floor at 36,000 draws being ~0.005), the sequential draw, which ignores g's
    mask evidence for inc, does not (p < 1e-6). Each record's exact probabilities sum to 1."""
    from scipy import stats

    from synthmi.models.predictive import gibbs_draw, sequential_draw

    syn, preps, ev = _two_part_setup()
    exact = _exact_part_g(syn, preps, ev)
    np.testing.assert_allclose(exact.sum(axis=(1, 2)), 1.0, rtol=1e-12)
    expected = exact.sum(axis=0).ravel()
    rng = np.random.default_rng(4)

    def pooled(draws):
        counts = np.zeros(4)
        for d in draws:
            counts += np.bincount(d["inc_part"] * 2 + d["g"], minlength=4)
            # the value column carries the fill exactly where the part is not "value"
            assert np.all(d["inc"][d["inc_part"] != 0] == syn.conditionals_[1].part[1])
        return counts

    reps = 120
    seq = pooled(sequential_draw(syn.conditionals_, preps, ev, rng)[0] for _ in range(reps))
    gib = pooled(gibbs_draw(syn.conditionals_, preps, ev, rng, n_sweeps=3)[0] for _ in range(reps))
    e = expected * reps
    assert stats.chisquare(gib, e).pvalue > 1e-3
    assert stats.chisquare(seq, e).pvalue < 1e-6
    f = expected / expected.sum()
    assert 0.5 * np.abs(gib / gib.sum() - f).sum() < 0.02


def test_dami_with_two_part_columns_uses_the_joint_predictive_and_says_so(small):
    from synthmi.models import DAMISynthesizer

    syn = DAMISynthesizer(masks={"sex": {"alpha": 2.0}}, n_sweeps=2, progressbar=False).fit(
        small, ["age", "sex", "income"], keep=["employed"], semicont={"income": [0]})
    out = syn.sample(1, random_state=5)
    assert out.metadata()["structure"]["predictive_scheme"]["scheme"] == "gibbs"
    c = out.copies[0]
    assert c["income"].isna().any() and (c["income"] == 0).any() and (c["income"].dropna() >= 0).all()


# ---- risk-dami on agency microdata: the copula's view of the columns ---------------------------
@pytest.fixture(scope="module")
def agency_rd():
    """risk-dami on a 300-row agency file with a deliberately short chain (mechanics only: the
    release check is exercised in test_agency.py); released flagged as unconverged."""
    import warnings

    from synthmi.models.risk_targeted import RiskTargetedSynthesizer

    df = make_agency_data(300, seed=3)
    qi = ["age", "sex", "race", "hours_per_week", "income"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        # income has 18 item-missing cells: min_missing_cells=10 models them by an indicator
        s = RiskTargetedSynthesizer(masks={"age": {"K": 2, "sigma_e": 3}}, n_iter=10, random_state=1,
                                    max_kept_levels=4, accept_diagnostics=True, min_missing_cells=10).fit(
            df, qi, keep=["state", "employed", "occupation", "bmi", "weight"], weights="weight",
            rules={"hours_per_week": "employed == 'No'"})
        out = s.sample(2, random_state=2)
    return df, s, out


@pytest.mark.slow
def test_risk_dami_copula_frame_pools_geography_and_models_item_nonresponse(agency_rd):
    df, s, out = agency_rd
    frame = s.copula_data_
    # the weight is no predictor; kept columns come first, then the quasi-identifiers and the indicator
    assert "weight" not in frame.columns
    assert list(frame.columns) == ["state", "employed", "occupation", "bmi", "age", "sex", "race",
                                   "hours_per_week", "income", "income_NA"]
    # 51 states (40+ present at 300 rows) -> the 3 most frequent + <other>; the counts add up
    n_states = df["state"].nunique()
    assert n_states >= 40
    counts = df["state"].astype(object).value_counts()
    top = counts.index[:3]
    assert counts.iloc[2] > counts.iloc[3]  # no tie at the cut for this seed
    assert s.pooled_["state"] == {"levels": n_states, "modelled": 4}
    assert list(frame["state"].cat.categories) == [c for c in df["state"].cat.categories if c in set(top)] + ["<other>"]
    assert (frame["state"] == "<other>").sum() == (~df["state"].isin(top)).sum()
    assert s.pooled_["occupation"]["levels"] == df["occupation"].nunique()
    # income's item non-response is an indicator; hours' skip pattern is not (the rule explains it)
    assert s.missing_indicators_ == {"income": "income_NA"}
    ind = frame["income_NA"]
    assert ((ind == "yes") == df["income"].isna()).all()
    # the indicator's coefficient on income, and employed's on hours (the skip pattern), are held at 0
    pairs = {tuple(p) for p in s.copula_.zero_coefficients_}
    # the rule's pair, the indicator's, and the detected skip patterns (occupation and hours are
    # missing exactly when employed is 'No'; nothing else is)
    assert s.skip_patterns_ == [("occupation", "employed"), ("hours_per_week", "employed")]
    assert pairs == {("hours_per_week", "employed"), ("income_NA", "income"), ("occupation", "employed")}
    sampler = s.copula_.sampler_
    for st in s.copula_.chain_states_:
        for b, pos in sampler.zero_coef.items():
            assert np.all(np.abs(st.coef[b][1 + pos]) < 1e-3)
    meta = out.structure["copula_columns"]
    assert meta["pooled"]["state"]["modelled"] == 4 and meta["missing_indicators"] == {"income": "income_NA"}


def test_risk_dami_copies_carry_synthetic_missingness_and_kept_columns_unchanged(agency_rd):
    df, s, out = agency_rd
    for c in out.copies:
        for k in ("state", "employed", "occupation", "bmi", "weight"):
            pd.testing.assert_series_equal(c[k], df[k])
        # the skip rule holds; income has synthetic missing values (not imputed away)
        assert c.loc[c["employed"] == "No", "hours_per_week"].isna().all()
        assert c.loc[c["employed"] == "Yes", "hours_per_week"].notna().all()
        assert c["income"].isna().sum() > 0
        assert (c["income"].dropna() >= 0).all() and c["age"].between(df["age"].min(), df["age"].max()).all()
    assert out.diagnostics_check["passed"] is False  # a 10-step chain: flagged, not passed
    cells = out.diagnostics["imputed_cells"]
    assert cells["missingness_synthesized"] == {c: int(df[c].isna().sum()) for c in ("hours_per_week", "income")}
    assert cells["internal_only"] == {c: int(df[c].isna().sum()) for c in ("occupation", "bmi")}


@pytest.mark.slow
def test_risk_dami_few_missing_cells_are_synthesized_completely_at_random():
    # Below min_missing_cells an indicator would stall the chain (5 cells gave R-hat 2.54 on
    # NHANES): the copies' missing values are then drawn MCAR at a Beta(k + 1/2, n - k + 1/2) rate.
    import warnings

    from synthmi.models.risk_targeted import RiskTargetedSynthesizer

    df = make_agency_data(300, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        s = RiskTargetedSynthesizer(masks={"age": {"K": 2, "sigma_e": 3}}, n_iter=10, random_state=1,
                                    max_kept_levels=4, accept_diagnostics=True).fit(
            df, ["age", "sex", "race", "hours_per_week", "income"], keep=["state", "employed", "bmi"],
            weights="weight", rules={"hours_per_week": "employed == 'No'"})
        out = s.sample(20, random_state=2)
    k = int(df["income"].isna().sum())
    assert k == 18 and s.missing_indicators_ == {} and "income_NA" not in s.copula_data_
    assert {c: v[:2] for c, v in s.mcar_missing_.items()} == {"income": (18, 300)}
    counts = np.array([c["income"].isna().sum() for c in out.copies])
    # per copy: binomial sd sqrt(300 * 0.06 * 0.94) = 4.1 and the rate's posterior sd 0.0137 * 300 = 4.1,
    # so the mean of 20 copies has sd ~ 1.3; 4 sd
    assert abs(counts.mean() - k) < 4 * np.hypot(4.1, 4.1) / np.sqrt(20)
    assert len(set(counts)) > 1  # drawn, not copied
    for c in out.copies:
        assert c.loc[c["employed"] == "No", "hours_per_week"].isna().all()
    assert "income" in out.structure["copula_columns"]["missingness_mcar"]
    assert out.diagnostics["imputed_cells"]["missingness_synthesized"]["income"] == k


def test_fix_zero_coefficients_sets_the_prior_precision():
    from synthmi.models.copula import ZERO_COEF_PRECISION, CopulaGibbs, CopulaState, _encode
    from synthmi.schema import Schema

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=50), "y": rng.normal(size=50),
                       "b": pd.Categorical(rng.choice(["u", "v"], 50)), "n": pd.Categorical(rng.choice(["p", "q", "r"], 50))})
    margins = _encode(df, Schema.infer(df))
    g = CopulaGibbs(margins, sum(len(m.cols) for m in margins))
    assert g.fix_zero_coefficients([("b", "x"), ("x", "y"), ("n", "b")]) == [("b", "x"), ("n", "b")]
    st = g.initial_state()
    lam_b = g.prior_precision(st, 0)  # block b regresses on x, y: [intercept, x, y]
    assert lam_b[1] == ZERO_COEF_PRECISION and lam_b[2] < 1.0
    lam_n = g.prior_precision(st, 1)  # block n regresses on x, y, b
    assert lam_n[3] == ZERO_COEF_PRECISION and np.all(lam_n[1:3] < 1.0)


def test_risk_dami_without_masks_still_imputes_the_missing_values():
    """masks=None is plain copula multiple imputation: no missing-value indicator, income imputed."""
    import warnings

    from synthmi.models.risk_targeted import RiskTargetedSynthesizer

    df = make_agency_data(200, seed=4)[["age", "sex", "income", "employed"]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        s = RiskTargetedSynthesizer(n_iter=8, accept_diagnostics=True).fit(df, ["age", "income"], keep=["sex", "employed"])
        out = s.sample(1, random_state=1, allow_unmodified=True)  # imputation only: asked for (issue 30)
    assert s.missing_indicators_ == {} and "income_NA" not in s.copula_data_
    assert out.copies[0]["income"].notna().all() and df["income"].isna().any()
    assert out.diagnostics["imputed_cells"]["released"] == {"income": int(df["income"].isna().sum())}


def test_risk_dami_runs_on_the_agency_csv_through_the_cli(tmp_path, capsys):
    """As a user would: the agency frame as CSV, every quirk, risk-dami; a deliberately short chain
    is refused by the release check, and written flagged only with --accept-diagnostics."""
    df = make_agency_data(200, seed=6)
    data = tmp_path / "agency.csv"
    df.to_csv(data, index=False)
    base = ["synthesize", "--data", str(data), "--qi", "age,sex,race,hours_per_week,income",
            "--keep", "state,employed,occupation,bmi,weight", "--weights", "weight",
            "--rule", "hours_per_week:employed == 'No'", "--method", "risk-dami", "--mask", "age:K=2,sigma=3",
            "--param", "n_iter=6,max_kept_levels=4,min_missing_cells=5", "--m", "2", "--seed", "1", "--quiet"]
    assert main([*base, "--out", str(tmp_path / "refused")]) == 1
    assert "did not converge" in capsys.readouterr().err and not (tmp_path / "refused").exists()
    out = tmp_path / "syn"
    assert main([*base, "--accept-diagnostics", "--out", str(out)]) == 0
    meta = json.loads((out / "metadata.json").read_text())
    cc = meta["structure"]["copula_columns"]
    assert cc["pooled"]["state"]["levels"] == df["state"].nunique() and cc["pooled"]["state"]["modelled"] == 4
    assert cc["missing_indicators"] == {"income": "income_NA"}
    assert ["occupation", "employed"] in cc["skip_patterns"]
    orig = pd.read_csv(data)
    for f in sorted(out.glob("copy_*.csv")):
        c = pd.read_csv(f)
        pd.testing.assert_series_equal(c["state"], orig["state"])
        pd.testing.assert_series_equal(c["weight"], orig["weight"])
        assert c.loc[c["employed"] == "No", "hours_per_week"].isna().all()
        assert (c["income"].dropna() >= 0).all()


@pytest.mark.slow
def test_risk_dami_margins_of_the_agency_file_within_monte_carlo_error(tmp_path):
    """Through the command line, with a chain that mixes (400 rows, 2 chains x 2,100 iterations, burn-in
    300; the run at 1,000 rows passes the release check: benchmarks/results/agency_risk_dami.json):
    pooled over m = 5 copies, the missingness rates of hours and income, the share of zero incomes and
    the rare races' share are the original's within Monte Carlo error, with no negative income or hours.

    Chain length (issue 28): 2 x 600 iterations gave bulk ESS 12 (R-hat 1.14 > 1.1) for the
    correlation of race[Other] (5 records, 2 of them with hours imputed) with hours, so the verdict
    hung on the trajectory. With 2 x 1,800 kept draws, seeds 3 / 4 / 5 of the fit give max R-hat
    1.019 / 1.014 / 1.024 and min bulk ESS 147 / 294 / 220 (slowest: the race block, whose reference
    level has 3 records): R-hat well below 1.1 on any of them. No time budget (--max-seconds none):
    the run takes about a minute on a quiet machine and four at load 7, and this test is about the
    margins, not the budget (tests/models/test_copula_progress.py).

    A copy's share is a posterior draw of the rate plus binomial noise, sd about sqrt(2 p (1 - p) / n)
    per copy, so the mean of 5 copies has sd sqrt(2 p (1 - p) / (5 n)); tolerance 4 sd."""
    df = make_agency_data(400, seed=5)
    data = tmp_path / "agency.csv"
    df.to_csv(data, index=False)
    out = tmp_path / "syn"
    rc = main(["synthesize", "--data", str(data), "--qi", "age,sex,race,hours_per_week,income",
               "--keep", "state,employed,occupation,bmi,weight", "--weights", "weight",
               "--rule", "hours_per_week:employed == 'No'", "--method", "risk-dami", "--mask", "age:K=2,sigma=3",
               "--param", "n_iter=2100,burn=300,chains=2,n_jobs=2,max_kept_levels=4,min_missing_cells=10",
               "--m", "5", "--seed", "3", "--accept-diagnostics", "--max-seconds", "none", "--out", str(out), "--quiet"])
    assert rc == 0
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["diagnostics"]["max_r_hat"] < 1.1, (meta["diagnostics"]["max_r_hat"], meta["diagnostics"]["worst"])
    orig = pd.read_csv(data)
    copies = [pd.read_csv(f) for f in sorted(out.glob("copy_*.csv"))]
    assert len(copies) == 5
    n = len(orig)
    rare = ["Amer-Indian-Eskimo", "Other", "Asian-Pac-Islander"]

    def stats(f):
        inc = f["income"].astype(float)
        return np.array([f["hours_per_week"].isna().mean(), inc.isna().mean(), (inc.dropna() == 0).mean(),
                         f["race"].isin(rare).mean()])

    ref = stats(orig)
    pooled = np.mean([stats(c) for c in copies], axis=0)
    sd = np.sqrt(2 * ref * (1 - ref) / (5 * n))
    assert np.all(np.abs(pooled - ref) <= 4 * sd), (pooled, ref, sd)
    for c in copies:
        assert (c["income"].dropna() >= 0).all() and (c["hours_per_week"].dropna() >= 0).all()
