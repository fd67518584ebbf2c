"""Per-variable conditional models: methods, formulas, predictor matrix, visit sequence, cart, errors."""
import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, log_ndtr

from synthmi.evaluation import analyse
from synthmi.models import DAMISynthesizer, RubinSynthesizer
from synthmi.models.conditional import FormulaDesign
from synthmi.models.glm import log_probs_eta
from synthmi.models.predictive import log_prob_of


def _interaction_frame(n=1500, seed=0):
    """y = 1 + z + s + 1.5 z s + N(0, 1): an interaction a main-effects synthesis model cannot carry."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n)
    s = rng.random(n) < 0.5
    y = 1 + z + s + 1.5 * z * s + rng.normal(size=n)
    b = (rng.random(n) < expit(-0.5 + 0.8 * z - 1.2 * s + 1.6 * z * s)).astype(int)
    return pd.DataFrame({
        "z": z,
        "s": pd.Categorical(np.where(s, "b", "a"), categories=["a", "b"]),
        "y": y,
        "bin": pd.Categorical(np.where(b, "yes", "no"), categories=["no", "yes"]),
    })


def _overlap(df, syn, formula, family, term):
    res = analyse(formula, family=family, original=df, synthetic=syn, rule="partial")
    return float(res.to_frame().loc[term, "ci_overlap"])


@pytest.mark.slow
def test_formula_interaction_raises_ci_overlap():
    """The interaction term's CI overlap: ~0 under the main-effects model, high under the formula model.

    Main effects: the synthetic y (and bin) carry no z:s interaction, so the synthetic estimate sits
    ~1.5 (resp. ~1.6 on the logit scale) from the original's with CIs ~0.1 (~0.3) wide: overlap 0 by
    construction, whatever the seed. Formula model: the synthesis model contains the analysis model,
    so the overlap is that of a correct model (median ~0.8 for M = 5; > 0.4 fails with prob. < 1%).
    """
    df = _interaction_frame()
    main = RubinSynthesizer().fit(df, quasi_identifiers=["y", "bin"], keep=["z", "s"]).sample(5, random_state=1)
    form = RubinSynthesizer(models={"y": "~ z * s", "bin": {"formula": "bin ~ z * s"}}).fit(
        df, quasi_identifiers=["y", "bin"], keep=["z", "s"]).sample(5, random_state=1)
    term = "z:s[T.b]"
    o_main = _overlap(df, main, "y ~ z * s", "gaussian", term)
    o_form = _overlap(df, form, "y ~ z * s", "gaussian", term)
    assert o_main < 0.05 and o_form > 0.4
    b_main = _overlap(df, main, "bin ~ z * s", "logit", term)
    b_form = _overlap(df, form, "bin ~ z * s", "logit", term)
    assert b_main < 0.2 and b_form > 0.4
    assert form.metadata()["structure"]["models"]["y"]["formula"] == "~ z * s"


def test_formula_design_keeps_fit_spline_knots_and_levels():
    """Re-evaluating the formula on new values uses the fit-time knots and levels (not the new data's)."""
    df = _interaction_frame(n=400)
    syn = RubinSynthesizer(models={"y": "~ bs(z, 4) + s", "bin": "~ y * s"}).fit(
        df, quasi_identifiers=["y", "bin"], keep=["z", "s"])
    cond = syn.conditionals_[1]
    assert isinstance(cond.design, FormulaDesign)
    obs = {"y": df["y"].to_numpy()}
    D_fit = cond.design.matrix(obs)
    # same values -> the fit design; shifted values keep the fit standardisation (no re-centring)
    shifted = cond.design.matrix({"y": obs["y"] + 1.0})
    col = cond.coef_names.index("y")
    np.testing.assert_allclose(shifted[:, col] - D_fit[:, col], 1.0 / df["y"].std(ddof=0), rtol=1e-12)
    # all records set to one level: the dummy column is constant 1 ("b") - levels come from the schema
    one = cond.design.matrix({"y": obs["y"]})
    assert one.shape == D_fit.shape
    sp = syn.conditionals_[0].design
    z_only = sp.matrix({})
    assert z_only.shape[1] == len(syn.conditionals_[0].coef_names) == 1 + 4 + 1


def test_predictors_and_predictor_matrix_restrict_the_design():
    df = _interaction_frame(n=300)
    df["w"] = np.random.default_rng(1).normal(size=len(df))
    a = RubinSynthesizer(models={"bin": {"predictors": ["z", "y"]}}).fit(df, quasi_identifiers=["y", "bin"])
    assert a.coefficient_names()["bin"] == ["(Intercept)", "z", "y"]
    pm = pd.DataFrame({"z": [1, 0], "s": [0, 1], "w": [0, 0], "y": [0, 1], "bin": [0, 0]}, index=["y", "bin"])
    b = RubinSynthesizer(predictor_matrix=pm).fit(df, quasi_identifiers=["y", "bin"])
    assert b.coefficient_names() == {"y": ["(Intercept)", "z"], "bin": ["(Intercept)", "s[1]", "y"]}
    c = RubinSynthesizer(visit_sequence=["bin", "y"]).fit(df, quasi_identifiers=["y", "bin"])
    assert [x.column for x in c.conditionals_] == ["bin", "y"]
    assert c.coefficient_names()["y"][-1] == "bin[1]"


def test_methods_per_variable():
    """probit / cart / multinomial / ordered per column; cart draws observed donors."""
    df = _interaction_frame(n=600)
    rng = np.random.default_rng(3)
    df["lev"] = pd.Categorical.from_codes(rng.integers(0, 3, len(df)), ["lo", "mid", "hi"], ordered=True)
    syn = RubinSynthesizer(models={"bin": "probit", "y": "cart", "lev": "multinomial"}).fit(
        df, quasi_identifiers=["y", "bin", "lev"], keep=["z", "s"])
    fams = {c.column: c.family for c in syn.conditionals_}
    assert fams == {"y": "cart", "bin": "probit", "lev": "logit"}
    out = syn.sample(2, random_state=4)
    assert set(out.copies[0]["y"]).issubset(set(df["y"]))
    ordered = RubinSynthesizer(models={"lev": "ordered"}, ordinal_link="multinomial").fit(
        df, quasi_identifiers=["lev"], keep=["z", "s"])
    assert ordered.conditionals_[0].family == "ologit"
    # same seed -> identical copies, and the caller's frame is untouched
    before = df.copy()
    again = RubinSynthesizer(models={"bin": "probit", "y": "cart", "lev": "multinomial"}).fit(
        df, quasi_identifiers=["y", "bin", "lev"], keep=["z", "s"]).sample(2, random_state=4)
    assert all(a.equals(b) for a, b in zip(out.copies, again.copies))
    pd.testing.assert_frame_equal(df, before)


@pytest.mark.parametrize("whole", ["tree", "cart"])
def test_one_method_for_every_quasi_identifier(whole):
    """``models="tree"`` (synthpop's ``method = "cart"``) is ``{qi: "tree"}`` for every quasi-identifier:
    the same conditionals and, seed for seed, the same copies."""
    df = _interaction_frame(n=300)
    fit = dict(quasi_identifiers=["y", "bin"], keep=["z", "s"])
    one = RubinSynthesizer(models=whole, proper=False).fit(df, **fit)
    each = RubinSynthesizer(models={"y": whole, "bin": whole}, proper=False).fit(df, **fit)
    assert {c.column: c.family for c in one.conditionals_} == {"y": whole, "bin": whole}
    a, b = one.sample(2, random_state=5), each.sample(2, random_state=5)
    assert all(x.equals(y) for x, y in zip(a.copies, b.copies))
    # a method that cannot model every kind is not a whole setting: named in the error
    with pytest.raises(ValueError, match="'models' parameter of RubinSynthesizer must be None, one of 'auto', 'tree', "
                                         "'cart' or a dict. Got 'normal' instead"):
        RubinSynthesizer(models="normal").fit(df, **fit)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"models": {"y": "lasso"}}, "method of column 'y' must be one of"),
        ({"models": {"nope": "normal"}}, "names column 'nope', which is not a quasi-identifier"),
        ({"models": {"bin": "normal"}}, "cannot model a binary column"),
        ({"models": {"y": "~ bin + z"}}, r"uses \['bin'\], which are neither kept columns nor quasi-identifiers earlier"),
        ({"models": {"y": {"predictors": ["bin"]}}}, r"include \['bin'\], which are neither kept"),
        ({"models": {"y": "hierarchical"}}, "needs a 'group'"),
        ({"models": {"y": {"method": "normal", "grp": "s"}}}, "unknown keys"),
        ({"models": {"y": {"formula": "~ z", "predictors": ["z"]}}}, "both a formula and a predictor list"),
        ({"models": {"y": "bin ~ z"}}, "has the response 'bin'"),
        ({"visit_sequence": ["y", "y"]}, "'visit_sequence' parameter of RubinSynthesizer must be a permutation"),
        ({"visit_sequence": ["y", "bin"], "order": ["bin", "y"]}, "are the same setting and disagree"),
        ({"predictor_matrix": pd.DataFrame({"zz": [1]}, index=["y"])}, "columns that are not in the data"),
        ({"bounds": {"y": (5, 1)}}, "lower < upper"),
        ({"bounds": {"bin": (0, 1)}}, "not continuous quasi-identifiers"),
        ({"bounds": {"y": (0, 1)}}, "has values outside its declared bounds"),
    ],
)
def test_bad_model_input(kwargs, match):
    df = _interaction_frame(n=200)
    with pytest.raises(ValueError, match=match):
        RubinSynthesizer(**kwargs).fit(df, quasi_identifiers=["y", "bin"], keep=["z", "s"])


def test_masked_cart_and_cart_feeding_a_masked_model_are_refused():
    df = _interaction_frame(n=200)
    with pytest.raises(ValueError, match="masked but synthesized by 'cart'"):
        DAMISynthesizer(masks={"y": {"K": 1, "sigma_e": 1.0}}, models={"y": "cart"}).fit(
            df, quasi_identifiers=["y", "bin"], keep=["z", "s"])
    with pytest.raises(ValueError, match="synthesized by 'cart', which has no likelihood"):
        DAMISynthesizer(masks={"bin": {"p": 0.9}}, models={"y": "cart"}).fit(
            df, quasi_identifiers=["y", "bin"], keep=["z", "s"])
    # the sequential approximation has no such restriction
    DAMISynthesizer(masks={"bin": {"p": 0.9}}, models={"y": "cart"}, predictive="sequential").fit(
        df, quasi_identifiers=["y", "bin"], keep=["z", "s"]).sample(1, random_state=0)


@pytest.mark.parametrize("family, C", [("logit", 2), ("logit", 4), ("probit", 2), ("ologit", 4), ("oprobit", 4)])
def test_log_prob_of_matches_the_full_table(family, C):
    """The Gibbs hot path equals the full log-probability table, and a direct formula at moderate eta."""
    rng = np.random.default_rng(5)
    n = 500
    eta = rng.normal(size=(n, C - 1)) if family == "logit" else rng.normal(size=n) * 1.5
    cut = np.array([-1.0, 0.3, 1.7]) if family.startswith("o") else None
    x = rng.integers(0, C, n)
    got = log_prob_of(family, eta, x, cut)
    table = log_probs_eta(family, eta, cut)
    np.testing.assert_allclose(got, table[np.arange(n), x], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.exp(table).sum(axis=1), 1.0, rtol=1e-12)
    if family == "oprobit":
        ext = np.concatenate([[-np.inf], cut, [np.inf]])
        direct = np.log(np.exp(log_ndtr(ext[x + 1] - eta)) - np.exp(log_ndtr(ext[x] - eta)))
        np.testing.assert_allclose(got, direct, rtol=1e-9)
