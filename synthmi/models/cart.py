"""CART synthesis: synthpop's default ``cart`` method (Reiter 2005; Nowok et al. 2016).

Each quasi-identifier, in visit order, gets a decision tree on the kept
columns Z and the quasi-identifiers visited before it. A synthetic value is
not the leaf's mean or modal class: it is one of the *observed* values of
the training records in the leaf that the synthetic record falls into, drawn
with equal probability (synthpop's ``syn.cart``; for a categorical variable
this is the same as drawing from the leaf's class proportions).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from .._validate import Interval, Options
from ..schema import Schema
from .base import Synthesizer
from .tree import nrd0
from ..errors import ParameterError

__all__ = ["CartSynthesizer"]

# rpart's default ``maxdepth`` (rpart.control); synthpop leaves it unchanged.
_RPART_MAXDEPTH = 30


class _Encoder:
    """Numeric design matrix for the trees.

    Continuous columns enter as they are; binary and ordinal columns as their
    integer codes 0..C-1 (a split on ordered codes respects the order, and for
    two levels it is the same split as an indicator); nominal columns with
    more than two levels are one-hot coded, because a tree on arbitrary codes
    of unordered levels can only split them in code order, whereas rpart
    searches subsets of levels.
    """

    def __init__(self, schema: Schema, columns: Sequence[str]) -> None:
        self.schema = schema
        self.columns = list(columns)

    def block(self, name: str, values: np.ndarray) -> np.ndarray:
        """Columns of the design matrix for one variable.

        ``values`` are floats for continuous variables, codes 0..C-1 otherwise.
        """
        var = self.schema[name]
        if var.kind == "nominal" and var.n_levels > 2:
            codes = np.asarray(values, dtype=np.int64)
            out = np.zeros((len(codes), var.n_levels), dtype=np.float64)
            out[np.arange(len(codes)), codes] = 1.0
            return out
        return np.asarray(values, dtype=np.float64).reshape(-1, 1)


def _leaf_donors(leaf_train: np.ndarray, y_train: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Group the training responses by leaf: (leaf ids, start, count, y sorted by leaf then value).

    Within a leaf the donors are sorted by value, so the fitted model keeps the
    multiset of each leaf's values but not which record held which."""
    order = np.lexsort((y_train, leaf_train))
    leaves_sorted = leaf_train[order]
    ids, start, count = np.unique(leaves_sorted, return_index=True, return_counts=True)
    return ids, start, count, y_train[order]


def _draw_from_leaves(
    donors: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], leaf_new: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """For each new record, one observed response drawn uniformly from its leaf."""
    ids, start, count, y_sorted = donors
    pos = np.searchsorted(ids, leaf_new)
    # Every leaf of a fitted tree holds >= min_samples_leaf training rows, so
    # each new record's leaf is among the training leaves.
    offset = rng.integers(0, count[pos])
    return y_sorted[start[pos] + offset]


def density_smooth(ysyn: np.ndarray, yobs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """synthpop's ``syn.smooth(..., smoothing = "density")`` with R's ``bw.nrd0`` bandwidth.

    Returns a new array; see ``CartSynthesizer(smoothing=...)``.
    """
    y = np.asarray(ysyn, dtype=np.float64).copy()
    if len(y) < 2:
        return y
    vals, counts = np.unique(y, return_counts=True)
    use = np.ones(len(y), dtype=bool)
    if counts.max() / len(y) > 0.7:  # a spike (e.g. zeros) stays a spike
        use &= y != vals[np.argmax(counts)]
    ys = y[use]
    if len(ys) < 2:
        return y
    # R's bw.nrd0 (scale 1 for a constant sample)
    h = nrd0(ys) or 0.9 * len(ys) ** -0.2
    lo, hi = float(np.min(yobs)), float(np.max(yobs)) + h
    ys = np.clip(ys + h * rng.standard_normal(len(ys)), lo, hi)
    if np.all(np.mod(yobs, 1.0) == 0.0):
        ys = np.round(ys)
    y[use] = ys
    return y


class CartSynthesizer(Synthesizer):
    r"""Sequential CART synthesis of the quasi-identifiers (synthpop's ``cart``).

    For the variables :math:`X_1, \dots, X_p` in visit order, a tree
    :math:`T_j` is grown on the original data with response :math:`X_j` and
    predictors :math:`(Z, X_1, \dots, X_{j-1})` (classification tree for a
    categorical :math:`X_j`, regression tree for a continuous one). Synthetic
    values are drawn sequentially: record :math:`i` is dropped down
    :math:`T_j` with predictors :math:`(Z_i, \tilde X_{i1}, \dots,
    \tilde X_{i,j-1})` and

    .. math::

        \tilde X_{ij} \sim \mathrm{Uniform}\{X_{kj} : k \in \mathcal{L}_j(i)\},

    the observed values of the training records in the same leaf
    :math:`\mathcal{L}_j(i)` (Reiter 2005, *J. Official Statistics* 21:441,
    Sec. 3; Nowok, Raab & Dibben 2016, *J. Statistical Software* 74(11),
    function ``syn.cart``). With ``proper=True`` the rows are resampled with
    replacement before each tree is grown, separately for every variable and
    every copy (synthpop's ``proper = TRUE``), so that the copies also carry
    the uncertainty of the fitted trees.

    Parameters
    ----------
    visit_sequence : list of str, optional
        Order in which the quasi-identifiers are synthesized; default their
        order in ``quasi_identifiers``.
    min_samples_leaf : int, default 5
        Minimum number of training rows in a leaf (rpart's ``minbucket``,
        synthpop's default 5). As in rpart, a node is only split when it
        holds at least ``3 * min_samples_leaf`` rows (rpart's ``minsplit``
        default when only ``minbucket`` is given).
    max_depth : int, default 30
        Maximum tree depth (rpart's ``maxdepth`` default).
    proper : bool, default False
        Bootstrap the rows before growing each tree.
    smoothing : {None, "density"}, default None
        synthpop's ``smoothing = "density"`` for continuous quasi-identifiers
        (``syn.smooth``): each drawn donor value y gets Gaussian kernel noise,
        :math:`y + h \varepsilon`, clipped to [min, max + h] of the observed
        values and rounded to whole numbers when the observed values are whole;
        a value held by more than 70% of the draws is left unsmoothed, as in
        synthpop. Bandwidth h: R's default rule ``bw.nrd0``,
        :math:`0.9 \min(s, \mathrm{IQR}/1.34)\, n^{-1/5}` of the drawn
        values (synthpop uses the Sheather-Jones ``bw.SJ``, which has no
        NumPy/SciPy implementation; both are kernel bandwidths of the same
        order). Smoothing breaks the copying of exact donor values, lowering
        matching risk at some cost in fidelity.

    Notes
    -----
    Trees are grown without cost-complexity pruning; synthpop's ``cp = 1e-8``
    is, for practical purposes, no pruning either. Categorical predictors:
    binary and ordinal ones enter as integer codes, nominal ones with more than
    two levels are one-hot coded (see ``_Encoder``). Without ``proper`` the
    trees do not depend on the random state, so they are grown once in
    ``fit`` and reused by every call to ``sample``.

    Attributes
    ----------
    visit_sequence_ : list of str
    trees_ : dict
        Column -> fitted scikit-learn tree (``proper=False`` only; empty otherwise).
    """

    method = "cart"
    _parameter_constraints = {
        "visit_sequence": [None, "columns"],
        "min_samples_leaf": [Interval("int", 1, None)],
        "max_depth": [Interval("int", 1, None)],
        "proper": ["boolean"],
        "smoothing": [None, Options("density")],
    }
    # row-ordered responses and design blocks (kept for proper=True re-growing)
    _confidential_attributes = ("_y", "_x_blocks")

    def __init__(
        self,
        visit_sequence: Sequence[str] | None = None,
        min_samples_leaf: int = 5,
        max_depth: int = _RPART_MAXDEPTH,
        proper: bool = False,
        smoothing: str | None = None,
    ) -> None:
        self.visit_sequence = visit_sequence
        self.min_samples_leaf = min_samples_leaf
        self.max_depth = max_depth
        self.proper = proper
        self.smoothing = smoothing

    # ---- validation --------------------------------------------------------
    def _needs_records_to_sample(self) -> bool:
        # proper synthesis re-grows the trees on bootstrap samples of the records
        return bool(self.proper)

    def _visit_order(self, qi: list[str]) -> list[str]:
        seq = self._from_spec("visit_sequence", "visit_sequence")
        if seq is None:
            return list(qi)
        seq = list(seq)
        released = list(getattr(self, "released_qi_", qi))
        if sorted(seq, key=str) != sorted(released, key=str) or len(set(seq)) != len(seq):
            raise ParameterError(
                f"The 'visit_sequence' parameter of {type(self).__name__} must list each quasi-identifier "
                f"exactly once ({released}). Got {seq} instead.", parameter='visit_sequence'
            )
        # a two-part column's indicator is synthesized just before its values
        out = []
        for c in seq:
            part = self._part_of(c)
            out += [part, c] if part is not None else [c]
        return out

    # ---- fit ---------------------------------------------------------------
    def _fit(self, X: pd.DataFrame, Z: pd.DataFrame) -> None:
        self.visit_sequence_ = self._visit_order(list(X.columns))
        self._min_leaf = int(self.min_samples_leaf)
        encoder = _Encoder(self.schema_, list(Z.columns) + self.visit_sequence_)
        z_blocks = [encoder.block(c, self._values(Z[c])) for c in Z.columns]
        self._z_design = np.hstack(z_blocks) if z_blocks else np.empty((len(Z), 0))
        self._encoder = encoder
        # Responses: codes for categorical QIs, floats for continuous ones.
        self._y = {c: self._values(X[c]) for c in self.visit_sequence_}
        self._x_blocks = {c: encoder.block(c, self._y[c]) for c in self.visit_sequence_}
        self.trees_: dict[str, Any] = {}
        self._donors: dict[str, tuple] = {}
        if not self.proper:
            for j, c in enumerate(self.visit_sequence_):
                if self._progress is not None:
                    self._progress(f"fitting '{c}' ({j + 1}/{len(self.visit_sequence_)})")
                rows = self._fit_rows(c)
                design = self._design(self._x_blocks, j, rows)
                y = self._y[c] if rows is None else self._y[c][rows]
                # The tree is a deterministic function of the data; the fixed
                # seed only fixes scikit-learn's tie-breaking between features.
                tree = self._grow(c, design, y, random_state=0)
                self.trees_[c] = tree
                self._donors[c] = _leaf_donors(tree.apply(design), y)

    def _fit_rows(self, c: str) -> np.ndarray | None:
        """Rows a column's tree is grown on: a two-part column's value rows, else all."""
        rows = getattr(self, "value_rows_", {}).get(c)
        return None if rows is None else np.flatnonzero(rows)

    def _values(self, s: pd.Series) -> np.ndarray:
        if self.schema_[s.name].is_categorical:
            return self.schema_.codes(s)
        return s.to_numpy(dtype=np.float64)

    def _design(self, blocks: dict[str, np.ndarray], j: int, rows: np.ndarray | None = None) -> np.ndarray:
        """Z plus the quasi-identifiers visited before position ``j`` (optionally a row subset)."""
        z = self._z_design if rows is None else self._z_design[rows]
        parts = [z] + [blocks[c] if rows is None else blocks[c][rows] for c in self.visit_sequence_[:j]]
        design = np.hstack(parts)
        if design.shape[1] == 0:
            # No predictors at all: one leaf, i.e. draws from the marginal
            # (synthpop's ``sample`` method for the first variable).
            design = np.zeros((design.shape[0], 1))
        return design

    def _grow(self, name: str, design: np.ndarray, y: np.ndarray, random_state: int):
        kw = dict(
            min_samples_leaf=self._min_leaf,
            min_samples_split=max(2, 3 * self._min_leaf),
            max_depth=int(self.max_depth),
            random_state=random_state,
        )
        if self.schema_[name].is_categorical:
            from sklearn.tree import DecisionTreeClassifier  # here: `synthmi --help` need not import it

            tree = DecisionTreeClassifier(criterion="gini", **kw)
        else:
            from sklearn.tree import DecisionTreeRegressor

            tree = DecisionTreeRegressor(criterion="squared_error", **kw)
        return tree.fit(design, y)

    # ---- sample ------------------------------------------------------------
    def _sample(self, m: int, rng: np.random.Generator) -> list[pd.DataFrame]:
        n = self.n_
        out: list[pd.DataFrame] = []
        leaves: dict[str, list[int]] = {c: [] for c in self.visit_sequence_}
        for _ in range(m):
            syn_values: dict[str, np.ndarray] = {}
            syn_blocks: dict[str, np.ndarray] = {}
            for j, c in enumerate(self.visit_sequence_):
                if self._progress is not None:
                    self._progress(f"copy {len(out) + 1}/{m}: drawing '{c}'")
                if self.proper:
                    base_rows = self._fit_rows(c)
                    rows = rng.integers(0, n, size=n) if base_rows is None else \
                        base_rows[rng.integers(0, base_rows.size, size=base_rows.size)]
                    design_fit = self._design(self._x_blocks, j, rows)
                    y_fit = self._y[c][rows]
                    tree = self._grow(c, design_fit, y_fit, random_state=int(rng.integers(0, 2**31 - 1)))
                    donors = _leaf_donors(tree.apply(design_fit), y_fit)
                else:
                    tree = self.trees_[c]
                    donors = self._donors[c]
                leaves[c].append(int(tree.get_n_leaves()))
                design_new = self._design(syn_blocks, j)
                values = _draw_from_leaves(donors, tree.apply(design_new), rng)
                if self.smoothing == "density" and not self.schema_[c].is_categorical:
                    values = density_smooth(values, self._y[c], rng)
                syn_values[c] = values
                part = self._part_of(c)
                # later trees were grown on the fill value at a two-part column's non-value rows
                filled = values if part is None else self._fill_parts(c, values, syn_values[part])
                syn_blocks[c] = self._encoder.block(c, filled)
            out.append(self._to_frame(syn_values))
        self._last_leaves = leaves
        return out

    def _to_frame(self, values: dict[str, np.ndarray]) -> pd.DataFrame:
        cols = {}
        for c in self.quasi_identifiers_:
            if self.schema_[c].is_categorical:
                s = self.schema_.from_codes(c, values[c], self.data_[c])
                s.index = self.data_.index
                cols[c] = s
            else:
                cols[c] = values[c]
        return pd.DataFrame(cols, index=self.data_.index)

    def _diagnostics(self) -> dict[str, Any]:
        leaves = getattr(self, "_last_leaves", {})
        return {
            "visit_sequence": list(self.visit_sequence_),
            "n_leaves_mean": {c: float(np.mean(v)) for c, v in leaves.items() if v},
            "proper": bool(self.proper),
        }
