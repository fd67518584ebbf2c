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
Measured (k - 1 = 9, 400 replications each; ``tests/test_utility.py``):
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
from .._validate import (
    check_columns_exist,
    check_copies,
    check_dataframe,
    check_option,
    check_random_state,
    check_same_structure,
    check_scalar,
)


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


# --------------------------------------------------------------------------- design
def _encode_main_effects(stacked: pd.DataFrame, variables: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """Main-effect columns: standardised numerics (+ missing indicator), dummies
    for categories (first level dropped, missing as its own level) — synthpop's
    treatment of NA in the propensity model."""
    cols: list[np.ndarray] = []
    names: list[str] = []
    for v in variables:
        s = stacked[v]
        if pd.api.types.is_numeric_dtype(s) and not isinstance(s.dtype, pd.CategoricalDtype):
            x = s.to_numpy(dtype=float)
            miss = np.isnan(x)
            mu = np.nanmean(x) if (~miss).any() else 0.0
            sd = np.nanstd(x) if (~miss).any() else 1.0
            sd = sd if sd > 0 else 1.0
            cols.append(np.where(miss, 0.0, (x - mu) / sd))
            names.append(v)
            if miss.any():
                cols.append(miss.astype(float))
                names.append(f"{v}_NA")
        else:
            codes = pd.Categorical(s.astype(object).where(s.notna(), "__NA__")).codes
            levels = np.unique(codes)
            for lev in levels[1:]:
                cols.append((codes == lev).astype(float))
                names.append(f"{v}[{lev}]")
    if not cols:
        return np.empty((len(stacked), 0)), []
    return np.column_stack(cols), names


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


def _sparse_if_worth_it(X: np.ndarray):
    """A CSR copy of a large, mostly-zero design (dummy columns and their interactions:
    X'WX then costs N * nnz_row^2 instead of N * p^2); None otherwise."""
    # measured on the 40,000-row agency file (206 columns, many numeric): scipy's sparse
    # X'WX was twice as slow as the dense BLAS product, so this is kept for the extreme case
    if X.size < 50_000_000:
        return None
    if np.count_nonzero(X) > 0.3 * X.size:
        return None
    from scipy import sparse

    return sparse.csr_matrix(X)


def _non_aliased(X: np.ndarray, tol: float = 1e-9) -> np.ndarray:
    """Indices of a maximal linearly independent column set, as R's ``glm``
    drops aliased coefficients: pivoted QR of the (p x p) Gram matrix, which
    has X's rank and costs far less than a QR of the N x p design."""
    Xs = _sparse_if_worth_it(X)
    return _non_aliased_gram(X.T @ X if Xs is None else (Xs.T @ Xs).toarray(), tol)


def _non_aliased_gram(G: np.ndarray, tol: float = 1e-9) -> np.ndarray:
    """:func:`_non_aliased` from the Gram matrix X'X (which synthmi.scale sums over partitions)."""
    R, piv = linalg.qr(G, mode="r", pivoting=True)
    d = np.abs(np.diag(R))
    if d.size == 0:
        return np.array([], dtype=int)
    rank = int(np.sum(d > tol * d[0]))
    return np.sort(piv[:rank])


def _logit_fit(X: np.ndarray, y: np.ndarray, max_iter: int = 50, tol: float = 1e-10,
               notes: list[str] | None = None) -> np.ndarray:
    """Maximum-likelihood logistic regression by IRLS (Newton) with step halving.

    Returns fitted probabilities. Quasi-separation (a cell entirely original
    or synthetic) drives some coefficients large; the fitted probabilities
    still converge, which is all pMSE needs.
    """
    n, p = X.shape
    Xs = _sparse_if_worth_it(X)
    mul = (lambda b: X @ b) if Xs is None else (lambda b: Xs @ b)
    beta = np.zeros(p)
    c = y.mean()
    beta[0] = np.log(c / (1 - c))
    eta = mul(beta)

    def loglik(eta_: np.ndarray) -> float:
        return float(np.sum(y * eta_ - np.logaddexp(0.0, eta_)))

    ll = loglik(eta)
    for _ in range(max_iter):
        mu = expit(eta)
        w = np.maximum(mu * (1 - mu), 1e-12)
        if Xs is None:
            grad = X.T @ (y - mu)
            Xw = X * np.sqrt(w)[:, None]
            H = Xw.T @ Xw
        else:
            grad = Xs.T @ (y - mu)
            H = (Xs.T @ Xs.multiply(w[:, None]).tocsr()).toarray()
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
            new_eta = mul(beta + t * step)
            new_ll = loglik(new_eta)
            if new_ll >= ll - 1e-12:
                break
            t /= 2
        beta = beta + t * step
        eta = new_eta
        converged = abs(new_ll - ll) < tol * (abs(ll) + 1)
        ll = new_ll
        if converged:
            break
    return expit(eta)


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
            raise ValueError(f"The 'synthetic[{j}]' DataFrame of {owner} is empty.")
    for v in variables:
        if original[v].isna().all():
            raise ValueError(f"Column '{v}' of 'original' is entirely missing (all NaN).")
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
) -> PMSEResult:
    """pMSE and S_pMSE of one or more synthetic copies.

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

    Returns
    -------
    PMSEResult
        One pMSE / expected null / S_pMSE per copy; ``mean_s_pmse`` averages.
    """
    method = check_option(method, "method", "pmse", ("logit", "cart"))
    maxorder = check_scalar(maxorder, "maxorder", "pmse", kind="int", lower=0, upper=1)
    n_perm = check_scalar(n_perm, "n_perm", "pmse", kind="int", lower=1)
    original, copies, variables = _prepare(original, synthetic, variables, "pmse", spec)
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
            keep = _non_aliased(X)
            X = X[:, keep]
            p_hat = _logit_fit(X, y, notes=copy_notes)
            per_copy_notes.append(copy_notes)
            k = X.shape[1]
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
    n1 = np.bincount(inv[: len(o_codes)], minlength=len(cells)).astype(float)
    n2 = np.bincount(inv[len(o_codes) :], minlength=len(cells)).astype(float)
    N = n1.sum() + n2.sum()
    c = n2.sum() / N
    tot = n1 + n2
    p = n2 / tot
    value = float(np.sum(tot * (p - c) ** 2) / N)
    df = len(cells) - 1
    return value, df * (1 - c) ** 2 * c / N, df


def utility_tables(
    original: pd.DataFrame,
    synthetic: Any,
    variables: Sequence[str] | None = None,
    ways: Sequence[int] = (1, 2),
    n_bins: int = 5,
    spec: Any = None,
) -> pd.DataFrame:
    """S_pMSE of every one-way and two-way table (synthpop ``utility.tables``).

    Continuous variables are cut into ``n_bins`` groups at quantiles of the
    original and synthetic values pooled (synthpop's ``ngroups``), so the
    original's values alone do not define the bins. Each row is a table; its
    ``s_pmse`` is averaged over copies (``s_pmse_copy_j`` kept per copy).

    Returns
    -------
    DataFrame
        Columns ``variables``, ``way``, ``df``, ``pmse``, ``s_pmse`` and one
        ``s_pmse_copy_j`` per copy, sorted by ``way`` then ``s_pmse`` descending.
    """
    original, copies, variables = _prepare(original, synthetic, variables, "utility_tables", spec)
    n_bins = check_scalar(n_bins, "n_bins", "utility_tables", kind="int", lower=2)
    for w in ways:
        if w not in (1, 2, 3):
            raise ValueError(f"The 'ways' parameter of utility_tables takes 1, 2 or 3. Got {w!r} instead.")
    rows = []
    per_copy_codes = []
    for syn in copies:
        stacked, _ = _stack(original, syn, variables)
        n1 = len(original)
        codes = {}
        for v in variables:
            s = stacked[v]
            edges = None
            if pd.api.types.is_numeric_dtype(s) and not isinstance(s.dtype, pd.CategoricalDtype):
                if s.nunique() > n_bins:
                    qs = np.nanquantile(s.to_numpy(dtype=float), np.linspace(0, 1, n_bins + 1)[1:-1])
                    edges = np.unique(qs)
            c = _binned(s, edges)
            codes[v] = (c[:n1], c[n1:])
        per_copy_codes.append(codes)
    for w in ways:
        for combo in combinations(variables, w):
            vals, nulls, dfs = [], [], []
            for codes in per_copy_codes:
                o = np.zeros(len(codes[combo[0]][0]), dtype=np.int64)
                s = np.zeros(len(codes[combo[0]][1]), dtype=np.int64)
                for v in combo:
                    base = int(max(codes[v][0].max(initial=0), codes[v][1].max(initial=0))) + 1
                    o = o * base + codes[v][0]
                    s = s * base + codes[v][1]
                val, e0, df = table_pmse(o, s)
                vals.append(val)
                nulls.append(e0)
                dfs.append(df)
            s_vals = np.array(vals) / np.where(np.array(nulls) > 0, nulls, np.nan)
            row = {
                "variables": ":".join(combo),
                "way": w,
                "df": float(np.mean(dfs)),
                "pmse": float(np.mean(vals)),
                "s_pmse": float(np.nanmean(s_vals)) if np.isfinite(s_vals).any() else np.nan,
            }
            for j, sv in enumerate(s_vals, start=1):
                row[f"s_pmse_copy_{j}"] = float(sv)
            rows.append(row)
    out = pd.DataFrame(rows)
    return out.sort_values(["way", "s_pmse"], ascending=[True, False]).reset_index(drop=True)
