"""The compiled softplus sum behind the log posteriors of :mod:`synthmi.models.glm` (issue 29 item 6).

The samplers' target must not change: the compiled sums are checked element by element against 80-bit long
double, and the log posteriors against the NumPy forms they replaced (cell by cell), to the rounding of a
sum of thousands of terms.
"""
from __future__ import annotations

import numpy as np
import pytest

import synthmi.models.glm as glm
from synthmi.models.glm import CategoricalModel, _softplus, group_rows, independence_mh, softplus_sum


def _numpy_softplus(x: np.ndarray) -> np.ndarray:
    """The NumPy form the compiled softplus replaced."""
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0.0)


def _softplus_long(x: np.ndarray) -> np.ndarray:
    """softplus in 80-bit long double (x86; 64-bit mantissa elsewhere only makes the check looser), rounded."""
    xl = x.astype(np.longdouble)
    return (np.log1p(np.exp(-np.abs(xl))) + np.maximum(xl, 0)).astype(float)


def test_softplus_sum_is_accurate_to_a_few_ulp_element_by_element():
    """One term per row (W = 1, one block): at most 4 ulp from long double over [-700, 700] and at the
    branch points (0, +-37 where exp(-|a|) leaves double precision of 1, just above -707 the clamp); NumPy's form is
    within 1 ulp, so the compiled one differs from it by no more than rounding does."""
    rng = np.random.default_rng(0)
    a = np.concatenate([np.linspace(-700, 700, 140_001), rng.normal(0, 5, 50_000), rng.normal(0, 0.01, 10_000),
                        [0.0, 5e-324, -5e-324, 1e-300, -1e-300, 37.0, -37.0, 706.99, -706.99, 707.0]])
    out = softplus_sum(-a[:, None], np.ones(1), np.zeros((a.size, 1)), np.array([0, 1]))
    ref = _softplus_long(a)
    ulp = np.abs(out - ref) / np.spacing(np.maximum(np.abs(ref), np.finfo(float).tiny))
    assert ulp.max() <= 4.0
    # at or below -707 the logarithm's term is 0: softplus(a) < 1e-307 there, an absolute error below that
    far = softplus_sum(-np.array([[-707.0], [-708.0], [-1e5]]), np.ones(1), np.zeros((3, 1)), np.array([0, 1]))
    np.testing.assert_array_equal(far, [0.0, 0.0, 0.0])


def test_softplus_sum_blocks_weights_and_non_finite_arguments():
    """Weighted sum over blocks of columns with one offset per (row, block), against NumPy's softplus."""
    rng = np.random.default_rng(1)
    S, T = 7, 3001
    E = rng.normal(0, 6, (S, T))
    W = rng.integers(1, 5, T).astype(float)
    start = np.array([0, 1000, 1001, 2500, T])  # blocks of 1000, 1, 1499 and 501 columns (not multiples of 512)
    cut = rng.normal(0, 2, (S, 4))
    cols = np.repeat(np.arange(4), np.diff(start))
    ref = (_numpy_softplus(cut[:, cols] - E) * W).sum(axis=1)
    # the sum of 3,001 terms of size ~5: its own rounding is ~1e-12 relative at most
    np.testing.assert_allclose(softplus_sum(E, W, cut, start), ref, rtol=1e-13)
    # non-finite arguments as NumPy's form: NaN stays NaN, softplus(+inf) = inf, softplus(-inf) = 0
    bad = np.repeat(E[:1], 3, axis=0)
    bad[0, 17], bad[1, 2000], bad[2, 2999] = np.nan, -np.inf, np.inf  # arguments cut - E: nan, +inf, -inf
    out = softplus_sum(bad, W, cut[:1].repeat(3, axis=0), start)
    assert np.isnan(out[0]) and out[1] == np.inf
    keep = np.arange(T) != 2999
    a2 = cut[0, cols] - bad[2]
    assert out[2] == pytest.approx((_numpy_softplus(a2) * W)[keep].sum(), rel=1e-13)


def test_elementwise_softplus_matches_numpy_form():
    """The compiled element-wise softplus (Gibbs sweeps, log_probs) against NumPy's
    log1p(exp(-|x|)) + max(x, 0): within 4 ulp (each is within 3 and 1 of the exact value), the same
    non-finite values, any shape and memory order, a 0-d input giving a scalar."""
    rng = np.random.default_rng(2)
    x = np.asfortranarray(rng.normal(0, 8, (300, 7)))
    ref = _numpy_softplus(x)
    out = _softplus(x)
    assert out.shape == x.shape
    assert (np.abs(out - ref) <= 4 * np.spacing(ref)).all()
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -800.0, 800.0])
    out = _softplus(special)
    np.testing.assert_array_equal(out[[0, 1, 2, 4, 5]], [np.nan, np.inf, 0.0, 0.0, 800.0])
    assert abs(out[3] - np.log(2.0)) <= 4 * np.spacing(np.log(2.0))
    assert np.ndim(_softplus(np.float64(0.0))) == 0 and _softplus(np.zeros((0, 3))).shape == (0, 3)


def _design(rng: np.random.Generator, n: int, C: int) -> tuple[np.ndarray, np.ndarray]:
    X = np.column_stack([rng.integers(0, 3, n), rng.integers(0, 10, n), rng.normal(size=n).round(1),
                         rng.integers(0, 2, n)]).astype(float)
    return group_rows(X, rng.integers(0, C, n), C)


def _numpy_log_post(m: CategoricalModel, theta: np.ndarray, monkeypatch) -> np.ndarray:
    """The log posterior as computed before the compiled sum: softplus in NumPy, ordered models cell by cell."""
    monkeypatch.setattr(glm, "_softplus", _numpy_softplus)  # what _log_sigmoid (the cell-wise form) calls
    pr = m.unpack(theta)
    with np.errstate(all="ignore"):
        if m.family == "logit":
            eta = theta @ m.X.T
            ll = eta @ m.Y[:, 1] - _numpy_softplus(eta) @ m.Y.sum(axis=1)
        else:
            ll = m._ordered_loglik(pr)
        lp = ll - 0.5 * (pr["beta"].reshape(theta.shape[0], -1) ** 2).sum(axis=1) / m.prior_sd**2
        if "cutpoints" in pr:
            lp = lp - 0.5 * (pr["cutpoints"] ** 2).sum(axis=1) / m.prior_sd**2 + theta[:, m.p + 1:].sum(axis=1)
    monkeypatch.undo()
    return lp


@pytest.mark.parametrize("family, C", [("logit", 2), ("ologit", 2), ("ologit", 3), ("ologit", 5)])
def test_log_post_equals_the_numpy_form(family, C, monkeypatch):
    """Binary and ordered logit log posteriors (2,000-odd distinct rows, 5,000 records) at 300 parameter
    sets around the mode and far from it: equal to the NumPy form to 1e-13 relative (each is a sum of
    ~5,000 rounded terms of size <= ~10 against a total of ~5,000, so both carry ~1e-13 of rounding), and
    -inf at non-finite parameters."""
    rng = np.random.default_rng(C)
    Xg, Y = _design(rng, 5000, C)
    m = CategoricalModel(family, Xg, Y)
    mode, _ = m.mode()
    th = mode + rng.normal(size=(300, mode.size)) * np.repeat([0.05, 1.0, 5.0], 100)[:, None]
    np.testing.assert_allclose(m.log_post(th), _numpy_log_post(m, th, monkeypatch), rtol=1e-13)
    bad = np.repeat(mode[None], 2, axis=0)
    bad[0, 0], bad[1, 1] = np.nan, np.inf
    np.testing.assert_array_equal(m.log_post(bad), [-np.inf, -np.inf])


@pytest.mark.parametrize("family, C", [("logit", 2), ("ologit", 4)])
def test_log_post_equals_the_numpy_form_on_a_sparse_design(family, C, monkeypatch):
    """A dummy-coded 40-level predictor (density ~0.07, > 50,000 entries): the model keeps a sparse copy
    of its design and the log posterior takes the sparse products; same check as above."""
    rng = np.random.default_rng(7)
    n = 4000
    lev = rng.integers(0, 40, n)
    X = np.column_stack([rng.normal(size=n).round(2), np.eye(40)[lev]])
    Xg, Y = group_rows(X, rng.integers(0, C, n), C)
    m = CategoricalModel(family, Xg, Y)
    assert m._Xs is not None
    mode, _ = m.mode()
    th = mode + rng.normal(size=(100, mode.size)) * 0.3
    np.testing.assert_allclose(m.log_post(th), _numpy_log_post(m, th, monkeypatch), rtol=1e-13)


def test_ordered_logit_pairs_cover_every_cell_once():
    """Hand case: 3 categories, two groups. Group 0 has records in categories 0 and 1 (pairs (0, kappa_0)
    weighted 1 + 2 = 3 and (0, kappa_1) weighted 2), group 1 only in category 2 (pair (1, kappa_1),
    weight 4); the linear part is kappa_0 * 1 + kappa_1 * 2 - beta' (1 * x_0 + 2 * x_0)."""
    X = np.array([[0.5], [2.0]])
    Y = np.array([[1.0, 2.0, 0.0], [0.0, 0.0, 4.0]])
    m = CategoricalModel("ologit", X, Y)
    g, w, start = m._pairs
    np.testing.assert_array_equal(g, [0, 0, 1])
    np.testing.assert_array_equal(w, [3.0, 2.0, 4.0])
    np.testing.assert_array_equal(start, [0, 1, 3])
    np.testing.assert_allclose(m._lin[0], [-3 * 0.5])
    np.testing.assert_array_equal(m._lin[1], [1.0, 2.0])
    th = m.pack({"beta": np.array([0.7]), "cutpoints": np.array([-0.3, 1.1])})[None]
    # by hand: log F(k0 - eta0) + 2 log(F(k1 - eta0) - F(k0 - eta0)) + 4 log(1 - F(k1 - eta1))
    F = lambda a: 1 / (1 + np.exp(-a))  # noqa: E731
    ll = np.log(F(-0.3 - 0.35)) + 2 * np.log(F(1.1 - 0.35) - F(-0.3 - 0.35)) + 4 * np.log(1 - F(1.1 - 1.4))
    assert m._ordered_logit_loglik(m.unpack(th))[0] == pytest.approx(ll, rel=1e-14)


def test_same_seed_same_draws():
    """Independence MH on the compiled log posterior: same seed, identical draws."""
    rng = np.random.default_rng(3)
    Xg, Y = _design(rng, 3000, 3)
    m = CategoricalModel("ologit", Xg, Y)
    a = independence_mh(m, 300, np.random.default_rng(9), chains=2, warn=False)
    b = independence_mh(m, 300, np.random.default_rng(9), chains=2, warn=False)
    np.testing.assert_array_equal(a.draws, b.draws)
