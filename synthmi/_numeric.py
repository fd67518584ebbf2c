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


#: columns non-zero on at most this share of rows are the sparse part of a :class:`SplitGram`
#: (measured on issue 29's 129,200 x 957 propensity design, CPU-s per X'WX: 0.35 -> 2.4, 0.2 -> 1.54,
#: 0.1 -> 1.10, 0.05 -> 1.16)
SPARSE_COLUMN_SHARE = 0.1


class SplitGram:
    r""":math:`w \mapsto X^\top \mathrm{diag}(w) X` for a large design, its columns split by sparsity.

    ``w`` may have any sign (the off-diagonal blocks of a multinomial logit's Hessian).

    The dense columns D (non-zero on more than ``SPARSE_COLUMN_SHARE`` of the rows:
    intercept, numerics, common levels and their products) and the sparse ones S
    (dummies of rare levels and most interactions) give the blocks
    :math:`D^\top W D` (BLAS), :math:`S^\top W D` and :math:`S^\top W S` (sparse
    products, whose cost is the non-zeros, not rows x columns). The same sums as
    the dense product in another order. For the logit pMSE (:mod:`synthmi.evaluation.pmse`)
    on the 129,200 x 957 design of issue 29 (241 dense columns, the other 716 sparse):
    equal to 1.4e-15 relative and 1.1 CPU-s per product against 2.8 s; built once
    per copy (about 2.3 CPU-s there), it serves the aliasing check's :math:`X^\top X` and every Newton step.
    Also the Hessian blocks of :class:`synthmi.models.glm.CategoricalModel` on a
    dummy-coded design.
    """

    def __init__(self, X: np.ndarray):
        from scipy import sparse

        self.n, self.p = X.shape
        share = np.count_nonzero(X, axis=0) / max(self.n, 1)
        self.d = np.flatnonzero(share > SPARSE_COLUMN_SHARE)
        self.s = np.flatnonzero(share <= SPARSE_COLUMN_SHARE)
        self.D = np.ascontiguousarray(X[:, self.d])
        self.S = sparse.csr_matrix(X[:, self.s]).tocsc()
        self.ST = self.S.T.tocsr()

    def select(self, keep: np.ndarray) -> "SplitGram":
        """The split of ``X[:, keep]`` (``keep`` increasing column indices), without a pass over X."""
        out = object.__new__(SplitGram)
        pos = np.full(self.p, -1)
        pos[keep] = np.arange(len(keep))
        kd, ks = np.isin(self.d, keep), np.isin(self.s, keep)
        out.n, out.p = self.n, len(keep)
        out.d, out.s = pos[self.d[kd]], pos[self.s[ks]]
        out.D = np.ascontiguousarray(self.D[:, kd])
        out.S = self.S[:, np.flatnonzero(ks)]
        out.ST = out.S.T.tocsr()
        return out

    def matvec(self, b: np.ndarray) -> np.ndarray:
        """:math:`X b`."""
        return self.D @ b[self.d] + self.S @ b[self.s]

    def rmatvec(self, r: np.ndarray) -> np.ndarray:
        """:math:`X^\top r`."""
        out = np.empty(self.p)
        out[self.d] = self.D.T @ r
        out[self.s] = self.ST @ r
        return out

    def __call__(self, w: np.ndarray | None = None) -> np.ndarray:
        d, s_ = self.d, self.s
        Dw = self.D if w is None else self.D * w[:, None]
        Sw = self.S if w is None else self.S.multiply(w[:, None]).tocsc()
        ST = self.ST
        H = np.empty((self.p, self.p))
        H[np.ix_(d, d)] = self.D.T @ Dw
        SD = np.asarray(ST @ Dw)
        H[np.ix_(s_, d)] = SD
        H[np.ix_(d, s_)] = SD.T
        H[np.ix_(s_, s_)] = (ST @ Sw).toarray()
        return (H + H.T) / 2
