"""RiskTargetedSynthesizer: targeting works, output structures and rules, masking evidence, errors."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from synthmi.evaluation import analyse, combine, reidentification_risk, risk_subgroups
from synthmi.models import NormalMasking, RiskTargetedSynthesizer
from synthmi.models.masking import LinearCategoricalMasking
from synthmi.models.base import UNMODIFIED_MAX, UnmodifiedRelease

QI = ["age", "sex", "race"]
BASE = {"age": {"K": 3, "sigma_e": 2}, "sex": {"alpha": 3}, "race": {"alpha": 3}}
STRONG = {"age": {"K": 1, "sigma_e": 15}, "sex": {"alpha": 0.5}, "race": {"alpha": 0.5}}
K0, TOL = 30, {"age": 5}
FORMULA = "outcome ~ age + sex + race + bmi"

# short chains released with accept_diagnostics=True warn that they are flagged; expected here
pytestmark = pytest.mark.filterwarnings("ignore:.*flagged as unconverged:RuntimeWarning")


def _sim(n: int = 500, seed: int = 1) -> pd.DataFrame:
    """Age (integer years), sex, race (12 % minority) as QIs; bmi (10 % MAR-missing) and a binary outcome."""
    rng = np.random.default_rng(seed)
    R = np.eye(5)
    for i, j, r in [(0, 3, 0.3), (0, 4, 0.4), (1, 4, 0.3), (2, 4, -0.3), (3, 4, 0.4), (1, 3, 0.2), (0, 2, -0.2)]:
        R[i, j] = R[j, i] = r
    z = rng.multivariate_normal(np.zeros(5), R, size=n)
    df = pd.DataFrame(
        {
            "age": np.round(20 + 60 * norm.cdf(z[:, 0])),
            "sex": pd.Categorical(np.where(z[:, 1] > 0, "M", "F"), categories=["F", "M"]),
            "race": pd.Categorical(np.where(z[:, 2] > 1.2, "other", "white"), categories=["white", "other"]),
            "bmi": 25 + 4 * z[:, 3],
            "outcome": pd.Categorical(np.where(z[:, 4] > 0.3, "yes", "no"), categories=["no", "yes"]),
        }
    )
    df.loc[rng.random(n) < 0.1, "bmi"] = np.nan
    return df


@pytest.fixture(scope="module")
def data():
    return _sim()


def _fit(df, masks, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # short chains: r_hat warnings are expected here
        # these tests check what targeting does, on chains kept short for speed (bulk ESS ~10, below the
        # release threshold of 100): the copies are released flagged as unconverged (synthmi.diagnostics)
        kw.setdefault("accept_diagnostics", True)
        return RiskTargetedSynthesizer(masks=masks, k0=K0, tolerance=TOL, n_iter=kw.pop("n_iter", 400), **kw).fit(
            df, quasi_identifiers=QI
        )


@pytest.mark.slow
def test_targeting_lowers_high_risk_more_and_keeps_utility(data):
    df = data
    labels = risk_subgroups(df, QI, K0, TOL).labels
    counts = labels.value_counts()
    assert counts["high"] >= 40 and counts["low"] >= 300  # measured: low 412, medium 38, high 50
    untargeted_fit = _fit(df, BASE)
    assert (untargeted_fit.subgroup_labels_ == labels).all()  # reported for untargeted masks too
    untargeted = untargeted_fit.sample(10, random_state=2)
    targeted_fit = _fit(df, {"low": BASE, "medium": BASE, "high": STRONG})
    targeted = targeted_fit.sample(10, random_state=2)
    assert (targeted_fit.subgroup_labels_ == labels).all()
    tol = {"age": 1}
    before = reidentification_risk(df, [df], QI, tolerance=tol, by=labels).by_group["mean_risk"]
    r_u = reidentification_risk(df, untargeted, QI, tolerance=tol, by=labels).by_group["mean_risk"]
    r_t = reidentification_risk(df, targeted, QI, tolerance=tol, by=labels).by_group["mean_risk"]
    # measured: before high 0.587 / low 0.088; untargeted 0.258 / 0.052; targeted 0.003 / 0.047
    fall_high = before["high"] - r_t["high"]
    fall_low = before["low"] - r_t["low"]
    assert fall_high > fall_low + 0.3
    assert r_t["high"] < 0.5 * r_u["high"]
    assert abs(r_t["low"] - r_u["low"]) < 0.02  # low-risk records keep the same tuning
    # utility on the records with observed bmi: CI overlap within 0.08 of untargeted DA-MI
    # (measured 0.903 vs 0.950; the high subgroup is 10 % of records, so its stronger masking
    # costs a few points of overlap, mostly on the race coefficient)
    cc = df.dropna().index
    ov = {}
    for name, syn in (("untargeted", untargeted), ("targeted", targeted)):
        res = analyse(FORMULA, family="probit", original=df.loc[cc], synthetic=[c.loc[cc] for c in syn], rule="partial")
        ov[name] = res.mean_ci_overlap
    assert ov["targeted"] > ov["untargeted"] - 0.08, ov
    assert ov["untargeted"] > 0.85


@pytest.mark.slow
def test_plain_copula_mi_without_masks(data):
    """masks=None: copula MI. Kept (Z) columns are released as given by default; imputed ones on request."""
    df = data
    before = df.copy()
    s = _fit(df, None)
    # complete quasi-identifiers: the imputations are the original's keys, refused unless asked for (issue 30)
    with pytest.raises(UnmodifiedRelease, match=r"synthesizes no quasi-identifier .*100\.0% of the records"):
        s.sample(4, random_state=3)
    syn = s.sample(4, random_state=3, allow_unmodified=True)
    pd.testing.assert_frame_equal(df, before)
    assert syn.structure == {"output": "imputation", "rule": "rubin", "unmodified": {
        "max_share": 1.0, "max_kappa": 1.0, "threshold": UNMODIFIED_MAX, "allowed": True,
        "cause": "unsynthesized", "reproduced": [], "per_qi": {q: {"share": 1.0, "kappa": 1.0} for q in s.spec_.quasi_identifiers}}}
    assert s.subgroup_labels_ is None
    assert syn.method == "risk-dami"
    n_mis = int(df["bmi"].isna().sum())  # 10 % MAR gaps in the kept column bmi (55 here)
    assert n_mis > 20
    for c in syn.copies:
        # the kept column is released exactly as given: same values, missing stays missing
        pd.testing.assert_series_equal(c["bmi"], df["bmi"])
        for q in QI:  # quasi-identifiers are observed: released unchanged
            assert (c[q] == df[q]).all()
        assert list(c.columns) == list(df.columns) and (c.dtypes == df.dtypes).all()
    rec = syn.diagnostics["imputed_cells"]
    assert rec["internal_only"] == {"bmi": n_mis} and rec["released"] == {}
    assert syn.metadata()["diagnostics"]["imputed_cells"]["internal_only"] == {"bmi": n_mis}
    # on request the copies carry the imputed kept column, and the record says so
    s2 = _fit(df, None, impute_keep=True)
    syn2 = s2.sample(4, random_state=3, allow_unmodified=True)
    obs = df["bmi"].notna()
    for c in syn2.copies:
        assert c["bmi"].notna().all()
        np.testing.assert_array_equal(c.loc[obs, "bmi"], df.loc[obs, "bmi"])
    assert syn2.diagnostics["imputed_cells"]["released"] == {"bmi": n_mis}
    assert syn2.diagnostics["imputed_cells"]["internal_only"] == {}
    imps = syn2.copies
    # the imputations differ between copies (between-imputation variance > 0)
    assert not all(np.array_equal(imps[0]["bmi"], d["bmi"]) for d in imps[1:])
    with pytest.raises(ValueError, match="'impute_keep' parameter of RiskTargetedSynthesizer"):
        _fit(df, None, impute_keep="yes")


@pytest.mark.slow
def test_nested_structure_and_rule(data):
    df = data
    s = _fit(df, BASE, r=3)
    syn = s.sample(3, random_state=4)
    assert syn.m == 9 and syn.structure["m"] == 3 and syn.structure["r"] == 3 and syn.structure["rule"] == "nested"
    # within a nest the imputed bmi is shared and the synthetic QIs differ (fresh W~ per copy)
    mis = df["bmi"].isna()
    c = syn.copies
    np.testing.assert_array_equal(c[0].loc[mis, "bmi"], c[1].loc[mis, "bmi"])
    assert not np.array_equal(c[0]["age"], c[1]["age"])
    assert not np.array_equal(c[0].loc[mis, "bmi"], c[3].loc[mis, "bmi"])
    # complete-case original: not the fitted data, so the evaluation function (which
    # takes any frame) rather than SyntheticData.analyse (which checks the fingerprint)
    res = analyse(FORMULA, family="probit", original=df.dropna(), synthetic=syn, rule=syn.rule)
    assert res.rule == "nested"
    # the nests have their own random streams: drawn in two processes, the copies are the same
    s.n_jobs = 2
    syn2 = s.sample(3, random_state=4)
    for a, b in zip(syn.copies, syn2.copies):
        pd.testing.assert_frame_equal(a, b)
    assert np.isfinite(res.to_frame()["se_syn"]).all()
    # the nested rule by hand on the (3, 3, p) estimates equals combine(rule="nested")
    import statsmodels.formula.api as smf
    import statsmodels.api as sm

    q = np.empty((3, 3, 5))
    u = np.empty((3, 3, 5))
    for k, d in enumerate(c):
        d = d.assign(outcome=(d["outcome"] == "yes").astype(float))
        fit = smf.glm(FORMULA, data=d, family=sm.families.Binomial(link=sm.families.links.Probit())).fit()
        q[k // 3, k % 3] = fit.params.to_numpy()
        u[k // 3, k % 3] = fit.bse.to_numpy() ** 2
    qbar_i = q.mean(axis=1)
    B = qbar_i.var(axis=0, ddof=1)
    bbar = q.var(axis=1, ddof=1).mean(axis=0)
    vbar = u.mean(axis=(0, 1))
    T = (1 + 1 / 3) * B - bbar / 3 + vbar  # Reiter (2004), eq. for T_M
    out = combine(q, u, rule="nested")
    np.testing.assert_allclose(out.variance, T, rtol=1e-10)


@pytest.mark.slow
def test_masking_evidence_controls_closeness(data):
    df = data.dropna().reset_index(drop=True)
    tight = {"age": NormalMasking(10, sigma_e=0.1), "sex": LinearCategoricalMasking(20.0), "race": {"p": 0.9999}}
    null = {"age": NormalMasking(0), "sex": {"alpha": 0}, "race": {"alpha": 0}}
    # tight masks give back the original (the point of this test): the release guard refuses such
    # copies unless asked (issue 30)
    with pytest.raises(UnmodifiedRelease):
        _fit(df, tight).sample(2, random_state=5)
    st = _fit(df, tight).sample(2, random_state=5, allow_unmodified=True)
    sn = _fit(df, null).sample(6, random_state=5)
    for c in st.copies:
        # W-bar has sd 0.1/sqrt(10) = 0.03 years: the synthetic age is the true one
        assert (np.abs(c["age"] - df["age"]) <= 1).mean() > 0.97
        assert (c["sex"] == df["sex"]).mean() > 0.99 and (c["race"] == df["race"]).mean() > 0.99
    for c in sn.copies:
        # null masks = Rubin's synthesis from p(X | Z): age only weakly predicted by bmi, outcome
        assert (np.abs(c["age"] - df["age"]) <= 1).mean() < 0.2
        assert 0.4 < (c["sex"] == df["sex"]).mean() < 0.8
    # the margin of age is kept: the copies' mean age varies with sd ~0.9 between copies
    # (measured over 20 copies: 51.99 vs 52.27), so the 6-copy average is within ~5 SE
    assert abs(np.mean([c["age"].mean() for c in sn.copies]) - df["age"].mean()) < 2.0


@pytest.mark.slow
def test_same_seed_identical(data):
    s = _fit(data, {"low": BASE, "medium": BASE, "high": STRONG}, n_iter=100)
    a = s.sample(2, random_state=9)
    b = s.sample(2, random_state=9)
    for x, y in zip(a.copies, b.copies):
        pd.testing.assert_frame_equal(x, y)


def test_bad_input(data):
    df = data
    # a subgroup with no records but masks for it
    labels = pd.Series(np.where(np.arange(len(df)) % 2 == 0, "low", "medium"), index=df.index)
    with pytest.raises(ValueError, match="'high' risk subgroup, which has no records"):
        RiskTargetedSynthesizer(masks={"low": BASE, "medium": BASE, "high": STRONG}, subgroups=labels, n_iter=20).fit(
            df, quasi_identifiers=QI
        )
    with pytest.raises(ValueError, match="must name all of"):
        RiskTargetedSynthesizer(masks={"low": BASE, "high": STRONG}, n_iter=20).fit(df, quasi_identifiers=QI)
    with pytest.raises(ValueError, match="not quasi-identifiers: \\['bmi'\\]"):
        RiskTargetedSynthesizer(masks={"bmi": {"K": 1, "sigma_e": 1}}, n_iter=20).fit(df, quasi_identifiers=QI)
    with pytest.raises(ValueError, match=r"Column 'sex' is categorical \(binary\), so its mask works on its categories"):
        RiskTargetedSynthesizer(masks={"sex": {"K": 1, "sigma_e": 1}}, n_iter=20).fit(df, quasi_identifiers=QI)
    with pytest.raises(ValueError, match="The 'r' parameter of RiskTargetedSynthesizer"):
        RiskTargetedSynthesizer(r=2, n_iter=20).fit(df, quasi_identifiers=QI)
    allmis = df.assign(bmi=np.nan)
    with pytest.raises(ValueError, match="Column 'bmi' of 'df' is entirely missing"):
        RiskTargetedSynthesizer(n_iter=20).fit(allmis, quasi_identifiers=QI)
    one = df.assign(region=pd.Categorical(["north"] * len(df)))
    with pytest.raises(ValueError, match="Column 'region'"):
        RiskTargetedSynthesizer(n_iter=20).fit(one, quasi_identifiers=QI)
    with pytest.raises(ValueError, match="Column 'bmi' of 'df' has \\d+ missing values where none are allowed"):
        RiskTargetedSynthesizer(complete=["age", "bmi"], n_iter=20).fit(df, quasi_identifiers=QI)
    bad_lab = pd.Series(["low"] * (len(df) - 1) + ["extreme"], index=df.index)
    with pytest.raises(ValueError, match="must hold the labels"):
        RiskTargetedSynthesizer(masks=BASE, subgroups=bad_lab, n_iter=20).fit(df, quasi_identifiers=QI)
    with pytest.raises(ValueError, match="Call 'fit'"):
        RiskTargetedSynthesizer().sample(2)


@pytest.mark.slow
def test_synthesis_posterior_matches_hand_computation():
    r"""X independent of Z: P(X~ = X | X) has a closed form to check the level draw against.

    Binary X with P(X = 1) = p, W = alpha X + N(0, 1) (fresh per copy), X~ drawn from
    P(X~ = c | W) = p_c phi(W - alpha c) / sum_k p_k phi(W - alpha k); so
    P(X~ = 1 | X = 1) = E_{W ~ N(alpha, 1)}[p phi(W - alpha) / (p phi(W - alpha) + (1 - p) phi(W))],
    computed here by quadrature.
    """
    from scipy import integrate

    rng = np.random.default_rng(21)
    n, p, alpha = 3000, 0.3, 1.5
    x = (rng.random(n) < p).astype(int)
    df = pd.DataFrame({"x": pd.Categorical(np.array(["a", "b"])[x], categories=["a", "b"]), "z": rng.normal(size=n)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        s = RiskTargetedSynthesizer(masks={"x": {"alpha": alpha}}, n_iter=300, random_state=1,
                                    accept_diagnostics=True).fit(df, quasi_identifiers=["x"])
        syn = s.sample(8, random_state=2)  # a short chain, accepted: the test is about the masking's effect
    agree1 = np.mean([(c["x"].to_numpy() == "b")[x == 1].mean() for c in syn.copies])
    agree0 = np.mean([(c["x"].to_numpy() == "a")[x == 0].mean() for c in syn.copies])
    ph = x.mean()  # the copula's margin is the observed share

    def post1(w):
        a = ph * norm.pdf(w - alpha)
        return a / (a + (1 - ph) * norm.pdf(w))

    h1 = integrate.quad(lambda w: post1(w) * norm.pdf(w - alpha), -10, 12)[0]
    h0 = integrate.quad(lambda w: (1 - post1(w)) * norm.pdf(w), -12, 10)[0]
    # quadrature: 0.545 and 0.809; measured 0.550 and 0.809. MC SE over 8 copies of ~900 / ~2100
    # records ~0.006 / 0.003, plus posterior spread of the copula margin and of corr(x, z) (~0.02)
    assert abs(agree1 - h1) < 0.04, (agree1, h1)
    assert abs(agree0 - h0) < 0.03, (agree0, h0)


def test_cli_subgroup_masks_and_nested_output(data, tmp_path):
    import json

    from synthmi.cli import main

    path = tmp_path / "sim.csv"
    data.to_csv(path, index=False)
    out = tmp_path / "syn"
    rc = main([
        "synthesize", "--data", str(path), "--qi", "age,sex,race", "--keep", "bmi,outcome", "--method", "risk-dami",
        "--mask", "age@low:K=3,sigma=2", "--mask", "age@medium:K=3,sigma=2", "--mask", "age@high:K=1,sigma=15",
        "--mask", "race@high:alpha=0.5", "--param", "r=2,n_iter=60,k0=30,tolerance=5", "--m", "2", "--seed", "3",
        "--out", str(out), "--quiet", "--accept-diagnostics",  # a 60-step chain, kept short for speed
    ])
    assert rc == 0
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["structure"]["m"] == 2 and meta["structure"]["r"] == 2 and meta["structure"]["rule"] == "nested"
    assert meta["params"]["masks"]["high"]["age"]["sigma_e"] == 15.0
    assert "race" not in meta["params"]["masks"]["low"]  # unmasked there: synthesized from the copula alone
    assert meta["params"]["masks"]["high"]["race"]["alpha"] == 0.5
    assert meta["diagnostics"]["subgroup_counts"] == {"low": 412, "medium": 38, "high": 50}
    assert len(list(out.glob("copy_*.csv"))) == 4
    # the kept column bmi is written as given: its missing cells stay missing (counts recorded, not values)
    n_mis = int(data["bmi"].isna().sum())
    for f in out.glob("copy_*.csv"):
        written = pd.read_csv(f)
        # same missing cells, same values (to the CSV's 17 significant digits)
        np.testing.assert_array_equal(written["bmi"].isna().to_numpy(), data["bmi"].isna().to_numpy())
        np.testing.assert_allclose(written["bmi"].to_numpy(), data["bmi"].to_numpy(), rtol=1e-14, equal_nan=True)
    assert meta["diagnostics"]["imputed_cells"]["internal_only"] == {"bmi": n_mis}


def test_cli_starved_sampler_fails_closed(data, tmp_path, capsys):
    """A sampler starved of iterations: non-zero exit, the reason, and nothing written."""
    from synthmi.cli import main

    path = tmp_path / "sim.csv"
    data.to_csv(path, index=False)
    out = tmp_path / "syn"
    argv = [
        "synthesize", "--data", str(path), "--qi", "age,sex,race", "--keep", "bmi,outcome", "--method", "risk-dami",
        "--mask", "age:K=3,sigma=2", "--param", "n_iter=12,k0=30,tolerance=5", "--m", "2", "--seed", "3",
        "--out", str(out), "--quiet",
    ]
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc != 0
    assert not out.exists() or not any(out.iterdir())  # no copies, no metadata.json
    assert "did not converge" in err and "No copies were released" in err
    # names a failing column (block) of the copula and says what to try
    assert any(f"'{c}'" in err for c in ["age", "sex", "race", "bmi", "outcome"])
    assert "--accept-diagnostics" in err and "n_iter" in err
    # the override writes the copies, flagged
    rc = main(argv + ["--accept-diagnostics"])
    assert rc == 0 and len(list(out.glob("copy_*.csv"))) == 2
    import json

    meta = json.loads((out / "metadata.json").read_text())
    assert meta["diagnostics"]["max_r_hat"] > 1.05 or meta["diagnostics"]["min_ess_bulk"] < 100


@pytest.mark.slow
def test_skip_rule_keeps_the_association_the_data_identify():
    # hours exists for full- and part-time workers (42 vs 20 h) and is skipped for 'none'. The rule
    # removes the 'none' rows only: the hours-employment association among the others is in the
    # data and must survive (holding the coefficient at zero gave 33 h for both groups). A binary
    # condition (worker yes/no) leaves one level where hours exist: nothing identifies it, it is
    # held at zero.
    import warnings

    rng = np.random.default_rng(0)
    n = 600
    emp = rng.choice(["full", "part", "none"], n, p=[0.5, 0.3, 0.2])
    hours = np.where(emp == "full", 42.0, 20.0) + rng.normal(0, 4, n).round()
    df = pd.DataFrame({"age": rng.integers(20, 65, n).astype(float), "sex": pd.Categorical(rng.choice(["F", "M"], n)),
                       "emp": pd.Categorical(emp, categories=["full", "part", "none"]),
                       "worker": pd.Categorical(np.where(emp == "none", "no", "yes"), categories=["no", "yes"]),
                       "hours": np.where(emp == "none", np.nan, hours)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        syn = RiskTargetedSynthesizer(masks={"age": {"K": 1, "sigma_e": 5.0}}, n_iter=400, random_state=1,
                                      accept_diagnostics=True).fit(
            df, quasi_identifiers=["age", "hours"], keep=["sex", "emp", "worker"],
            rules={"hours": {"rule": "emp == 'none' or worker == 'no'", "value": None}})
        copies = syn.sample(2, random_state=2).copies
    zero = [tuple(p) for p in syn.copula_.zero_coefficients_]
    assert ("hours", "worker") in zero and ("hours", "emp") not in zero
    for c in copies:
        m = c.groupby("emp", observed=True)["hours"].mean()
        # the data's gap is 22 h; with the coefficient at zero it was ~0 (MC sd of a gap ~1 h here)
        assert m["full"] - m["part"] > 10, m
        assert c.loc[c["emp"] == "none", "hours"].isna().all()


def test_draw_levels_frequencies_and_log_space_fallback():
    """draw_levels against the exact level probabilities (Phi differences times exp(evidence))."""
    from synthmi.models.risk_targeted import draw_levels

    rng = np.random.default_rng(3)
    n = 200_000
    edges = np.array([-np.inf, -0.5, 0.2, 1.5, np.inf])
    mean = np.r_[np.full(n // 2, 0.3), np.full(n // 2, 2.5)]
    ev = np.tile(np.array([0.0, -1.0, -0.3, -2.0]), (n, 1))
    for e in (None, ev):
        lv = draw_levels(mean, 0.8, edges, e, rng)
        for m0, rows in ((0.3, slice(0, n // 2)), (2.5, slice(n // 2, n))):
            p = np.diff(norm.cdf((edges - m0) / 0.8))
            if e is not None:
                p = p * np.exp(ev[0])
            p /= p.sum()
            # hand check of one: mean 0.3, sd 0.8, no evidence: P(0.2 < x < 1.5) = Phi(1.5) - Phi(-0.125)
            if e is None and m0 == 0.3:
                assert abs(p[2] - (0.9331928 - 0.4502618)) < 1e-6
            freq = np.bincount(lv[rows], minlength=4) / (n // 2)
            # 5 binomial standard errors (<= 0.0078 at n / 2 = 100,000)
            assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / (n // 2)) + 1e-12)
    # every weight underflows (mass ~1 on level 0 is cut by evidence e^-1300): drawn in log space,
    # log P(level 1) = log(Phi(-50) - Phi(-51)) ~ -1254.9 beats level 0's -1300 and level 2's ~ -1305
    lv = draw_levels(np.full(50, -50.0), 1.0, np.array([-np.inf, 0.0, 1.0, np.inf]),
                     np.tile([-1300.0, 0.0, 0.0], (50, 1)), rng)
    assert np.all(lv == 1)
    # the same seed gives the same levels
    a = draw_levels(mean[:100], 0.8, edges, None, np.random.default_rng(9))
    b = draw_levels(mean[:100], 0.8, edges, None, np.random.default_rng(9))
    np.testing.assert_array_equal(a, b)


@pytest.mark.slow
def test_synthesis_sweep_keeps_the_joint_law_of_tied_levels():
    """Records simulated from a copula state with strong level-indicator effects (c almost follows a);
    the QIs b (binary) and a (nominal) resynthesised by the sweep without masked evidence (the model's
    own conditional): the joint law of (b, a, c), 18 cells, is unchanged. |z| of each cell's
    difference with se sqrt(2 p (1 - p) / N) at the pooled p; <= 3.5 for all 18 (P(any > 3.5) ~ 0.008
    under invariance). The check has power: the same sweep without the later block's level weights
    breaks the tie (a synthetic a agrees with the original 0.48 of the time instead of 0.74)."""
    import types

    from synthmi.models.copula import CopulaGibbs, CopulaState, _encode
    from synthmi.models.risk_targeted import RiskTargetedSynthesizer
    from synthmi.schema import Schema

    rng = np.random.default_rng(0)
    df0 = pd.DataFrame({"x": rng.normal(size=50), "b": pd.Categorical(rng.choice(["no", "yes"], 50)),
                        "a": pd.Categorical(rng.choice(["p", "q", "r"], 50)),
                        "c": pd.Categorical(rng.choice(["u", "v", "w"], 50))})
    sch = Schema.infer(df0)
    # the state below is written in category order (level 0 = p, u: the reference of a's and c's blocks),
    # so both encodings keep that order; the sweep's invariance does not depend on the reference
    m0 = _encode(df0, sch, reference="first")
    g0 = CopulaGibbs(m0, sum(len(k.cols) for k in m0))
    st0 = g0.initial_state()
    st0.sigma_a = np.array([[1.0]])
    st0.coef = [np.array([[0.3], [0.8]]), np.array([[-0.3, 0.2], [0.5, -0.5], [1.5, -1.0]]),
                np.array([[-1.0, 0.0], [0.3, 0.3], [0.5, -0.5], [2.5, -1.0], [-1.0, 2.5]])]
    g0.implied(st0)
    N = 20000
    z, (lb, la, lc) = g0.simulate(st0, N, np.random.default_rng(1))
    df = pd.DataFrame({"x": z[:, g0.ranked_cols[0]],
                       "b": pd.Categorical(np.array(["no", "yes"])[lb], categories=["no", "yes"]),
                       "a": pd.Categorical(np.array(["p", "q", "r"])[la], categories=["p", "q", "r"]),
                       "c": pd.Categorical(np.array(["u", "v", "w"])[lc], categories=["u", "v", "w"])})
    margins = _encode(df, sch, reference="first")
    s = CopulaGibbs(margins, g0.q)
    st = CopulaState(z=z.copy(), mu=np.zeros(g0.q), sigma=np.eye(g0.q), sigma_a=st0.sigma_a.copy(),
                     coef=[c.copy() for c in st0.coef])
    s.implied(st)
    levels = s.completed_levels(st)
    me = types.SimpleNamespace(copula_=types.SimpleNamespace(margins_=margins), _qi_set={"b", "a"}, n_sweeps=10,
                               _evidence=lambda mg, lv, rng: None,
                               _nominal_draw=RiskTargetedSynthesizer._nominal_draw)

    def worst_z():
        out = RiskTargetedSynthesizer._synthesize(me, st, levels, s, np.random.default_rng(2))
        sb, sa = out[1], out[2]
        zs = []
        for bv in range(2):
            for av in range(3):
                for cv in range(3):
                    p0 = np.mean((lb == bv) & (la == av) & (lc == cv))
                    p1 = np.mean((sb == bv) & (sa == av) & (lc == cv))
                    pb = 0.5 * (p0 + p1)
                    zs.append(abs(p1 - p0) / (np.sqrt(2 * pb * (1 - pb) / N) + 1e-12))
        return max(zs), np.mean(sa == la)

    w, agree = worst_z()
    assert w <= 3.5, w
    assert 0.7 < agree < 0.78, agree
    s.level_log_weights = lambda st, F, z, b, rows: np.zeros((rows.size, s.block_margins[b].n_levels))
    w_off, agree_off = worst_z()
    assert w_off > 5 and agree_off < 0.6, (w_off, agree_off)


def test_nominal_draw_by_rejection_and_quadrature_fallback_is_exact():
    """A nominal QI block (4 levels) given eta and evidence: its level has Pr(l) ∝ Pr(y = l | eta)
    e^{ev_l}. Rows of group 1 (evidence mild): almost all accepted by the rejection step; level
    frequencies against the exact law (mnp_log_likelihood), chi-square on 3 df below 16.3 (p = 0.001).
    Rows of group 2 (evidence only for level 2, whose probability is 0.096): about 0.904^20 = 13 % reach
    the quadrature fallback (checked: between 5 % and 30 %); all get level 2 and their latents the law
    of N(eta, Omega) on level 2's region: component means against 40,000 exact draws
    (mnp_draw_latents), |z| < 4."""
    import types

    from synthmi.models.copula import _nominal_level, mnp_draw_latents, mnp_log_likelihood, nominal_error_covariance
    from synthmi.models.risk_targeted import RiskTargetedSynthesizer

    n1, n2, d = 20000, 20000, 3
    eta = np.vstack([np.tile([0.3, -0.2, 0.5], (n1, 1)), np.tile([-0.4, -1.2, -1.2], (n2, 1))])
    ev = np.vstack([np.tile(np.log([0.2, 1.0, 0.5, 0.1]), (n1, 1)), np.tile([-40.0, -40.0, 0.0, -40.0], (n2, 1))])
    P = np.linalg.inv(nominal_error_covariance(d))
    fallback_rows = []

    def llp(b, e):
        fallback_rows.append(e.shape[0])
        return np.column_stack([mnp_log_likelihood(e, np.full(e.shape[0], lv, dtype=np.int64)) for lv in range(4)])

    sampler = types.SimpleNamespace(level_log_probabilities=llp)
    mg = types.SimpleNamespace(cols=[0, 1, 2], name="a")
    z = np.zeros((n1 + n2, d))
    M = eta.copy()
    E = z - M
    syn = {}
    RiskTargetedSynthesizer._nominal_draw(mg, 0, sampler, z, E, M, P, ev, syn, np.random.default_rng(5))
    lv = syn["a"]
    logp = np.column_stack([mnp_log_likelihood(eta[:1], np.array([k])) for k in range(4)])[0] + ev[0]
    p = np.exp(logp - logp.max())
    p /= p.sum()
    obs = np.bincount(lv[:n1], minlength=4)
    chi2 = float(np.sum((obs - n1 * p) ** 2 / (n1 * p)))
    assert chi2 < 16.3, (chi2, obs, n1 * p)
    assert len(fallback_rows) == 1 and 0.05 * n2 < fallback_rows[0] < 0.3 * n2, fallback_rows
    assert np.all(lv[n1:] == 2)
    ref = mnp_draw_latents(eta[n1:][:1].repeat(40000, axis=0), np.full(40000, 2), np.random.default_rng(6))
    got = z[n1:]
    se = np.sqrt(got.var(axis=0) / n2 + ref.var(axis=0) / 40000)
    assert np.all(np.abs(got.mean(axis=0) - ref.mean(axis=0)) / se < 4), (got.mean(axis=0), ref.mean(axis=0))
    assert np.all(_nominal_level(got) == 2)


def test_nominal_draw_quadrature_fallback_rows_on_their_own_are_exact(monkeypatch):
    """The fallback of RiskTargetedSynthesizer._nominal_draw (level by quadrature, latents given it),
    tested on its own: with no rejection round every row takes it (in the test above only ~13 % of
    one group do, all forced to one level, so an error in the fallback's level choice or in its
    latents would be diluted or invisible). Target: Pr(l, z) ∝ N(z; eta, Omega) 1{l(z) = l} e^{ev_l}.
    Reference: that law by plain rejection in this test (z ~ N(eta, Omega), accepted with probability
    e^{ev_l - max ev}: exact by construction, no quadrature). Two groups of 20,000 rows: A with mild
    evidence over 4 levels; B with evidence only for levels 2 and 3 (copula probabilities 0.096 and
    0.096 under eta_B, the case the fallback exists for).

    Tolerances from Monte Carlo error: level counts by Pearson chi-square against the exact law
    (mnp_log_likelihood), below the 0.999 quantile (16.27 on 3 df, 10.83 on 1 df); per level and
    component, the mean and the mean square of the latents against the rejection reference
    (>= 30,000 accepted draws per group) by a two-sample z, |z| < 4.5 (36 comparisons: family-wise
    false alarm < 36 x 6.8e-6 = 2.5e-4). A fallback that took the most probable level instead of
    drawing it gives chi-square in the thousands."""
    import types

    from synthmi.models import risk_targeted as rt
    from synthmi.models.copula import mnp_log_likelihood, nominal_error_covariance, _nominal_level

    monkeypatch.setattr(rt, "_NOMINAL_REJECTION_ROUNDS", 0)
    n, d = 20000, 3
    Omega = nominal_error_covariance(d)
    P = np.linalg.inv(Omega)
    groups = {
        "A": (np.array([0.3, -0.2, 0.5]), np.log([0.2, 1.0, 0.5, 0.1])),
        "B": (np.array([-0.4, -1.2, -1.2]), np.array([-40.0, -40.0, 0.0, np.log(0.5)])),
    }
    eta = np.vstack([np.tile(e, (n, 1)) for e, _ in groups.values()])
    ev = np.vstack([np.tile(v - v.max(), (n, 1)) for _, v in groups.values()])
    calls = []

    def llp(b, e):
        calls.append(e.shape[0])
        return np.column_stack([mnp_log_likelihood(e, np.full(e.shape[0], lv, dtype=np.int64)) for lv in range(4)])

    sampler = types.SimpleNamespace(level_log_probabilities=llp)
    mg = types.SimpleNamespace(cols=[0, 1, 2], name="a")
    z = np.zeros((2 * n, d))
    syn = {}
    RiskTargetedSynthesizer._nominal_draw(mg, 0, sampler, z, z - eta, eta.copy(), P, ev, syn, np.random.default_rng(7))
    assert calls == [2 * n]  # every row took the fallback
    lv = syn["a"]
    assert np.all(_nominal_level(z) == lv)  # the latents lie in their level's region
    ref_rng = np.random.default_rng(8)
    chol = np.linalg.cholesky(Omega)
    for k, (g, (e, v)) in enumerate(groups.items()):
        rows = slice(k * n, (k + 1) * n)
        logp = np.array([mnp_log_likelihood(e[None], np.array([j]))[0] for j in range(4)]) + v
        p = np.exp(logp - logp.max())
        p /= p.sum()
        support = p > 1e-12
        obs = np.bincount(lv[rows], minlength=4)
        assert np.all(obs[~support] == 0), (g, obs)
        chi2 = float(np.sum((obs[support] - n * p[support]) ** 2 / (n * p[support])))
        assert chi2 < {3: 16.27, 1: 10.83}[int(support.sum()) - 1], (g, chi2, obs, n * p)
        # the rejection reference
        u = e + ref_rng.standard_normal((600_000, d)) @ chol.T
        lu = _nominal_level(u)
        keep = np.log(ref_rng.random(lu.size)) < (v - v.max())[lu]
        u, lu = u[keep], lu[keep]
        assert u.shape[0] > 30_000
        got = z[rows]
        for j in np.flatnonzero(support):
            a, b = got[lv[rows] == j], u[lu == j]
            for stat in (lambda x: x, lambda x: x ** 2):
                sa, sb = stat(a), stat(b)
                se = np.sqrt(sa.var(axis=0) / len(sa) + sb.var(axis=0) / len(sb))
                zz = np.abs(sa.mean(axis=0) - sb.mean(axis=0)) / se
                assert np.all(zz < 4.5), (g, j, zz)
