r"""Propensity-score mean squared error (pMSE) and its standardised form S_pMSE.

Following synthpop's ``utility.gen`` / ``utility.tab`` conventions
(Snoke, Raab, Nowok, Dibben & Slavkovic 2018, *JRSS A* 181:663-688;
Raab, Nowok & Dibben 2021, *J. Privacy and Confidentiality* 11):

Stack the original (:math:`n_1` rows) and one synthetic copy (:math:`n_2`
rows), :math:`N = n_1 + n_2`, label synthetic rows 1, fit a classifier and
take its predicted probabilities :math:`\hat p_i`. With :math:`c = n_2/N`,

.. math::

    \mathrm{pMSE} = \frac1N \sum_{i=1}^N (\hat p_i - c)^2 .

Null expectation (copies drawn from the same distribution as the original):

* logit: :math:`E_0[\mathrm{pMSE}] = (k-1)(1-c)^2 c / N`, :math:`k-1` the
  number of non-aliased coefficients excluding the intercept (Snoke et al.
  2018, Theorem 1);
* CART: estimated by permutation: refit on ``n_perm`` random relabellings
  and take the mean permuted pMSE divided by 2 (synthpop ``utility.gen``).

:math:`S_{pMSE} = \mathrm{pMSE} / E_0[\mathrm{pMSE}]`, about 1 under the null.

Which null: :math:`E_0` is the expectation for a copy drawn from the correct
model *fitted to the original* (synthpop's ``proper = FALSE``; Raab, Nowok &
Dibben 2021, section 3). Two independent samples from the same population
carry both samples' noise: :math:`E[\mathrm{pMSE}] = (k-1)c(1-c)/N`, so
:math:`S_{pMSE} \to 1/(1-c)` (2 for equal sizes). The same factor is why the
CART permutation null (which mimics independent samples) is halved.
Measured (k - 1 = 9, 400 replications each; ``tests/evaluation/test_utility.py``):
mean S_pMSE 1.02 / 1.00 / 1.00 at n = 500 / 1000 / 4000 per side for copies
from the fitted correct model, 1.99 for independent samples. The fitted model
must contain every term of the propensity model; a term it leaves out behaves
like an independent-sample dimension.
The slides' :math:`U_p` (short-course slides) is the pMSE with :math:`c = 1/2`.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import linalg
from scipy.special import expit

from ..results import Result
from .._numeric import SplitGram, non_aliased_gram
from .._random import PositionalRNG, entropy_from
from ..engine import (
    canonical_sum,
    compute,
    concat_rows,
    copies_of,
    frame_offsets,
    is_dask_frame,
    map_frame,
    meta_of,
    value_counts,
)
from .._validate import (
    check_columns_exist,
    check_copies,
    check_dataframe,
    check_option,
    check_random_state,
    check_same_structure,
    check_scalar,
)
from ..errors import ColumnError, InputError, ParameterError


@dataclass
class PMSEResult(Result):
    """pMSE of each synthetic copy against the original.

    Attributes
    ----------
    pmse, expected_null, s_pmse : ndarray
        One value per copy.
    k : ndarray
        Logit: number of non-aliased coefficients including the intercept.
    method : str
    """

    pmse: np.ndarray
    expected_null: np.ndarray
    s_pmse: np.ndarray
    method: str
    k: np.ndarray | None = None
    variables: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def mean_pmse(self) -> float:
        return float(np.mean(self.pmse))

    @property
    def mean_s_pmse(self) -> float:
        return float(np.mean(self.s_pmse))

    def to_frame(self) -> pd.DataFrame:
        df = pd.DataFrame(
            {"pmse": self.pmse, "expected_null": self.expected_null, "s_pmse": self.s_pmse},
            index=pd.RangeIndex(1, len(self.pmse) + 1, name="copy"),
        )
        if self.k is not None:
            df["k"] = self.k
        return df

    @property
    def _summary_title(self) -> str:
        return (f"pMSE ({self.method}) over {len(self.pmse)} cop{'y' if len(self.pmse) == 1 else 'ies'}, "
                f"{len(self.variables)} variables")

    def _summary_rows(self) -> pd.DataFrame:
        return self.to_frame()

    def _summary_notes(self) -> list[str]:
        return [f"mean pMSE = {self.mean_pmse:.4g}, mean S_pMSE = {self.mean_s_pmse:.4g}",
                *(f"note: {n}" for n in self.notes)]

    def _dict_extra(self) -> dict[str, Any]:
        return {"method": self.method, "variables": list(self.variables), "mean_pmse": self.mean_pmse,
                "mean_s_pmse": self.mean_s_pmse, "notes": list(self.notes)}

    def __repr__(self) -> str:
        return str(self.summary())


@dataclass
class UtilityTablesResult(Result):
    """S_pMSE of every one-way, two-way (three-way) table: :func:`utility_tables`' result.

    Attributes
    ----------
    table : DataFrame
        One row per table: ``variables`` (names joined by ``:``), ``way``, ``df``,
        ``pmse``, ``s_pmse`` (mean over copies) and one ``s_pmse_copy_j`` per copy,
        sorted by ``way`` then ``s_pmse`` descending. :meth:`to_frame` returns a copy.
    ways : list of int
    n_bins : int
    n_copies : int

    Every figure is a table-level aggregate (cell counts summed into one pMSE per
    table), so :meth:`to_dict` carries the whole table: no record-level value.
    """

    table: pd.DataFrame
    ways: list[int] = field(default_factory=list)
    n_bins: int = 5
    n_copies: int = 0

    def to_frame(self) -> pd.DataFrame:
        """The per-table S_pMSE (a copy of :attr:`table`)."""
        return self.table.copy()

    @property
    def _summary_title(self) -> str:
        return (f"S_pMSE of {len(self.table)} table{'' if len(self.table) == 1 else 's'} over "
                f"{self.n_copies} cop{'y' if self.n_copies == 1 else 'ies'}")

    def _summary_rows(self) -> pd.DataFrame:
        return self.table[["variables", "way", "df", "pmse", "s_pmse"]].set_index("variables")

    def _summary_notes(self) -> list[str]:
        return [f"mean S_pMSE of the {w}-way tables = {float(np.nanmean(g)):.4g}"
                for w, g in self.table.groupby("way")["s_pmse"] if np.isfinite(g).any()]

    def _dict_extra(self) -> dict[str, Any]:
        return {"ways": [int(w) for w in self.ways], "n_bins": int(self.n_bins), "n_copies": int(self.n_copies),
                "tables": self.table}

    def __repr__(self) -> str:
        return str(self.summary())


# --------------------------------------------------------------------------- design
def _encode_main_effects(stacked: pd.DataFrame, variables: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """Main-effect columns: standardised numerics (+ missing indicator), dummies
    for categories (first level dropped, missing as its own level) — synthpop's
    treatment of NA in the propensity model. The columns are :class:`_Design`'s
    (the one encoding rule, also used partition by partition), with the means,
    standard deviations and levels of the stacked frame in memory."""
    kinds = {v: "numeric" if _is_numeric(stacked[v].dtype) else "categorical" for v in variables}
    mu, sd, has_na, levels = {}, {}, {}, {}
    for v in variables:
        s = stacked[v]
        if kinds[v] == "numeric":
            x = s.to_numpy(dtype=float)
            miss = np.isnan(x)
            mu[v] = np.nanmean(x) if (~miss).any() else 0.0
            sd_ = np.nanstd(x) if (~miss).any() else 1.0
            sd[v] = sd_ if sd_ > 0 else 1.0
            has_na[v] = bool(miss.any())
        else:
            levels[v] = list(pd.Categorical(s.astype(object).where(s.notna(), "__NA__")).categories)
    return _Design(variables, kinds, mu, sd, has_na, levels, maxorder=0).main(stacked)


#: Large designs (agency files: a 51-level geography among ten variables) are reduced by a
#: stated rule, applied only when the full main-effects-plus-interactions design would have
#: more than MAX_TERMS columns; smaller designs are the full synthpop model, unchanged.
MAX_TERMS = 200
#: rows (original and copy stacked) below which a level is pooled / an interaction column dropped
MIN_CELL = 20
#: variables with more levels than this enter as main effects only in a reduced design
MAX_INTERACTION_LEVELS = 10


def _owner(name: str) -> str:
    return name.split("[")[0].removesuffix("_NA")


def _design(stacked: pd.DataFrame, variables: Sequence[str], maxorder: int,
            notes: list[str] | None = None) -> tuple[np.ndarray, list[str]]:
    """Intercept, main effects and (``maxorder=1``) two-way interactions.

    Reduction rule for large designs (more than ``MAX_TERMS`` columns in
    full): (1) a categorical level with fewer than ``MIN_CELL`` rows in the
    stacked data is pooled with the variable's other rare levels; (2) a
    variable with more than ``MAX_INTERACTION_LEVELS`` levels after pooling
    enters as a main effect only; (3) an interaction column with fewer than
    ``MIN_CELL`` non-zero rows is dropped. What was done is appended to
    ``notes``. The null expectation counts the columns actually fitted, so
    S_pMSE stays calibrated for the model used.
    """
    width = {}
    for v in variables:
        col = stacked[v]
        if pd.api.types.is_numeric_dtype(col) and not isinstance(col.dtype, pd.CategoricalDtype):
            width[v] = 1 + int(col.isna().any())
        else:
            width[v] = max(int(col.astype(object).where(col.notna(), "__NA__").nunique()) - 1, 0)
    full = 1 + sum(width.values()) + (sum(width[a] * width[b] for a, b in combinations(variables, 2)) if maxorder >= 1 else 0)
    reduce = full > MAX_TERMS
    if not reduce:
        main, names = _encode_main_effects(stacked, variables)
    else:
        pooled = stacked.copy()
        for v in variables:
            col = stacked[v]
            if pd.api.types.is_numeric_dtype(col) and not isinstance(col.dtype, pd.CategoricalDtype):
                continue
            labels = col.astype(object).where(col.notna(), "__NA__")
            counts = labels.value_counts()
            rare = counts.index[counts < MIN_CELL]
            if len(rare) > 1:
                pooled[v] = pd.Categorical(labels.where(~labels.isin(rare), "__pooled__"))
                if notes is not None:
                    notes.append(f"'{v}': {len(rare)} levels with < {MIN_CELL} rows pooled into one")
        main, names = _encode_main_effects(pooled, variables)
        owners = [_owner(n) for n in names]
        width = {v: owners.count(v) for v in variables}
    owners = [_owner(n) for n in names]
    all_names = ["(Intercept)"] + names
    pairs: list[tuple[int, int]] = []
    if maxorder >= 1:
        wide = {v for v in variables if reduce and width[v] > MAX_INTERACTION_LEVELS}
        if wide and notes is not None:
            notes.append(f"main effect only (more than {MAX_INTERACTION_LEVELS} levels): {sorted(wide)}")
        dropped = 0
        nz = (main != 0).astype(np.float32) if reduce else None
        # non-zero rows of every product column at once: one (p x p) product of indicators
        co = (nz.T @ nz) if reduce else None
        for a, b in combinations(range(len(names)), 2):
            if owners[a] == owners[b] or owners[a] in wide or owners[b] in wide:
                continue
            if reduce and co[a, b] < MIN_CELL:
                dropped += 1
                continue
            pairs.append((a, b))
            all_names.append(f"{names[a]}:{names[b]}")
        if dropped and notes is not None:
            notes.append(f"{dropped} interaction columns with < {MIN_CELL} non-zero rows dropped")
    if reduce and notes is not None:
        notes.insert(0, f"design reduced from {full} to {len(all_names)} columns (rule: more than {MAX_TERMS} in full)")
    X = np.empty((len(stacked), len(all_names)))
    X[:, 0] = 1.0
    X[:, 1 : 1 + main.shape[1]] = main
    for j, (a, b) in enumerate(pairs, start=1 + main.shape[1]):
        np.multiply(main[:, a], main[:, b], out=X[:, j])
    return X, all_names


#: designs with at least this many cells (rows x columns) form X'WX block by block (:func:`_gram`)
BLOCKED_GRAM_CELLS = 50_000_000
#: rows per block of :func:`_gram`: a 4,096 x 1,000 block is 33 MB
GRAM_BLOCK_ROWS = 4096


def _gram(X: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    r""":math:`X^\top \mathrm{diag}(w) X` (``w=None``: :math:`X^\top X`).

    A large design (at least ``BLOCKED_GRAM_CELLS`` cells: the 64,600-row, 20-column
    survey file of issue 29 stacks to 129,200 x 956) is summed over blocks of
    ``GRAM_BLOCK_ROWS`` rows, :math:`\sum_b (W_b^{1/2} X_b)^\top (W_b^{1/2} X_b)`,
    each a BLAS product: no second N x p copy of the design in memory, and measured
    3.0 CPU-s per product there against 5.9 s (plus 1.5 s to build it) for the sparse
    CSR product used before (equal to 1.5e-14 relative). Smaller designs take the one
    dense product, unchanged.
    """
    if X.size < BLOCKED_GRAM_CELLS:
        if w is None:
            return X.T @ X
        Xw = X * np.sqrt(w)[:, None]
        return Xw.T @ Xw
    H = np.zeros((X.shape[1], X.shape[1]))
    for s0 in range(0, X.shape[0], GRAM_BLOCK_ROWS):
        Xb = X[s0 : s0 + GRAM_BLOCK_ROWS]
        if w is not None:
            Xb = Xb * np.sqrt(w[s0 : s0 + GRAM_BLOCK_ROWS])[:, None]
        H += Xb.T @ Xb
    return H


def _newton_logit(beta: np.ndarray, loglik, derivatives, max_iter: int = 50, tol: float = 1e-10,
                  notes: list[str] | None = None) -> np.ndarray:
    r"""Maximum-likelihood logistic regression by IRLS (Newton) with step halving.

    The one iteration of both frame types: ``loglik(beta)`` gives
    :math:`\ell(\beta) = \sum_i y_i \eta_i - \log(1 + e^{\eta_i})`, ``derivatives(beta)``
    the gradient :math:`X^\top (y - \mu)` and information :math:`X^\top W X`
    (in memory from the design, on Dask as sums over partitions). A step is halved
    until the log-likelihood does not fall; iteration stops when it changes by less
    than ``tol`` relative. Quasi-separation (a cell entirely original or synthetic)
    drives some coefficients large; the fitted probabilities still converge, which
    is all pMSE needs.
    """
    ll = loglik(beta)
    for _ in range(max_iter):
        grad, H = derivatives(beta)
        with warnings.catch_warnings():
            # quasi-separation makes H ill-conditioned; say so once instead of a raw LinAlgWarning
            warnings.simplefilter("error", linalg.LinAlgWarning)
            try:
                step = linalg.solve(H, grad, assume_a="pos")
            except (linalg.LinAlgError, linalg.LinAlgWarning):
                step = linalg.lstsq(H, grad)[0]
                if notes is not None and "ill-conditioned" not in " ".join(notes):
                    notes.append("propensity fit ill-conditioned (quasi-separation): least-squares Newton steps used")
        t = 1.0
        for _ in range(30):
            new_ll = loglik(beta + t * step)
            if new_ll >= ll - 1e-12:
                break
            t /= 2
        beta = beta + t * step
        converged = abs(new_ll - ll) < tol * (abs(ll) + 1)
        ll = new_ll
        if converged:
            break
    return beta


def _logit_fit(X: np.ndarray | None, y: np.ndarray, max_iter: int = 50, tol: float = 1e-10,
               notes: list[str] | None = None, gram: np.ndarray | None = None,
               split: SplitGram | None = None) -> np.ndarray:
    """Fitted probabilities of the propensity logit of design ``X`` (:func:`_newton_logit`).

    ``gram``: :math:`X^\top X`, if already formed (:func:`pmse` forms it to drop aliased columns
    as R's ``glm`` does, by a pivoted QR of the Gram matrix). The Newton iterations
    start from the intercept-only fit, where every fitted probability is the share c of
    synthetic rows, so the first information matrix is :math:`c(1-c) X^\top X`: one
    N x p^2 product fewer per fit (about 2.5 CPU-s on the 129,200 x 956 design of issue 29).
    ``split``: the design as its dense and sparse columns (:class:`~synthmi._numeric.SplitGram`,
    ``X`` then unused): every product with it (X'WX, X b, X' r) reads those instead of the
    N x p array.
    """
    p = split.p if split is not None else X.shape[1]
    last: dict = {}
    # a large design's products from its dense and sparse columns (``split``), every step
    gram_w = split if split is not None else (lambda w: _gram(X, w))
    xb = split.matvec if split is not None else (lambda b: X @ b)
    xtr = split.rmatvec if split is not None else (lambda r: X.T @ r)

    def eta_of(b: np.ndarray) -> np.ndarray:
        if "b" not in last or not np.array_equal(last["b"], b):  # the accepted trial step's eta is reused
            last["b"], last["eta"] = b.copy(), xb(b)
        return last["eta"]

    def loglik(b: np.ndarray) -> float:
        eta_ = eta_of(b)
        return float(np.sum(y * eta_ - np.logaddexp(0.0, eta_)))

    def derivatives(b: np.ndarray):
        mu = expit(eta_of(b))
        w = np.maximum(mu * (1 - mu), 1e-12)
        if gram is not None and np.array_equal(b, beta):
            return xtr(y - mu), w[0] * gram  # the starting point: w is the same on every row
        return xtr(y - mu), gram_w(w)

    beta = np.zeros(p)
    c = y.mean()
    beta[0] = np.log(c / (1 - c))
    return expit(eta_of(_newton_logit(beta, loglik, derivatives, max_iter, tol, notes)))


def _cart_probs(X: np.ndarray, y: np.ndarray, min_samples_leaf: int, cp: float, rng: np.random.Generator) -> np.ndarray:
    from sklearn.tree import DecisionTreeClassifier

    c = y.mean()
    root_gini = 2 * c * (1 - c)
    # rpart's complexity parameter cp: a split must cut the (Gini) risk by cp
    # times the root risk; sklearn's weighted impurity decrease is the analogue.
    tree = DecisionTreeClassifier(
        min_samples_leaf=min_samples_leaf,
        min_impurity_decrease=cp * root_gini,
        random_state=int(rng.integers(2**31 - 1)),
    )
    tree.fit(X, y)
    return tree.predict_proba(X)[:, 1]


def _cart_matrix(stacked: pd.DataFrame, variables: Sequence[str]) -> np.ndarray:
    """Tree inputs: numerics as is (NaN -> sentinel below the minimum + indicator),
    categories as integer codes (missing as its own code)."""
    cols = []
    for v in variables:
        s = stacked[v]
        if pd.api.types.is_numeric_dtype(s) and not isinstance(s.dtype, pd.CategoricalDtype):
            x = s.to_numpy(dtype=float)
            miss = np.isnan(x)
            if miss.any():
                lo = np.nanmin(x) if (~miss).any() else 0.0
                cols.append(np.where(miss, lo - 1.0, x))
                cols.append(miss.astype(float))
            else:
                cols.append(x)
        else:
            cols.append(pd.Categorical(s.astype(object).where(s.notna(), "__NA__")).codes.astype(float))
    return np.column_stack(cols)


def _prepare(original, synthetic, variables, owner, spec=None):
    from ..spec import spec_frames

    check_dataframe(original, "original", min_rows=2)
    copies = check_copies(synthetic, "synthetic")
    spec, original, copies = spec_frames(spec, original, copies)
    if variables is None:
        # with a spec: its released columns (roles decide), else every column
        variables = [c for c in spec.released if c in original.columns] if spec is not None else list(original.columns)
    variables = check_columns_exist(original, variables, "variables", "original")
    for j, c in enumerate(copies):
        check_same_structure(original, c, f"synthetic[{j}]", columns=variables)
        if len(c) == 0:
            raise InputError(f"The 'synthetic[{j}]' DataFrame of {owner} is empty.")
    for v in variables:
        if original[v].isna().all():
            raise ColumnError(f"Column '{v}' of 'original' is entirely missing (all NaN).", data='original')
    return original, copies, variables


def _stack(original: pd.DataFrame, syn: pd.DataFrame, variables: Sequence[str]) -> tuple[pd.DataFrame, np.ndarray]:
    o = original[list(variables)].reset_index(drop=True)
    s = syn[list(variables)].reset_index(drop=True)
    for v in variables:
        if isinstance(o[v].dtype, pd.CategoricalDtype) or isinstance(s[v].dtype, pd.CategoricalDtype):
            # union of levels keeps concat categorical (codes comparable across the two)
            cats = list(o[v].cat.categories) if isinstance(o[v].dtype, pd.CategoricalDtype) else sorted(o[v].dropna().unique())
            o[v] = pd.Categorical(o[v], categories=cats)
            s[v] = pd.Categorical(s[v], categories=cats)
    stacked = pd.concat([o, s], ignore_index=True)
    y = np.r_[np.zeros(len(o)), np.ones(len(s))]
    return stacked, y


def pmse(
    original: pd.DataFrame,
    synthetic: Any,
    method: str = "logit",
    variables: Sequence[str] | None = None,
    maxorder: int = 1,
    n_perm: int = 50,
    min_samples_leaf: int = 5,
    cp: float = 0.0,
    random_state: int | np.random.Generator | None = 0,
    progress: Any = None,
    spec: Any = None,
    cart_rows: int = 100_000,
) -> PMSEResult:
    """pMSE and S_pMSE of one or more synthetic copies (pandas or Dask frames).

    Parameters
    ----------
    original : DataFrame
    synthetic : DataFrame, list of DataFrame or SyntheticData
    method : {"logit", "cart"}
        Propensity model. ``logit``: main effects plus (``maxorder=1``) all
        two-way interactions between different variables, aliased columns
        dropped; ``cart``: a classification tree with leaves of at least
        ``min_samples_leaf`` rows (synthpop's ``minbucket = 5``) and a
        permutation null.
    spec : ReleaseSpec, dict or path, optional
        Kinds of the variables (instead of dtypes); with ``variables=None`` the
        spec's released columns are compared.
    variables : list of str, optional
        Columns used (default: all of the original's).
    maxorder : {0, 1}
        0 = main effects only, 1 = with two-way interactions (synthpop default).
    n_perm : int
        Permutations for the CART null (synthpop default 50).
    cp : float
        Minimum Gini decrease of a CART split, as a fraction of the root's
        Gini impurity. Default 0: grow until ``min_samples_leaf``. rpart's
        ``cp = 1e-3`` (synthpop) is scaled by the root misclassification risk
        and has no exact sklearn analogue; a positive threshold here typically
        grows no split at all on a near-null copy, leaving pMSE = null = 0
        undefined (measured on Adult vs a bootstrap copy: cp = 1e-4 -> no
        split; cp = 0 -> S_pMSE = 1.02).
    random_state : int, Generator or None
        Seeds the CART fits and permutations (logit is deterministic).
    progress : callable, optional
        Called with a message before each copy (the CLI shows it).
    cart_rows : int, default 100000
        Dask frames only: expected size of the record-keyed subsample of the
        original and of each copy on which the CART pMSE is computed (stated
        in ``notes``); the logit pMSE uses every record (Newton on sums over
        partitions, equal to the in-memory fit to rounding).

    Returns
    -------
    PMSEResult
        One pMSE / expected null / S_pMSE per copy; ``mean_s_pmse`` averages.
    """
    method = check_option(method, "method", "pmse", ("logit", "cart"))
    maxorder = check_scalar(maxorder, "maxorder", "pmse", kind="int", lower=0, upper=1)
    n_perm = check_scalar(n_perm, "n_perm", "pmse", kind="int", lower=1)
    original, copies, variables = _frames(original, synthetic, variables, "pmse", spec)
    if is_dask_frame(original):
        cart_rows = check_scalar(cart_rows, "cart_rows", "pmse", kind="int", lower=10)
        return _pmse_partitioned(original, copies, method, variables, maxorder, n_perm, min_samples_leaf, cp,
                                 random_state, cart_rows)
    rng = check_random_state(random_state)
    pm_, e0, k_all = [], [], []
    per_copy_notes: list[list[str]] = []
    for j, syn in enumerate(copies):
        if progress is not None:
            progress(f"pMSE ({method}) of copy {j + 1}/{len(copies)}")
        stacked, y = _stack(original, syn, variables)
        N = len(y)
        c = y.mean()
        if method == "logit":
            copy_notes: list[str] = []
            X, _ = _design(stacked, variables, maxorder, copy_notes)
            large = X.size >= BLOCKED_GRAM_CELLS
            split = SplitGram(X) if large else None
            G = split() if large else _gram(X)
            keep = non_aliased_gram(G)
            # a large design's Gram matrix is reused as the first Newton step's information, and its
            # dense / sparse split serves every later product (_logit_fit; the N x p array is freed);
            # small designs keep their one product per step, unchanged
            X = None if large else X[:, keep]
            p_hat = _logit_fit(X, y, notes=copy_notes, gram=G[np.ix_(keep, keep)] if large else None,
                               split=split.select(keep) if large else None)
            per_copy_notes.append(copy_notes)
            k = len(keep)
            pm_.append(np.mean((p_hat - c) ** 2))
            e0.append((k - 1) * (1 - c) ** 2 * c / N)
            k_all.append(k)
        else:
            X = _cart_matrix(stacked, variables)
            p_hat = _cart_probs(X, y, min_samples_leaf, cp, rng)
            pm_.append(np.mean((p_hat - c) ** 2))
            perm = np.empty(n_perm)
            for b in range(n_perm):
                yp = rng.permutation(y)
                perm[b] = np.mean((_cart_probs(X, yp, min_samples_leaf, cp, rng) - c) ** 2)
            e0.append(perm.mean() / 2.0)
    pm_a, e0_a = np.asarray(pm_), np.asarray(e0)
    if np.any(e0_a <= 0):
        warnings.warn(
            "The null pMSE is 0 for some copy (the classifier found no split or no free "
            "coefficient); S_pMSE is undefined there and reported as NaN.",
            RuntimeWarning,
            stacklevel=2,
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        s_vals = np.where(e0_a > 0, pm_a / np.where(e0_a > 0, e0_a, 1.0), np.nan)
    return PMSEResult(
        pmse=pm_a,
        expected_null=e0_a,
        s_pmse=s_vals,
        method=method,
        k=np.asarray(k_all) if k_all else None,
        variables=list(variables),
        notes=merge_copy_notes(per_copy_notes, len(copies)),
    )


_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")


def merge_copy_notes(per_copy: Sequence[Sequence[str]], m: int) -> list[str]:
    """Each distinct note once, with the copies it applies to.

    Notes that differ only in their numbers (``design reduced from 2316 to 221
    columns`` in one copy, ``... to 219 ...`` in another) are one note with the
    range of each number (``219-221``); names in quotes are never merged. A note
    of some copies only says which (``; in copies 1, 3 of 5``), one of every copy
    ``; in all 5 copies``; with one copy nothing is added.
    """
    def template(note: str) -> tuple[str, list[float]]:
        parts, numbers, pos = [], [], 0
        for q in _QUOTED.finditer(note):
            plain = note[pos:q.start()]
            numbers += [float(x) for x in _NUMBER.findall(plain)]
            parts += [_NUMBER.sub("{}", plain.replace("{", "{{").replace("}", "}}")),
                      q.group(0).replace("{", "{{").replace("}", "}}")]
            pos = q.end()
        plain = note[pos:]
        numbers += [float(x) for x in _NUMBER.findall(plain)]
        parts.append(_NUMBER.sub("{}", plain.replace("{", "{{").replace("}", "}}")))
        return "".join(parts), numbers

    groups: dict[str, dict[str, Any]] = {}
    for j, notes in enumerate(per_copy, start=1):
        for note in notes:
            key, numbers = template(note)
            g = groups.setdefault(key, {"copies": [], "numbers": []})
            if j not in g["copies"]:
                g["copies"].append(j)
            g["numbers"].append(numbers)

    def fmt(x: float) -> str:
        return f"{x:g}" if x != int(x) else str(int(x))

    out = []
    for key, g in groups.items():
        cols = list(zip(*g["numbers"])) if g["numbers"][0] else []
        shown = [fmt(min(c)) if min(c) == max(c) else f"{fmt(min(c))}-{fmt(max(c))}" for c in cols]
        text = key.format(*shown)
        if m > 1:
            k = len(g["copies"])
            text += f"; in all {m} copies" if k == m else f"; in cop{'y' if k == 1 else 'ies'} " + \
                ", ".join(map(str, g["copies"])) + f" of {m}"
        out.append(text)
    return out


# --------------------------------------------------------------------------- tables
def unchanged_columns(original: pd.DataFrame, synthetic: Any, variables: Sequence[str] | None = None) -> list[str]:
    """The columns every copy releases unchanged: same rows, same values (missing where the
    original is) as the original. Their tables match the original's exactly (S_pMSE 0 by
    construction), which says nothing about the synthesis."""
    copies = check_copies(synthetic, "synthetic")
    cols = list(original.columns) if variables is None else list(variables)
    out = []
    for v in cols:
        o = original[v].reset_index(drop=True)
        if all(len(c) == len(o) and v in c.columns
               and c[v].reset_index(drop=True).astype(o.dtype, errors="ignore").equals(o) for c in copies):
            out.append(v)
    return out


def _binned(s: pd.Series, edges: np.ndarray | None) -> np.ndarray:
    """Integer cell codes for a column; numerics cut at shared quantile edges."""
    if edges is not None:
        x = s.to_numpy(dtype=float)
        codes = np.searchsorted(edges, x, side="right")
        codes[np.isnan(x)] = len(edges) + 1
        return codes
    return pd.Categorical(s.astype(object).where(s.notna(), "__NA__")).codes.astype(np.int64)


def table_pmse(o_codes: np.ndarray, s_codes: np.ndarray) -> tuple[float, float, int]:
    r"""pMSE of a saturated propensity model on one table, and its null.

    For a table the saturated logit's fitted propensity in cell :math:`j` is
    :math:`n_{2j}/(n_{1j}+n_{2j})`, so

    .. math::

        \mathrm{pMSE} = \frac1N\sum_j (n_{1j}+n_{2j})\Big(\frac{n_{2j}}{n_{1j}+n_{2j}} - c\Big)^2,
        \qquad E_0 = \frac{(k-1)(1-c)^2 c}{N},

    :math:`k` the number of non-empty cells (synthpop ``utility.tab``).
    Returns (pMSE, expected null, k - 1).
    """
    cells, inv = np.unique(np.r_[o_codes, s_codes], return_inverse=True)
    inv = np.asarray(inv).reshape(-1)
    n1 = np.bincount(inv[: len(o_codes)], minlength=len(cells))
    n2 = np.bincount(inv[len(o_codes) :], minlength=len(cells))
    return table_pmse_counts(n1, n2)


def utility_tables(
    original: pd.DataFrame,
    synthetic: Any,
    variables: Sequence[str] | None = None,
    ways: Sequence[int] = (1, 2),
    n_bins: int = 5,
    spec: Any = None,
) -> UtilityTablesResult:
    """S_pMSE of every one-way and two-way table (synthpop ``utility.tables``).

    A numeric column with more than ``n_bins`` distinct values is cut into
    groups from the original and synthetic values pooled (synthpop's
    ``ngroups``), so the original's values alone do not define the cells; a
    value holding at least ``1/n_bins`` of the pooled values (a point mass: a 0,
    a top-code) is a cell of its own and the rest are cut at their quantiles
    (:func:`numeric_table_edges`). Fewer distinct values: one cell per value.
    Each row is a table; its ``s_pmse`` is averaged over copies
    (``s_pmse_copy_j`` kept per copy).

    ``original`` and the copies are pandas or Dask frames (one code path,
    :mod:`synthmi.engine`): the quantiles come from the exact value counts of
    the pooled column (:func:`quantile_from_counts`, NumPy's linear rule) and
    every table's cell counts are per-partition ``bincount`` s added over
    partitions (integers), so the result is the same for every partitioning.

    Returns
    -------
    UtilityTablesResult
        ``summary()`` (per table: ``way``, ``df``, ``pmse``, ``s_pmse``), ``to_dict()``
        and ``to_frame()``: the table with columns ``variables``, ``way``, ``df``,
        ``pmse``, ``s_pmse`` and one ``s_pmse_copy_j`` per copy, sorted by ``way``
        then ``s_pmse`` descending.
    """
    original, copies, variables = _frames(original, synthetic, variables, "utility_tables", spec)
    n_bins = check_scalar(n_bins, "n_bins", "utility_tables", kind="int", lower=2)
    for w in ways:
        if w not in (1, 2, 3):
            raise ParameterError(f"The 'ways' parameter of utility_tables takes 1, 2 or 3. Got {w!r} instead.", parameter='ways', owner='utility_tables')
    meta = meta_of(original)
    o_counts = {v: value_counts(original, v) for v in variables}
    per_copy = []
    for syn in copies:
        edges, cats, sizes = {}, {}, {}
        for v in variables:
            vc = o_counts[v].add(value_counts(syn, v), fill_value=0)
            vc = vc[vc > 0]  # a Categorical's value_counts lists unobserved levels too
            dt = meta[v].dtype
            if _is_numeric(dt):
                obs = vc[vc.index.notna()]
                if len(obs) > n_bins:
                    edges[v] = numeric_table_edges(obs.index.to_numpy(dtype=float), obs.to_numpy(), n_bins)
                    cats[v] = None
                    sizes[v] = len(edges[v]) + 2
                    continue
            edges[v] = None
            vals = pd.Series(vc.index, dtype=object)
            # levels in the order _binned gives the pooled column: its values' sorted order
            cats[v] = list(pd.Categorical(vals.where(vals.notna(), "__NA__")).categories)
            sizes[v] = len(cats[v])
        o_tab = _sum_tables(original, variables, edges, cats, sizes, ways)
        s_tab = _sum_tables(syn, variables, edges, cats, sizes, ways)
        per_copy.append((o_tab, s_tab))
    rows = []
    for w in ways:
        for combo in combinations(variables, w):
            vals_, nulls, dfs = [], [], []
            for o_tab, s_tab in per_copy:
                val, e0, df = table_pmse_counts(o_tab[combo], s_tab[combo])
                vals_.append(val)
                nulls.append(e0)
                dfs.append(df)
            s_vals = np.array(vals_) / np.where(np.array(nulls) > 0, nulls, np.nan)
            row = {
                "variables": ":".join(combo),
                "way": w,
                "df": float(np.mean(dfs)),
                "pmse": float(np.mean(vals_)),
                "s_pmse": float(np.nanmean(s_vals)) if np.isfinite(s_vals).any() else np.nan,
            }
            for j, sv in enumerate(s_vals, start=1):
                row[f"s_pmse_copy_{j}"] = float(sv)
            rows.append(row)
    out = pd.DataFrame(rows)
    out = out.sort_values(["way", "s_pmse"], ascending=[True, False]).reset_index(drop=True)
    return UtilityTablesResult(out, ways=[int(w) for w in ways], n_bins=int(n_bins), n_copies=len(copies))


def _frames(original, synthetic, variables, owner, spec=None):
    """(original, copies, variables) of a measure: :func:`_prepare` in memory; for a Dask
    original, dask copies with the same structure on the variables."""
    from ..spec import as_spec

    if not is_dask_frame(original):
        return _prepare(original, synthetic, variables, owner, spec)
    copies = copies_of(synthetic)
    meta = meta_of(original)
    if variables is None:
        variables = [c for c in as_spec(spec).released if c in meta.columns] if spec is not None else list(meta.columns)
    variables = check_columns_exist(meta, variables, "variables", "original")
    for j, c in enumerate(copies):
        check_same_structure(meta, meta_of(c), f"synthetic[{j}]", columns=variables)
    return original, copies, variables


def _is_numeric(dtype) -> bool:
    return pd.api.types.is_numeric_dtype(dtype) and not isinstance(dtype, pd.CategoricalDtype)


def numeric_table_edges(values: np.ndarray, counts: np.ndarray, n_bins: int) -> np.ndarray:
    r"""Cell edges of a numeric column in a table, from its pooled distinct values and counts.

    A value is cut into cell ``searchsorted(edges, x, side="right")``: cells
    :math:`[e_{i}, e_{i+1})`, synthpop's ``cut(right = FALSE)``. With :math:`N`
    the pooled (original + copy) non-missing count, a value :math:`v` with count
    :math:`n_v` is a *point mass* when

    .. math::

        n_v \ge N / G \quad (G = \texttt{n\_bins}; \text{ compared as } G n_v \ge N),

    and gets the cell :math:`[v, v]` (edges :math:`v` and the next float above
    it). The other values are cut at their own quantiles (NumPy's linear rule,
    :func:`quantile_from_counts`) at :math:`j / G'`, :math:`j = 1..G'-1`,
    :math:`G' = \max(1, G - \#\text{masses})`; a value holding at least
    :math:`1/G'` of those others is a mass too (repeated until none is), so no
    value spans a whole group of the cut and no two of its quantiles coincide
    (randhie's ``physlm``: 0 is 83% of the values, 1.0 only 6% but 67% of the
    rest, where it would sit on a cut). A mass inside one of those groups
    splits it (cells stay intervals), so there are at most :math:`G + \#\text{masses}`
    non-empty cells, and at least 2 whenever there are 2 distinct values. Without
    a mass this is the pooled :math:`G`-quantile cut (edges ``unique``).

    Why: a value that holds more than one quantile group's share makes
    consecutive quantiles equal; ``unique`` then merges their groups, and a
    column that is 83% zeros (randhie's ``physlm``) collapses to one cell: df 0,
    S_pMSE NaN, its two-way tables blind to it. A mass on a cut also puts
    all of it on one side, so a copy that smears it by any tiny noise moves half
    of it across the cut. Its own cell asks exactly whether the copy reproduces
    the mass, and is stable under such noise only if the copy keeps the value.
    A share of :math:`1/G` is the size of the cell the mass would have had.

    synthpop (``group_num`` in ``utility.tab``; ``numtocat.syn``) uses
    ``unique(classIntervals(c(orig, syn), n = ngroups, style = "quantile")$brks)``
    with ``cut(right = FALSE, include.lowest = TRUE)``: the same pooled cut and
    the same collapse (83% zeros gives the breaks 0 and the maximum: one group).
    Its remedy is ``cont.na``: values the user names (such as -8 or 0) are set
    apart as categories of their own before the cut. This rule finds those
    values from the pooled counts, the copy's included.
    """
    values = np.asarray(values, dtype=float)
    counts = np.asarray(counts, dtype=np.int64)
    mass = np.zeros(len(values), dtype=bool)
    n_rest = int(n_bins)
    while True:  # each pass sets apart at least one value, or stops
        new = ~mass & (counts * n_rest >= int(counts[~mass].sum()))  # integers: exact at a share of 1/G
        if not new.any():
            break
        mass |= new
        n_rest = max(1, int(n_bins) - int(mass.sum()))
    rest = ~mass
    parts = [np.r_[v, np.nextafter(v, np.inf)] for v in values[mass]]
    if rest.any() and n_rest > 1:
        parts.append(quantile_from_counts(values[rest], counts[rest], np.linspace(0, 1, n_rest + 1)[1:-1]))
    return np.unique(np.concatenate(parts)) if parts else np.array([], dtype=float)


def quantile_from_counts(values: np.ndarray, counts: np.ndarray, qs: np.ndarray) -> np.ndarray:
    """``np.nanquantile(x, qs)`` (linear method) of the array with these distinct values and counts.

    Reproduces NumPy's arithmetic: virtual index :math:`h = (N - 1) q` (NumPy's
    ``linear`` entry, not the algebraically equal :math:`Nq + (1 - q) - 1`, which
    differs in the last bit: 1.7999999999999998 for 1.8),
    neighbours :math:`x_{\\lfloor h \\rfloor}, x_{\\lfloor h \\rfloor + 1}` from the
    cumulative counts, and NumPy's two-sided ``_lerp``.
    """
    order = np.argsort(values, kind="stable")
    values = np.asarray(values, dtype=float)[order]
    counts = np.asarray(counts, dtype=np.int64)[order]
    N = int(counts.sum())
    cum = np.cumsum(counts)
    qs = np.asarray(qs, dtype=float)
    virtual = (N - 1) * qs  # numpy's method "linear"
    prev = np.floor(virtual).astype(np.int64)
    gamma = virtual - prev
    prev = np.clip(prev, 0, N - 1)
    nxt = np.clip(prev + 1, 0, N - 1)
    a = values[np.searchsorted(cum, prev, side="right")]
    b = values[np.searchsorted(cum, nxt, side="right")]
    diff = b - a
    out = a + diff * gamma
    hi = gamma >= 0.5
    out[hi] = (b - diff * (1 - gamma))[hi]
    return out


def _cell_codes(s: pd.Series, edges: np.ndarray | None, cats: list | None) -> np.ndarray:
    if edges is not None:
        return _binned(s, edges)
    vals = s.astype(object).where(s.notna(), "__NA__")
    return pd.Categorical(vals, categories=cats).codes.astype(np.int64)


def _partition_tables(part: pd.DataFrame, offset: int, variables, edges, cats, sizes, ways) -> dict:
    codes = {v: _cell_codes(part[v], edges[v], cats[v]) for v in variables}
    out = {}
    for w in ways:
        for combo in combinations(variables, w):
            flat = np.zeros(len(part), dtype=np.int64)
            size = 1
            for v in combo:
                flat = flat * sizes[v] + codes[v]
                size *= sizes[v]
            out[combo] = np.bincount(flat, minlength=size)
    return out


def _sum_tables(frame, variables, edges, cats, sizes, ways) -> dict:
    """Cell counts of every table, summed over the partitions (integers: exact)."""
    proj = frame[list(variables)]
    off = frame_offsets(proj)  # of the projection that is mapped (a read_parquet may merge files)
    parts = compute(*map_frame(proj, off, _partition_tables, variables, edges, cats, sizes, ways))
    total: dict = {}
    for pr in parts:
        for k, v in pr.items():
            total[k] = total[k] + v if k in total else v.copy()
    return total


def table_pmse_counts(n1: np.ndarray, n2: np.ndarray) -> tuple[float, float, int]:
    """:func:`table_pmse` from the cell counts of the two frames (cells in code order)."""
    keep = (n1 + n2) > 0
    n1 = n1[keep].astype(float)
    n2 = n2[keep].astype(float)
    N = n1.sum() + n2.sum()
    c = n2.sum() / N
    tot = n1 + n2
    p = n2 / tot
    value = float(np.sum(tot * (p - c) ** 2) / N)
    df = int(keep.sum()) - 1
    return value, df * (1 - c) ** 2 * c / N, df


# --------------------------------------------------------------------------- pMSE on partitions
def _stacked_partitioned(original, syn, variables):
    o = original[variables]
    s = syn[variables]
    for v in variables:
        if isinstance(meta_of(o)[v].dtype, pd.CategoricalDtype):
            cats = list(meta_of(o)[v].cat.categories)
            s = s.assign(**{v: s[v].astype(pd.CategoricalDtype(cats))})
    return concat_rows([o.assign(__y=0.0), s.assign(__y=1.0)])


class _Design:
    """The propensity design of :func:`_design` (no reduction), with encodings fixed globally
    so that every partition builds the same columns."""

    def __init__(self, variables, kinds, mu, sd, has_na, levels, maxorder):
        self.variables, self.kinds, self.mu, self.sd = variables, kinds, mu, sd
        self.has_na, self.levels, self.maxorder = has_na, levels, maxorder
        self.keep = None

    def main(self, part: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
        cols, names = [], []
        for v in self.variables:
            s = part[v]
            if self.kinds[v] == "numeric":
                x = s.to_numpy(dtype=float)
                miss = np.isnan(x)
                cols.append(np.where(miss, 0.0, (x - self.mu[v]) / self.sd[v]))
                names.append(v)
                if self.has_na[v]:
                    cols.append(miss.astype(float))
                    names.append(f"{v}_NA")
            else:
                vals = s.astype(object).where(s.notna(), "__NA__")
                codes = pd.Categorical(vals, categories=self.levels[v]).codes
                for k, lev in enumerate(self.levels[v][1:], start=1):
                    cols.append((codes == k).astype(float))
                    names.append(f"{v}[{lev}]")
        n = len(part)
        return (np.column_stack(cols) if cols else np.empty((n, 0))), names

    def matrix(self, part: pd.DataFrame) -> np.ndarray:
        main, names = self.main(part)
        blocks = [np.ones((len(part), 1)), main]
        if self.maxorder >= 1:
            owner = [_owner(nm) for nm in names]
            for a, b in combinations(range(len(names)), 2):
                if owner[a] != owner[b]:
                    blocks.append((main[:, a] * main[:, b])[:, None])
        X = np.hstack(blocks)
        return X if self.keep is None else X[:, self.keep]


def _logit_pmse_partitioned(original, syn, variables, maxorder, max_iter=50, tol=1e-10,
                            notes: list[str] | None = None) -> tuple[float, float, int]:
    r"""Logit pMSE of one copy by :func:`_newton_logit` (as :func:`_logit_fit` in memory),
    each step's log-likelihood, gradient :math:`X^\top (y - \mu)` and information
    :math:`X^\top W X` summed over partitions in an order fixed by record position
    (:func:`synthmi.engine.canonical_sum`); aliased columns dropped by the pivoted QR of the
    summed :math:`X^\top X` (:func:`synthmi._numeric.non_aliased_gram`)."""
    st = _stacked_partitioned(original, syn, variables)
    off = frame_offsets(st)
    N = int(off[-1])
    meta = meta_of(st)
    kinds = {v: "numeric" if _is_numeric(meta[v].dtype) else "categorical" for v in variables}
    num = [v for v in variables if kinds[v] == "numeric"]
    mu, sd, has_na, levels = {}, {}, {}, {}
    if num:
        def f1(p):
            x = p[num].to_numpy(dtype=float)
            return (np.nansum(x, axis=0), (~np.isnan(x)).sum(axis=0).astype(float))
        sx, cnt = canonical_sum(st, off, f1)
        m_ = sx / np.maximum(cnt, 1)

        def f2(p):
            x = p[num].to_numpy(dtype=float)
            return (np.nansum((x - m_) ** 2, axis=0),)
        (ss,) = canonical_sum(st, off, f2)
        for k, v in enumerate(num):
            mu[v] = float(m_[k]) if cnt[k] else 0.0
            s_ = float(np.sqrt(ss[k] / cnt[k])) if cnt[k] else 1.0
            sd[v] = s_ if s_ > 0 else 1.0
            has_na[v] = cnt[k] < N
    for v in variables:
        if kinds[v] == "categorical":
            vc = value_counts(st, v)
            vc = vc[vc > 0]
            vals = pd.Series(vc.index, dtype=object)
            levels[v] = list(pd.Categorical(vals.where(vals.notna(), "__NA__")).categories)
    design = _Design(variables, kinds, mu, sd, has_na, levels, maxorder)
    (G,) = canonical_sum(st, off, lambda p: ((lambda X: X.T @ X)(design.matrix(p)),))
    design.keep = non_aliased_gram(G)
    k = len(design.keep)
    (ysum,) = canonical_sum(st, off, lambda p: (np.array(p["__y"].to_numpy().sum()),))
    c = float(ysum) / N

    def loglik(beta):
        def f(p):
            eta = design.matrix(p) @ beta
            return (np.array(np.sum(p["__y"].to_numpy() * eta - np.logaddexp(0.0, eta))),)
        return float(canonical_sum(st, off, f)[0])

    def derivatives(beta):
        def f(p):
            X = design.matrix(p)
            mu_ = expit(X @ beta)
            w = np.maximum(mu_ * (1 - mu_), 1e-12)
            return X.T @ (p["__y"].to_numpy() - mu_), (X * w[:, None]).T @ X
        return canonical_sum(st, off, f)

    beta = np.zeros(k)
    beta[0] = np.log(c / (1 - c))
    beta = _newton_logit(beta, loglik, derivatives, max_iter, tol, notes)
    (sq,) = canonical_sum(st, off, lambda p: (np.array(np.sum((expit(design.matrix(p) @ beta) - c) ** 2)),))
    return float(sq) / N, (k - 1) * (1 - c) ** 2 * c / N, k


def _subsample(part: pd.DataFrame, offset: int, entropy, frac: float) -> pd.DataFrame:
    u = PositionalRNG(entropy, tag=(0,), offset=offset).random(len(part))
    return part[u < frac]


def _pmse_partitioned(original, copies, method, variables, maxorder, n_perm, min_samples_leaf, cp, random_state,
                      cart_rows) -> PMSEResult:
    """:func:`pmse` of Dask frames: the logit fitted on all records by Newton on sums over
    partitions; CART (a tree needs every record at every split) on a record-keyed Bernoulli
    subsample of ``cart_rows`` expected records of the original and of each copy."""
    if method == "logit":
        per_copy_notes: list[list[str]] = [[] for _ in copies]
        res = [_logit_pmse_partitioned(original, s, variables, maxorder, notes=nt) for s, nt in zip(copies, per_copy_notes)]
        pm_a = np.array([r[0] for r in res])
        e0 = np.array([r[1] for r in res])
        with np.errstate(divide="ignore", invalid="ignore"):
            s_vals = np.where(e0 > 0, pm_a / np.where(e0 > 0, e0, 1.0), np.nan)
        return PMSEResult(pmse=pm_a, expected_null=e0, s_pmse=s_vals, method="logit",
                          k=np.array([r[2] for r in res]), variables=list(variables),
                          notes=["logit propensity model fitted on all records by Newton on sums over partitions",
                                 *merge_copy_notes(per_copy_notes, len(copies))])
    rng = check_random_state(random_state)
    entropy = entropy_from(rng)
    proj = original[list(variables)]
    off = frame_offsets(proj)  # of the projection that is mapped
    n = int(off[-1])
    frac = min(1.0, cart_rows / n)
    o_sub = pd.concat(compute(*map_frame(proj, off, _subsample, entropy, frac)))
    s_subs = []
    for s in copies:
        sp = s[list(variables)]
        s_subs.append(pd.concat(compute(*map_frame(sp, frame_offsets(sp), _subsample, entropy, frac))))
    r = pmse(o_sub, s_subs, method="cart", variables=variables, maxorder=maxorder, n_perm=n_perm,
             min_samples_leaf=min_samples_leaf, cp=cp, random_state=rng)
    note = (f"CART pMSE on a subsample: each record kept with probability {frac:.6g} (keyed by record position and "
            f"random_state), {len(o_sub)} of {n} original records and {', '.join(str(len(x)) for x in s_subs)} "
            "records of the copies; a tree needs every record at every split, so it is not fitted on all records")
    return PMSEResult(pmse=r.pmse, expected_null=r.expected_null, s_pmse=r.s_pmse, method="cart", k=None,
                      variables=list(variables), notes=[note, *r.notes])
