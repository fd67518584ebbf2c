"""The copula sampler's kernels made faster without changing what is sampled (issue 28, h28cpu).

The reference (``tests/models/data/copula_trajectory.json``) was recorded by
``benchmarks/copula_trajectory.py --write`` from the code before the CPU work
(commit stored in the file): short chains on a small mixed frame (continuous,
ordinal, binary and two nominal columns, each with gaps), with Hamiltonian moves of
the nominal blocks, with Newton-proposal moves, and with Newton moves past burn-in
(frozen curvatures). The same seed must give the same trajectory up to round-off.

Tolerance 1e-8 relative (absolute below 1): the rewritten kernels sum the same terms
in another order or through BLAS instead of loops, which changes results by a few ulps
(~1e-16 relative); over 30-50 Gibbs iterations such differences propagate through
Cholesky factors and inverse CDFs with condition numbers far below 1e6, so stay many
orders of magnitude under 1e-8. Any change of what is drawn (another uniform consumed,
a different accept decision or algorithm) moves the chain by O(1) at the first
affected draw, and the accept counts and move kinds are compared exactly.
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("copula_trajectory", ROOT / "benchmarks" / "copula_trajectory.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("config", ["hmc", "newton", "frozen"])
def test_same_seed_same_trajectory_as_the_original_kernels(config):
    mod = _script()
    ref = {r["name"]: r for r in json.loads((Path(__file__).parent / "data" / "copula_trajectory.json").read_text())["records"]}
    name, n_iter, burn = next(c for c in mod.CONFIGS if c[0] == config)
    new = mod.trajectory(name, n_iter, burn)
    r = ref[config]
    assert new["moves"] == r["moves"]
    assert new["accepted"] == r["accepted"]
    diff = mod.compare([r], [new])[config]
    assert diff <= 1e-8, diff


def test_compiled_rejection_round_is_the_numpy_round():
    """One round of mnp_draw_latents' rejection sampler, compiled, against the NumPy round it replaced
    (truncated_normal of D, then V, the candidate and its log acceptance), on the same uniforms and
    normals: bounds c from the far lower tail (c / sqrt 2 < -37.5: the log-space inversion) to beyond
    _FAR, competitors near and far. Candidates equal to round-off (the log acceptance is summed in
    another order; 1e-12 relative), acceptance decisions equal."""
    import numpy as np
    from scipy.special import log_ndtr

    from synthmi.models.copula import _mnp_rejection_round, truncated_normal

    rng = np.random.default_rng(5)
    k = 4000
    c = np.concatenate([rng.normal(0, 3, k - 400), rng.uniform(-80, -50, 200), rng.uniform(12, 30, 200)])
    el = rng.normal(0, 2, k)
    others = rng.normal(-1, 3, (k, 4))
    others[:, 0] = -np.inf  # excluded entries (the chosen level and the strongest competitor)
    others[::3, 2] = -np.inf
    u1, nz, lu = rng.random(k), rng.standard_normal(k), np.log(rng.random(k))

    class Fixed:  # hands truncated_normal the uniforms u1
        def random(self, shape):
            return u1.reshape(shape)

    dd = truncated_normal(np.zeros(k), np.sqrt(2.0), np.full(k, -np.inf), c, Fixed())
    cand_ref = el + (-0.5 * dd + np.sqrt(0.5) * nz)
    ok_ref = lu < log_ndtr(cand_ref[:, None] - others).sum(axis=1)
    cand, ok = np.empty(k), np.empty(k, dtype=np.bool_)
    _mnp_rejection_round()(c, el, others, u1, nz, lu, cand, ok)
    assert np.array_equal(cand, cand_ref)
    assert np.array_equal(ok, ok_ref)
    assert 0.05 < ok.mean() < 0.95  # both decisions exercised


def test_triangular_solve_without_checks_is_scipys():
    """_tri_solve (the leapfrog's triangular solves without scipy's argument checks) gives
    scipy.linalg.solve_triangular's bits for a C-ordered lower factor, its F-ordered transpose and a
    1 x 1 factor, raises on a singular one, and passes non-finite values through (scipy raises)."""
    import numpy as np
    from scipy.linalg import solve_triangular

    from synthmi.models.copula import _tri_solve

    rng = np.random.default_rng(2)
    for n in (1, 4, 23):
        A = rng.normal(size=(n, n))
        L = np.linalg.cholesky(A @ A.T + n * np.eye(n))
        v = rng.normal(size=n)
        assert np.array_equal(_tri_solve(L, v, lower=True), solve_triangular(L, v, lower=True))
        assert np.array_equal(_tri_solve(L.T, v, lower=False), solve_triangular(L.T, v, lower=False))
    with pytest.raises(np.linalg.LinAlgError):
        _tri_solve(np.zeros((2, 2)), np.ones(2), lower=True)
    assert np.isnan(_tri_solve(np.eye(2), np.array([np.nan, 1.0]), lower=True)[0])


def test_flat_truncated_normal_is_truncated_normal():
    """_truncated_normal_flat (the sampler's direct call of the compiled kernel, issue 28 cost per
    iteration) gives truncated_normal's draws bit for bit and leaves the generator where it leaves it:
    two-sided, one-sided and unbounded intervals, intervals far in either tail (beyond _FAR, and both
    bounds beyond the double range of Phi: the log-space inversion), 1-D (ranked columns, binary
    blocks) and 2-D means (the competitors of mnp_draw_latents)."""
    import numpy as np

    from synthmi.models.copula import _truncated_normal_flat, truncated_normal

    rng = np.random.default_rng(11)
    n = 400
    mu = rng.normal(0.0, 3.0, n)
    lo = mu + rng.normal(-1.0, 2.0, n)
    hi = lo + rng.exponential(1.0, n)
    lo[:50] = -np.inf  # one-sided
    hi[50:100] = np.inf
    lo[100:120], hi[100:120] = -np.inf, np.inf
    lo[120:140], hi[120:140] = mu[120:140] + 9.5, mu[120:140] + 10.0  # beyond _FAR
    lo[140:160], hi[140:160] = mu[140:160] - 41.0, mu[140:160] - 40.0  # Phi underflows: log space
    for sd in (1.0, float(np.sqrt(2.0)), 0.37):
        for shape in ((n,), (n // 4, 4)):
            args = [np.ascontiguousarray(v.reshape(shape)) for v in (mu, lo, hi)]
            a, b = np.random.default_rng(5), np.random.default_rng(5)
            x = _truncated_normal_flat(args[0], sd, args[1], args[2], a)
            y = truncated_normal(args[0], sd, args[1], args[2], b, compiled=True)
            assert x.shape == y.shape == shape
            assert np.array_equal(x, y)
            assert a.bit_generator.state == b.bit_generator.state
            assert np.all((x >= args[1]) & (x <= args[2]))


def test_tabulated_erfcx_and_normal_cdf_match_scipy():
    """The quadratures' special functions without libm's erfc (issue 28, branch hcop): the tabulated
    erfcx against scipy's on t in [0, 27] and every piece's ends; Phi, the Mills ratio phi / Phi and
    the density of the vectorised batches against scipy's ndtr and exp(log phi - log_ndtr) on x in
    [-37, 37]. Tolerances from the error analysis, not from a run: the fit's error plus a few roundings
    (8 ulps = 1.8e-15 measured, 4e-15 allowed) for erfcx; for Phi and phi the rounding of t^2 in
    exp(-t^2), relative 2 t^2 eps (3e-13 at x = -37; twice that for phi, whose NumPy reference rounds
    its exponent too), plus 4e-15; the Mills ratio left of 0 is
    sqrt(2/pi) / erfcx(t), free of it. Below x = -37 the batch's Phi is 0 (the kernel's cut). The
    exponential is within 2 ulps of math.exp on [-707, 0] and NaN stays NaN."""
    import math

    import numpy as np
    from scipy.special import erfcx, ndtr

    from synthmi.models.copula import _erfcx_scalar, _exp_neg, _phi_mills_batch, _phi_pdf_batch

    import numba

    erfcx_c = numba.njit(lambda t: _erfcx_scalar(t))
    exp_c = numba.njit(lambda a: _exp_neg(a))
    y = np.arange(1, 101) / 100.0  # every piece's end (t = 4 / y - 4), and a fine grid
    t = np.concatenate([np.linspace(0.0, 27.0, 20001), 4.0 / y - 4.0, 4.0 / (y - 0.005) - 4.0])
    got = np.array([erfcx_c(v) for v in t])
    assert np.max(np.abs(got / erfcx(t) - 1.0)) < 4e-15

    a = np.concatenate([-np.geomspace(1e-8, 707.0, 4001), [0.0]])
    e = np.array([exp_c(v) for v in a])
    assert np.max(np.abs(e / np.exp(a) - 1.0)) < 4.5e-16
    assert math.isnan(exp_c(math.nan))

    x = np.concatenate([np.linspace(-40.0, 37.0, 77001), [-37.0, 0.0, 8.3, 40.0]])
    p, m = np.empty_like(x), np.empty_like(x)
    _phi_mills_batch(x, p, m, x.size)
    pc, f = np.empty_like(x), np.empty_like(x)
    _phi_pdf_batch(x, pc, f, x.size)
    ok = x > -37.0
    assert np.all(p[~ok] == 0.0) and np.all(pc[~ok] == 0.0) and np.all(f[~ok] == 0.0)
    tol = 2.0 * (x[ok] ** 2 / 2.0) * np.finfo(float).eps + 4e-15
    ref_p = ndtr(x[ok])
    ref_f = np.exp(-0.5 * x[ok] ** 2) / np.sqrt(2.0 * np.pi)
    # phi / Phi: sqrt(2/pi) / erfcx(-x / sqrt 2) left of 0 (scipy's, free of the exponent's rounding),
    # phi / ndtr right of 0
    ref_m = np.where(x[ok] <= 0.0, np.sqrt(2.0 / np.pi) / erfcx(-x[ok] / np.sqrt(2.0)), ref_f / ref_p)
    assert np.all(np.abs(p[ok] / ref_p - 1.0) <= tol)
    assert np.array_equal(p[ok], pc[ok])
    # the reference density rounds x^2 in its exponent too: twice the allowance
    assert np.all(np.abs(f[ok] / np.where(ref_f > 0, ref_f, 1.0) - 1.0)
                  <= np.where(ref_f > 1e-300, 2.0 * tol, np.inf))
    left = x[ok] <= 0.0  # Mills ratio: relative error free of the exponent's rounding left of 0
    assert np.max(np.abs(m[ok][left] / ref_m[left] - 1.0)) < 1e-14
    right = ~left & (ref_f > 1e-300)  # beyond x = 37.6 phi is e^-707 / sqrt(2 pi) (the floor), not 0
    assert np.all(np.abs(m[ok][right] / ref_m[right] - 1.0) <= 2.0 * tol[right])
    assert np.all(m[ok][~left] < 1e-300 + ref_m[~left] * (1.0 + 2.0 * tol[~left]))


def test_quadrature_kernel_keeps_nan_and_matches_scipy_special_functions():
    """_mnp_kernel with the tabulated special functions (issue 28, hcop) against the same adaptive
    rule written in NumPy with scipy's ndtr (one record at a time: the kernel's nodes, centre and
    scale), records with levels likely and very unlikely; and a NaN linear predictor gives a NaN
    log-likelihood (the exponential's floor must not turn NaN into a finite value: a proposal with
    a NaN would be accepted)."""
    import numpy as np
    from scipy.special import log_ndtr

    from synthmi.models.copula import _GH_LOGW, _GH_NODES, _MNP_NEWTON, _mnp_kernel

    rng = np.random.default_rng(4)
    n, d = 300, 4
    eta = rng.normal(-1.0, 2.5, (n, d))
    level = rng.integers(0, d + 1, n)
    ll = _mnp_kernel(eta, level, _GH_NODES, _GH_LOGW, 0)[0]
    ref = np.empty(n)
    for i in range(n):
        full = np.concatenate([[0.0], eta[i]])
        dl = full[level[i]] - np.delete(full, level[i])
        s, hs = 0.0, 1.0
        for _ in range(_MNP_NEWTON):  # the kernel's centre: Newton from 0 on the log integrand
            xx = s + dl
            mills = np.exp(-0.5 * xx ** 2 - 0.5 * np.log(2 * np.pi) - log_ndtr(xx))
            gs, hs = -s + mills.sum(), 1.0 + np.sum(mills * (xx + mills))
            s += gs / hs
        sig = 1.0 / np.sqrt(hs)
        sk = s + sig * _GH_NODES
        la = (_GH_LOGW + 0.5 * _GH_NODES ** 2 + np.log(sig) - 0.5 * sk ** 2
              + log_ndtr(sk[:, None] + dl[None, :]).sum(axis=1))
        ref[i] = la.max() + np.log(np.exp(la - la.max()).sum())
    assert np.max(np.abs(ll - ref)) < 1e-12

    eta[3, 1] = np.nan
    ll, g = _mnp_kernel(eta, level, _GH_NODES, _GH_LOGW, 1)[:2]
    assert np.isnan(ll[3]) and np.all(np.isfinite(np.delete(ll, 3)))


def test_compiled_rejection_loop_draws_the_python_rounds():
    """_mnp_rejection_loop (the rounds of mnp_draw_latents in one compiled call with the generator,
    issue 28, hcop) against the Python loop it replaced, on the same seed: the same accepted
    candidates bit for bit, the same records left pending after a cap of 3 rounds, and the generator
    left in the same state (numba's Generator draws NumPy's streams)."""
    import numpy as np

    from synthmi.models.copula import _mnp_rejection_loop, _mnp_rejection_round

    rng = np.random.default_rng(8)
    m, L = 3000, 5
    # as mnp_draw_latents builds them: the chosen level's eta, the strongest competitor's bound, the
    # other competitors (the chosen level and the strongest excluded: -inf)
    el = rng.normal(0.0, 2.0, m)
    comp = rng.normal(-1.0, 2.5, (m, L))
    comp[:, 0] = -np.inf
    comp[::4, 3] = -np.inf
    jstar = np.argmax(comp, axis=1)
    c = el - comp[np.arange(m), jstar]
    others = comp.copy()
    others[np.arange(m), jstar] = -np.inf
    step = _mnp_rejection_round()
    for rounds in (3, 200):
        a, b = np.random.default_rng(21), np.random.default_rng(21)
        ul_ref = np.full(m, np.nan)
        pending = np.arange(m)
        for _ in range(rounds):
            if pending.size == 0:
                break
            k = pending.size
            u1, nz, lu = a.random(k), a.standard_normal(k), np.log(a.random(k))
            cand, ok = np.empty(k), np.empty(k, dtype=np.bool_)
            step(np.ascontiguousarray(c[pending]), np.ascontiguousarray(el[pending]), others[pending], u1, nz, lu,
                 cand, ok)
            ul_ref[pending[ok]] = cand[ok]
            pending = pending[~ok]
        ul = np.full(m, np.nan)
        left = _mnp_rejection_loop()(c, el, others, b, ul, rounds)
        assert np.array_equal(left, pending)
        assert np.array_equal(ul, ul_ref, equal_nan=True)
        assert a.bit_generator.state == b.bit_generator.state
    # what 200 rounds leave (levels very unlikely under eta) goes to mnp_draw_latents' grid inversion
    assert left.size < 0.01 * m and np.all(np.isfinite(np.delete(ul, left)))
