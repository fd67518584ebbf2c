"""Small numerical routines shared across layers (layer 0: imports NumPy and SciPy only)."""
from __future__ import annotations

import numpy as np
from scipy import linalg


def non_aliased_gram(G: np.ndarray, tol: float = 1e-9) -> np.ndarray:
    r"""Indices of a maximal linearly independent set of a design's columns, from its Gram matrix.

    As R's ``lm``/``glm`` drop aliased coefficients: the pivoted QR of the (p x p)
    Gram matrix :math:`G = X^\top X` (which has X's rank and costs far less than a QR
    of the n x p design, and which a partitioned fit sums over partitions),

    .. math:: G P = Q R, \qquad \text{rank} = \#\{j : |R_{jj}| > \text{tol}\, |R_{11}|\},

    keeps the first ``rank`` pivots, returned in column order (Golub & Van Loan,
    *Matrix Computations*, 4th ed., sec. 5.4.2).
    """
    R, piv = linalg.qr(np.asarray(G, dtype=float), mode="r", pivoting=True)
    d = np.abs(np.diag(R))
    if d.size == 0:
        return np.array([], dtype=int)
    rank = int(np.sum(d > tol * d[0]))
    return np.sort(piv[:rank])


def non_aliased(X: np.ndarray, tol: float = 1e-9) -> np.ndarray:
    """:func:`non_aliased_gram` of a design ``X`` (its Gram matrix ``X'X``)."""
    X = np.asarray(X, dtype=float)
    return non_aliased_gram(X.T @ X, tol)
