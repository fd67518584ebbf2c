r"""Per-variable conditional models: the synthesis model the statistician controls.

The sequential synthesizers (:class:`~synthmi.models.rubin.RubinSynthesizer`,
:class:`~synthmi.models.dami.DAMISynthesizer`) factor the imputation model of
the quasi-identifiers :math:`X_1, \dots, X_q` given the kept columns Z in a
visit sequence,

.. math:: p(X \mid Z, \theta) = \prod_{j=1}^{q} p(X_j \mid \text{pred}_j, \theta_j),
    \qquad \text{pred}_j \subseteq Z \cup \{X_1, \dots, X_{j-1}\},

(Raghunathan, Reiter & Rubin 2003, J. Off. Stat. 19:1-16; synthpop's
``method``, ``predictor.matrix``, ``visit.sequence``, Nowok, Raab &
Dibben 2016, J. Stat. Softw. 74(11)). This module holds what one factor is:

``models={column: spec}``
    ``spec`` is a method name (``"normal"``), a formula (``"~ age * sex +
    bs(hours, 4)"``) or a dict with keys ``method``, ``formula``,
    ``predictors`` (a list of columns) and, for ``"hierarchical"``, ``group``.
``method``
    ``normal`` (continuous; normal linear regression), ``logit`` (binary:
    logistic; more levels: multinomial logit), ``probit`` (binary),
    ``ordered`` (cumulative logit, or probit with the synthesizer's
    ``ordinal_link="probit"``), ``multinomial`` (multinomial logit, order
    ignored), ``cart`` (a tree with donors from its leaf, as synthpop's
    ``cart``, grown on :class:`~synthmi.models.cart.CartSynthesizer`'s
    design, :class:`synthmi.models.rubin.TreeDesign`, so that it is that
    synthesizer's tree; not allowed for a masked column), ``tree`` (CART's partition
    with a conjugate posterior per leaf, hence a likelihood: Dirichlet leaf
    probabilities, or a Bayesian bootstrap of the leaf's donors smoothed by a
    Gaussian kernel; usable with masks and as a predictor under the joint
    predictive, :mod:`synthmi.models.tree`), ``hierarchical`` (normal
    regression with random intercepts for a grouping column: partial pooling,
    :mod:`synthmi.models.hierarchical`).
``min_leaf``
    The minimum number of records in a leaf of a ``tree`` or ``cart`` model
    (rpart's ``minbucket``; default 5, synthpop's; a node is split only when it
    holds at least three times as many, rpart's ``minsplit``). Coarser leaves
    copy less of each record and smooth more.
``smoothing``
    The kernel of a continuous ``tree`` model (:mod:`synthmi.models.tree`).
    Not given (the default): no kernel for a column of at most ``DISCRETE_MAX``
    = 500 distinct values, whose leaves are discrete (the donors' values, as
    synthpop's ``cart`` without smoothing; its point masses and heaps kept
    exactly), and the kernel (factor 1) for a column with more. ``0``: the
    discrete leaves, refused above ``DISCRETE_MAX`` values. A factor ``c > 0``:
    the kernel, its bandwidth scaled by ``c`` (smaller keeps the donors' values
    and their relations closer, larger copies less of them). The kernel as the
    default lost a third of the CI overlap of an age x education regression on
    5,000 Adult rows (0.49 against CART's 0.87; 0.82 with the donors' values).
    A few-valued column (at most ``FEW_VALUES`` = 20 distinct values) has
    discrete leaves whatever the setting (its copies hold the donors' values
    already).
``transform`` / ``semicont``
    Per-variable settings of a continuous column: its modelling scale
    (``"log"``, ``"log1p"``, ``"rank"``; the same as ``transforms={column: t}``
    and the CLI's ``--transform column=t``) and its point masses (a number or a
    list, e.g. ``0`` for the zeros of an income: the two-part model of
    :mod:`synthmi.models.base`; the same as ``semicont={column: [0]}`` and
    ``--semicont column=0``). :func:`per_variable_setting` merges the two
    spellings, so a setting reaches the model the same way from Python, the
    spec's ``models`` and the command line.
``formula`` / ``predictors``
    The default design is an intercept, every kept column and every earlier
    quasi-identifier (continuous ones standardised, categorical ones as
    treatment dummies). ``predictors`` restricts it to the listed columns; a
    ``formula`` replaces it by the model matrix of a formulaic formula
    (interactions ``a * b``, splines ``bs(x, 4)``, ``C(x)``, ``np.log(x)``).
    The model spec of the formula is built once on the confidential data and
    re-evaluated on synthetic values, keeping its factor levels and spline
    knots. Non-binary formula columns are standardised with their fit-time
    mean and sd (0/1 columns, dummies and their interactions, are left as they
    are) so that the prior of categorical models (:mod:`synthmi.models.glm`:
    N(0, 2.5^2) by default on a dummy's log odds ratio and on one sd of a
    standardised column) means the same on every scale.

Every predictor must be a kept column or a quasi-identifier earlier in the
visit sequence (otherwise the product above is not a joint density).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.special import ndtr

from ..kinds import CATEGORICAL_KINDS, MODEL_KINDS
from ..schema import Schema
from ..spec import WHOLE_MODELS
from .truncation import Support
from ..errors import ColumnError, InputError, ParameterError

__all__ = [
    "METHODS",
    "VariableSpec",
    "parse_models",
    "check_spec_models",
    "resolve_visit_sequence",
    "predictors_from_matrix",
    "per_variable_setting",
    "expand_models",
    "WHOLE_METHODS",
    "TRANSFORMS",
    "Encoder",
    "AdditiveDesign",
    "FormulaDesign",
]

METHODS = ("normal", "logit", "probit", "ordered", "multinomial", "cart", "tree", "hierarchical")
_KEYS = ("method", "formula", "predictors", "group", "transform", "semicont", "min_leaf", "smoothing")
#: modelling scales of a continuous column (``transform``)
TRANSFORMS = ("log", "log1p", "rank")
# which response kinds each method can model
_METHOD_KINDS = {
    "normal": ("continuous",),
    "hierarchical": ("continuous",),
    "logit": CATEGORICAL_KINDS,
    "probit": ("binary",),
    "ordered": ("binary", "ordinal"),
    "multinomial": CATEGORICAL_KINDS,
    "cart": MODEL_KINDS,
    "tree": MODEL_KINDS,
}
#: methods that model every kind of column, so that ``models="tree"`` (one name for the whole
#: setting, as synthpop's ``method = "cart"``) gives every quasi-identifier that method
WHOLE_METHODS = tuple(m for m in WHOLE_MODELS if m != "auto")
assert all(_METHOD_KINDS[m] == MODEL_KINDS for m in WHOLE_METHODS)


@dataclass
class VariableSpec:
    """What the user asked for one variable (``None``: the synthesizer's default)."""

    method: str | None = None
    formula: str | None = None
    predictors: list[str] | None = None
    group: str | None = None
    transform: str | None = None
    semicont: list[float] | None = None
    min_leaf: int | None = None
    smoothing: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in _KEYS if getattr(self, k) is not None}


def expand_models(models: Any, qi: Sequence[str], spec_models: Any = None,
                  words: Sequence[str] = WHOLE_METHODS) -> Any:
    """``models`` with a whole-setting word (``"tree"``, ``"cart"``: :data:`WHOLE_METHODS`; or
    ``words``) spelled out as ``{column: word}`` for every quasi-identifier, except the columns the
    spec's own ``models`` (``spec_models``, when a dict) name: their entries win, as they do for
    ``"auto"`` (:func:`synthmi.models.model_choice.choose_models`). Any other value unchanged."""
    if isinstance(models, str) and models in words:
        given = spec_models if isinstance(spec_models, Mapping) else {}
        return {c: given.get(c, models) for c in qi}
    return models


def parse_models(models: Any, qi: Sequence[str], owner: str) -> dict[str, VariableSpec]:
    """Validate the ``models`` parameter into one :class:`VariableSpec` per named column."""
    models = expand_models(models, qi)
    if models is None:
        return {}
    if not isinstance(models, Mapping):
        raise ParameterError(
            f"The 'models' parameter of {owner} must be a dict mapping quasi-identifiers to a method name, a formula "
            f"or a dict with keys {list(_KEYS)}. Got {type(models).__name__} instead.", parameter='models'
        )
    out: dict[str, VariableSpec] = {}
    for col, spec in models.items():
        if col not in qi:
            raise ParameterError(
                f"The 'models' parameter of {owner} names column {col!r}, which is not a quasi-identifier "
                f"({list(qi)}); only synthesized columns have a model.", parameter='models'
            )
        if isinstance(spec, str):
            spec = {"formula": spec} if "~" in spec else {"method": spec}
        if not isinstance(spec, Mapping):
            raise ParameterError(
                f"The model of column '{col}' in the 'models' parameter of {owner} must be a method name, a formula "
                f"such as '~ age * sex' or a dict. Got {type(spec).__name__} instead.", parameter='models'
            )
        unknown = [k for k in spec if k not in _KEYS]
        if unknown:
            raise InputError(f"The model of column '{col}' has unknown keys {unknown}; allowed keys are {list(_KEYS)}.")
        method = spec.get("method")
        if method is not None and method not in METHODS:
            raise InputError(f"The method of column '{col}' must be one of {list(METHODS)}. Got {method!r} instead.")
        formula = spec.get("formula")
        if formula is not None and (not isinstance(formula, str) or "~" not in formula):
            raise InputError(f"The formula of column '{col}' must be a string such as '~ age * sex'. Got {formula!r} instead.")
        preds = spec.get("predictors")
        if preds is not None:
            if isinstance(preds, str) or not all(isinstance(p, str) for p in preds):
                raise InputError(f"The predictors of column '{col}' must be a list of column names. Got {preds!r} instead.")
            preds = list(preds)
        if formula is not None and preds is not None:
            raise ColumnError(f"Column '{col}' is given both a formula and a predictor list; give one of the two.")
        group = spec.get("group")
        if (method == "hierarchical") != (group is not None):
            raise ColumnError(
                f"Column '{col}': the 'hierarchical' method needs a 'group' (the grouping column of the random "
                "intercepts), and 'group' is only used by that method."
            )
        transform = spec.get("transform")
        if transform is not None and transform not in TRANSFORMS:
            raise ParameterError(f"The transform of column '{col}' in the 'models' parameter of {owner} must be one of "
                             f"{list(TRANSFORMS)} or None. Got {transform!r} instead.", parameter='models')
        semicont = spec.get("semicont")
        if semicont is not None:
            pts = [semicont] if np.isscalar(semicont) else semicont
            try:
                semicont = [float(p) for p in pts]
            except (TypeError, ValueError):
                raise ParameterError(f"The point masses ('semicont') of column '{col}' in the 'models' parameter of {owner} "
                                 f"must be a number or a list of numbers. Got {semicont!r} instead.", parameter='models') from None
            if not semicont or not np.all(np.isfinite(semicont)):
                raise ParameterError(f"The point masses ('semicont') of column '{col}' in the 'models' parameter of {owner} "
                                 f"must be finite numbers, at least one. Got {pts!r} instead.", parameter='models')
        min_leaf = spec.get("min_leaf")
        if min_leaf is not None:
            if method not in ("tree", "cart"):
                raise ColumnError(f"Column '{col}': 'min_leaf' (the minimum leaf size of a tree) is only used by the "
                                  f"methods 'tree' and 'cart'. Got method {method!r}.")
            # a whole number (a spec read from JSON may hold 20.0)
            if (isinstance(min_leaf, bool) or not isinstance(min_leaf, (int, float, np.integer, np.floating))
                    or not float(min_leaf).is_integer() or min_leaf < 1):
                raise ParameterError(f"The 'min_leaf' of column '{col}' in the 'models' parameter of {owner} must be an "
                                     f"integer >= 1. Got {min_leaf!r} instead.", parameter='models')
            min_leaf = int(min_leaf)
        smoothing = spec.get("smoothing")
        if smoothing is not None:
            if method != "tree":
                raise ColumnError(f"Column '{col}': 'smoothing' (the factor on the kernel bandwidth of a continuous tree "
                                  f"model) is only used by the method 'tree'. Got method {method!r}.")
            if (isinstance(smoothing, bool) or not isinstance(smoothing, (int, float, np.integer, np.floating))
                    or not np.isfinite(smoothing) or smoothing < 0):
                raise ParameterError(f"The 'smoothing' of column '{col}' in the 'models' parameter of {owner} must be a "
                                     f"number >= 0 (0: the donors' values, no kernel). Got {smoothing!r} instead.",
                                     parameter='models')
            smoothing = float(smoothing)
        out[col] = VariableSpec(method=method, formula=formula, predictors=preds, group=group, transform=transform,
                                semicont=semicont, min_leaf=min_leaf, smoothing=smoothing)
    return out


def check_spec_models(spec: Any, path: str, owner: str = "DAMISynthesizer") -> None:
    """Refuse a spec file whose ``"models"`` entry the sequential synthesizers cannot use, naming the
    file and its key (the one check of ``synthmi tune --spec`` and ``synthmi synthesize --spec``).

    Checks the entry's syntax (:func:`parse_models`) and each method against its column's kind in
    the spec (an integer column is modelled as continuous). ``"auto"`` (the whole entry or a
    column's) is judged by the spec itself and by the choice it asks for.
    """
    from ..errors import SynthmiError
    from ..kinds import model_kind

    models = expand_models(getattr(spec, "models", None), list(spec.quasi_identifiers))
    if not isinstance(models, Mapping):
        return  # none, or "auto" (checked by the spec itself)
    lead = f"The '--spec' file '{path}' has a \"models\" entry that cannot be used: "
    given = {c: v for c, v in models.items() if not (isinstance(v, str) and v == "auto")}
    try:
        parsed = parse_models(given, list(spec.quasi_identifiers), owner)
    except SynthmiError as exc:
        raise InputError(lead + exc.restated("spec's \"models\"" if exc.parameter == "models" else None)) from None
    for c, v in parsed.items():
        kind = model_kind(spec.columns[c].kind)
        if v.method is not None and kind not in _METHOD_KINDS[v.method]:
            raise InputError(lead + f"the method {v.method!r} of column '{c}' cannot model a {kind} column; it "
                             f"models {list(_METHOD_KINDS[v.method])} columns.")


def per_variable_setting(specs: Mapping[str, VariableSpec], key: str, given: Mapping[str, Any] | None,
                         param: str, owner: str) -> dict[str, Any]:
    """One per-variable setting (``"transform"`` or ``"semicont"``) from both of its spellings.

    ``given`` is the flat parameter (``transforms={col: t}``, ``semicont={col: [v]}``;
    the CLI's ``--transform`` / ``--semicont`` set these), ``specs`` the parsed
    ``models`` entries (the Python parameter or the spec's ``models``). A column
    may get its setting from either; from both only if they agree.
    """
    out = dict(given or {})
    for col, vs in specs.items():
        value = getattr(vs, key)
        if value is None:
            continue
        if col in out and out[col] is not None:
            mine = out[col]
            same = (list(np.atleast_1d(np.asarray(mine, dtype=float))) == list(value)) if key == "semicont" else mine == value
            if not same:
                raise ColumnError(
                    f"Column '{col}' has the {key} {mine!r} from the '{param}' parameter of {owner} and {value!r} "
                    f"from its 'models' entry; give it once."
                )
        out[col] = value
    return out


def resolve_visit_sequence(visit_sequence: Any, order: Any, qi: Sequence[str], owner: str) -> list[str]:
    """The visit sequence: ``visit_sequence`` (synthpop's name) or its alias ``order``; default the QI order."""
    if visit_sequence is not None and order is not None and list(visit_sequence) != list(order):
        raise InputError(
            f"The 'visit_sequence' and 'order' parameters of {owner} are the same setting and disagree: "
            f"{list(visit_sequence)} vs {list(order)}. Give one of them."
        )
    seq = visit_sequence if visit_sequence is not None else order
    if seq is None:
        return list(qi)
    seq = list(seq)
    name = "visit_sequence" if visit_sequence is not None else "order"
    if sorted(seq) != sorted(qi) or len(set(seq)) != len(seq):
        raise InputError(
            f"The '{name}' parameter of {owner} must be a permutation of the quasi-identifiers {list(qi)}. "
            f"Got {seq} instead."
        )
    return seq


def predictors_from_matrix(matrix: Any, qi: Sequence[str], columns: Sequence[str], owner: str) -> dict[str, list[str]]:
    """synthpop's ``predictor.matrix``: rows = synthesized column, columns = predictors, 1 = used."""
    if matrix is None:
        return {}
    if isinstance(matrix, Mapping):
        frame = pd.DataFrame({r: pd.Series(v) for r, v in matrix.items()}).T.fillna(0)
    elif isinstance(matrix, pd.DataFrame):
        frame = matrix
    else:
        raise ParameterError(
            f"The 'predictor_matrix' parameter of {owner} must be a DataFrame (rows: quasi-identifiers, columns: "
            f"predictors, entries 0/1). Got {type(matrix).__name__} instead.", parameter='predictor_matrix'
        )
    bad_rows = [r for r in frame.index if r not in qi]
    bad_cols = [c for c in frame.columns if c not in columns]
    if bad_rows or bad_cols:
        raise ParameterError(
            f"The 'predictor_matrix' parameter of {owner} has rows that are not quasi-identifiers {bad_rows} or "
            f"columns that are not in the data {bad_cols}.", parameter='predictor_matrix'
        )
    vals = frame.to_numpy()
    if not np.isin(vals, (0, 1, True, False)).all():
        raise ParameterError(f"The entries of the 'predictor_matrix' parameter of {owner} must be 0 or 1.", parameter='predictor_matrix')
    return {r: [c for c in frame.columns if frame.loc[r, c] and c != r] for r in frame.index}


# ---------------------------------------------------------------------------
@dataclass
class Encoder:
    """Numeric encoding of one predictor column: standardised value or treatment dummies."""

    name: str
    kind: str  # continuous | categorical
    mean: float = 0.0
    sd: float = 1.0
    n_levels: int = 0
    #: the non-baseline levels whose dummies are in the design (None: all of 1..n_levels-1).
    #: A model leaves out the dummies aliased on its rows (R's lm/glm give them an NA
    #: coefficient, i.e. 0 in predictions): such a level then contributes as the baseline.
    levels: tuple[int, ...] | None = None

    @property
    def coded_levels(self) -> np.ndarray:
        return np.arange(1, self.n_levels) if self.levels is None else np.asarray(self.levels, dtype=np.int64)

    @property
    def width(self) -> int:
        return 1 if self.kind == "continuous" else len(self.coded_levels)

    def encode(self, v: np.ndarray) -> np.ndarray:
        if self.kind == "continuous":
            return ((np.asarray(v, dtype=float) - self.mean) / self.sd)[:, None]
        codes = np.asarray(v, dtype=np.int64)
        return (codes[:, None] == self.coded_levels[None, :]).astype(float)

    def labels(self) -> list[str]:
        if self.kind == "continuous":
            return [self.name]
        return [f"{self.name}[{k}]" for k in self.coded_levels]


def rowwise_product(Z: np.ndarray, B: np.ndarray) -> np.ndarray:
    r"""``Z @ B`` summed column by column, :math:`\sum_k Z_{:,k} B_k` in the order k = 0, 1, ...

    Each row's value is computed alike whatever the other rows: BLAS matrix products are
    not (a row's rounding depends on its position in the kernel's blocks, 4e-15 apart for
    a record drawn in a partition of 333 rows or of 1,000), and a copy must be the same
    for every partitioning (synthmi._random).
    """
    B = np.asarray(B, dtype=float)
    out = np.zeros((Z.shape[0],) + B.shape[1:])
    for k in range(Z.shape[1]):
        out += Z[:, k, None] * B[k] if B.ndim > 1 else Z[:, k] * B[k]
    return out


class AdditiveDesign:
    """Intercept + encoded Z columns (fixed) + encoded earlier X's: linear in each X's encoding.

    Because the design is additive in the blocks of the X's, the linear
    predictor can be updated when one X changes without rebuilding the matrix
    (:class:`AdditivePrepared`), which is what makes the within-record Gibbs
    sweeps of the joint predictive cheap.
    """

    additive = True

    def __init__(self, z_block: np.ndarray, z_names: list[str], x_encoders: list[Encoder], intercept: bool,
                 z_index: np.ndarray | None = None):
        """``z_block``: the synthesizer's full Z design (intercept first); ``z_index``: its columns used."""
        self.intercept = intercept
        idx = np.arange(z_block.shape[1]) if z_index is None else np.asarray(z_index)
        self.z_index = idx if intercept else idx[idx != 0]
        self._z = z_block[:, self.z_index]
        self.z_names = [z_names[i] for i in self.z_index]
        self._all_z_names = z_names
        self.x_encoders = x_encoders
        self.inputs = [e.name for e in x_encoders]
        self.names = self.z_names + [lab for e in x_encoders for lab in e.labels()]

    def rebind(self, z_block: np.ndarray) -> "AdditiveDesign":
        """The same design on other rows: ``z_block`` is the full Z design of those rows."""
        # z_index already leaves the intercept column out when the model has none
        new = AdditiveDesign(z_block, self._all_z_names, self.x_encoders, True, self.z_index)
        new.intercept = self.intercept
        return new

    def matrix(self, values: Mapping[str, np.ndarray]) -> np.ndarray:
        blocks = [self._z] + [e.encode(values[e.name]) for e in self.x_encoders]
        return np.hstack(blocks) if len(blocks) > 1 else self._z

    def prepare(self, beta: np.ndarray, offset: np.ndarray | None = None) -> "AdditivePrepared":
        return AdditivePrepared(self, np.asarray(beta, dtype=float), offset)


class AdditivePrepared:
    """The linear predictor of an additive design for one parameter draw."""

    def __init__(self, design: AdditiveDesign, beta: np.ndarray, offset: np.ndarray | None):
        pz = design._z.shape[1]
        self.base = rowwise_product(design._z, beta[:pz])
        if offset is not None:
            self.base = self.base + (offset if beta.ndim == 1 else offset[:, None])
        self.tables: dict[str, tuple[Encoder, np.ndarray]] = {}
        pos = pz
        for e in design.x_encoders:
            b = beta[pos : pos + e.width]
            pos += e.width
            if e.kind == "categorical":
                # row c = contribution of level c (level 0 and the levels left out as aliased
                # contribute 0, as the baseline)
                t = np.zeros((e.n_levels,) + b.shape[1:])
                t[e.coded_levels] = b
                self.tables[e.name] = (e, t)
            else:
                self.tables[e.name] = (e, b)

    def contrib(self, col: str, v: np.ndarray) -> np.ndarray:
        e, t = self.tables[col]
        if e.kind == "categorical":
            return t[np.asarray(v, dtype=np.int64)]
        z = (np.asarray(v, dtype=float) - e.mean) / e.sd
        return z * t[0] if t.ndim == 1 else z[:, None] * t[0][None, :]

    def level_contrib(self, col: str, level: int) -> np.ndarray:
        """Contribution of a categorical column set to ``level`` for every record (broadcastable)."""
        return self.tables[col][1][level]

    def eta(self, values: Mapping[str, np.ndarray]) -> np.ndarray:
        out = self.base
        for col in self.tables:
            out = out + self.contrib(col, values[col])
        return out

    def replace(self, eta: np.ndarray, values: Mapping[str, np.ndarray], col: str, new: np.ndarray) -> np.ndarray:
        """The linear predictor with column ``col`` set to ``new`` (others as in ``values``)."""
        return eta - self.contrib(col, values[col]) + self.contrib(col, new)


class FormulaDesign:
    """The model matrix of a formulaic formula, built once at fit and re-evaluated on synthetic values."""

    additive = False

    def __init__(self, formula: str, column: str, fit_values: Mapping[str, np.ndarray], z_frame: pd.DataFrame,
                 schema: Schema, allowed_x: Sequence[str], intercept: bool):
        import formulaic

        lhs, _, rhs = formula.partition("~")
        if lhs.strip() and lhs.strip() != column:
            raise InputError(
                f"The formula given for column '{column}' has the response {lhs.strip()!r}; write it as '~ ...' "
                f"or '{column} ~ ...'."
            )
        self.formula = "~" + rhs
        self.schema = schema
        # materialise on every column, then read which ones the formula needed (names inside
        # calls such as bs(z, 4) are only known after evaluation)
        self.inputs = [c for c in fit_values if c in schema.columns]
        self._z_frame = z_frame
        try:
            mm = formulaic.model_matrix(self.formula, self._frame(fit_values))
        except Exception as exc:  # formulaic's parse / evaluation errors
            raise InputError(f"The formula given for column '{column}' cannot be evaluated: {exc}") from exc
        req = set(mm.model_spec.required_variables) & set(schema.columns)
        if column in req:
            raise InputError(f"The formula given for column '{column}' uses '{column}' itself as a predictor.")
        bad = sorted(r for r in req if r not in z_frame.columns and r not in allowed_x)
        if bad:
            raise InputError(
                f"The formula given for column '{column}' uses {bad}, which are neither kept columns nor "
                f"quasi-identifiers earlier in the visit sequence ({list(allowed_x)})."
            )
        self.inputs = [c for c in allowed_x if c in req]
        self._z_frame = z_frame[[c for c in z_frame.columns if c in req]]
        self._spec = mm.model_spec
        names = list(mm.columns)
        M = np.asarray(mm, dtype=float)
        keep = [i for i, nm in enumerate(names) if intercept or nm != "Intercept"]
        self._keep = keep
        M = M[:, keep]
        self.names = [names[i] for i in keep]
        # standardise non-binary columns (the intercept and dummies stay 0/1)
        binary = np.all((M == 0) | (M == 1), axis=0)
        self._mean = np.where(binary, 0.0, M.mean(axis=0))
        sd = M.std(axis=0)
        self._sd = np.where(binary | (sd == 0), 1.0, sd)
        self.intercept = intercept

    def _frame(self, values: Mapping[str, np.ndarray]) -> pd.DataFrame:
        data = dict(self._z_frame.items())
        for c in self.inputs:
            data[c] = _as_column(self.schema, c, values[c])
        return pd.DataFrame(data, index=self._z_frame.index)

    def matrix(self, values: Mapping[str, np.ndarray]) -> np.ndarray:
        M = np.asarray(self._spec.get_model_matrix(self._frame(values)), dtype=float)[:, self._keep]
        return (M - self._mean) / self._sd

    def prepare(self, beta: np.ndarray, offset: np.ndarray | None = None) -> "FormulaPrepared":
        return FormulaPrepared(self, np.asarray(beta, dtype=float), offset)


class FormulaPrepared:
    """Linear predictor of a formula design: rebuilt from the values (interactions are not additive)."""

    def __init__(self, design: FormulaDesign, beta: np.ndarray, offset: np.ndarray | None):
        self.design, self.beta, self.offset = design, beta, offset

    def eta(self, values: Mapping[str, np.ndarray]) -> np.ndarray:
        out = self.design.matrix(values) @ self.beta
        if self.offset is not None:
            out = out + (self.offset if self.beta.ndim == 1 else self.offset[:, None])
        return out

    def replace(self, eta: np.ndarray, values: Mapping[str, np.ndarray], col: str, new: np.ndarray) -> np.ndarray:
        return self.eta({**values, col: new})


def _as_column(schema: Schema, c: str, v: np.ndarray):
    """Codes -> a pandas Categorical with the schema's levels (so formula dummies are stable); floats as they are."""
    var = schema[c]
    if var.is_categorical:
        return pd.Categorical.from_codes(np.asarray(v, dtype=np.int64), categories=list(var.categories),
                                         ordered=var.kind == "ordinal")
    return np.asarray(v, dtype=float)


def z_frame(schema: Schema, data: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """The kept columns as a formula frame (categoricals with the schema's levels)."""
    out = {}
    for c in columns:
        if schema[c].is_categorical:
            out[c] = _as_column(schema, c, schema.codes(data[c]))
        else:
            out[c] = data[c].to_numpy(dtype=float)
    return pd.DataFrame(out, index=pd.RangeIndex(len(data)))


# ---------------------------------------------------------------------------
@dataclass
class Conditional:
    """The fitted conditional model of one quasi-identifier."""

    column: str
    kind: str  # schema kind of the response
    family: str  # normal | logit | probit | ologit | oprobit | cart | tree | fixed
    method: str = ""  # the user-facing method name ("" for the default model of a partitioned fit)
    predictors: list[str] = field(default_factory=list)  # earlier quasi-identifiers the design uses
    design: Any = None  # AdditiveDesign | FormulaDesign
    n_categories: int = 0
    transform: str | None = None
    coef_names: list[str] = field(default_factory=list)
    fast: Any = None  # NormalRegressionPosterior | CategoricalModel | HierarchicalNormal | tree
    y_model: np.ndarray | None = None  # response on the modelling scale (continuous)
    sorted_obs: np.ndarray | None = None  # for the rank back-transform
    support: Support | None = None  # bounds and grid (continuous)
    group: str | None = None  # grouping column (hierarchical)
    group_codes: np.ndarray | None = None
    formula: str | None = None
    #: (indicator column, fill) of a two-part column (synthmi.models.base): where the synthetic
    #: indicator is not "value", later models see the fill, as in the fit
    part: tuple | None = None
    #: (released column, fixed value in the model's coding, its label) of a structural rule
    #: (synthmi.models.base): the model is fitted on the rows the rule leaves free and the
    #: predictive sets the fixed value on the others. Family "fixed": the free rows have a
    #: single level ``free_level``, so there is no model at all.
    rule: tuple | None = None
    free_level: int | None = None
    #: the rows of the current frame where the rule holds (set by the synthesizer's _bound)
    rule_rows: np.ndarray | None = None
    #: minimum leaf size of a tree or cart model
    min_leaf: int | None = None
    #: factor on the kernel bandwidth of a continuous tree model
    smoothing: float | None = None

    @property
    def intercept(self) -> bool:
        return self.family not in ("ologit", "oprobit")

    def latent_bounds(self) -> tuple[float, float]:
        """Truncation bounds of the normal draw on the modelling scale (after any transform)."""
        if self.support is None:
            return -np.inf, np.inf
        lo, hi = self.support.latent_bounds()
        if self.transform == "log":
            return (float(np.log(lo)) if lo > 0 else -np.inf), (float(np.log(hi)) if hi > 0 else -np.inf)
        if self.transform == "log1p":
            return (float(np.log1p(lo)) if lo > -1 else -np.inf), (float(np.log1p(hi)) if hi > -1 else -np.inf)
        if self.transform == "rank":
            # the back-transform maps every normal score into [min, max] of the observed values
            return -np.inf, np.inf
        return lo, hi

    def back_transform(self, y: np.ndarray) -> np.ndarray:
        """Modelling scale -> the variable's scale (before snapping to the grid)."""
        if self.transform == "log":
            return np.exp(y)
        if self.transform == "log1p":
            return np.expm1(y)
        if self.transform == "rank":
            # synthpop normrank: normal scores -> quantiles of the observed values
            q = ndtr(y)
            pos = q * len(self.sorted_obs) - 0.5
            return np.interp(pos, np.arange(len(self.sorted_obs)), self.sorted_obs)
        return y

    def to_raw(self, y: np.ndarray) -> np.ndarray:
        """Latent draw on the modelling scale -> a value inside the bounds, on the grid."""
        x = self.back_transform(y)
        return x if self.support is None else self.support.snap(x)

    def to_dict(self) -> dict[str, Any]:
        d = {"method": self.method, "family": self.family, "predictors": list(self.predictors),
             "design": self.design.names if self.design is not None else None}
        if self.formula:
            d["formula"] = self.formula
        if self.group:
            d["group"] = self.group
        if self.transform:
            d["transform"] = self.transform
        if self.min_leaf is not None:
            d["min_leaf"] = int(self.min_leaf)
        if self.smoothing is not None:
            d["smoothing"] = float(self.smoothing)
        if self.family == "tree" and getattr(self.fast, "discrete", False):
            # a few-valued column (synthmi.models.tree): drawn from its donors' values, no kernel
            d["leaves"] = "discrete"
        if self.rule is not None:
            d["rule"] = {"column": self.rule[0], "fitted_on": "rows the rule leaves free",
                         "fixed_elsewhere": None if self.rule[2] is None else str(self.rule[2])}
        return d

    def fix(self, x: np.ndarray) -> np.ndarray:
        """Draws with the structural rule's value on the rows where the rule holds."""
        if self.rule is None or self.rule_rows is None:
            return x
        return np.where(self.rule_rows, self.rule[1], x).astype(x.dtype, copy=False)
