"""The joint predictive (Jiang et al. 2022, eq. 3) with a masked continuous QI, a masked binary probit
and a masked 3-level multinomial logit, against the exact joint computed by quadrature.

For a fixed posterior draw, record i's target is

    p(y, s, e | z, W) ∝ N(y; eta_y, sigma) 1[lo <= y <= hi] N(w_bar; y, v)
                        p(s | y) p(W_s | s) p(e | y, s) p(W_e | e)

(age's truncation mass depends on eta_y only, so it is constant per record). The test integrates y
on a 1,600-point midpoint rule and checks the Gibbs sweeps against it on every update path the
sweeps have: the continuous independence MH step whose ratio is the later models' likelihoods
(probit and multinomial logit), the binary update with a later multinomial model, and the
multinomial update. The sequential draw, which ignores the later masks' evidence, must fail the
same check (the test can fail).
"""
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import expit

from synthmi.models import DAMISynthesizer
from synthmi.models.predictive import Prepared, gibbs_draw, sequential_draw
from _joint_exact import exact_mixed_joint


def _setup():
    rng = np.random.default_rng(7)
    n = 200
    z = rng.normal(size=n)
    age = 45 + 8 * z + rng.normal(scale=8, size=n)
    sex = (rng.random(n) < expit(0.08 * (age - 45))).astype(int)
    u = np.column_stack([np.zeros(n), 0.05 * (age - 45) + 0.8 * sex, -0.05 * (age - 45)]) + rng.gumbel(size=(n, 3))
    df = pd.DataFrame({"z": z, "age": age, "sex": pd.Categorical.from_codes(sex, ["f", "m"]),
                       "edu": pd.Categorical.from_codes(u.argmax(1), ["a", "b", "c"])})
    syn = DAMISynthesizer(masks={"age": {"K": 1, "sigma_e": 6.0}, "sex": {"alpha": 2.0}, "edu": {"p": 0.6}},
                          models={"edu": "multinomial", "sex": "probit"}, grid=None, w_tilde="reuse",
                          random_state=1, progressbar=False).fit(df, quasi_identifiers=["age", "sex", "edu"],
                                                                 keep=["z"])
    theta = syn._posterior_draws(1, np.random.default_rng(2))
    preps = [Prepared(cond, theta[j][0]) for j, cond in enumerate(syn.conditionals_)]
    ev = syn._evidence(np.random.default_rng(3))
    return syn, preps, ev, n


def _exact(preps, ev, n):
    """Per record: P(sex, edu) (n, 2, 3) and the moments E[y], E[y^2], E[y 1{s=1}], E[y^2 1{s=1}]."""
    pa = preps[0]
    eta_a = pa.eta({})
    p_se, mid, w = exact_mixed_joint(preps, ev, n, lambda y: -0.5 * ((y - eta_a) / pa.sigma) ** 2)
    wy, wy1 = w.sum(axis=(2, 3)), w[:, :, 1, :].sum(axis=2)
    mom = {"y": (wy * mid).sum(1), "y2": (wy * mid**2).sum(1), "ys": (wy1 * mid).sum(1), "y2s": (wy1 * mid**2).sum(1)}
    return p_se, mom


@pytest.mark.slow
def test_gibbs_matches_the_exact_mixed_joint_and_sequential_does_not():
    syn, preps, ev, n = _setup()
    conds = syn.conditionals_
    assert [c.family for c in conds] == ["normal", "probit", "logit"] and conds[2].n_categories == 3
    p_se, mom = _exact(preps, ev, n)
    np.testing.assert_allclose(p_se.sum(axis=(1, 2)), 1.0, rtol=1e-12)
    reps = 150
    expected = p_se.reshape(n, 6).sum(axis=0) * reps
    # Monte Carlo sd of the pooled means (records and replicates independent): sqrt(sum_i Var_i / R) / n
    sd_y = np.sqrt((mom["y2"] - mom["y"] ** 2).sum() / reps) / n
    sd_ys = np.sqrt((mom["y2s"] - mom["ys"] ** 2).sum() / reps) / n

    def pooled(draw, rng):
        counts, y, ys = np.zeros(6), 0.0, 0.0
        for _ in range(reps):
            d = draw(rng)
            counts += np.bincount(d["sex"] * 3 + d["edu"], minlength=6)
            y += d["age"].mean() / reps
            ys += (d["age"] * d["sex"]).mean() / reps
        return counts, (y - mom["y"].mean()) / sd_y, (ys - mom["ys"].mean()) / sd_ys

    counts, zy, zys = pooled(lambda r: gibbs_draw(conds, preps, ev, r, n_sweeps=5)[0], np.random.default_rng(11))
    # under the exact joint: chi-square p below 1e-3 with probability 1e-3 (records' cell counts are
    # sums of non-identical Bernoullis, so the pooled statistic is conservative); |z| > 4 with 6e-5
    assert stats.chisquare(counts, expected).pvalue > 1e-3
    assert abs(zy) < 4 and abs(zys) < 4, (zy, zys)
    # the sequential draw misses the later masks' evidence: p ~ 1e-19 here (and mean age z ~ 4.6)
    counts, _, _ = pooled(lambda r: sequential_draw(conds, preps, ev, r)[0], np.random.default_rng(11))
    assert stats.chisquare(counts, expected).pvalue < 1e-6


@pytest.mark.slow
def test_gibbs_with_a_two_part_column_and_two_later_binaries_matches_the_exact_joint():
    """A zero-heavy 'inc' (two parts: value / 0) visited first, then masked binaries g (given inc)
    and h (given inc and g). The part update changes both later models' linear predictors, and
    g's update then needs h's likelihood at the current state: any per-model state the sweeps keep
    must follow the part update. Pooled (part, g, h) frequencies against the exact joint (value part
    integrated on an 800-point midpoint rule); the sequential draw must fail the same check."""
    from scipy.stats import norm

    rng = np.random.default_rng(11)
    n = 300
    z = rng.normal(size=n)
    zero = rng.random(n) < expit(-0.3 + 0.8 * z)
    inc = np.where(zero, 0.0, np.exp(rng.normal(1.0 + 0.3 * z, 0.5)))
    g = (rng.random(n) < expit(-1.5 + 3.0 * (inc > 0) + 0.5 * np.log1p(inc))).astype(int)
    h = (rng.random(n) < expit(-1.0 + 1.5 * g - 2.0 * (inc > 0) + 0.4 * np.log1p(inc))).astype(int)
    df = pd.DataFrame({"z": z, "inc": inc, "g": pd.Categorical.from_codes(g, ["g0", "g1"]),
                       "h": pd.Categorical.from_codes(h, ["h0", "h1"])})
    syn = DAMISynthesizer(masks={"g": {"alpha": 3.0}, "h": {"alpha": 3.0}}, grid=None, w_tilde="reuse",
                          random_state=1, progressbar=False).fit(df, quasi_identifiers=["inc", "g", "h"],
                                                                 keep=["z"], semicont={"inc": [0]})
    conds = syn.conditionals_
    assert [c.column for c in conds] == ["inc_part", "inc", "g", "h"]
    theta = syn._posterior_draws(1, np.random.default_rng(2))
    preps = [Prepared(cond, theta[j][0]) for j, cond in enumerate(conds)]
    ev = syn._evidence(np.random.default_rng(3))
    pp, pi, pg, ph = preps
    fill = conds[1].part[1]
    lp_part = pp.log_probs(pp.eta({}))  # (n, 2): value, the point mass

    def later(vals):  # (n, 2, 2): p(g = a | .) p(h = b | ., a) times both masks' evidence
        out = np.empty((n, 2, 2))
        lg = pg.log_probs(pg.eta(vals)) + ev["g"][1]
        for a in (0, 1):
            lh = ph.log_probs(ph.eta({**vals, "g": np.full(n, a)})) + ev["h"][1]
            out[:, a, :] = np.exp(lg[:, [a]] + lh)
        return out

    exact = np.zeros((n, 2, 2, 2))
    exact[:, 1] = np.exp(lp_part[:, [1]])[:, :, None] * later({"inc_part": np.ones(n, np.int64), "inc": np.full(n, fill)})
    eta = pi.eta({"inc_part": np.zeros(n, dtype=np.int64)})
    ys = np.linspace(pi.lo, pi.hi, 801)
    mid, step = 0.5 * (ys[1:] + ys[:-1]), ys[1] - ys[0]
    mass = norm.cdf((pi.hi - eta) / pi.sigma) - norm.cdf((pi.lo - eta) / pi.sigma)
    acc = np.zeros((n, 2, 2))
    for y in mid:
        dens = norm.pdf((y - eta) / pi.sigma) / pi.sigma / mass * step
        acc += dens[:, None, None] * later({"inc_part": np.zeros(n, np.int64), "inc": conds[1].to_raw(np.full(n, y))})
    exact[:, 0] = np.exp(lp_part[:, [0]])[:, :, None] * acc
    exact /= exact.sum(axis=(1, 2, 3), keepdims=True)
    reps = 120
    expected = exact.reshape(n, 8).sum(axis=0) * reps

    def pooled(draw, rng):
        counts = np.zeros(8)
        for _ in range(reps):
            d = draw(rng)
            counts += np.bincount(d["inc_part"] * 4 + d["g"] * 2 + d["h"], minlength=8)
        return counts

    gib = pooled(lambda r: gibbs_draw(conds, preps, ev, r, n_sweeps=5)[0], np.random.default_rng(4))
    seq = pooled(lambda r: sequential_draw(conds, preps, ev, r)[0], np.random.default_rng(4))
    # conservative pooled chi-square (see the first test): p < 1e-3 with probability < 1e-3 under the exact joint
    assert stats.chisquare(gib, expected).pvalue > 1e-3
    assert stats.chisquare(seq, expected).pvalue < 1e-6
