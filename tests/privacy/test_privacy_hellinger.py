import functools
import math

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import betaln

from synthmi.privacy.hellinger import hellinger_beta


@functools.lru_cache(maxsize=None)
def _log_gamma_half_ratio(a: int) -> float:
    """log Gamma(a + 1/2) - log Gamma(a) for integer a, as a compensated sum of tiny positive terms:
    Gamma(a+1/2)/Gamma(a) = (sqrt(pi)/2) prod_{i=1}^{a-1} (1 + 1/(2i)); error ~1e-16 * log(a)."""
    return math.log(math.sqrt(math.pi) / 2) + math.fsum(math.log1p(0.5 / i) for i in range(1, a))


def _reference_neighbour(a: int, b: int) -> float:
    """H(Beta(a, b), Beta(a+1, b-1)) for integers: log BC = L(a) + L(b-1) - log(a)/2 - log(b-1)/2."""
    lbc = _log_gamma_half_ratio(a) + _log_gamma_half_ratio(b - 1) - 0.5 * math.log(a) - 0.5 * math.log(b - 1)
    return math.sqrt(-math.expm1(lbc))


def test_hand_value():
    # H(Beta(1,1), Beta(2,1)): BC = B(1.5, 1)/sqrt(B(1,1) B(2,1)) = (2/3)/sqrt(1/2) = 0.94281; H = 0.23915
    bc = (2 / 3) / math.sqrt(0.5)
    assert hellinger_beta(1, 1, 2, 1) == pytest.approx(math.sqrt(1 - bc), rel=1e-14)


@pytest.mark.parametrize(
    "args", [(1, 1, 2, 1), (3.5, 2, 1, 7), (0.5, 0.5, 2.5, 3), (20.5, 30, 20.5, 31), (9.5, 9.7, 10.5, 11), (40, 60, 45, 55)]
)
def test_matches_quadrature(args):
    f = lambda t: math.sqrt(stats.beta.pdf(t, args[0], args[1]) * stats.beta.pdf(t, args[2], args[3]))  # noqa: E731
    bc = integrate.quad(f, 0, 1, limit=400, epsabs=1e-13)[0]
    assert hellinger_beta(*args) == pytest.approx(math.sqrt(1 - bc), rel=1e-7)


@pytest.mark.parametrize("a, b", [(1, 2), (3, 8), (50, 60), (12345, 987655), (2, 10**6), (500_001, 500_001)])
def test_stable_to_n_one_million(a, b):
    # neighbouring posteriors at n up to 1e6: H ~ 7e-4 at the centre; agree to 1e-8 relative.
    assert hellinger_beta(a, b, a + 1, b - 1) == pytest.approx(_reference_neighbour(a, b), rel=1e-8)


def test_naive_formula_would_lose_digits():
    # The direct betaln difference loses ~6 digits here; hellinger_beta does not (guards the design).
    a = b = 500_001
    naive = math.sqrt(-math.expm1(betaln(a + 0.5, b - 0.5) - 0.5 * (betaln(a, b) + betaln(a + 1, b - 1))))
    ref = _reference_neighbour(a, b)
    assert abs(hellinger_beta(a, b, a + 1, b - 1) - ref) < 1e-3 * abs(naive - ref) + 1e-15


def test_properties():
    rng = np.random.default_rng(0)
    p = rng.uniform(0.2, 50, size=(4, 500))
    h = hellinger_beta(*p)
    assert np.all((h >= 0) & (h <= 1))
    assert np.allclose(h, hellinger_beta(p[2], p[3], p[0], p[1]), rtol=0, atol=1e-14)
    assert np.all(hellinger_beta(p[0], p[1], p[0], p[1]) == 0)
    assert isinstance(hellinger_beta(1.0, 2.0, 3.0, 4.0), float)
    # far apart distributions approach 1
    assert hellinger_beta(1, 1e6, 1e6, 1) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("bad", [0.0, -1.0, np.inf, np.nan])
def test_bad_parameters(bad):
    with pytest.raises(ValueError, match="'a1' parameter of hellinger_beta"):
        hellinger_beta(bad, 1, 1, 1)
