"""analyse() with a count response: family "poisson" and "negbin" (NB2, alpha estimated).

Found by a new user on statsmodels' randhie file: the doctor visits ``mdvis`` (a count,
31% zeros) could only be analysed as gaussian. References below are statsmodels called
directly on the same frames.
"""
import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats

from synthmi.evaluation import analyse, combine


def _counts(n, rng, alpha=None):
    """y | x, g ~ Poisson(mu) (alpha None) or NB2(mu, alpha), log mu = 0.3 + 0.5 x + 0.4 [g = b]."""
    x = rng.normal(size=n)
    g = rng.choice(["a", "b"], n)
    mu = np.exp(0.3 + 0.5 * x + 0.4 * (g == "b"))
    if alpha is None:
        y = rng.poisson(mu)
    else:  # NB2 as a gamma-Poisson mixture: Var(y) = mu + alpha mu^2
        y = rng.poisson(rng.gamma(1 / alpha, alpha * mu))
    return pd.DataFrame({"y": y, "x": x, "g": pd.Categorical(g, categories=["a", "b"])})


def _design(df):
    return sm.add_constant(pd.DataFrame({"g[T.b]": (df["g"] == "b").astype(float), "x": df["x"]}))


def test_poisson_matches_statsmodels_glm_and_uses_normal_intervals():
    rng = np.random.default_rng(11)
    df = _counts(400, rng)
    copies = [_counts(400, rng) for _ in range(3)]
    res = analyse("y ~ x + g", "poisson", original=df, synthetic=copies, rule="partial")
    f = res.to_frame()
    ref = sm.GLM(df["y"], _design(df), family=sm.families.Poisson()).fit()
    for t in ("Intercept", "x", "g[T.b]"):
        name = "const" if t == "Intercept" else t
        assert f.loc[t, "est_orig"] == pytest.approx(ref.params[name], rel=1e-8)
        assert f.loc[t, "se_orig"] == pytest.approx(ref.bse[name], rel=1e-8)
    # Wald interval with the normal quantile (no scale is estimated), as statsmodels' own
    np.testing.assert_allclose(f.loc["x", "ci_lower_orig"], ref.conf_int().loc["x", 0], rtol=1e-8)
    z = stats.norm.ppf(0.975)
    np.testing.assert_allclose(f["ci_upper_orig"], f["est_orig"] + z * f["se_orig"], rtol=1e-12)
    # each copy is the same direct fit; the copies combine by Reiter's (2003) partial rule
    est = np.array([sm.GLM(c["y"], _design(c), family=sm.families.Poisson()).fit().params[["const", "x", "g[T.b]"]]
                    for c in copies])
    np.testing.assert_allclose(res.estimates[:, [0, 2, 1]], est, rtol=1e-8)
    comb = combine(res.estimates, res.variances, rule="partial")
    np.testing.assert_allclose(f["est_syn"], comb.estimate)
    np.testing.assert_allclose(f["ci_lower_syn"], comb.ci_lower)
    assert res.nb_alpha == {} and "[poisson]" in str(res.summary())


def test_negbin_alpha_is_the_nb2_mle_of_each_data_set():
    rng = np.random.default_rng(12)
    df = _counts(3000, rng, alpha=0.8)
    copies = [_counts(3000, rng, alpha=0.8), _counts(3000, rng, alpha=0.3)]
    res = analyse("y ~ x + g", "negbin", original=df, synthetic=copies)
    f = res.to_frame()
    for data, a_hat in [(df, res.nb_alpha["original"]), *zip(copies, res.nb_alpha["copies"])]:
        nb = sm.NegativeBinomial(data["y"], _design(data), loglike_method="nb2").fit(disp=0, maxiter=200)
        # the profile search stops at |d ln alpha| <= 1e-6 and the discrete fit at its gradient tolerance:
        # 1e-4 relative is far above both and far below alpha's standard error (about 0.04 here)
        assert a_hat == pytest.approx(nb.params["alpha"], rel=1e-4)
    ref = sm.NegativeBinomial(df["y"], _design(df), loglike_method="nb2").fit(disp=0, maxiter=200)
    glm = sm.GLM(df["y"], _design(df), family=sm.families.NegativeBinomial(alpha=res.nb_alpha["original"])).fit()
    for t in ("Intercept", "x", "g[T.b]"):
        name = "const" if t == "Intercept" else t
        assert f.loc[t, "est_orig"] == pytest.approx(glm.params[name], rel=1e-8)
        assert f.loc[t, "se_orig"] == pytest.approx(glm.bse[name], rel=1e-8)
        # the same MLE of beta as the discrete model (alpha and beta are orthogonal in NB2)
        assert f.loc[t, "est_orig"] == pytest.approx(ref.params[name], rel=1e-4, abs=1e-5)
    # simulation: alpha recovered within 4 standard errors of the discrete MLE's (Wald) se
    assert abs(res.nb_alpha["original"] - 0.8) < 4 * ref.bse["alpha"]
    assert abs(res.nb_alpha["copies"][1] - 0.3) < 4 * 0.04
    # the copy with less overdispersion gets its own (narrower) variance, not the original's
    assert res.variances[1, 1] < res.variances[0, 1]
    assert "negative binomial alpha" in str(res.summary())
    assert res.to_dict()["nb_alpha"]["original"] == res.nb_alpha["original"]


def test_negbin_frequency_weights_equal_the_expanded_data():
    # frequency weights: the fit (alpha included) equals the fit on the records repeated w times
    rng = np.random.default_rng(13)
    df = _counts(300, rng, alpha=0.5)
    df["w"] = rng.integers(1, 4, len(df))
    long = df.loc[df.index.repeat(df["w"])].reset_index(drop=True)
    res = analyse("y ~ x + g", "negbin", original=df, synthetic=[df, df.copy()], weights="w", weight_type="frequency")
    ref = analyse("y ~ x + g", "negbin", original=long, synthetic=[long, long.copy()], weights=False)
    assert res.nb_alpha["original"] == pytest.approx(ref.nb_alpha["original"], rel=1e-5)
    np.testing.assert_allclose(res.to_frame()["se_orig"], ref.to_frame()["se_orig"], rtol=1e-5)


@pytest.mark.parametrize("family", ["poisson", "negbin"])
@pytest.mark.parametrize("bad, what", [(-7.123456, "negative values"), (2.5, "values that are not whole numbers")])
def test_a_count_response_must_be_non_negative_integers(family, bad, what):
    rng = np.random.default_rng(14)
    df = _counts(100, rng).astype({"y": float})
    wrong = df.copy()
    wrong.loc[3, "y"] = bad
    for original, copies, where in [(wrong, [df, df], "the original"), (df, [df, wrong], "the copy synthetic[1]")]:
        with pytest.raises(ValueError) as exc:
            analyse("y ~ x + g", family, original=original, synthetic=copies)
        msg = str(exc.value)
        assert msg.startswith(f"The response 'y' of a {family} model must be non-negative integer counts")
        assert f"in {where} it holds {what}" in msg
        assert str(bad) not in msg and "7.12" not in msg  # no confidential value is echoed
    text = df.assign(y=np.where(df["y"] > 1, "many", "few"))
    with pytest.raises(ValueError, match=f"of a {family} model must be non-negative integer counts.*not numbers"):
        analyse("y ~ x", family, original=text, synthetic=[text, text])
    # whole numbers stored as floats (a CSV column with a missing value) are counts
    df.loc[5, "y"] = np.nan
    assert analyse("y ~ x", family, original=df, synthetic=[df, df.copy()]).mean_ci_overlap == pytest.approx(1.0)


def test_negbin_alpha_at_its_boundary_is_printed_as_the_poisson_limit():
    """Counts less dispersed than Poisson (binomial): the NB2 MLE of alpha is at the lower end of its search,
    1e-6, and the summary printed it as 0.000; it reads "0 (boundary: Poisson)", an interior alpha three
    significant digits (0.011 was 0.011, 0.0005 was 0.001 and now 0.0005)."""
    rng = np.random.default_rng(14)
    frames = []
    for _ in range(3):
        df = _counts(400, rng)
        df["y"] = rng.binomial(4, 0.3, len(df))  # variance 0.84 < mean 1.2: underdispersed
        frames.append(df)
    res = analyse("y ~ x + g", "negbin", original=frames[0], synthetic=frames[1:])
    assert res.nb_alpha["original"] < 1e-5 and max(res.nb_alpha["copies"]) < 1e-5
    line = [s for s in str(res.summary()).splitlines() if "negative binomial alpha" in s][0]
    assert line.endswith("original 0 (boundary: Poisson), copies all 0 (boundary: Poisson)")
    assert "0.000" not in line
    from synthmi.evaluation.analysis import nb_alpha_text

    assert [nb_alpha_text(a) for a in (1.0056e-6, 9.9e-6, 1.2e-5, 0.0005, 0.0141359, 1.2937)] == [
        "0 (boundary: Poisson)", "0 (boundary: Poisson)", "1.2e-05", "0.0005", "0.0141", "1.29"]
