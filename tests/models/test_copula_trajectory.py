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
