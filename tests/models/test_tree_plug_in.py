"""The plug-in tree conditional (``proper=False``, synthpop's ``proper = FALSE``): the posterior-mean
leaves by hand, their exact place in DA-MI's joint predictive (the enumeration and quadrature
checks of tests/models/test_tree.py, parametrized there over ``proper``), the reduction to synthpop's
``cart`` when the masks carry no information, and the parameter's checks."""
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from synthmi.errors import ParameterError
from synthmi.models import CartSynthesizer, DAMISynthesizer, RubinSynthesizer
from synthmi.models.predictive import Prepared
from synthmi.models.tree import TreePosterior
from _joint_exact import dependent_frame
from test_tree import _bimodal_frame


class _Stump:
    """A fixed two-leaf partition (node ids 3 and 7) on the first design column."""

    def apply(self, X):
        return np.where(np.asarray(X)[:, 0] < 0.5, 3, 7)


class _NoRandom:
    """A generator that must not be used: the plug-in is not random."""

    def __getattr__(self, name):
        raise AssertionError(f"the plug-in used the generator ({name})")


@pytest.mark.parametrize("a", [0.0, 1.0])
def test_categorical_plug_in_is_the_dirichlet_mean_by_hand(a):
    leaf = np.array([3, 3, 3, 7, 7, 7, 7, 7])
    y = np.array([0, 0, 1, 1, 1, 1, 2, 1])
    post = TreePosterior(_Stump(), leaf, y, 3, prior_mass=a)
    margin = np.array([2, 5, 1]) / 8
    # leaf 3: counts (2, 1, 0) of 3 records; leaf 7: (0, 4, 1) of 5; plus a * margin, over n_leaf + a
    hand = (np.array([[2, 1, 0], [0, 4, 1]]) + a * margin) / (np.array([[3], [5]]) + a)
    sets = post.plug_in(3)
    assert len(sets) == 3 and all(s["logp"] is sets[0]["logp"] for s in sets)
    np.testing.assert_allclose(np.exp(sets[0]["logp"]), hand, rtol=1e-12)
    if a == 0.0:
        # a level no donor of the leaf holds keeps probability 0, as in CART
        assert sets[0]["logp"][0, 2] == -np.inf and sets[0]["logp"][1, 0] == -np.inf
    with pytest.raises(ValueError):
        sets[0]["logp"][0, 0] = 0.0  # read-only: shared by the copies


@pytest.mark.parametrize("discrete", [False, True])
def test_continuous_plug_in_is_one_over_n_per_donor_by_hand(discrete):
    leaf = np.repeat([3, 7], [12, 5])
    y = np.array([1.0, 1, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 1, 6, 11, 16, 20])
    post = TreePosterior(_Stump(), leaf, y, 0, 0.0, 21.0, discrete=discrete)
    (theta,) = post.plug_in(1)
    # components (leaf, value) in order: leaf 3's values 1..5 held by 2, 2, 3, 3, 2 of its 12 donors,
    # leaf 7's five values by one of its 5 each
    np.testing.assert_array_equal(post.value, [1, 2, 3, 4, 5, 1, 6, 11, 16, 20])
    np.testing.assert_allclose(np.exp(theta["logw"]), [2 / 12, 2 / 12, 3 / 12, 3 / 12, 2 / 12] + [1 / 5] * 5,
                               rtol=1e-12)
    # the mean of the Bayesian bootstrap draws (Dirichlet(1, ..., 1) aggregated): 4,000 draws, each
    # weight's sd <= 0.2, MC sd of the mean < 0.0032; 0.013 is 4 sd
    draws = np.exp(np.stack([d["logw"] for d in post.draw(4000, np.random.default_rng(0))]))
    np.testing.assert_allclose(draws.mean(axis=0), np.exp(theta["logw"]), atol=0.013)


def test_plug_in_uses_no_random_numbers():
    post = TreePosterior(_Stump(), np.array([3, 3, 7, 7, 7]), np.array([0, 1, 1, 1, 0]), 2)
    post.plug_in(2)  # a generator is not even an argument
    syn = RubinSynthesizer(models={"a": "tree", "b": "tree", "c": "tree"}, proper=False, progressbar=False).fit(
        dependent_frame(), quasi_identifiers=["a", "b", "c"], keep=["z"])
    draws = syn._posterior_draws(3, _NoRandom())
    for cond, sets in zip(syn.conditionals_, draws):
        np.testing.assert_array_equal(sets[0]["logp"], cond.fast.plug_in(1)[0]["logp"])
        assert all(s["logp"] is sets[0]["logp"] for s in sets)


# ---------------------------------------------------------------------------
def test_uninformative_plug_in_tree_is_cart_exactly_on_the_same_partition():
    """With masks that carry no information, DA-MI with plug-in trees draws each categorical QI from the
    empirical donor distribution of the leaf, the predictive of synthpop's ``cart`` grown on the same
    design (the ``cart`` method of the same synthesizer: the same tree, ``_fit_cart``): the tables are
    identical, and the copies' joint frequencies match CART's in distribution (pooled chi-square)."""
    df = dependent_frame()
    qi = ["a", "b", "c"]
    null = {"a": {"alpha": 0.0}, "b": {"alpha": 0.0}, "c": {"alpha": 0.0}}
    tree = DAMISynthesizer(masks=null, models={q: "tree" for q in qi}, proper=False, random_state=0,
                           progressbar=False).fit(df, quasi_identifiers=qi, keep=["z"])
    cart = RubinSynthesizer(models={q: "cart" for q in qi}, progressbar=False).fit(df, quasi_identifiers=qi,
                                                                                    keep=["z"])
    for ct, cc in zip(tree.conditionals_, cart.conditionals_):
        ids, start, count, y_sorted = cc.fast[1]
        np.testing.assert_array_equal(ct.fast.ids, ids)  # the same leaves
        freq = np.zeros((ids.size, ct.n_categories))
        for k in range(ids.size):
            freq[k] = np.bincount(y_sorted[start[k]:start[k] + count[k]], minlength=ct.n_categories) / count[k]
        np.testing.assert_allclose(np.exp(ct.fast.plug_in(1)[0]["logp"]), freq, rtol=1e-12)
    # in distribution: 40 copies of each, the 12 joint cells pooled over records (a conservative pooled
    # chi-square: each record's cell is a categorical draw with the same probabilities under both, so
    # the two count vectors are two samples of one distribution; p < 1e-3 w.p. ~1e-3 if they agree)
    def cells(syn, seed):
        out = np.zeros(12)
        for copy in syn.sample(40, random_state=seed):
            codes = [pd.Categorical(copy[q], categories=df[q].cat.categories).codes for q in qi]
            out += np.bincount(codes[0] * 6 + codes[1] * 2 + codes[2], minlength=12)
        return out

    a, b = cells(tree, 1), cells(cart, 2)
    keep = (a + b) > 0
    assert stats.chi2_contingency(np.vstack([a[keep], b[keep]]))[1] > 1e-3
    # the proper tree draws other leaf weights per copy; its copies still match on average, so the
    # check that can fail is the tables' identity above (proper draws differ from the frequencies)
    proper = DAMISynthesizer(masks=null, models={q: "tree" for q in qi}, random_state=0, progressbar=False).fit(
        df, quasi_identifiers=qi, keep=["z"])
    p = np.exp(proper._posterior_draws(1, np.random.default_rng(0))[0][0]["logp"])
    assert not np.allclose(p, np.exp(tree.conditionals_[0].fast.plug_in(1)[0]["logp"]), atol=1e-3)


@pytest.mark.slow
def test_uninformative_masks_and_plug_in_match_cart_utility():
    """DA-MI with plug-in trees (age's kernel at 1/1000 of its bandwidth: the donors' values, as CART's)
    and masks that carry (almost) no information against improper CART, 6 replicate seeds of M = 5:
    the regression CI overlap and the mean one-way S_pMSE agree within MC error, i.e. the plug-in
    brings the tables to improper CART's level (expectation 1), not proper CART's (2).

    Tolerance: 3 standard errors of the difference of the two seed means (Welch, from the replicates'
    own spread; seed-to-seed sd of the overlap 0.03), each direction. Measured (mean (sd) over the 6
    seeds): overlap plug-in 0.877 (0.027), CART 0.868 (0.031), z = 0.56; mean one-way S_pMSE plug-in
    0.63 (0.14), CART 0.78 (0.34), z = -1.0. The same models with ``proper=True`` (a Bayesian-bootstrap
    draw per copy) give S_pMSE 1.58 (0.34), z = 4.05, and overlap 0.844 (0.038): this test fails
    without the plug-in.
    """
    from synthmi.evaluation import analyse, utility_tables

    df = _bimodal_frame()
    qi = ["age", "sex", "edu"]
    masks = {"age": {"K": 1, "sigma_e": 1e6}, "sex": {"alpha": 1e-6}, "edu": {"alpha": 1e-6}}
    models = {"age": {"method": "tree", "smoothing": 1e-3}, "sex": "tree", "edu": "tree"}

    def util(copies):
        ov = analyse("y ~ age + I(age**2) + sex + edu", family="gaussian", original=df, synthetic=copies,
                     rule="partial").mean_ci_overlap
        return ov, float(utility_tables(df, copies, variables=qi, ways=(1,)).to_frame()["s_pmse"].mean())

    makers = {
        "plug_in": lambda s: DAMISynthesizer(masks=masks, models=models, proper=False, random_state=s,
                                             progressbar=False),
        "cart": lambda s: CartSynthesizer(),
    }
    res = {k: np.array([util(mk(s).fit(df, quasi_identifiers=qi, keep=["y"]).sample(5, random_state=s))
                        for s in range(6)]) for k, mk in makers.items()}

    def z(col):
        x, y = res["plug_in"][:, col], res["cart"][:, col]
        return (x.mean() - y.mean()) / np.sqrt(x.var(ddof=1) / x.size + y.var(ddof=1) / y.size)

    means = {k: v.mean(axis=0).round(3).tolist() for k, v in res.items()}
    assert abs(z(0)) < 3, means
    assert abs(z(1)) < 3, means


def test_same_seed_same_copies_and_the_setting_is_recorded():
    df = dependent_frame()
    qi = ["a", "b", "c"]
    kw = dict(masks={"a": {"alpha": 1.0}, "b": {"p": 0.7}}, models={q: "tree" for q in qi}, proper=False,
              random_state=3, progressbar=False)
    a, b = (DAMISynthesizer(**kw).fit(df, quasi_identifiers=qi, keep=["z"]).sample(2, random_state=5)
            for _ in range(2))
    for x, y in zip(a, b):
        pd.testing.assert_frame_equal(x, y)
    assert a.structure["proper"] is False and a.params["proper"] is False
    assert a.diagnostics["sampler"] == "plug-in"
    assert DAMISynthesizer(masks=kw["masks"], models={q: "tree" for q in qi}, random_state=3, progressbar=False).fit(
        df, quasi_identifiers=qi, keep=["z"]).sample(1, random_state=5).structure["proper"] is True


@pytest.mark.parametrize("bad", ["no", 0, None, 1.0])
def test_bad_proper_is_refused(bad):
    with pytest.raises(ParameterError, match="The 'proper' parameter of DAMISynthesizer must be True or False"):
        DAMISynthesizer(proper=bad, models={"a": "tree"}).fit(dependent_frame(), quasi_identifiers=["a"], keep=["z"])


def test_plug_in_refuses_parametric_models_and_auto():
    df = dependent_frame()
    with pytest.raises(ParameterError, match=r"'proper' parameter of RubinSynthesizer can be False only.*'b': 'ordered'"):
        RubinSynthesizer(models={"a": "tree", "b": "ordered"}, proper=False, progressbar=False).fit(
            df, quasi_identifiers=["a", "b"], keep=["z"])
    with pytest.raises(ParameterError, match="models='auto'"):
        DAMISynthesizer(models="auto", proper=False, progressbar=False).fit(df, quasi_identifiers=["a"], keep=["z"])


def _mixed_frame(n=600, seed=3):
    """Kept: a number and a four-level nominal; QIs: a whole-number age (few-valued: discrete leaves),
    a five-level nominal whose reference level is the rare one, an ordinal and a binary, all dependent."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 1, n)
    region = rng.integers(0, 4, n)
    age = np.clip(np.round(40 + 8 * z + 3 * region + rng.normal(0, 4, n)) // 5 * 5, 20, 70)
    job = np.digitize(0.05 * (age - 45) + 0.4 * region + rng.logistic(size=n), [-3.0, -0.5, 0.8, 2.0])
    edu = np.digitize(0.3 * job - 0.02 * (age - 45) + rng.logistic(size=n), [-0.5, 1.0, 2.2])
    sex = (rng.random(n) < 0.3 + 0.1 * (job == 0) + 0.1 * (edu >= 2)).astype(int)
    return pd.DataFrame({"z": z, "region": pd.Categorical.from_codes(region, list("nesw")), "age": age,
                         "job": pd.Categorical.from_codes(job, ["j0", "j1", "j2", "j3", "j4"]),
                         "edu": pd.Categorical.from_codes(edu, ["e0", "e1", "e2", "e3"], ordered=True),
                         "sex": pd.Categorical.from_codes(sex, ["f", "m"])})


@pytest.mark.parametrize("method", ["tree", "cart"])
def test_tree_partition_is_cartsynthesizers_on_the_same_data(method):
    """The tree conditional grows its partition on CartSynthesizer's design (its ``_Encoder``: codes for
    binary and ordinal columns, one-hot for a nominal one, no intercept; rubin.TreeDesign) with the same
    tree settings, so each QI's tree is CART's: the same nodes, features and leaves for the records'
    own values and for any other values of the earlier QIs (here a shuffle of each column). With
    null masks and ``proper=False`` the predictive is then CART's (the reduction test above). On the
    parametric models' design (intercept, treatment dummies) the trees of job's and edu's successors
    differ from CART's."""
    df = _mixed_frame()
    qi, keep = ["age", "job", "edu", "sex"], ["z", "region"]
    if method == "tree":
        null = {q: {"alpha": 0.0} for q in qi[1:]}
        syn = DAMISynthesizer(masks=null, models=method, proper=False, random_state=0,
                              progressbar=False).fit(df, quasi_identifiers=qi, keep=keep)
    else:  # Rubin MI's 'cart' conditional (no likelihood: DA-MI does not mask it); on the parametric
        # models' design before, its trees after job differed from CartSynthesizer's
        syn = RubinSynthesizer(models=method, progressbar=False).fit(
            df, quasi_identifiers=qi, keep=keep)
    cart = CartSynthesizer().fit(df, quasi_identifiers=qi, keep=keep)
    assert syn.order_ == cart.visit_sequence_
    obs = {q: syn._values(q) for q in qi}
    rng = np.random.default_rng(1)
    other = {q: rng.permutation(v) for q, v in obs.items()}
    other_blocks = {q: cart._encoder.block(q, other[q]) for q in qi}
    for j, cond in enumerate(syn.conditionals_):
        q = cond.column
        t_tree, t_cart = (cond.fast.tree if method == "tree" else cond.fast[0]), cart.trees_[q]
        np.testing.assert_array_equal(t_tree.tree_.feature, t_cart.tree_.feature, err_msg=q)
        ids = cond.fast.ids if method == "tree" else cond.fast[1][0]
        np.testing.assert_array_equal(ids, cart._donors[q][0], err_msg=q)  # the same leaves
        for values, blocks in ((obs, cart._x_blocks), (other, other_blocks)):
            np.testing.assert_array_equal(t_tree.apply(syn._design(cond, values)),
                                          t_cart.apply(cart._design(blocks, j)), err_msg=q)
        # the design evaluated on other rows (partitioned sampling) is the same on the fit's rows
        np.testing.assert_array_equal(cond.design.rebind(syn._Z_design_).matrix(obs), cond.design.matrix(obs))
    assert syn.conditionals_[2].coef_names == ["z", "region[0]", "region[1]", "region[2]", "region[3]", "age",
                                               "job[0]", "job[1]", "job[2]", "job[3]", "job[4]"]


@pytest.mark.slow
def test_default_plug_in_tree_of_a_many_valued_column_is_cart_quality_on_adult():
    """Issue 29: with no masks, the plug-in tree (``proper=False``, default settings) must be synthpop's
    cart on the same partition. Its default gave a continuous column of more than FEW_VALUES values the
    kernel, which is not CART: on the bundled Adult (5,000 rows, benchmarks/tune_files.py's sample; age
    has 74 values; QIs age, sex, race, education, all 'tree'; kept marital_status, hours_per_week,
    income) the kernel's copies held ages the column does not hold (0.1%) and the age x education
    regression of hours lost a third of its CI overlap. Now the default is discrete leaves (the donors'
    values) up to DISCRETE_MAX values.

    Measured (6 seeds of M = 5, mean (seed-to-seed sd)): CI overlap of ``hours_per_week ~ age *
    C(education)``: tree 0.827 (0.070), CART 0.856 (0.051), z = -0.82; with the kernel default (the
    code before) 0.573 (0.129), z = -5.0, and 0.1-0.2% of its ages not in the column.
    Tolerance: 3 standard errors of the difference of the two seed means (Welch, from the seeds' own
    spread, ~0.035 here): a two-sided test at ~1% (t on ~9 df) when the tree is CART in distribution.
    """
    import warnings

    from synthmi.data import load_adult
    from synthmi.evaluation import analyse

    df = load_adult(recode=True)[["age", "sex", "race", "education", "marital_status", "hours_per_week",
                                  "income"]].sample(5000, random_state=2029).reset_index(drop=True)
    qi, keep = ["age", "sex", "race", "education"], ["marital_status", "hours_per_week", "income"]
    held = df["age"].unique()
    assert 20 < held.size <= 500  # many-valued (not FEW_VALUES), within DISCRETE_MAX

    def overlaps(make):
        out = []
        for s in range(6):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                copies = make().fit(df, quasi_identifiers=qi, keep=keep).sample(5, random_state=s)
            if isinstance(make(), RubinSynthesizer):
                # every copy's age is one the column holds, as CART's donors are
                assert all(np.isin(c["age"], held).all() for c in copies)
            out.append(analyse("hours_per_week ~ age * C(education)", family="gaussian", original=df,
                               synthetic=copies, rule="partial").mean_ci_overlap)
        return np.array(out)

    tree = overlaps(lambda: RubinSynthesizer(models={q: "tree" for q in qi}, proper=False, progressbar=False))
    cart = overlaps(CartSynthesizer)
    z = (tree.mean() - cart.mean()) / np.sqrt(tree.var(ddof=1) / tree.size + cart.var(ddof=1) / cart.size)
    assert abs(z) < 3, (tree.round(3).tolist(), cart.round(3).tolist())
