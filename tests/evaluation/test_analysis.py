"""analyse(): the analyst's GLM on the original and on each copy, combined."""
import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from synthmi.evaluation import analyse, combine


def _data(n, rng):
    age = rng.uniform(20, 70, n)
    sex = rng.choice(["Female", "Male"], n)
    edu = rng.choice(["<HS", "HS", ">HS"], n, p=[0.2, 0.3, 0.5])
    eta = -2 + 0.03 * age + 0.5 * (sex == "Male") + 0.4 * (edu == ">HS")
    y = rng.uniform(size=n) < 1 / (1 + np.exp(-eta))
    return pd.DataFrame(
        {
            "income": pd.Categorical(np.where(y, ">50K", "<=50K"), categories=["<=50K", ">50K"]),
            "age": age,
            "sex": pd.Categorical(sex, categories=["Female", "Male"]),
            "education": pd.Categorical(edu, categories=["<HS", "HS", ">HS"], ordered=True),
        }
    )


def test_identical_copies_reproduce_the_original_inference():
    rng = np.random.default_rng(0)
    df = _data(800, rng)
    res = analyse("income ~ age + sex + education", "logit", original=df, synthetic=[df, df.copy()])
    f = res.to_frame()
    # b = 0: combined variance = v_bar = the original's, df = inf: the same interval
    np.testing.assert_allclose(f["est_syn"], f["est_orig"], atol=1e-10)
    np.testing.assert_allclose(f["ci_lower_syn"], f["ci_lower_orig"], atol=1e-8)
    np.testing.assert_allclose(f["std_diff"], 0, atol=1e-8)
    np.testing.assert_allclose(f["ci_overlap"], 1, atol=1e-8)
    assert res.mean_ci_overlap == pytest.approx(1.0)
    assert "Intercept" in f.index and "sex[T.Male]" in f.index


def test_original_fit_matches_statsmodels_and_copies_combine_by_rule():
    rng = np.random.default_rng(1)
    df = _data(600, rng)
    copies = [_data(600, rng) for _ in range(4)]
    res = analyse("income ~ age + sex", "probit", original=df, synthetic=copies, rule="partial")
    y = (df["income"] == ">50K").astype(float)
    X = sm.add_constant(pd.DataFrame({"sex[T.Male]": (df["sex"] == "Male").astype(float), "age": df["age"]}))
    ref = sm.GLM(y, X, family=sm.families.Binomial(link=sm.families.links.Probit())).fit()
    f = res.to_frame()
    assert f.loc["age", "est_orig"] == pytest.approx(ref.params["age"], rel=1e-6)
    assert f.loc["age", "se_orig"] == pytest.approx(ref.bse["age"], rel=1e-6)
    comb = combine(res.estimates, res.variances, rule="partial")
    np.testing.assert_allclose(f["est_syn"], comb.estimate)
    np.testing.assert_allclose(f["ci_upper_syn"], comb.ci_upper)
    text = str(res.summary())
    assert "mean CI overlap" in text and "95% CI" in text
    assert res.table().shape[0] == 2 * len(f)


def test_gaussian_family_and_nested_rule():
    rng = np.random.default_rng(2)
    df = _data(300, rng)
    nests = [[_data(300, rng) for _ in range(2)] for _ in range(3)]
    res = analyse("age ~ sex", "gaussian", original=df, synthetic=nests, rule="nested")
    assert res.estimates.shape == (3, 2, 2)
    assert res.rule == "nested" and res.M == 6
    # the original's Gaussian interval is the OLS t interval
    ols = sm.OLS(df["age"], sm.add_constant((df["sex"] == "Male").astype(float))).fit()
    f = res.to_frame()
    np.testing.assert_allclose(f["ci_lower_orig"].to_numpy(), ols.conf_int()[0].to_numpy(), rtol=1e-8)


def test_bad_inputs():
    rng = np.random.default_rng(3)
    df = _data(200, rng)
    with pytest.raises(ValueError, match="'family' parameter of analyse"):
        analyse("income ~ age", "gamma", original=df, synthetic=[df, df])
    with pytest.raises(ValueError, match="at least M = 2"):
        analyse("income ~ age", "logit", original=df, synthetic=[df])
    with pytest.raises(ValueError, match="Columns of 'synthetic\\[1\\]' do not match"):
        analyse("income ~ age", "logit", original=df, synthetic=[df, df.drop(columns="sex")])
    with pytest.raises(ValueError, match="y ~ x1"):
        analyse("income", "logit", original=df, synthetic=[df, df])
    with pytest.raises(ValueError, match="nest structure"):
        analyse("income ~ age", "logit", original=df, synthetic=[df, df], rule="nested")
    with pytest.raises(ValueError, match="'original' DataFrame has 0 rows"):
        analyse("income ~ age", "logit", original=df.iloc[:0], synthetic=[df, df])


def test_inputs_not_mutated():
    rng = np.random.default_rng(4)
    df = _data(200, rng)
    c = _data(200, rng)
    d0, c0 = df.copy(deep=True), c.copy(deep=True)
    analyse("income ~ age + education", "probit", original=df, synthetic=[c, c])
    pd.testing.assert_frame_equal(df, d0)
    pd.testing.assert_frame_equal(c, c0)


def test_numeric_non_binary_response_of_a_binary_family_is_an_error_not_nonsense():
    """A continuous response with the default probit family was fitted without complaint and gave
    estimates near 1e16 (found on NHANES' BMI); it is an error naming the column and the fix."""
    rng = np.random.default_rng(1)
    df = _data(200, rng)
    df["bmi"] = rng.normal(28, 5, len(df))
    with pytest.raises(ValueError, match=r"The response 'bmi' of a probit model must be binary.*--family gaussian"):
        analyse("bmi ~ age + sex", "probit", original=df, synthetic=[df, df.copy()])
    # a 0/1-coded numeric response is a binary response: still fitted
    df["y01"] = (df["income"] == ">50K").astype(int)
    res = analyse("y01 ~ age + sex", "logit", original=df, synthetic=[df, df.copy()])
    assert res.mean_ci_overlap == pytest.approx(1.0)


def test_quoted_response_name_with_spaces_is_the_column():
    """Q("...") and backticks quote a column name with spaces; the response is that column, so a
    binary Categorical response named "high income" is coded 0/1 like an unquoted one."""
    rng = np.random.default_rng(2)
    df = _data(300, rng).rename(columns={"income": "high income"})
    plain = analyse("income ~ age + sex", "logit", original=df.rename(columns={"high income": "income"}),
                    synthetic=[df.rename(columns={"high income": "income"})] * 2).to_frame()
    quoted = analyse('Q("high income") ~ age + sex', "logit", original=df, synthetic=[df, df.copy()]).to_frame()
    np.testing.assert_allclose(quoted["est_orig"].to_numpy(), plain["est_orig"].to_numpy(), rtol=1e-10)
    df["w kg"] = rng.normal(70, 10, len(df))
    with pytest.raises(ValueError, match=r"The response 'w kg' of a logit model must be binary"):
        analyse('Q("w kg") ~ age', "logit", original=df, synthetic=[df, df.copy()])


def test_huge_interval_ends_are_printed_in_exponent_form():
    # a full-synthesis interval with very few degrees of freedom can be astronomically
    # wide: printed with three significant digits, never as a 150-digit number
    from synthmi.evaluation.analysis import format_estimate

    assert format_estimate(1.23456) == "1.235"
    assert format_estimate(-3.8277835913228066e151) == "-3.83e+151"
    assert format_estimate(float("inf")) == "inf"


def test_expression_response_means_what_it_says():
    """``I(sex == 2) ~ ...``: patsy codes the boolean response as two columns ([False], [True])
    and statsmodels' binomial GLM reads two columns as (successes, failures), so the fit modelled
    sex != 2 (every sign reversed). The estimates must equal statsmodels' on a 0/1 column
    sex == 2, also in a copy in which the expression is never false."""
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(17)
    n = 600
    age = rng.uniform(20, 70, n)
    sex = np.where(rng.uniform(size=n) < 1 / (1 + np.exp(-(-1.5 + 0.04 * age))), 2, 1)  # the user's code 1/2
    df = pd.DataFrame({"sex": sex, "age": age, "inc": 1000 + 300 * (sex == 2) + rng.normal(0, 100, n)})
    ref = df.assign(s2=(df["sex"] == 2).astype(float))
    for family, fit in (("logit", smf.logit("s2 ~ age", ref).fit(disp=0)),
                        ("probit", smf.probit("s2 ~ age", ref).fit(disp=0)),
                        ("gaussian", smf.ols("s2 ~ age", ref).fit())):
        res = analyse("I(sex == 2) ~ age", family, original=df, synthetic=[df, df.copy()])
        f = res.to_frame()
        assert f.loc["age", "est_orig"] > 0  # sex == 2 grows with age in the data
        np.testing.assert_allclose(f["est_orig"], fit.params[["Intercept", "age"]], rtol=1e-6)
        np.testing.assert_allclose(f["est_syn"], fit.params[["Intercept", "age"]], rtol=1e-6)
    # a copy where sex == 2 holds for everyone is coded on the original's scale (all 1), not refused
    from synthmi.evaluation.analysis import _expression_response

    fit_formula, _, levels = _expression_response("I(sex == 2) ~ age", df, "original")
    assert levels == ["I(sex == 2)[False]", "I(sex == 2)[True]"]
    _, coded, _ = _expression_response("I(sex == 2) ~ age", df.assign(sex=2), "synthetic[1]", levels)
    assert (coded[fit_formula.split("~")[0].strip()] == 1.0).all()
    # on the right-hand side it already meant sex == 2 (the regression guard)
    res = analyse("inc ~ I(sex == 2) + age", "gaussian", original=df, synthetic=[df, df.copy()])
    ols = smf.ols("inc ~ I(sex == 2) + age", df).fit()
    np.testing.assert_allclose(res.to_frame()["est_orig"], ols.params[res.to_frame().index], rtol=1e-8)
