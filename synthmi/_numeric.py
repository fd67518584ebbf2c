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


def independent_columns_gram(G: np.ndarray, tol: float = 1e-10) -> np.ndarray:
    r"""Which columns of a design are not aliased with the columns before them, from its Gram matrix.

    Going through the columns in order, column :math:`j` is aliased when its residual sum of
    squares after projecting on the columns kept before it (:math:`K`),

    .. math:: r_j = G_{jj} - G_{jK} G_{KK}^{-1} G_{Kj}, \qquad G = D^\top D,

    is at most ``tol`` times :math:`G_{jj}`, as R's ``lm``/``glm`` give it an ``NA``
    coefficient (pivoting in ``dqrdc2``); the incremental Cholesky factor of
    :math:`G_{KK}` gives :math:`r_j` in :math:`O(p^2)`. Returns a boolean mask.
    """
    G = np.asarray(G, dtype=float)
    p = G.shape[0]
    L = np.zeros((p, p))
    kept: list[int] = []
    keep = np.zeros(p, dtype=bool)
    for j in range(p):
        w = linalg.solve_triangular(L[np.ix_(kept, kept)], G[kept, j], lower=True) if kept else np.zeros(0)
        r = G[j, j] - w @ w
        if r > tol * G[j, j]:
            L[j, kept] = w
            L[j, j] = np.sqrt(r)
            kept.append(j)
            keep[j] = True
    return keep
