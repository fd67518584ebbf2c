"""The tree conditional (synthmi.models.tree): its posterior and density by hand, its exact place in
DA-MI's joint predictive (against quadrature and enumeration), and its reduction to CART-quality
synthesis when the masks carry no information."""
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import expit

from synthmi.errors import ColumnError, ParameterError
from synthmi.models import CartSynthesizer, DAMISynthesizer, RubinSynthesizer
from synthmi.models.conditional import parse_models
from synthmi.models.predictive import Prepared, can_enumerate, enumerate_probs, gibbs_draw, sequential_draw
from synthmi.models.tree import PRIOR_MASS, TreePosterior, nrd0
from _joint_exact import dependent_frame, exact_mixed_joint

#: a continuous tree column drawn from the kernel mixture: the default gives a column of at most
#: DISCRETE_MAX values discrete leaves (the donors' values), so the tests of the kernel ask for it
KERNEL = {"method": "tree", "smoothing": 1}


class _Stump:
    """A fixed two-leaf partition (node ids 3 and 7) on the first design column, for hand checks."""

    def apply(self, X):
        return np.where(np.asarray(X)[:, 0] < 0.5, 3, 7)


def test_nrd0_is_r_bw_nrd0():
    # R: bw.nrd0(c(1, 2, 3, 4, 10)) = 0.9 * min(sd = 3.535534, IQR / 1.34 = 2 / 1.34) * 5^(-1/5)
    assert nrd0(np.array([1.0, 2, 3, 4, 10])) == pytest.approx(0.9 * (2 / 1.34) * 5 ** -0.2, rel=1e-12)
    # IQR 0 (heaped values): R falls back to the sd
    y = np.array([5.0, 5, 5, 5, 5, 5, 9])
    assert nrd0(y) == pytest.approx(0.9 * np.std(y, ddof=1) * 7 ** -0.2, rel=1e-12)
    assert nrd0(np.array([2.0, 2.0])) == 0.0


@pytest.mark.parametrize("a", [PRIOR_MASS, 1.0])
def test_categorical_leaves_hand_computed_posterior(a):
    leaf = np.array([3, 3, 3, 7, 7, 7, 7, 7])
    y = np.array([0, 0, 1, 1, 1, 1, 2, 1])
    post = TreePosterior(_Stump(), leaf, y, 3, prior_mass=a)
    margin = np.array([2, 5, 1]) / 8
    np.testing.assert_allclose(post.alpha, np.array([[2, 1, 0], [0, 4, 1]]) + a * margin)
    draws = post.draw(4000, np.random.default_rng(0))
    p = np.exp(np.stack([d["logp"] for d in draws]))
    np.testing.assert_allclose(p.sum(axis=2), 1.0, rtol=1e-12)
    mean = post.alpha / post.alpha.sum(axis=1, keepdims=True)
    # Dirichlet sd of each coordinate <= 0.5 / sqrt(sum alpha + 1) < 0.25; 4,000 draws: MC sd < 0.004
    np.testing.assert_allclose(p.mean(axis=0), mean, atol=0.016)
    # Dirichlet variance a_c (a_0 - a_c) / (a_0^2 (a_0 + 1)); the sd of a sample variance of 4,000
    # draws of a Beta is below 4% of it (sqrt((kurtosis - 1) / n), Beta kurtosis < 5 here): 15% is 4 sd
    a0 = post.alpha.sum(axis=1, keepdims=True)
    var = post.alpha * (a0 - post.alpha) / (a0**2 * (a0 + 1))
    np.testing.assert_allclose(p.var(axis=0, ddof=1), var, rtol=0.15, atol=1e-15)


def test_continuous_leaves_density_and_draws():
    rng = np.random.default_rng(1)
    leaf = np.repeat([3, 7], [12, 5])
    y = np.array([1.0, 1, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 1, 6, 11, 16, 20])
    lo, hi = 0.0, 21.0
    post = TreePosterior(_Stump(), leaf, y, 0, lo, hi)
    # components: distinct (leaf, value) pairs with their donor counts
    np.testing.assert_array_equal(post.value, [1, 2, 3, 4, 5, 1, 6, 11, 16, 20])
    np.testing.assert_array_equal(post.weight_count, [2, 2, 3, 3, 2, 1, 1, 1, 1, 1])
    # each leaf's rule capped by the column's: min(bw.nrd0(leaf), bw.nrd0(column)) (0.755, 1.143, 4.868)
    assert nrd0(y[:12]) < nrd0(y) < nrd0(y[12:])
    np.testing.assert_allclose(post.bw, [nrd0(y[:12]), nrd0(y)])
    theta = post.draw(1, rng)[0]
    w = np.exp(theta["logw"])
    np.testing.assert_allclose([w[:5].sum(), w[5:].sum()], 1.0, rtol=1e-12)
    # the Bayesian bootstrap: a component of k of the leaf's n donors has weight Beta(k, n - k),
    # E w = k / n, Var w = k (n - k) / (n^2 (n + 1)); 4,000 draws: the mean's sd < 0.003 (tolerance
    # 0.012), the variance's sd < 4% of it (tolerance 15%)
    ws = np.exp(np.stack([d["logw"] for d in post.draw(4000, rng)]))
    k = post.weight_count
    nl = np.array([12.0] * 5 + [5.0] * 5)
    np.testing.assert_allclose(ws.mean(axis=0), k / nl, atol=0.012)
    np.testing.assert_allclose(ws.var(axis=0, ddof=1), k * (nl - k) / (nl**2 * (nl + 1)), rtol=0.15)
    # the density by hand: sum_d w_d N(y; y_d, h) / (Phi((hi - y_d)/h) - Phi((lo - y_d)/h)) on [lo, hi]
    ys = np.array([0.5, 3.3, 17.0, 22.0])
    for pos, comps in ((0, slice(0, 5)), (1, slice(5, 10))):
        h = post.bw[pos]
        v = post.value[comps]
        mass = stats.norm.cdf((hi - v) / h) - stats.norm.cdf((lo - v) / h)
        hand = (w[comps] * stats.norm.pdf(ys[:, None], v, h) / mass).sum(axis=1)
        hand[ys > hi] = 0.0
        got = np.exp(post.log_density(theta, np.full(ys.size, pos), ys))
        np.testing.assert_allclose(got, hand, rtol=1e-10)
        # a proper density: integrates to 1 on the bounds (midpoint rule, 40,000 points)
        grid = np.linspace(lo, hi, 40001)
        mid = 0.5 * (grid[1:] + grid[:-1])
        dens = np.exp(post.log_density(theta, np.full(mid.size, pos), mid))
        assert (dens * (grid[1] - grid[0])).sum() == pytest.approx(1.0, abs=1e-6)


def _bounded_leaves():
    """Two leaves whose donors sit at and near the latent bounds [1, 20], so the truncation matters
    (a kernel at a bound keeps half its mass, one 2 bandwidths inside 98%)."""
    leaf = np.repeat([3, 7], [8, 7])
    y = np.array([1.0, 1, 1, 2, 4, 4, 6, 8, 10, 11, 11, 12, 15, 19, 20])
    return TreePosterior(_Stump(), leaf, y, 0, 1.0, 20.0)


def _bounded_draw(seed: int):
    """(posterior, one posterior draw, its rng, a 40,000-cell grid on the bounds and its midpoints)."""
    post = _bounded_leaves()
    rng = np.random.default_rng(seed)
    theta = post.draw(1, rng)[0]
    grid = np.linspace(post.lo, post.hi, 40001)
    return post, theta, rng, grid, 0.5 * (grid[1:] + grid[:-1])


def test_unmasked_draw_is_the_density_and_picks_each_component_with_its_weight(monkeypatch):
    r"""Without a mask, draws of p(y | leaf, theta) against the CDF of ``log_density`` by quadrature
    (Kolmogorov-Smirnov), and the picked components' frequencies against each component's mass on the
    bounds, :math:`\int_l^u w_d \phi_h(y - y_d) / M_d\, dy = w_d` (by quadrature, not by hand)."""
    import synthmi.models.tree as tree_mod

    post, theta, rng, grid, mid = _bounded_draw(4)
    lo, hi = post.lo, post.hi
    n = 20000
    for pos in (0, 1):
        draws = post.draw_latent(theta, np.full(n, pos), None, rng)
        dens = np.exp(post.log_density(theta, np.full(mid.size, pos), mid))
        cdf = np.concatenate([[0.0], np.cumsum(dens)])
        cdf /= cdf[-1]
        # KS p-value below 1e-3 with probability 1e-3 under the exact density (quadrature error ~1e-7);
        # picking components with w_d / M_d (the donors at the bounds doubled) gave p = 7e-85
        assert stats.kstest(draws, lambda t: np.interp(t, grid, cdf)).pvalue > 1e-3, pos
    # the component picked: the truncated normal replaced by its mean (the donor's value)
    monkeypatch.setattr(tree_mod, "truncated_normal", lambda mean, sd, lo, hi, rng: mean)
    for pos in (0, 1):
        comps = np.flatnonzero(post.comp_leaf == pos)
        h = post.bw[pos]
        mass = np.array([(np.exp(theta["logw"][d] - post.log_mass[d]) * stats.norm.pdf(mid, post.value[d], h)
                          ).sum() * (grid[1] - grid[0]) for d in comps])
        picked = post.draw_latent(theta, np.full(n, pos), None, rng)
        counts = np.array([(picked == post.value[d]).sum() for d in comps])
        assert counts.sum() == n
        # Pearson chi-square of multinomial counts: p < 1e-3 with probability 1e-3 under the model
        assert stats.chisquare(counts, n * mass / mass.sum()).pvalue > 1e-3, (counts, n * mass)
        np.testing.assert_allclose(mass, np.exp(theta["logw"][comps]), rtol=1e-6)


def test_continuous_draw_with_a_normal_mask_is_the_exact_product():
    """Draws of p(y | leaf, theta) N(w_bar; y, v) against its CDF by quadrature (Kolmogorov-Smirnov)."""
    rng = np.random.default_rng(2)
    leaf = np.repeat([3, 7], [8, 7])
    y = np.array([1.0, 1, 2, 4, 4, 4, 6, 8, 10, 11, 11, 12, 15, 15, 20])
    lo, hi = 0.0, 21.0
    post = TreePosterior(_Stump(), leaf, y, 0, lo, hi)
    theta = post.draw(1, rng)[0]
    n = 20000
    for pos, w_bar, v in ((0, 7.0, 4.0), (1, 20.5, 1.0), (1, 13.0, 1e6)):
        draws = post.draw_latent(theta, np.full(n, pos), ("normal", np.full(n, w_bar), v), rng)
        assert draws.min() >= lo and draws.max() <= hi
        grid = np.linspace(lo, hi, 20001)
        mid = 0.5 * (grid[1:] + grid[:-1])
        dens = np.exp(post.log_density(theta, np.full(mid.size, pos), mid) - 0.5 * (w_bar - mid) ** 2 / v)
        cdf = np.concatenate([[0.0], np.cumsum(dens)])
        cdf /= cdf[-1]
        # KS p-value below 1e-3 with probability 1e-3 under the exact product (quadrature error ~1e-6)
        assert stats.kstest(draws, lambda t: np.interp(t, grid, cdf)).pvalue > 1e-3, (pos, w_bar, v)


def test_masked_draw_and_evidence_with_donors_at_the_latent_bound(monkeypatch):
    """Donors at the bound l = 1 and an informative mask there: the truncation factors
    M(mu_d, s) / M(y_d, h) of the component weights matter (dropped, the draws fail the same KS test),
    and ``log_evidence`` is the log of the quadrature integral of p(y | leaf, theta) phi_v(w_bar - y)."""
    import synthmi.models.tree as tree_mod

    post, theta, rng, grid, mid = _bounded_draw(6)
    lo, hi = post.lo, post.hi
    n = 20000
    cases = ((0, 2.0, 1.0), (0, 1.2, 0.3), (1, 19.8, 0.5))

    def ks(model, pos, w_bar, v):
        draws = model.draw_latent(theta, np.full(n, pos), ("normal", np.full(n, w_bar), v), rng)
        dens = np.exp(post.log_density(theta, np.full(mid.size, pos), mid) - 0.5 * (w_bar - mid) ** 2 / v)
        cdf = np.concatenate([[0.0], np.cumsum(dens)])
        return stats.kstest(draws, lambda t: np.interp(t, grid, cdf / cdf[-1])).pvalue

    for pos, w_bar, v in cases:
        # p < 1e-3 with probability 1e-3 under the exact product
        assert ks(post, pos, w_bar, v) > 1e-3, (pos, w_bar, v)
        dens = np.exp(post.log_density(theta, np.full(mid.size, pos), mid)) * stats.norm.pdf(w_bar, mid, np.sqrt(v))
        got = post.log_evidence(theta, np.array([pos]), ("normal", np.array([w_bar]), v))[0]
        assert got == pytest.approx(np.log(dens.sum() * (grid[1] - grid[0])), abs=1e-6)
    # the weights without the truncation factors M(mu_d, s) / M(y_d, h) fail the first case (measured
    # p = 3e-15): the donors at the bound l keep half their kernel's mass, the mask pulls them inside
    monkeypatch.setattr(tree_mod, "log_truncation_mass", lambda mu, sd, lo, hi: np.zeros(np.shape(mu)))
    assert ks(_bounded_leaves(), *cases[0]) < 1e-6


# ---------------------------------------------------------------------------
def _mixed_frame(n=200, seed=7):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n)
    age = 45 + 8 * z + rng.gamma(2.0, 4.0, size=n)
    sex = (rng.random(n) < expit(0.08 * (age - 45))).astype(int)
    u = np.column_stack([np.zeros(n), 0.05 * (age - 45) + 0.8 * sex, -0.05 * (age - 45)]) + rng.gumbel(size=(n, 3))
    return pd.DataFrame({"z": z, "age": age, "sex": pd.Categorical.from_codes(sex, ["f", "m"]),
                         "edu": pd.Categorical.from_codes(u.argmax(1), ["a", "b", "c"])})


@pytest.mark.slow
@pytest.mark.parametrize("proper", [True, False])
def test_gibbs_with_tree_conditionals_matches_the_exact_mixed_joint_and_sequential_does_not(proper):
    """age: a masked continuous tree; sex: a masked probit of age (a tree column as a predictor of a
    parametric model); edu: a masked categorical tree of age and sex (a parametric column as a
    predictor of a tree). The exact joint integrates age on a 1,600-point midpoint rule:

        p(y, s, e | z, W) ∝ p_tree(y | z) N(w_bar; y, v) p(s | y) p(W_s | s) p_tree(e | y, s) p(W_e | e).

    With plug-in leaves (``proper=False``: trees only, so sex is a tree of age too) the same check.
    """
    df = _mixed_frame()
    syn = DAMISynthesizer(masks={"age": {"K": 1, "sigma_e": 6.0}, "sex": {"alpha": 2.0}, "edu": {"p": 0.6}},
                          models={"age": KERNEL, "sex": "probit" if proper else "tree", "edu": "tree"}, grid=None,
                          w_tilde="reuse", random_state=1, proper=proper,
                          progressbar=False).fit(df, quasi_identifiers=["age", "sex", "edu"], keep=["z"])
    conds = syn.conditionals_
    assert [c.family for c in conds] == ["tree", "probit" if proper else "tree", "tree"]
    assert conds[2].predictors == ["age", "sex"]
    theta = syn._posterior_draws(1, np.random.default_rng(2))
    preps = [Prepared(cond, theta[j][0]) for j, cond in enumerate(conds)]
    ev = syn._evidence(np.random.default_rng(3))
    pa = preps[0]
    n = len(df)
    leaf_a = pa.eta({})
    p_se, mid, w = exact_mixed_joint(preps, ev, n, lambda y: pa.loglik(leaf_a, None, np.full(n, y)))
    wy = w.sum(axis=(2, 3))
    m1, m2 = (wy * mid).sum(1), (wy * mid**2).sum(1)
    reps = 150
    expected = p_se.reshape(n, 6).sum(axis=0) * reps
    var = m2 - m1**2

    def pooled(draw, rng):
        counts, y = np.zeros(6), np.zeros(n)
        for _ in range(reps):
            d = draw(rng)
            counts += np.bincount(d["sex"] * 3 + d["edu"], minlength=6)
            y += d["age"] / reps
        # each record's mean age over the replicates against its exact mean: sum of squared z-scores,
        # chi-square with n degrees of freedom under the exact joint (means of 150 independent draws)
        return counts, float(((y - m1) ** 2 / (var / reps)).sum())

    # 15 sweeps: the per-record statistic still sees the sequential start after 2 sweeps (T = 235 on
    # 200 df, p = 0.045; after 15 sweeps T = 205, p = 0.38)
    counts, t_age = pooled(lambda r: gibbs_draw(conds, preps, ev, r, n_sweeps=15)[0], np.random.default_rng(11))
    # conservative pooled chi-square (tests/models/test_joint_mixed_exact.py): p < 1e-3 with probability
    # < 1e-3 under the exact joint; so for the per-record age statistic
    assert stats.chisquare(counts, expected).pvalue > 1e-3
    assert stats.chi2.sf(t_age, n) > 1e-3, t_age
    # the sequential draw ignores what the later masks say about age: T = 717 on 200 df (p ~ 1e-59)
    _, t_age = pooled(lambda r: sequential_draw(conds, preps, ev, r)[0], np.random.default_rng(11))
    assert stats.chi2.sf(t_age, n) < 1e-6, t_age


def _categorical_setup(proper=True):
    """b: an ordered logit (proper) or, with plug-in leaves (proper=False, trees only), a tree."""
    syn = DAMISynthesizer(masks={"a": {"alpha": 2.0}, "b": {"p": 0.7}, "c": {"alpha": 1.5}},
                          models={"a": "tree", "c": "tree", **({} if proper else {"b": "tree"})}, w_tilde="reuse",
                          random_state=1, proper=proper,
                          progressbar=False).fit(dependent_frame(), quasi_identifiers=["a", "b", "c"], keep=["z"])
    theta = syn._posterior_draws(1, np.random.default_rng(2))
    if not proper:
        # the plug-in: each leaf's donor frequencies (tests/models/test_tree_plug_in.py)
        for cond, sets in zip(syn.conditionals_, theta):
            np.testing.assert_array_equal(sets[0]["logp"], cond.fast.plug_in(1)[0]["logp"])
    preps = [Prepared(cond, theta[j][0]) for j, cond in enumerate(syn.conditionals_)]
    return syn, preps, syn._evidence(np.random.default_rng(3))


@pytest.mark.parametrize("proper", [True, False])
def test_enumeration_with_tree_conditionals_by_hand(proper):
    syn, preps, ev = _categorical_setup(proper)
    conds = syn.conditionals_
    assert [c.family for c in conds] == ["tree", "ologit" if proper else "tree", "tree"]
    assert can_enumerate(conds, 10_000)
    combos, logp = enumerate_probs(conds, preps, ev, 300)
    i = 17
    pa, pb, pc = preps
    hand = np.empty(len(combos))
    for t, (a, b, c) in enumerate(combos):
        vals = {"a": np.full(300, a), "b": np.full(300, b), "c": np.full(300, c)}
        leaf_a, leaf_c = pa.eta(vals)[i], pc.eta(vals)[i]
        hand[t] = (pa.theta["logp"][leaf_a, a] + ev["a"][1][i, a]
                   + pb.log_probs(pb.eta(vals))[i, b] + ev["b"][1][i, b]
                   + pc.theta["logp"][leaf_c, c] + ev["c"][1][i, c])
    hand = np.exp(hand - hand.max())
    np.testing.assert_allclose(np.exp(logp[i]), hand / hand.sum(), rtol=1e-10)


@pytest.mark.slow
@pytest.mark.parametrize("proper", [True, False])
def test_gibbs_with_categorical_trees_reaches_the_enumerated_joint(proper):
    syn, preps, ev = _categorical_setup(proper)
    conds = syn.conditionals_
    combos, logp = enumerate_probs(conds, preps, ev, 300)
    probs = np.exp(logp)
    reps = 150
    rng = np.random.default_rng(5)

    def pvalue(draw):
        counts = np.zeros(len(combos))
        for _ in range(reps):
            d = draw(rng)
            counts += np.bincount(d["a"] * 6 + d["b"] * 2 + d["c"], minlength=len(combos))
        return stats.chisquare(counts, reps * probs.sum(axis=0)).pvalue

    # conservative pooled chi-square: p < 1e-3 with probability < 1e-3 under the exact joint
    assert pvalue(lambda r: gibbs_draw(conds, preps, ev, r, n_sweeps=3)[0]) > 1e-3
    assert pvalue(lambda r: sequential_draw(conds, preps, ev, r)[0]) < 1e-6


# ---------------------------------------------------------------------------
def test_tree_is_selectable_masked_and_a_predictor_where_cart_is_refused():
    df = _mixed_frame(n=150)
    assert parse_models({"age": "tree"}, ["age"], "X")["age"].method == "tree"
    kw = dict(masks={"age": {"K": 1, "sigma_e": 6.0}, "sex": {"alpha": 2.0}}, random_state=3, progressbar=False)
    with pytest.raises(ColumnError, match="no likelihood"):
        DAMISynthesizer(models={"age": "cart"}, **kw).fit(df, quasi_identifiers=["age", "sex", "edu"], keep=["z"])
    fits = [DAMISynthesizer(models={"age": "tree", "edu": "tree"}, **kw).fit(
        df, quasi_identifiers=["age", "sex", "edu"], keep=["z"]) for _ in range(2)]
    a, b = (f.sample(2, random_state=5) for f in fits)
    assert fits[0].predictive_info_["scheme"] == "gibbs"
    # same seed -> the same copies
    for x, y in zip(a, b):
        pd.testing.assert_frame_equal(x, y)
    syn = a[0]
    assert syn["age"].between(df["age"].min(), df["age"].max()).all()
    # Rubin MI takes the method too
    r = RubinSynthesizer(models={"age": "tree"}, grid=None, progressbar=False).fit(
        df, quasi_identifiers=["age", "sex"], keep=["z"]).sample(1, random_state=0)[0]
    assert r["age"].between(df["age"].min(), df["age"].max()).all()


def test_tree_refuses_a_two_part_column():
    df = _mixed_frame(n=150)
    df.loc[df.index[:30], "age"] = 0.0
    with pytest.raises(ColumnError, match="'tree'"):
        RubinSynthesizer(models={"age": "tree"}, progressbar=False).fit(
            df, quasi_identifiers=["age", "sex"], keep=["z"], semicont={"age": [0]})


# ---------------------------------------------------------------------------
def _bimodal_frame(n=1000, seed=0):
    """A bimodal, bounded, whole-number age (no normal model keeps its margin), an ordinal edu of age and
    sex, and a kept outcome y quadratic in age."""
    rng = np.random.default_rng(seed)
    sex = (rng.random(n) < 0.5).astype(int)
    age = np.clip(np.round(np.where(rng.random(n) < 0.4, rng.normal(25, 3, n), rng.normal(55, 8, n))), 17, 90)
    edu = np.digitize(0.04 * (age - 40) + 0.7 * sex + rng.logistic(size=n), [-1.0, 0.5, 2.0])
    y = 10 + 0.3 * age - 0.004 * (age - 40) ** 2 + 2 * sex + 1.5 * edu + rng.normal(0, 3, n)
    return pd.DataFrame({"y": y, "age": age, "sex": pd.Categorical.from_codes(sex, ["f", "m"]),
                         "edu": pd.Categorical.from_codes(edu, ["e0", "e1", "e2", "e3"], ordered=True)})


@pytest.mark.slow
def test_uninformative_masks_reduce_tree_dami_to_cart_quality():
    """DA-MI with tree conditionals and masks that carry (almost) no information (sigma_e = 1e6,
    alpha = 1e-6: the joint Gibbs path still runs) against CART, 6 replicate seeds of M = 5 copies.

    Measured (means (sd) over the seeds): regression CI overlap tree 0.852 (0.039) with the default
    (age's 60 values get discrete leaves, the donors' values, issue 29), 0.825 (0.029) with age's kernel
    (smoothing 1, the default before; seeds 6-13: 0.870 (0.036); before the exact moves of a later
    categorical tree, which change the random streams, 0.860 and 0.868), CART 0.868 (0.031),
    CART proper 0.867 (0.069), normal 0.391; mean one-way S_pMSE tree 1.29 (0.39) (kernel 1.25 (0.23);
    1.44 (0.46) before the exact moves), CART 0.78 (0.34),
    CART proper 1.83 (0.46), normal 24.7. The tree's posterior draws (Bayesian
    bootstrap of each leaf) put the parameter uncertainty in the copies, as CART's ``proper`` does, so
    its margins vary across copies as a proper synthesis's do: its S_pMSE is held to CART proper's.
    Tolerance: 3 standard errors of the difference of the two seed means (Welch, from the
    replicates' own spread; seed-to-seed sd of the overlap 0.03-0.04): a one-sided t-test at ~0.7%.
    The same check with DA-MI's default normal model of age fails by ~0.5 in overlap (the test
    can fail); so does the tree with a Dirichlet prior of mass 1 toward the margin (0.781).
    """
    from synthmi.evaluation import analyse, utility_tables

    df = _bimodal_frame()
    qi = ["age", "sex", "edu"]
    masks = {"age": {"K": 1, "sigma_e": 1e6}, "sex": {"alpha": 1e-6}, "edu": {"alpha": 1e-6}}

    def util(copies):
        ov = analyse("y ~ age + I(age**2) + sex + edu", family="gaussian", original=df, synthetic=copies,
                     rule="partial").mean_ci_overlap
        return ov, float(utility_tables(df, copies, variables=qi, ways=(1,)).to_frame()["s_pmse"].mean())

    makers = {
        "tree": lambda s: DAMISynthesizer(masks=masks, models={c: "tree" for c in qi}, random_state=s,
                                          progressbar=False),
        "normal": lambda s: DAMISynthesizer(masks=masks, random_state=s, progressbar=False),
        "cart": lambda s: CartSynthesizer(),
        "cart_proper": lambda s: CartSynthesizer(proper=True),
    }
    res = {k: np.array([util(mk(s).fit(df, quasi_identifiers=qi, keep=["y"]).sample(5, random_state=s))
                        for s in range(6)]) for k, mk in makers.items()}

    def worse_by(a, b, col):
        """(mean of b - mean of a) over its standard error, for a criterion where larger is better in a."""
        x, y = res[a][:, col], res[b][:, col]
        return (y.mean() - x.mean()) / np.sqrt(x.var(ddof=1) / x.size + y.var(ddof=1) / y.size)

    assert worse_by("tree", "cart", 0) < 3, res
    # S_pMSE: smaller is better, so "worse" is the tree's excess over CART proper's
    assert worse_by("cart_proper", "tree", 1) < 3, res
    assert worse_by("normal", "cart", 0) > 3 and worse_by("cart_proper", "normal", 1) > 3, res


def test_min_leaf_sets_the_partition_of_tree_and_cart_models():
    df = _mixed_frame(n=300)
    leaves = {}
    for k in (5, 40):
        syn = RubinSynthesizer(models={"age": {"method": "tree", "min_leaf": k}, "sex": {"method": "cart",
                                                                                      "min_leaf": k}},
                               progressbar=False).fit(df, quasi_identifiers=["age", "sex"], keep=["z"])
        age, sex = syn.conditionals_
        counts = np.bincount(np.searchsorted(age.fast.ids, age.fast.tree.apply(age.design.matrix({}))))
        assert counts.min() >= k and sex.fast[1][2].min() >= k
        assert age.to_dict()["min_leaf"] == k
        leaves[k] = counts.size
    assert leaves[40] < leaves[5]
    for bad, err, match in (({"method": "normal", "min_leaf": 5}, ColumnError, "only used by the methods 'tree'"),
                            ({"method": "tree", "min_leaf": 0}, ParameterError, "must be an integer >= 1"),
                            ({"method": "tree", "min_leaf": 2.5}, ParameterError, "must be an integer >= 1")):
        with pytest.raises(err, match=match):
            parse_models({"age": bad}, ["age"], "RubinSynthesizer")
    assert parse_models({"age": {"method": "tree", "min_leaf": 20.0}}, ["age"], "X")["age"].min_leaf == 20


def test_smoothing_scales_the_kernel_bandwidths():
    df = _mixed_frame(n=300)
    bws = {}
    for c in (None, 1, 0.25):
        spec = {"method": "tree"} if c is None else {"method": "tree", "smoothing": c}
        syn = RubinSynthesizer(models={"age": spec}, grid=None, progressbar=False).fit(
            df, quasi_identifiers=["age", "sex"], keep=["z"])
        post = syn.conditionals_[0].fast
        # the default: discrete leaves for a column of at most DISCRETE_MAX values (200 here), no kernel
        assert post.discrete == (c is None)
        if c is None:
            continue
        bws[c] = post.bw
        # the truncation masses follow the scaled bandwidths (a proper density on the bounds)
        theta = post.draw(1, np.random.default_rng(0))[0]
        grid = np.linspace(post.lo, post.hi, 20001)
        mid = 0.5 * (grid[1:] + grid[:-1])
        dens = np.exp(post.log_density(theta, np.zeros(mid.size, dtype=np.int64), mid))
        assert (dens * (grid[1] - grid[0])).sum() == pytest.approx(1.0, abs=1e-4)
    np.testing.assert_allclose(bws[0.25], 0.25 * bws[1], rtol=1e-12)
    with pytest.raises(ColumnError, match="only used by the method 'tree'"):
        parse_models({"age": {"method": "cart", "smoothing": 0.5}}, ["age"], "X")
    with pytest.raises(ParameterError, match="must be a number >= 0"):
        parse_models({"age": {"method": "tree", "smoothing": -0.5}}, ["age"], "X")
    assert parse_models({"age": {"method": "tree", "smoothing": 0}}, ["age"], "X")["age"].smoothing == 0.0


# ---------------------------------------------------------------------------
# a categorical tree as a LATER model: its leaves give probability 0 to the levels absent from them
# (Bayesian bootstrap, prior mass 0), so single-site Gibbs updates cannot move an earlier column into
# a leaf where the later column's current level is absent; the pair update (categorical earlier
# column) and the whole-record MH move (any earlier column) restore the exact joint
# (synthmi.models.predictive docstring)
def _per_record_chi2(freq, p, reps):
    """Sum over records of squared z-scores of a frequency over ``reps`` independent draws against its
    exact probability (records with 0.01 < p < 0.99): chi-square with that many df under the exact joint."""
    ok = (p > 0.01) & (p < 0.99)
    return float(((freq - p) ** 2 / (p * (1 - p) / reps))[ok].sum()), int(ok.sum())


@pytest.mark.slow
def test_gibbs_reaches_the_enumerated_joint_with_a_pure_later_categorical_tree():
    rng = np.random.default_rng(0)
    n = 300
    z = rng.normal(size=n)
    a = (rng.random(n) < expit(0.5 * z)).astype(int)
    c = a ^ (z > 1.5)  # c's tree on (z, a): pure leaves
    df = pd.DataFrame({"z": z, "a": pd.Categorical.from_codes(a, ["a0", "a1"]),
                       "c": pd.Categorical.from_codes(c.astype(int), ["c0", "c1"])})
    syn = DAMISynthesizer(masks={"a": {"alpha": 0.3}, "c": {"alpha": 2.0}}, models={"a": "tree", "c": "tree"},
                          w_tilde="reuse", random_state=1, progressbar=False).fit(
        df, quasi_identifiers=["a", "c"], keep=["z"])
    conds = syn.conditionals_
    theta = syn._posterior_draws(1, np.random.default_rng(2))
    preps = [Prepared(cd, theta[j][0]) for j, cd in enumerate(conds)]
    assert np.isneginf(preps[1].theta["logp"]).any()  # the zero leaf probabilities are there
    ev = syn._evidence(np.random.default_rng(3))
    combos, logp = enumerate_probs(conds, preps, ev, n)
    pa1 = np.exp(logp)[:, combos[:, 0] == 1].sum(axis=1)
    reps = 100
    for draw, ok in ((lambda r: gibbs_draw(conds, preps, ev, r, n_sweeps=20)[0], True),
                     (lambda r: sequential_draw(conds, preps, ev, r)[0], False)):
        r = np.random.default_rng(7)
        freq = sum(draw(r)["a"] for _ in range(reps)) / reps
        t, df_ = _per_record_chi2(freq, pa1, reps)
        # p < 1e-3 with probability 1e-3 under the exact joint. Measured: Gibbs T = 159 on 169 df
        # (single-site sweeps only, d32e2ea: T = 27,290, as the sequential draw's 27,839)
        if ok:
            assert stats.chi2.sf(t, df_) > 1e-3, (t, df_)
        else:
            assert stats.chi2.sf(t, df_) < 1e-6, (t, df_)


@pytest.mark.slow
def test_gibbs_matches_quadrature_with_a_continuous_column_before_a_pure_categorical_tree():
    """age: a masked continuous tree; c: a masked categorical tree of age with pure leaves (c = age > 40).
    Exact joint by a 2,000-point midpoint rule over age:
    p(y, c | z, W) ∝ p_tree(y | z) N(w_bar; y, v) pi_{leaf(y), c} p(W_c | c)."""
    rng = np.random.default_rng(0)
    n = 200
    z = rng.normal(size=n)
    age = 40 + 10 * z + rng.normal(0, 5, n)
    df = pd.DataFrame({"z": z, "age": age, "c": pd.Categorical.from_codes((age > 40).astype(int), ["y", "o"])})
    syn = DAMISynthesizer(masks={"age": {"K": 1, "sigma_e": 8.0}, "c": {"alpha": 1.0}},
                          models={"age": KERNEL, "c": "tree"}, grid=None, w_tilde="reuse", random_state=1,
                          progressbar=False).fit(df, quasi_identifiers=["age", "c"], keep=["z"])
    conds = syn.conditionals_
    theta = syn._posterior_draws(1, np.random.default_rng(2))
    preps = [Prepared(cd, theta[j][0]) for j, cd in enumerate(conds)]
    ev = syn._evidence(np.random.default_rng(3))
    pa, pc = preps
    leaf, w_bar, v = pa.eta({}), ev["age"][1], ev["age"][2]
    ys = np.linspace(pa.lo, pa.hi, 2001)
    mid = 0.5 * (ys[1:] + ys[:-1])
    lw = np.empty((n, mid.size, 2))
    for t, y in enumerate(mid):
        ya = np.full(n, y)
        base = pa.loglik(leaf, None, ya) - 0.5 * (w_bar - y) ** 2 / v
        lw[:, t, :] = base[:, None] + pc.log_probs(pc.eta({"age": ya})) + ev["c"][1]
    w = np.exp(lw - lw.max(axis=(1, 2), keepdims=True))
    w /= w.sum(axis=(1, 2), keepdims=True)
    pc1, wy = w[:, :, 1].sum(axis=1), w.sum(axis=2)
    m1 = wy @ mid
    var = wy @ mid**2 - m1**2
    reps = 100
    res = {}
    for name, draw in (("gibbs", lambda r: gibbs_draw(conds, preps, ev, r, n_sweeps=10)[0]),
                       ("sequential", lambda r: sequential_draw(conds, preps, ev, r)[0])):
        r = np.random.default_rng(9)
        fc, fy = np.zeros(n), np.zeros(n)
        for _ in range(reps):
            d = draw(r)
            fc += d["c"] / reps
            fy += d["age"] / reps
        tc, dfc = _per_record_chi2(fc, pc1, reps)
        ty = float(((fy - m1) ** 2 / (var / reps)).sum())  # chi-square on n df: means of 100 draws
        res[name] = (stats.chi2.sf(tc, dfc), stats.chi2.sf(ty, n))
    # p < 1e-3 with probability 1e-3 each under the exact joint. Measured: Gibbs T_c = 92 on 101 df,
    # T_age = 189 on 200 df; sequential 1,989 and 1,062; single-site sweeps (d32e2ea) never moved c
    assert min(res["gibbs"]) > 1e-3, res
    assert max(res["sequential"]) < 1e-6, res


def test_rubin_copies_of_a_tree_column_follow_its_posterior_predictive():
    """Rubin MI: each copy draws theta afresh, so record i's value across copies has the posterior
    predictive density E_theta p(y | leaf_i, theta), the kernel mixture with the weights' means k_d / n_leaf
    (the density is linear in the weights). One record per copy (record m mod n in copy m) makes the
    probability integral transforms independent; KS against the uniform, with a donor at the bound."""
    rng = np.random.default_rng(3)
    n = 40
    z = rng.normal(size=n)
    age = np.where(z < 0, 26.0 + 8.0 * rng.random(n), 42.0 + 6.0 * rng.random(n))
    # donors at the bounds (20, 53) in both leaves: their kernels keep half their mass on [20, 53]
    age[np.flatnonzero(z < 0)[:5]] = 20.0
    age[np.flatnonzero(z >= 0)[:5]] = 53.0
    df = pd.DataFrame({"z": z, "age": age, "s": pd.Categorical.from_codes((rng.random(n) < 0.5).astype(int),
                                                                          ["a", "b"])})
    # leaves of 20 or more donors: each leaf mixes the bound's donors with others
    syn = RubinSynthesizer(models={"age": {**KERNEL, "min_leaf": 10}}, grid=None, progressbar=False).fit(
        df, quasi_identifiers=["age", "s"], keep=["z"])
    cond = syn.conditionals_[0]
    post = cond.fast
    leaf = np.searchsorted(post.ids, post.tree.apply(cond.design.matrix({})))
    m = 600
    copies = syn.sample(m, random_state=11)
    mean_theta = {"logw": np.log(post.weight_count / np.bincount(post.comp_leaf, weights=post.weight_count)
                                 [post.comp_leaf])}
    grid = np.linspace(post.lo, post.hi, 20001)
    mid = 0.5 * (grid[1:] + grid[:-1])
    cdfs = {}
    for ell in np.unique(leaf):
        dens = np.exp(post.log_density(mean_theta, np.full(mid.size, ell), mid))
        cdf = np.concatenate([[0.0], np.cumsum(dens)])
        cdfs[ell] = cdf / cdf[-1]
    rows = np.arange(m) % n
    pit = np.array([np.interp(copies[k]["age"].iloc[i], grid, cdfs[leaf[i]]) for k, i in enumerate(rows)])
    # p < 1e-3 with probability 1e-3 under the model (600 independent PITs; quadrature error ~1e-6);
    # the components picked with w_d / M_d (d32e2ea) gave p = PVAL
    assert stats.kstest(pit, "uniform").pvalue > 1e-3
    # the share of values within 3 bandwidths of the bound donors against its predictive probability
    # (binomial, independent across copies): |z| > 4 with probability 6e-5 under the model; picking
    # components with w_d / M_d (d32e2ea) doubles the bound donors' weight: measured z = 5.0 (0.6 after)
    yv = np.array([copies[k]["age"].iloc[i] for k, i in enumerate(rows)])
    near = np.where(leaf[rows] == leaf[np.argmin(age)], yv <= 20.0 + 3 * post.bw[leaf[np.argmin(age)]],
                    yv >= 53.0 - 3 * post.bw[leaf[np.argmax(age)]])
    prob = np.array([np.interp(20.0 + 3 * post.bw[leaf[i]], grid, cdfs[leaf[i]]) if leaf[i] == leaf[np.argmin(age)]
                     else 1.0 - np.interp(53.0 - 3 * post.bw[leaf[i]], grid, cdfs[leaf[i]]) for i in rows])
    zval = (near.sum() - prob.sum()) / np.sqrt((prob * (1 - prob)).sum())
    assert abs(zval) < 4, zval


def test_heaps_keep_a_narrow_kernel():
    """A leaf of identical donors gets the narrowest positive leaf bandwidth, at most a sixth of the grid
    step, and so does a value held by more than HEAP_SHARE of its leaf's donors; the other components
    keep the leaf's bandwidth, and the density stays proper."""
    from synthmi.models.tree import HEAP_SHARE

    leaf = np.repeat([3, 7, 9], [6, 10, 8])
    # leaf 3: all 40 (identical); leaf 7: 40 held by 6 of 10 (> 1/2); leaf 9: spread, 40 held by 2 of 8
    y = np.array([40.0] * 6 + [40.0] * 6 + [35, 45, 50, 38] + [20, 30, 40, 40, 45, 50, 55, 60])
    post = TreePosterior(_Stump(), leaf, y, 0, 1.0, 99.0, grid_step=1.0)
    h7, h9 = min(nrd0(y[6:16]), nrd0(y)), min(nrd0(y[16:]), nrd0(y))  # capped at the column's
    assert h7 > 1 / 6 and h9 > 1 / 6 and 0.6 > HEAP_SHARE > 2 / 8
    np.testing.assert_allclose(post.bw, [1 / 6, h7, h9])
    expect = {(0, 40.0): 1 / 6, (1, 40.0): 1 / 6, (1, 35.0): h7, (2, 40.0): h9, (2, 20.0): h9}
    for (pos, val), h in expect.items():
        d = np.flatnonzero((post.comp_leaf == pos) & (post.value == val))[0]
        assert post.comp_bw[d] == pytest.approx(h, rel=1e-12), (pos, val)
    # without a grid: the narrowest positive leaf bandwidth
    assert TreePosterior(_Stump(), leaf, y, 0, 1.0, 99.0).bw[0] == pytest.approx(min(h7, h9), rel=1e-12)
    theta = post.draw(1, np.random.default_rng(0))[0]
    grid = np.linspace(1.0, 99.0, 98001)
    mid = 0.5 * (grid[1:] + grid[:-1])
    for pos in (0, 1, 2):
        dens = np.exp(post.log_density(theta, np.full(mid.size, pos), mid))
        assert (dens * (grid[1] - grid[0])).sum() == pytest.approx(1.0, abs=1e-4)
    # a draw from the identical leaf snaps back to 40 unless |noise| > 3 sd: P = 0.0027; 4,000 draws,
    # binomial sd 0.0008: below 0.01 is 9 sd away from 0.0027
    draws = post.draw_latent(theta, np.zeros(4000, dtype=np.int64), None, np.random.default_rng(1))
    assert np.mean(np.round(draws) != 40.0) < 0.01


@pytest.mark.slow
def test_gibbs_on_a_grid_matches_the_exact_snapped_joint():
    """A masked continuous tree on a whole-number grid: the mask sees the snapped value, so the exact
    predictive is the pmf over the grid points k, P(cell of k) N(w_bar; k, v); sigma_e = 0.5 (less than
    the grid step), where the sequential draw, whose mask sees the latent value, is clearly wrong."""
    rng = np.random.default_rng(0)
    n = 200
    z = rng.normal(size=n)
    age = np.clip(np.round(30 + 6 * z + rng.gamma(2, 3, n)), 18, 70)
    df = pd.DataFrame({"z": z, "age": age, "s": pd.Categorical.from_codes((rng.random(n) < .5).astype(int),
                                                                          ["a", "b"])})
    syn = DAMISynthesizer(masks={"age": {"K": 1, "sigma_e": 0.5}}, models={"age": KERNEL}, w_tilde="reuse",
                          random_state=1, progressbar=False).fit(df, quasi_identifiers=["age"], keep=["z"])
    conds = syn.conditionals_
    assert conds[0].support.grid == (0.0, 1.0)
    theta = syn._posterior_draws(1, np.random.default_rng(2))
    preps = [Prepared(cd, theta[j][0]) for j, cd in enumerate(conds)]
    ev = syn._evidence(np.random.default_rng(3))
    w_bar, v = ev["age"][1], ev["age"][2]
    p = preps[0]
    leaf = p.eta({})
    ks = np.arange(p.lo + 0.5, p.hi)  # the grid points; the latent bounds are half a step outside
    edges = np.linspace(p.lo, p.hi, ks.size * 200 + 1)
    mid = 0.5 * (edges[1:] + edges[:-1])
    pm = np.zeros((n, ks.size))
    for t, y in enumerate(mid):
        pm[:, t // 200] += np.exp(p.loglik(leaf, None, np.full(n, y)))
    pm *= np.exp(-0.5 * (w_bar[:, None] - ks[None]) ** 2 / v)
    pm /= pm.sum(axis=1, keepdims=True)
    m1 = pm @ ks
    var = pm @ ks**2 - m1**2
    reps = 150
    res = {}
    for name, draw in (("gibbs", lambda r: gibbs_draw(conds, preps, ev, r, n_sweeps=20)[0]),
                       ("sequential", lambda r: sequential_draw(conds, preps, ev, r)[0])):
        r = np.random.default_rng(9)
        mean = sum(draw(r)["age"] for _ in range(reps)) / reps
        # per-record means of 150 draws against the exact means: chi-square on n df under the exact pmf
        res[name] = stats.chi2.sf(float(((mean - m1) ** 2 / (var / reps)).sum()), n)
    # p < 1e-3 with probability 1e-3. Measured: Gibbs T = 187 (p = 0.73; 5 sweeps: T = 260, the
    # MH correction of the snap accepts ~74% and needs more sweeps), sequential T = 353 (p = 2e-10)
    assert res["gibbs"] > 1e-3, res
    assert res["sequential"] < 1e-6, res


def test_record_move_ratio_is_the_log_evidence_of_each_masked_column():
    """log_record_ratio = sum over masked columns of log Z_j(pred_j), Z_j = int p(x_j | pred_j) p(W_j | x_j):
    by quadrature for a masked normal and a masked continuous tree, by summation for a categorical one."""
    from synthmi.models.predictive import log_record_ratio

    df = _mixed_frame(n=120)
    for age_model in ("normal", KERNEL):
        syn = DAMISynthesizer(masks={"age": {"K": 1, "sigma_e": 4.0}, "edu": {"p": 0.6}},
                              models={"age": age_model, "edu": "tree"}, grid=None, w_tilde="reuse",
                              random_state=1, progressbar=False).fit(df, quasi_identifiers=["age", "sex", "edu"],
                                                                     keep=["z"])
        conds = syn.conditionals_
        theta = syn._posterior_draws(1, np.random.default_rng(2))
        preps = [Prepared(cd, theta[j][0]) for j, cd in enumerate(conds)]
        ev = syn._evidence(np.random.default_rng(3))
        values, latent, etas = sequential_draw(conds, preps, ev, np.random.default_rng(4))
        got = log_record_ratio(conds, preps, ev, values, latent, etas)
        pa, pe = preps[0], preps[2]
        w_bar, v = ev["age"][1], ev["age"][2]
        ys = np.linspace(pa.lo, pa.hi, 20001)
        mid = 0.5 * (ys[1:] + ys[:-1])
        za = np.array([(np.exp(pa.loglik(np.full(mid.size, etas["age"][i]) if etas["age"].ndim == 1 else
                                         np.repeat(etas["age"][[i]], mid.size, axis=0), None, mid))
                        * stats.norm.pdf(w_bar[i], mid, np.sqrt(v))).sum() * (ys[1] - ys[0]) for i in range(5)])
        ze = np.log(np.exp(pe.log_probs(etas["edu"]) + ev["edu"][1]).sum(axis=1))
        np.testing.assert_allclose(got[:5], np.log(za) + ze[:5], atol=1e-5)


def test_tree_warns_when_its_kernels_spread_a_point_mass_nothing_snaps_back():
    """fair's affairs (67.8% zeros, no grid): the tree's copies held no exact zero (one-way S_pMSE 851)
    and nothing said so. A point mass with no grid is now named (the column and its share, not its
    value); a heaped column on a grid (snapped back) and a few-valued one (discrete leaves) are not."""
    import warnings

    rng = np.random.default_rng(5)
    n = 400
    x = rng.normal(size=n)
    zero = rng.random(n) < 0.6
    frame = pd.DataFrame({
        "x": x,
        "spend": np.where(zero, 0.0, np.exp(rng.normal(1.0 + 0.3 * x, 0.5))),  # no grid: continuous values
        "hours": np.where(zero, 40.0, rng.integers(10, 80, n)).astype(float),  # a heap on a 1-unit grid
        "kids": rng.integers(0, 4, n).astype(float),  # few-valued: discrete leaves
    })
    frame.loc[0, "kids"] = 9.0  # not constant in any leaf, still few-valued

    def point_mass_warnings(col, spec=KERNEL, data=frame):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            RubinSynthesizer(models={col: spec}, progressbar=False).fit(
                data[["x", col]], quasi_identifiers=[col], keep=["x"])
        return [str(m.message) for m in w if "point mass" in str(m.message)]

    # only a kernel column reaches the check: spend (161 values) is given the kernel explicitly
    got = point_mass_warnings("spend")
    assert len(got) == 1 and "Column 'spend'" in got[0] and f"{zero.mean():.0%}" in got[0] and "'cart'" in got[0]
    assert "'smoothing': 0" in got[0]  # what keeps it, in the user's terms
    assert "0.0" not in got[0]  # the value itself is not disclosed
    assert point_mass_warnings("hours") == []
    assert point_mass_warnings("kids", "tree") == []
    # the default gives spend discrete leaves (at most DISCRETE_MAX values): its zeros are kept, no warning
    assert point_mass_warnings("spend", "tree") == []
    # above DISCRETE_MAX values the default is the kernel, and smoothing 0 is refused there: 'cart' is the advice
    from synthmi.models.tree import DISCRETE_MAX

    m = 2 * DISCRETE_MAX
    xb = rng.normal(size=m)
    big = pd.DataFrame({"x": xb, "spend": np.where(np.arange(m) < 0.4 * m, 0.0, np.exp(rng.normal(1 + 0.3 * xb, 0.5)))})
    assert big["spend"].nunique() > DISCRETE_MAX
    got = point_mass_warnings("spend", "tree", big)
    assert len(got) == 1 and "40%" in got[0] and "'cart'" in got[0] and "smoothing': 0" not in got[0], got


@pytest.mark.parametrize("proper", [True, False])
def test_smoothing_zero_draws_the_donors_values_and_keeps_a_point_mass(proper):
    """``smoothing=0`` gives a many-valued column discrete leaves (the donors' values, synthpop's cart
    without smoothing): every copy value is one the column holds and the zeros survive, where the
    kernel (``smoothing`` > 0; the default before issue 29's Adult check) left none (statsmodels' randhie:
    disea, 30 values, 6% zeros; the new-user review). The default (no ``smoothing``) is the same discrete
    leaves for a column of at most DISCRETE_MAX values. Under DA-MI with a normal mask the draw is exact over
    the leaf's values (test_tree_discrete*)."""
    import warnings

    rng = np.random.default_rng(11)
    n = 600
    x = rng.normal(size=n)
    zero = rng.random(n) < 0.3
    frame = pd.DataFrame({"x": x, "spend": np.where(zero, 0.0, np.exp(rng.normal(2 + 0.4 * x, 0.6)))})  # no grid
    assert 20 < frame["spend"].nunique() <= 500  # not few-valued; discrete leaves by default (DISCRETE_MAX)

    def copies(models, masks=None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            syn = DAMISynthesizer(masks=masks, models=models, proper=proper, random_state=3, progressbar=False)
            return syn.fit(frame, quasi_identifiers=["spend"], keep=["x"]).sample(3, random_state=4).copies

    held = set(frame["spend"])
    kernel = np.concatenate([c["spend"].to_numpy() for c in copies({"spend": KERNEL})])
    assert np.mean(kernel == 0.0) < 0.02 and np.mean(np.isin(kernel, list(held))) < 0.5
    mask = {"spend": {"K": 1, "sigma_e": 5.0}}
    # smoothing 0 and the default (discrete leaves up to DISCRETE_MAX values) alike
    for spec, masks in ((sp, mk) for sp in ({"method": "tree", "smoothing": 0}, "tree") for mk in (None, mask)):
        out = np.concatenate([c["spend"].to_numpy() for c in copies({"spend": spec}, masks)])
        assert np.isin(out, list(held)).all()
        # the share of zeros within 4 binomial sds of the data's (1,800 draws; a leaf keeps its donors' zeros)
        p0 = zero.mean()
        assert abs(np.mean(out == 0.0) - p0) < 4 * np.sqrt(p0 * (1 - p0) / out.size) + 0.02


def test_smoothing_zero_is_refused_for_a_column_with_too_many_values():
    from synthmi.models.tree import DISCRETE_MAX

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=DISCRETE_MAX + 100), "y": rng.normal(size=DISCRETE_MAX + 100)})
    with pytest.raises(ValueError, match=rf"Column 'y' has {DISCRETE_MAX + 100} distinct values and the tree's "
                                         rf"smoothing 0 .* at most {DISCRETE_MAX} values"):
        RubinSynthesizer(models={"y": {"method": "tree", "smoothing": 0}}, progressbar=False).fit(
            frame, quasi_identifiers=["y"], keep=["x"])
    with pytest.raises(ValueError, match=r"'smoothing' of column 'y' .* must be a number >= 0"):
        RubinSynthesizer(models={"y": {"method": "tree", "smoothing": -1}}).fit(
            frame, quasi_identifiers=["y"], keep=["x"])
