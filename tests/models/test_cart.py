"""CartSynthesizer: synthpop's ``cart`` (draws of observed leaf values)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from synthmi.data import load_adult
from synthmi.models import CartSynthesizer
from synthmi.models.cart import _Encoder, _draw_from_leaves, _leaf_donors
from synthmi.schema import Schema

QI = ["age", "sex", "race", "education"]
KEEP = ["income", "marital_status", "relationship", "hours_per_week", "capital_gain", "capital_loss"]


@pytest.fixture(scope="module")
def adult_small() -> pd.DataFrame:
    df = load_adult(recode=True)
    return df[QI + KEEP].sample(2000, random_state=0).reset_index(drop=True)


def _two_groups(n_per: int = 60, seed: int = 0) -> pd.DataFrame:
    """Binary Z; X's observed values are disjoint between the Z groups."""
    rng = np.random.default_rng(seed)
    z = np.repeat([0.0, 1.0], n_per)
    x = np.where(z == 0, rng.integers(0, 6, 2 * n_per), rng.integers(100, 104, 2 * n_per)).astype(float)
    c = np.where(z == 0, rng.random(2 * n_per) < 0.25, rng.random(2 * n_per) < 0.8)
    return pd.DataFrame(
        {"x": x, "c": pd.Categorical(np.where(c, "yes", "no"), categories=["no", "yes"]), "z": z}
    )


# ---- helpers, by hand -------------------------------------------------------
def test_leaf_donor_draw_by_hand():
    leaf_train = np.array([7, 3, 7, 3, 7])
    y = np.array([10.0, 20.0, 30.0, 40.0, 50.0])
    ids, start, count, y_sorted = _leaf_donors(leaf_train, y)
    np.testing.assert_array_equal(ids, [3, 7])
    np.testing.assert_array_equal(count, [2, 3])
    # stable sort keeps training order within a leaf
    np.testing.assert_array_equal(y_sorted, [20.0, 40.0, 10.0, 30.0, 50.0])
    rng = np.random.default_rng(0)
    draws = _draw_from_leaves((ids, start, count, y_sorted), np.full(30_000, 7), rng)
    assert set(np.unique(draws)) == {10.0, 30.0, 50.0}
    # each donor has probability 1/3; MC s.e. of a share = sqrt(2/9/30000) ~ 0.0027, bound = 4 s.e.
    shares = np.array([(draws == v).mean() for v in (10.0, 30.0, 50.0)])
    np.testing.assert_allclose(shares, 1 / 3, atol=0.011)
    draws3 = _draw_from_leaves((ids, start, count, y_sorted), np.full(100, 3), rng)
    assert set(np.unique(draws3)) <= {20.0, 40.0}


def test_encoder_one_hot_nominal_and_codes_for_ordered():
    df = pd.DataFrame(
        {
            "nom": pd.Categorical(["b", "a", "c", "a"]),
            "ordn": pd.Categorical(["lo", "hi", "mid", "lo"], categories=["lo", "mid", "hi"], ordered=True),
            "bin": pd.Categorical(["x", "y", "y", "x"]),
            "num": [1.5, 2.0, 3.0, 4.0],
        }
    )
    schema = Schema.infer(df)
    enc = _Encoder(schema, df.columns)
    np.testing.assert_array_equal(enc.block("nom", schema.codes(df["nom"])), np.eye(3)[[1, 0, 2, 0]])
    np.testing.assert_array_equal(enc.block("ordn", schema.codes(df["ordn"])).ravel(), [0, 2, 1, 0])
    np.testing.assert_array_equal(enc.block("bin", schema.codes(df["bin"])).ravel(), [0, 1, 1, 0])
    np.testing.assert_array_equal(enc.block("num", df["num"].to_numpy()).ravel(), [1.5, 2.0, 3.0, 4.0])


# ---- the method's behaviour --------------------------------------------------
@pytest.mark.slow
def test_values_come_from_the_records_leaf():
    """With one binary predictor the leaves are the Z groups: each synthetic x is
    an observed x of the same Z group, drawn in proportion to its frequency."""
    df = _two_groups(n_per=60)
    syn = CartSynthesizer(min_samples_leaf=5).fit(df, quasi_identifiers=["x"], keep=["z"]).sample(200, random_state=3)
    g0 = set(df.loc[df.z == 0, "x"]), set(df.loc[df.z == 1, "x"])
    stacked = pd.concat(syn.copies)
    assert set(stacked.loc[stacked.z == 0, "x"]) <= g0[0]
    assert set(stacked.loc[stacked.z == 1, "x"]) <= g0[1]
    # frequency of each donor value matches its share in the group (12,000 draws per
    # group; s.e. of a share <= sqrt(.25/12000) ~ 0.0046; bound 4.4 s.e.)
    for z in (0.0, 1.0):
        obs = df.loc[df.z == z, "x"].value_counts(normalize=True).sort_index()
        got = stacked.loc[stacked.z == z, "x"].value_counts(normalize=True).reindex(obs.index, fill_value=0)
        np.testing.assert_allclose(got.to_numpy(), obs.to_numpy(), atol=0.02)


def test_categorical_draws_follow_leaf_class_proportions():
    df = _two_groups(n_per=60, seed=1)
    syn = CartSynthesizer().fit(df, quasi_identifiers=["c"], keep=["z"]).sample(200, random_state=0)
    stacked = pd.concat(syn.copies)
    for z in (0.0, 1.0):
        p_obs = (df.loc[df.z == z, "c"] == "yes").mean()
        p_syn = (stacked.loc[stacked.z == z, "c"] == "yes").mean()
        # 12,000 draws: s.e. <= 0.0046; bound 4.4 s.e.
        assert abs(p_syn - p_obs) < 0.02


def test_later_variables_use_earlier_synthetic_values():
    """c is a deterministic function of x; its tree splits on x, so the
    synthetic c must follow the synthetic x, not the original row's x."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=400)
    df = pd.DataFrame(
        {"x": x, "c": pd.Categorical(np.where(x > 0.3, "hi", "lo"), categories=["lo", "hi"]), "z": rng.normal(size=400)}
    )
    syn = CartSynthesizer().fit(df, quasi_identifiers=["x", "c"], keep=["z"]).sample(5, random_state=1)
    for cp in syn.copies:
        assert not np.array_equal(cp["x"].to_numpy(), df["x"].to_numpy())
        agree = ((cp["x"] > 0.3) == (cp["c"] == "hi")).mean()
        assert agree == 1.0


def test_min_samples_leaf_bounds_every_leaf_and_large_value_gives_marginal():
    df = _two_groups(n_per=60)
    fitted = CartSynthesizer(min_samples_leaf=7).fit(df, quasi_identifiers=["x", "c"], keep=["z"])
    for c, tree in fitted.trees_.items():
        leaf_sizes = tree.tree_.n_node_samples[tree.tree_.children_left == -1]
        assert leaf_sizes.min() >= 7
    # a leaf must hold >= 70 of 120 rows: no split possible, draws come from the marginal
    one_leaf = CartSynthesizer(min_samples_leaf=70).fit(df, quasi_identifiers=["x"], keep=["z"])
    assert one_leaf.trees_["x"].get_n_leaves() == 1
    stacked = pd.concat(one_leaf.sample(100, random_state=0).copies)
    # without a split, Z=0 records receive group-1 values (share 0.5; MC s.e. 0.002)
    share_high = (stacked.loc[stacked.z == 0, "x"] >= 100).mean()
    assert abs(share_high - 0.5) < 0.02


@pytest.mark.slow
def test_proper_bootstrap_doubles_between_copy_variance():
    """One leaf, no predictors. Without bootstrap, mean(x~) has variance s^2/n
    (draws from the empirical distribution); with the bootstrap it has
    (1 + 1) s^2/n (bootstrap mean plus the draw), up to (n-1)/n factors.
    With 400 copies the s.e. of a variance ratio is ~sqrt(2/399) ~ 7% relative,
    so ratio 1 is checked within [0.75, 1.3] and ratio 2 within [1.5, 2.6] (>= 3.5 s.e.)."""
    rng = np.random.default_rng(5)
    n = 200
    df = pd.DataFrame({"x": rng.normal(size=n) * 3.0 + 1.0})
    s2 = df["x"].var(ddof=0)
    ratios = {}
    for proper in (False, True):
        syn = CartSynthesizer(proper=proper).fit(df, quasi_identifiers=["x"], keep=[]).sample(400, random_state=11)
        means = np.array([c["x"].mean() for c in syn.copies])
        ratios[proper] = means.var(ddof=1) / (s2 / n)
    assert 0.75 < ratios[False] < 1.3
    assert 1.5 < ratios[True] < 2.6


def test_proper_trees_differ_between_copies(adult_small):
    fitted = CartSynthesizer(proper=True).fit(adult_small, quasi_identifiers=QI, keep=KEEP)
    assert fitted.trees_ == {}  # grown per copy from a bootstrap sample, not once in fit
    syn = fitted.sample(3, random_state=2)
    assert set(syn.diagnostics["n_leaves_mean"]) == set(QI)
    # each copy's tree for age is grown on its own bootstrap sample: leaf counts differ
    assert len(set(fitted._last_leaves["age"])) > 1
    plain = CartSynthesizer().fit(adult_small, quasi_identifiers=QI, keep=KEEP)
    plain.sample(3, random_state=2)
    assert len(set(plain._last_leaves["age"])) == 1


# ---- the contract ------------------------------------------------------------
@pytest.mark.parametrize("proper", [False, True])
def test_same_seed_byte_identical_and_different_seed_differs(adult_small, proper):
    fitted = CartSynthesizer(proper=proper).fit(adult_small, quasi_identifiers=QI, keep=KEEP)
    a = fitted.sample(3, random_state=7)
    b = CartSynthesizer(proper=proper).fit(adult_small, quasi_identifiers=QI, keep=KEEP).sample(3, random_state=7)
    c = fitted.sample(3, random_state=8)
    for x, y in zip(a.copies, b.copies):
        assert x.to_csv(index=False) == y.to_csv(index=False)
    assert all(x.to_csv(index=False) != z.to_csv(index=False) for x, z in zip(a.copies, c.copies))
    assert a.seed == 7 and a.method == "cart"


def test_z_identical_and_dtypes_levels_kept(adult_small):
    syn = CartSynthesizer().fit(adult_small, quasi_identifiers=QI, keep=KEEP).sample(2, random_state=0)
    for cp in syn.copies:
        assert list(cp.columns) == list(adult_small.columns)
        pd.testing.assert_frame_equal(cp[KEEP], adult_small[KEEP])
        assert cp.dtypes.equals(adult_small.dtypes)
        for c in ("sex", "race", "education"):
            assert cp[c].dtype == adult_small[c].dtype  # same categories and order
        assert cp["education"].cat.ordered
        assert cp[QI].notna().all().all()
        # QIs really were replaced
        assert (cp["age"] != adult_small["age"]).mean() > 0.5


# (the input frame is never modified: check_input_not_mutated of the contract battery,
# tests/testing/test_common.py, runs on CartSynthesizer and CartSynthesizer(proper=True))


def test_visit_sequence_and_integer_and_object_columns():
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "n_kids": rng.integers(0, 5, 300),
            "colour": rng.choice(["red", "green", "blue"], 300),
            "z": rng.normal(size=300),
        }
    )
    fitted = CartSynthesizer(visit_sequence=["colour", "n_kids"]).fit(df, quasi_identifiers=["n_kids", "colour"])
    assert fitted.visit_sequence_ == ["colour", "n_kids"]
    cp = fitted.sample(1, random_state=0)[0]
    assert cp["n_kids"].dtype == df["n_kids"].dtype
    assert set(cp["colour"]) <= {"red", "green", "blue"}
    assert cp["colour"].dtype == df["colour"].dtype  # object under pandas 2, str under pandas 3
    assert set(cp["n_kids"]) <= set(df["n_kids"])


@pytest.mark.parametrize(
    "params, match",
    [
        ({"min_samples_leaf": 0}, "'min_samples_leaf' parameter of CartSynthesizer must be >= 1"),
        ({"min_samples_leaf": 2.5}, "'min_samples_leaf' parameter of CartSynthesizer must be a whole number"),
        ({"max_depth": 0}, "'max_depth' parameter of CartSynthesizer must be >= 1"),
        ({"proper": "yes"}, "'proper' parameter of CartSynthesizer must be True or False"),
        ({"visit_sequence": "age"}, "'visit_sequence' parameter of CartSynthesizer must be None or a list"),
        ({"visit_sequence": ["age", "sex"]}, "'visit_sequence' parameter of CartSynthesizer must list each"),
    ],
)
def test_bad_parameters(adult_small, params, match):
    with pytest.raises(ValueError, match=match):
        CartSynthesizer(**params).fit(adult_small, quasi_identifiers=QI, keep=KEEP)


def test_bad_data(adult_small):
    with pytest.raises(ValueError, match=r"'quasi_identifiers' parameter names columns not in 'df': \['agee'\]"):
        CartSynthesizer().fit(adult_small, quasi_identifiers=["agee"], keep=KEEP)
    with pytest.raises(ValueError, match="both as quasi-identifiers and as kept"):
        CartSynthesizer().fit(adult_small, quasi_identifiers=QI, keep=KEEP + ["age"])
    const = adult_small.assign(flag=1.0)
    with pytest.raises(ValueError, match="Column 'flag' of 'df' is constant"):
        CartSynthesizer().fit(const, quasi_identifiers=QI, keep=KEEP + ["flag"])
    allnan = adult_small.assign(empty=np.nan)
    with pytest.raises(ValueError, match="Column 'empty' of 'df' is entirely missing"):
        CartSynthesizer().fit(allnan, quasi_identifiers=QI + ["empty"], keep=KEEP)
    fitted = CartSynthesizer().fit(adult_small, quasi_identifiers=QI, keep=KEEP)
    with pytest.raises(ValueError, match="'m' parameter of CartSynthesizer must be >= 1. Got 0 instead"):
        fitted.sample(0)
    with pytest.raises(ValueError, match="not fitted yet"):
        CartSynthesizer().sample(1)
