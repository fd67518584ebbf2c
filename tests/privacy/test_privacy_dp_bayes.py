import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from synthmi.privacy.audit import audit_privacy_loss
from synthmi.privacy.dp_bayes import (
    PrivateBetaPosterior,
    global_sensitivity,
    hellinger_to_candidates,
    local_sensitivity,
    neighbour_distances,
    smooth_sensitivity,
)
from synthmi.privacy.mechanisms import exponential_mechanism

from _privacy_stats import ALPHA, chisquare_pvalue


def _full_table(n, prior=(1.0, 1.0)):
    return hellinger_to_candidates(n, np.arange(n + 1), prior)


# ------------------------------------------------------------ reference figures (issue 6)
@pytest.mark.parametrize("n, ref", [(10, 0.406), (100, 0.682), (1000, 0.872)])
def test_reference_em_global(n, ref):
    m = PrivateBetaPosterior(epsilon=1.0, mechanism="global")
    assert m.expected_hellinger(n, n // 2) == pytest.approx(ref, abs=5e-4)


@pytest.mark.parametrize("n, ref", [(10, 0.195), (100, 0.067), (1000, 0.021)])
def test_reference_laplace_on_count(n, ref):
    # The reference figures are the rounded continuous Laplace (an integer-exact sampler of its law).
    m = PrivateBetaPosterior(epsilon=1.0, mechanism="laplace_rounded")
    assert m.expected_hellinger(n, n // 2) == pytest.approx(ref, abs=5e-4)


# ------------------------------------------------------------ sensitivities, exact over all r
@pytest.mark.parametrize("prior", [(1.0, 1.0), (0.5, 0.5), (3.0, 0.2)])
def test_sensitivities_equal_brute_force_over_candidates(prior):
    for n in [1, 2, 7, 40]:
        D = _full_table(n, prior)  # D[k, r]
        gaps = np.abs(D[1:] - D[:-1]).max(axis=1)  # max over r for pair (k, k+1)
        assert global_sensitivity(n, prior) == pytest.approx(gaps.max(), rel=1e-12)
        dl = np.empty(n + 1)
        dl[0], dl[n] = gaps[0], gaps[-1]
        dl[1:-1] = np.maximum(gaps[:-1], gaps[1:])
        assert np.allclose(local_sensitivity(n, prior), dl, rtol=1e-12)


def test_smooth_sensitivity_definition():
    n, beta = 60, 0.05
    dl = local_sensitivity(n)
    k = np.arange(n + 1)
    brute = (np.exp(-beta * np.abs(k[:, None] - k[None, :])) * dl[None, :]).max(axis=1)
    s = smooth_sensitivity(n, beta)
    assert np.allclose(s, brute, rtol=1e-14)
    assert np.all(s >= dl)
    assert np.all(s[1:] <= math.exp(beta) * s[:-1] * (1 + 1e-12))  # beta-smooth
    assert np.all(s[:-1] <= math.exp(beta) * s[1:] * (1 + 1e-12))


# ------------------------------------------------------------ the draft's Statements I-III (Beta(1,1))
NS = list(range(3, 301)) + [1001, 1002, 10_000, 10_001, 100_000]


@pytest.mark.parametrize("n", NS)
def test_statements_I_II_III(n):
    d = neighbour_distances(n)  # d[x] = H(BI(x), BI(x+1))
    x0s = [n // 2] if n % 2 == 0 else [(n - 1) // 2, (n + 1) // 2]
    lo, hi = min(x0s), max(x0s)
    # I: increasing away from x0 on the right: H(BI(x),BI(x+1)) < H(BI(x+1),BI(x+2)) for x >= x0 ...
    assert np.all(np.diff(d[hi:]) > 0)
    # ... and the mirror image on the left (strict for x + 1 <= x0 - 1; at x = x0 - 1 equality by symmetry
    # for even n, which the draft's "for all x <= x0" overstates by one step).
    assert np.all(np.diff(d[: lo]) < 0)
    assert np.allclose(d, d[::-1], rtol=1e-10)
    if n <= 2000:
        dl = local_sensitivity(n)
        x = np.arange(n + 1)
        # II: Delta_l(x) = H(BI(x), BI(x+1)) for x >= x0, = H(BI(x), BI(x-1)) for x <= x0
        right = x[(x >= hi) & (x < n)]
        assert np.allclose(dl[right], d[right], rtol=1e-14)
        left = x[(x <= lo) & (x > 0)]
        assert np.allclose(dl[left], d[left - 1], rtol=1e-14)
        # III: Delta_l(x) > Delta_l(x0) for every x outside the x0 set
        others = np.setdiff1d(x, x0s)
        if n == 3:
            # Boundary exception found by this test: at n = 3 the end points have a single neighbour,
            # so Delta_l(0) = d_0 = Delta_l(1) (equality, not the strict inequality of Statement III).
            assert dl[0] == pytest.approx(dl[1], rel=1e-14) and dl[3] == pytest.approx(dl[2], rel=1e-14)
        else:
            assert np.all(dl[others] > dl[x0s].max() * (1 + 1e-12))


# ------------------------------------------------------------ exact audit
@pytest.mark.slow
@pytest.mark.parametrize("eps", [0.1, 1.0, 2.0])
def test_audit_global_and_smooth_every_n_up_to_200(eps):
    worst = {"global": 0.0, "smooth": 0.0}
    for n in range(1, 201):
        for mech, delta in (("global", None), ("smooth", 1e-5)):
            res = audit_privacy_loss(PrivateBetaPosterior(eps, mech, delta=delta), n)
            assert res.holds, str(res.summary())
            worst[mech] = max(worst[mech], res.max_loss / eps)
            if mech == "global":
                assert not res.exceeds_epsilon
            else:
                assert res.delta_at_epsilon <= 1e-5
    # measured: both use at most 0.67 eps (eps = 0.1), 0.64 eps (eps = 1), 0.61 eps (eps = 2) on any
    # pair (worst at n = 5..9, pair k = 0 vs 1), with delta(eps) = 0 for the smooth one.
    assert worst["global"] < 0.7 and worst["smooth"] < 0.7


@pytest.mark.slow
@pytest.mark.parametrize("n", [500, 1000])
def test_audit_spot_checks_large_n(n):
    for mech, delta in (("global", None), ("smooth", 1e-5), ("laplace", None), ("laplace_rounded", None)):
        res = audit_privacy_loss(PrivateBetaPosterior(1.0, mech, delta=delta), n)
        assert res.holds, str(res.summary())


@pytest.mark.parametrize("prior", [(0.1, 0.1), (0.5, 0.5), (5.0, 5.0)])
def test_audit_smooth_other_priors(prior):
    # The smooth-sensitivity claim does not lean on the uniform prior (measured <= 0.57 eps, delta(eps) = 0).
    for eps in (0.1, 1.0):
        res = audit_privacy_loss(PrivateBetaPosterior(eps, "smooth", delta=1e-5, prior=prior), 200)
        assert res.holds and res.delta_at_epsilon == 0.0


def test_audit_laplace_count_is_tight():
    # The clamped count mechanism attains exactly eps (interior outputs), a check that the audit is sharp.
    res = audit_privacy_loss(PrivateBetaPosterior(0.5, "laplace"), 50)
    assert res.max_loss == pytest.approx(0.5, rel=1e-12)
    assert res.delta_at_epsilon < 1e-15


def test_audit_posterior_sample():
    for n in [1, 10, 200]:
        res = audit_privacy_loss(PrivateBetaPosterior(1.0, "posterior_sample"), n)
        assert res.holds and res.max_loss <= 1.0


def test_local_sensitivity_exceeds_epsilon():
    # The draft's claim (Sec. 1.2.2): the local-sensitivity EM is not DP. The exact audit finds the pair.
    m = PrivateBetaPosterior(0.1, "local", prior=(0.1, 0.1), allow_non_private=True)
    res = audit_privacy_loss(m, 200)
    assert res.exceeds_epsilon and not res.holds
    assert res.worst_pair == (1, 2)
    assert res.max_loss == pytest.approx(0.10407, abs=1e-5)  # 1.04 x eps
    assert res.delta_at_epsilon > 1e-5
    # the violation is in the same direction as the draft's argument: the output is BI(y) (j = 2)
    assert res.worst_output == 2


def test_local_sensitivity_under_uniform_prior_stays_below_epsilon_up_to_200():
    # Finding (reported, not assumed): with the draft's own prior Beta(1,1) the exact audit finds no
    # violation for n <= 200 (worst ratio 0.89 eps at n = 200, pair (1, 2)); its proof's WLOG case
    # (Delta_l(y) < Delta_l(x), r = argmax u(x,.) = argmin u(y,.)) cannot occur here.
    worst = 0.0
    for n in range(1, 201, 3):
        m = PrivateBetaPosterior(0.1, "local", allow_non_private=True)
        worst = max(worst, audit_privacy_loss(m, n).max_loss / 0.1)
    assert 0.85 < worst < 1.0


# ------------------------------------------------------------ samplers match their exact laws
@pytest.mark.parametrize("mech", ["global", "smooth", "laplace", "laplace_rounded"])
def test_sampler_chisquare(mech):
    n, k = 40, 13
    m = PrivateBetaPosterior(1.0, mech, delta=1e-5 if mech == "smooth" else None)
    draws = m.draw_outputs(n, k, 100_000, random_state=21)
    p = np.exp(m.output_log_probabilities(n, k))
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    assert chisquare_pvalue(draws, np.arange(n + 1), p) > ALPHA


def test_posterior_sample_ks():
    n, k = 50, 20
    m = PrivateBetaPosterior(1.0, "posterior_sample", tau=0.05)
    th = m.draw_outputs(n, k, 100_000, random_state=22)
    w = 1.0 / (2 * math.log(0.95 / 0.05))
    dist = stats.beta(1 + w * k, 1 + w * (n - k))
    lo, hi = dist.cdf(0.05), dist.cdf(0.95)
    assert stats.kstest(th, lambda t: (dist.cdf(t) - lo) / (hi - lo)).pvalue > ALPHA
    assert th.min() >= 0.05 and th.max() <= 0.95


def test_em_probabilities_agree_with_generic_em():
    n, k = 30, 9
    m = PrivateBetaPosterior(0.7, "global")
    generic = np.log(
        np.exp(-0.7 / (2 * global_sensitivity(n)) * hellinger_to_candidates(n, k)) /
        np.exp(-0.7 / (2 * global_sensitivity(n)) * hellinger_to_candidates(n, k)).sum()
    )
    assert np.allclose(m.output_log_probabilities(n, k), generic, atol=1e-12)
    # and exponential_mechanism over the same scores samples the same law (same uniforms -> same index)
    assert exponential_mechanism(-hellinger_to_candidates(n, k), 0.7, global_sensitivity(n), random_state=3) == int(
        m.draw_outputs(n, k, 1, random_state=3)[0]
    )


def test_expected_hellinger_posterior_sample_quadrature_converged():
    m = PrivateBetaPosterior(1.0, "posterior_sample")
    a = m.expected_hellinger(1000, 500)
    assert a == pytest.approx(m.expected_hellinger(1000, 500, n_quad=16000), abs=1e-4)


# ------------------------------------------------------------ estimator API
def test_fit_sample_and_accounting():
    x = pd.Series([1, 0, 1, 1, 0, 0, 0, 1, 1, 1] * 10)
    before = x.copy()
    m = PrivateBetaPosterior(1.0, "global").fit(x)
    r1, r2 = m.sample(random_state=4), m.sample(random_state=4)
    assert (r1.alpha, r1.beta) == (r2.alpha, r2.beta)
    assert r1.alpha + r1.beta == pytest.approx(102)
    assert m.accountant_.spent(method="basic") == (1.0, 0)
    assert x.equals(before)
    assert "Beta(" in str(r1.summary()) and list(r1.to_frame().columns)[:2] == ["mechanism", "epsilon"]
    s = PrivateBetaPosterior(1.0, "smooth", delta=1e-6).fit(x.astype(bool))
    s.sample(random_state=1)
    assert s.accountant_.spent(method="basic") == (1.0, 1e-6)
    loc = PrivateBetaPosterior(1.0, "local", allow_non_private=True).fit(x).sample(random_state=0)
    assert not loc.private and "NOT DIFFERENTIALLY PRIVATE" in str(loc.summary())


def test_smooth_beyond_the_audited_range_warns():
    import warnings

    from synthmi.privacy.dp_bayes import AUDITED_N_MAX

    assert AUDITED_N_MAX == 1000  # the largest n test_audit_spot_checks_large_n certifies
    x = np.r_[np.ones(300, dtype=int), np.zeros(AUDITED_N_MAX + 1 - 300, dtype=int)]
    with pytest.warns(UserWarning, match=r"certified by the exact audit only for n <= 1000.*audit_privacy_loss"):
        PrivateBetaPosterior(1.0, "smooth", delta=1e-6).fit(x).sample(random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # within the audited range, and for the pure mechanisms, no warning
        # (no seed: a user seed warns on its own that it undoes the privacy)
        PrivateBetaPosterior(1.0, "smooth", delta=1e-6).fit(x[:AUDITED_N_MAX]).sample()
        PrivateBetaPosterior(1.0, "global").fit(x).sample()


def test_exact_noise_for_the_laplace_count():
    # Both samplers draw the same discrete law; exact=True goes through CKS Algorithm 2.
    a = PrivateBetaPosterior(1.0, "laplace", exact_noise=True).draw_outputs(50, 20, 4000, random_state=0)
    b = PrivateBetaPosterior(1.0, "laplace").draw_outputs(50, 20, 4000, random_state=0)
    # P(output = k) = (1 - q)/(1 + q) with q = e^-1: 0.4621; MC s.e. sqrt(.46*.54/4000) = 0.0079, 4 s.e. = 0.032
    p0 = (1 - math.exp(-1)) / (1 + math.exp(-1))
    assert abs((a == 20).mean() - p0) < 0.032 and abs((b == 20).mean() - p0) < 0.032
    with pytest.raises(ValueError, match="'exact_noise' parameter"):
        PrivateBetaPosterior(1.0, "laplace", exact_noise="yes").fit([0, 1])


def test_errors_do_not_echo_data():
    with pytest.raises(ValueError) as exc:
        PrivateBetaPosterior(1.0).fit(np.array([0, 1, 7, 1]))
    assert "binary" in str(exc.value) and "7" not in str(exc.value)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: PrivateBetaPosterior(0.0).fit([0, 1]), "'epsilon' parameter"),
        (lambda: PrivateBetaPosterior(-1.0).expected_hellinger(10, 5), "'epsilon' parameter"),
        (lambda: PrivateBetaPosterior(1.0, "smooth").fit([0, 1]), "'delta' parameter"),
        (lambda: PrivateBetaPosterior(1.0, "smooth", delta=1.0).fit([0, 1]), "'delta' parameter"),
        (lambda: PrivateBetaPosterior(1.0, "smooth", delta=0.0).fit([0, 1]), "'delta' parameter"),
        (lambda: PrivateBetaPosterior(1.0, "global", delta=-0.1).fit([0, 1]), "'delta' parameter"),
        (lambda: PrivateBetaPosterior(1.0).fit([]), "'x' parameter"),
        (lambda: PrivateBetaPosterior(1.0).expected_hellinger(0, 0), "'n' parameter"),
        (lambda: audit_privacy_loss("global", 0), "'n' parameter"),
        (lambda: PrivateBetaPosterior(1.0).fit([0, 1, 2]), "binary"),
        (lambda: PrivateBetaPosterior(1.0).fit([0.5, 1.0]), "binary"),
        (lambda: PrivateBetaPosterior(1.0).expected_hellinger(10, 11), "'k' parameter"),
        (lambda: PrivateBetaPosterior(1.0).draw_outputs(10, 11, 5), "'k' parameter"),
        (lambda: PrivateBetaPosterior(1.0, "local").fit([0, 1]), "NOT differentially private"),
        (lambda: PrivateBetaPosterior(1.0, "magic").fit([0, 1]), "'mechanism' parameter"),
        (lambda: PrivateBetaPosterior(1.0, prior=(0, 1)).fit([0, 1]), "'prior' parameter"),
        (lambda: exponential_mechanism(np.array([]), 1.0, 1.0), "empty candidate set"),
        (lambda: PrivateBetaPosterior(1.0).sample(), "call fit"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
