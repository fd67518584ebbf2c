"""Rubin MI and DA-MI synthesis of a Dask DataFrame: fit by reduction, sample by partition.

Fit. The fast posteriors of :class:`~synthmi.models.rubin.RubinSynthesizer`
depend on the data only through sums over records, which are computed per
partition and added (never gathering rows):

* encoders: means and standard deviations of the continuous columns
  (a sum, then a centred sum of squares, both :func:`~._frames.canonical_sum`);
* a normal conditional :math:`y = X\\beta + e`: :math:`X^\\top X`,
  :math:`X^\\top y`, :math:`y^\\top y` and n, from which (BDA3 eqs. 14.4-14.7)

  .. math:: \\hat\\beta = (X^\\top X)^{-1} X^\\top y, \\qquad
      s^2 = \\frac{y^\\top y - \\hat\\beta^\\top X^\\top y}{n - p}, \\qquad
      (X^\\top X)^{-1} = L L^\\top,

  the same :class:`~synthmi.models.conjugate.NormalRegressionPosterior` the
  in-memory QR fit gives (up to rounding);
* a categorical conditional (logit, probit, ordered, multinomial): the
  grouped likelihood of :mod:`synthmi.models.glm` is a sum over distinct
  design rows. Each partition groups its rows (:func:`~synthmi.models.glm.group_rows`)
  and sends each distinct row to one of ``K`` buckets by a hash of its bytes;
  a bucket merges its pieces (counts are integers, so the merge is exact)
  into a :class:`~synthmi.models.glm.CategoricalModel`. Log posterior,
  gradient and Hessian are the sums over buckets of the bucket models'
  values with the prior counted once,

  .. math:: \\log \\pi(\\theta) = \\sum_{k=1}^K \\ell_k(\\theta) + \\log p(\\theta),

  so the damped Newton search of :meth:`CategoricalModel.mode` and the
  independence Metropolis-Hastings sampler (:func:`~synthmi.models.glm.independence_mh`)
  run unchanged on the client, each evaluation one map over the buckets
  (which stay on the workers). ``K`` depends only on the number of records,
  and buckets are added in bucket order, so the posterior does not depend on
  the partitioning.

Sample. The posterior draws (one per copy) are made on the client and sent
to every partition; each partition draws its records' synthetic values with
record-keyed streams (:mod:`synthmi._random`) starting at its global
offset, so a copy is the same for any partitioning and equals the in-memory
one up to floating-point rounding of the fitted parameters (identical
categorical and whole-number values unless a uniform falls within ~1e-12 of
a category boundary). Copies are written partition by partition as Parquet.

The in-memory fast sampler switches a logit model to HMC when independence
MH would stall (many-level predictors); HMC needs a gradient pass over all
records at every leapfrog step, so the Dask path always runs independence MH
(``sampler="fast"`` and ``"imh"`` alike), and its copies equal the in-memory
ones made with ``sampler="imh"``.

Structural rules (``rules=``, :mod:`synthmi.models.base`) whose condition
reads only kept columns and which set a value (not a missing one: the Dask
path takes complete data) are fitted as in memory: each partition evaluates
the condition on its rows, the governed column's model is fitted by
reduction on the rows the rule leaves free (kept columns aliased there are
dropped by the pivoted QR of the Gram matrix summed over partitions, as the
in-memory fit drops them), and the predictive sets the rule's value on the
other rows, so the copies equal the in-memory ones.

Not available on Dask (refused with a message): the NUTS sampler, the
``"rank"`` transform (it needs every record's rank), survey weights, point
masses, rules that read a synthesized column, set a missing value or leave a
single level free, and synthesizers other than Rubin MI and DA-MI.
"""
from __future__ import annotations

import copy as _copy
import json
import os
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import linalg

from .._random import PositionalRNG, entropy_from
from .._validate import check_random_state, check_scalar
from ..diagnostics import ESS_MIN, RHAT_MAX
from ..diagnostics import enforce as enforce_diagnostics
from ..models.conjugate import NormalRegressionPosterior
from ..models.glm import CategoricalModel, group_rows
from ..models.masking import NormalMasking, TransitionMasking, make_masking, mask_kind_error
from ..schema import Schema
from ..engine import canonical_sum, is_dask_frame, map_partitions_with_offset, partition_offsets, refuse_dask

#: rows per bucket of grouped design rows (the number of buckets depends on n only)
ROWS_PER_BUCKET = 250_000
MIN_BUCKETS = 4


def n_buckets(n: int) -> int:
    return max(MIN_BUCKETS, -(-int(n) // ROWS_PER_BUCKET))


# --------------------------------------------------------------------------- schema and checks
def _numeric_uniques(part: pd.DataFrame, cols: list[str], cap: int) -> dict[str, Any]:
    out = {}
    for c in cols:
        u = pd.unique(part[c].dropna())
        out[c] = None if len(u) > cap else set(np.asarray(u).tolist())
    return out


def infer_schema(ddf, overrides: Any = None, cap: int = 64) -> Schema:
    """:meth:`Schema.infer` for a Dask frame: categorical levels from the dtype, numeric kinds by reduction."""
    import dask

    meta = ddf._meta
    obj = [c for c in meta.columns if not isinstance(meta[c].dtype, pd.CategoricalDtype)
           and not pd.api.types.is_numeric_dtype(meta[c].dtype) and not pd.api.types.is_bool_dtype(meta[c].dtype)]
    if obj:
        raise ValueError(
            f"Columns {obj} of the dask DataFrame are strings; their levels would be read from every partition. "
            "Make them categorical with known categories first (ddf = ddf.categorize(columns=[...])) or "
            "read the Parquet file with categorical columns."
        )
    unknown = [c for c in meta.columns if isinstance(meta[c].dtype, pd.CategoricalDtype) and not ddf[c].cat.known]
    if unknown:
        raise ValueError(f"Columns {unknown} of the dask DataFrame are categorical with unknown categories; call ddf.categorize() first.")
    num = [c for c in meta.columns if pd.api.types.is_numeric_dtype(meta[c].dtype)
           and not isinstance(meta[c].dtype, pd.CategoricalDtype) and not pd.api.types.is_bool_dtype(meta[c].dtype)]
    parts = dask.compute(*[dask.delayed(_numeric_uniques)(p, num, cap) for p in ddf.to_delayed()])
    merged: dict[str, Any] = {c: set() for c in num}
    for pr in parts:
        for c in num:
            if merged[c] is None or pr[c] is None:
                merged[c] = None
            else:
                merged[c] |= pr[c]
                if len(merged[c]) > cap:
                    merged[c] = None
    # a small pandas frame with the same dtypes and, for numeric columns, the same distinct values
    cols = {}
    for c in meta.columns:
        if c in num:
            # more than cap distinct values: stand-ins that are as many and of the column's own kind
            # (non-integers in an integer column raised "Trying to coerce float values to integers")
            vals = (sorted(merged[c]) if merged[c] is not None
                    else list(range(cap + 1)) if pd.api.types.is_integer_dtype(meta[c].dtype)
                    else [k + 0.5 for k in range(cap + 1)])
            cols[c] = pd.Series(vals, dtype=meta[c].dtype)
        else:
            cols[c] = meta[c]
    width = max([len(s) for s in cols.values()] + [0])
    tiny = pd.DataFrame({c: s.reindex(range(width)) if len(s) < width else s.reset_index(drop=True)
                         for c, s in cols.items()})
    for c in meta.columns:  # reindexing an integer column to a longer length makes it float
        if c in num and merged[c] is not None and len(cols[c]) < width:
            tiny[c] = pd.Series(list(cols[c]) + [cols[c].iloc[0]] * (width - len(cols[c])), dtype=meta[c].dtype)
        elif c not in num:
            tiny[c] = pd.Series(pd.array([None] * width, dtype=meta[c].dtype)) if width else meta[c]
    for c in num:
        if merged[c] is None and overrides and c in overrides and overrides[c] != "continuous":
            raise ValueError(f"Column '{c}' has more than {cap} distinct values; it cannot be declared {overrides[c]!r} on Dask.")
    return Schema.infer(tiny, overrides)


def _column_checks(part: pd.DataFrame, used: list[str], cont: list[str]) -> dict[str, Any]:
    out = {"n": len(part), "missing": {c: int(part[c].isna().sum()) for c in used}}
    out["min"] = {c: float(np.nanmin(part[c].to_numpy(dtype=float))) if len(part) else np.inf for c in cont}
    out["max"] = {c: float(np.nanmax(part[c].to_numpy(dtype=float))) if len(part) else -np.inf for c in cont}
    out["fractional"] = {c: int(np.sum(np.mod(part[c].dropna().to_numpy(dtype=float), 1.0) != 0.0)) for c in cont}
    out["levels"] = {c: np.asarray(part[c].cat.codes.value_counts().reindex(range(len(part[c].cat.categories)), fill_value=0))
                     for c in used if isinstance(part[c].dtype, pd.CategoricalDtype)}
    return out


# --------------------------------------------------------------------------- the bucketed categorical model
def _hash_rows(X: np.ndarray) -> np.ndarray:
    if X.shape[0] == 0:
        return np.zeros(0, dtype=np.uint64)
    return pd.util.hash_pandas_object(pd.DataFrame(X), index=False).to_numpy()


def _bucket_pieces(Xg: np.ndarray, Yg: np.ndarray, K: int) -> list[tuple[np.ndarray, np.ndarray]]:
    b = (_hash_rows(Xg) % np.uint64(K)).astype(np.int64)
    return [(Xg[b == k], Yg[b == k]) for k in range(K)]


def _merge_bucket(pieces: list, family: str, p: int, C: int, prior_sd: float) -> CategoricalModel:
    X = np.concatenate([x for x, _ in pieces]) if pieces else np.zeros((0, p))
    Y = np.concatenate([y for _, y in pieces]) if pieces else np.zeros((0, C))
    if X.shape[0]:
        uniq, inv = np.unique(X, axis=0, return_inverse=True)
        counts = np.zeros((uniq.shape[0], C))
        np.add.at(counts, inv.reshape(-1), Y)  # integer-valued: exact in any order
        X, Y = uniq, counts
    return CategoricalModel(family, X, Y, prior_sd=prior_sd)


def _bucket_derivs(model: CategoricalModel, theta: np.ndarray):
    return model.derivs(theta)


def _bucket_log_post(model: CategoricalModel, theta: np.ndarray) -> np.ndarray:
    return model.log_post(theta)


class BucketedCategoricalModel:
    """A :class:`~synthmi.models.glm.CategoricalModel` whose grouped data are split into buckets on the workers.

    Implements what :meth:`CategoricalModel.mode` and
    :func:`~synthmi.models.glm.independence_mh` use (``initial``, ``derivs``,
    ``log_post``, ``mode``) by summing the bucket models' values in bucket order
    and removing the K - 1 surplus copies of the N(0, s^2) prior; probabilities
    (``log_probs``, ``unpack``, ``pack``) come from :attr:`template`, which holds
    no data.
    """

    def __init__(self, family: str, p: int, C: int, prior_sd: float, buckets: list, totals: np.ndarray):
        self.family, self.p, self.C, self.prior_sd = family, p, C, float(prior_sd)
        self.buckets = buckets  # persisted dask objects
        # the only data-dependent part of initial(): category totals (integers)
        self.template = CategoricalModel(family, np.zeros((1, p)), np.asarray(totals, dtype=float)[None, :], prior_sd=prior_sd)
        self.dim = self.template.dim
        self.G = None

    def unpack(self, theta):
        return self.template.unpack(theta)

    def pack(self, params):
        return self.template.pack(params)

    def log_probs(self, params, X):
        return self.template.log_probs(params, X)

    def initial(self) -> np.ndarray:
        return self.template.initial()

    def _prior(self, theta: np.ndarray):
        """Value, gradient and Hessian of the N(0, s^2) prior part that each bucket model adds."""
        s2 = self.prior_sd**2
        th = np.asarray(theta, dtype=float)
        if self.family in ("ologit", "oprobit"):
            pr = self.template.unpack(th[None])
            return None, pr  # handled in derivs/log_post by exact subtraction below
        return -0.5 * th @ th / s2, -th / s2, -np.eye(th.size) / s2

    def derivs(self, theta: np.ndarray):
        import dask

        theta = np.asarray(theta, dtype=float)
        parts = dask.compute(*[dask.delayed(_bucket_derivs)(b, theta) for b in self.buckets])
        f = parts[0][0]
        g = parts[0][1].copy()
        H = parts[0][2].copy()
        for fk, gk, Hk in parts[1:]:
            f, g, H = f + fk, g + gk, H + Hk
        # each bucket model includes the prior (and, for ordered models, the log-Jacobian);
        # keep one copy: subtract K - 1 copies of an empty model's value at theta
        extra = len(parts) - 1
        if extra:
            f0, g0, H0 = self._empty().derivs(theta)
            f, g, H = f - extra * f0, g - extra * g0, H - extra * H0
        return float(f), g, H

    def _empty(self) -> CategoricalModel:
        return CategoricalModel(self.family, np.zeros((0, self.p)), np.zeros((0, self.C)), prior_sd=self.prior_sd)

    def log_post(self, theta: np.ndarray, chunk: int = 64) -> np.ndarray:
        import dask

        theta = np.atleast_2d(np.asarray(theta, dtype=float))
        parts = dask.compute(*[dask.delayed(_bucket_log_post)(b, theta) for b in self.buckets])
        out = parts[0].copy()
        for v in parts[1:]:
            out = out + v
        extra = len(parts) - 1
        if extra:
            out = out - extra * self._empty().log_post(theta)
        return np.where(np.isfinite(out), out, -np.inf)

    def mode(self, max_iter: int = 100):
        return CategoricalModel.mode(self, max_iter=max_iter)


# --------------------------------------------------------------------------- fit
def _check_supported(synth) -> None:
    from ..models.dami import DAMISynthesizer
    from ..models.rubin import RubinSynthesizer

    name = type(synth).__name__
    if type(synth) not in (RubinSynthesizer, DAMISynthesizer):
        why = {
            "GaussianCopulaSynthesizer": "its Gibbs sampler updates every record's latent value in each sweep, a full pass "
            "over the data per iteration with no sufficient-statistic reduction",
            "CARTSynthesizer": "tree growing needs sorted access to all records at every node",
        }.get(name, "it has no partition-wise fit")
        refuse_dask(f"{name}.fit", why, "Use RubinSynthesizer or DAMISynthesizer (sampler='fast'), or fit in memory on "
                    "a subsample (ddf.sample(frac=...).compute()).")
    if synth.sampler not in ("fast", "imh"):
        refuse_dask(f"{name}.fit with sampler='nuts'",
                    "NUTS evaluates the log-density gradient over all records at every leapfrog step (thousands of "
                    "passes over the data)", "Use sampler='fast' (exact conjugate draws and independence "
                    "Metropolis-Hastings fitted by reduction).")
    custom = [p for p in ("models", "predictor_matrix", "bounds") if getattr(synth, p, None)]
    if custom:
        refuse_dask(f"{name}.fit with '{custom[0]}'",
                    "the partition-wise fit builds the default main-effects models only (per-variable models, "
                    "formulas and declared bounds are fitted in memory)",
                    "Fit in memory, or drop the parameter.")
    bad = [c for c, t in (synth.transforms or {}).items() if t == "rank"]
    if bad:
        refuse_dask(f"{name}.fit with transforms={{'{bad[0]}': 'rank'}}",
                    "the rank transform needs every record's rank and keeps the sorted confidential values",
                    "Use the 'log' transform or none.")


def _encode_z(synth, part: pd.DataFrame) -> np.ndarray:
    n = len(part)
    blocks = [np.ones((n, 1))] + [synth.encoders_[c].encode(_values(synth, part, c)) for c in synth.keep_]
    return np.hstack(blocks)


def _values(synth, part: pd.DataFrame, c: str) -> np.ndarray:
    if synth.schema_.kind(c) == "continuous":
        return part[c].to_numpy(dtype=float)
    return synth.schema_.codes(part[c])


def _rule_rows(synth, part: pd.DataFrame) -> dict[str, np.ndarray]:
    """Rows of ``part`` where each structural rule holds (its condition reads kept columns only)."""
    return {c: part.eval(cond).to_numpy(dtype=bool) for c, (cond, _) in getattr(synth, "rules_", {}).items()}


def _designs(synth, part: pd.DataFrame) -> list[tuple[np.ndarray, np.ndarray]]:
    """(design, response on the modelling scale) of every conditional, for the rows of ``part``
    its model is fitted on (all, or those a structural rule leaves free)."""
    local = _copy.copy(synth)
    local._Z_design_ = _encode_z(synth, part)
    local.rule_rows_ = _rule_rows(synth, part)
    obs = {c: _values(synth, part, c) for c in synth.quasi_identifiers_}
    out = []
    for cond in synth.conditionals_:
        D = local._design(cond, obs)
        y = obs[cond.column]
        if cond.rule is not None:
            free = ~local.rule_rows_[cond.rule[0]]
            D, y = D[free], y[free]
        if cond.family == "normal" and cond.transform == "log":
            y = np.log(y)
        out.append((D, y))
    return out


def _rule_checks(part: pd.DataFrame, schema: Schema, specs: list) -> dict[str, tuple]:
    """Per rule: rows where it holds, rows that break it, and (categorical) level counts on the free rows."""
    out = {}
    for c, cond, value in specs:
        hit = part.eval(cond).to_numpy(dtype=bool)
        if schema[c].is_categorical:
            codes = schema.codes(part[c])
            broken = int(np.sum(hit & (codes != value)))
            free = np.bincount(codes[~hit], minlength=schema[c].n_levels)
        else:
            broken = int(np.sum(hit & (part[c].to_numpy(dtype=float) != value)))
            free = None
        out[c] = (int(hit.sum()), broken, free)
    return out


def _free_gram(synth, j: int):
    """Z'Z over the rows conditional ``j``'s structural rule leaves free (a canonical_sum term)."""
    def fn(part: pd.DataFrame) -> tuple:
        Z = _encode_z(synth, part)[~_rule_rows(synth, part)[synth.conditionals_[j].rule[0]]]
        return (Z.T @ Z,)
    return fn


def _check_dask_rules(synth, ddf, rules, qi: list[str], keep_cols: list[str], owner: str) -> list:
    """Validate ``rules`` for the Dask path; returns (column, condition, coded value) per rule."""
    from ..models.base import _rule_columns, rule_value

    synth.rules_ = synth._check_rules(ddf._meta, rules, owner)
    specs = []
    for c, (cond, value) in synth.rules_.items():
        refs = _rule_columns(cond, list(ddf.columns))
        if c not in qi or not refs or not refs <= set(keep_cols):
            refuse_dask(f"{owner}.fit with the rule {cond!r} for column '{c}'",
                        "a rule is fitted partition by partition only when it governs a quasi-identifier and its "
                        "condition reads kept columns alone (a rule on a synthesized column is applied to each "
                        "copy after synthesis, in memory)", "Fit in memory, or condition the rule on kept columns.")
        if value is None:
            refuse_dask(f"{owner}.fit with the rule for column '{c}' setting a missing value",
                        "the Dask path takes complete data and models no missing values",
                        "Fit in memory, where missing values are modelled.")
        v = synth.schema_[c]
        coded = rule_value(v, c, value)
        if v.is_categorical:
            coded = list(v.categories).index(coded)
        specs.append((c, cond, coded))
    return specs


def _normal_stats(synth, normal_idx: list[int]):
    def fn(part: pd.DataFrame) -> tuple:
        ds = _designs(synth, part)
        out = []
        for j in normal_idx:
            D, y = ds[j]
            out += [D.T @ D, D.T @ y, np.array(y @ y), np.array(float(len(y)))]
        return tuple(out)
    return fn


def _partition_groups(part: pd.DataFrame, offset: int, synth, cat_idx: list[int], K: int) -> dict:
    ds = _designs(synth, part)
    out = {}
    for j in cat_idx:
        D, y = ds[j]
        Xg, Yg = group_rows(D, y, synth.conditionals_[j].n_categories)
        for k, piece in enumerate(_bucket_pieces(Xg, Yg, K)):
            out[(j, k)] = piece
    return out


def _normal_posterior(XtX: np.ndarray, Xty: np.ndarray, yty: float, n: float) -> NormalRegressionPosterior:
    """The conjugate posterior of :mod:`synthmi.models.conjugate` from sufficient statistics."""
    p = XtX.shape[0]
    n = int(round(n))
    if n <= p:
        raise ValueError(f"A normal regression with {p} coefficients needs more than {p} rows. Got {n} instead.")
    A = (XtX + XtX.T) / 2
    try:
        cf = linalg.cho_factor(A, lower=True)
    except linalg.LinAlgError:
        raise ValueError(
            "The predictors of a normal regression are collinear (the design matrix is rank deficient); "
            "drop a redundant column from the kept (Z) or quasi-identifier columns."
        ) from None
    d = np.diag(cf[0]) ** 2
    if d.min() <= 1e-20 * max(d.max(), 1.0):
        raise ValueError(
            "The predictors of a normal regression are collinear (the design matrix is rank deficient); "
            "drop a redundant column from the kept (Z) or quasi-identifier columns."
        )
    beta_hat = linalg.cho_solve(cf, Xty)
    # residual sum of squares ||y - X b||^2 = y'y - 2 b'X'y + b'X'X b (= y'y - b'X'y at the solution)
    rss = float(yty - 2 * beta_hat @ Xty + beta_hat @ A @ beta_hat)
    df = n - p
    inv = linalg.cho_solve(cf, np.eye(p))
    chol_inv = linalg.cholesky((inv + inv.T) / 2, lower=True)
    return NormalRegressionPosterior(beta_hat=beta_hat, chol_inv=chol_inv, s2=max(rss, 0.0) / df, df=df)


def fit(synth, ddf, quasi_identifiers: Sequence[str], keep: Sequence[str] | None = None, schema: Any = None,
        rules: dict | None = None):
    """Fit a Rubin / DA-MI synthesizer to a Dask DataFrame (see the module docstring). Returns ``synth``."""
    import dask

    from ..models.dami import DAMISynthesizer
    from ..models.rubin import _Conditional, _Encoder

    owner = type(synth).__name__
    synth._check_params()
    _check_supported(synth)
    if not is_dask_frame(ddf):
        raise TypeError(f"The 'df' parameter must be a dask DataFrame here. Got {type(ddf).__name__} instead.")
    cols = list(ddf.columns)
    if isinstance(quasi_identifiers, str):
        quasi_identifiers = [quasi_identifiers]
    qi = list(quasi_identifiers)
    missing = [c for c in qi if c not in cols]
    if missing:
        raise ValueError(f"The 'quasi_identifiers' parameter names columns not in 'df': {missing}. Available columns: {cols}.")
    if not qi:
        raise ValueError(f"The 'quasi_identifiers' parameter of {owner} must name at least one column. Got [] instead.")
    if keep is None:
        keep_cols = [c for c in cols if c not in qi]
    else:
        keep_cols = list(keep)
        bad = [c for c in keep_cols if c not in cols]
        if bad:
            raise ValueError(f"The 'keep' parameter names columns not in 'df': {bad}. Available columns: {cols}.")
        both = [c for c in keep_cols if c in qi]
        if both:
            raise ValueError(f"Columns {both} are given both as quasi-identifiers and as kept (Z) columns; "
                             "a column is either synthesized or released unchanged.")
    used = qi + keep_cols
    ddf = ddf[cols]
    if isinstance(schema, Schema):
        inferred = infer_schema(ddf)
        synth.schema_ = Schema({c: schema[c] if c in schema else inferred[c] for c in cols})
    else:
        synth.schema_ = infer_schema(ddf, schema)
    offsets = partition_offsets(ddf)
    n = int(offsets[-1])
    cont = [c for c in used if synth.schema_.kind(c) == "continuous"]
    synth.rules_, synth.rule_rows_ = {}, {}
    rule_specs = _check_dask_rules(synth, ddf, rules, qi, keep_cols, owner) if rules else []
    checks = dask.compute(*[dask.delayed(_column_checks)(p, used, cont) for p in ddf.to_delayed()])
    rule_checks = dask.compute(*[dask.delayed(_rule_checks)(p, synth.schema_, rule_specs)
                                 for p in ddf.to_delayed()]) if rule_specs else []
    rule_of = {}
    for c, cond, coded in rule_specs:
        hits = sum(rc[c][0] for rc in rule_checks)
        broken = sum(rc[c][1] for rc in rule_checks)
        if broken:
            # in memory the data are set to the rule's value (with a warning); partitions are not rewritten
            raise ValueError(f"Column '{c}' breaks its rule on {broken} rows of df; the Dask path needs data that "
                             "follow their rules (fit in memory, where the models see the data as the rule says).")
        free = sum(rc[c][2] for rc in rule_checks) if synth.schema_[c].is_categorical else None
        if free is not None and int((free > 0).sum()) < 2:
            refuse_dask(f"{owner}.fit with the rule for column '{c}'",
                        "the rows the rule leaves free hold a single level, so the column is a function of kept "
                        "columns (family 'fixed'), whose removal from later models is decided in memory",
                        "Fit in memory.")
        if hits:
            rule_of[c] = ((c, coded, synth.rules_[c][1]), free)
    miss = {c: sum(ch["missing"][c] for ch in checks) for c in used}
    for c in used:
        if miss[c] == n:
            raise ValueError(f"Column '{c}' of 'df' is entirely missing (all NaN).")
    for c in cont:
        lo = min(ch["min"][c] for ch in checks)
        hi = max(ch["max"][c] for ch in checks)
        if not lo < hi:
            raise ValueError(f"Column '{c}' of 'df' is constant (one observed value); it carries no information to model or synthesize.")
    for c in used:
        if c in checks[0]["levels"]:
            cnt = sum(ch["levels"][c] for ch in checks)
            if int((cnt > 0).sum()) < 2:
                raise ValueError(f"Column '{c}' of 'df' is constant (one observed value); it carries no information to model or synthesize.")
    if not synth.allows_missing:
        for c in used:
            if miss[c]:
                raise ValueError(f"Column '{c}' has {miss[c]} missing values; the Dask path of {owner} needs complete "
                                 "data (synthesize in memory, where missing values are modelled, or impute with "
                                 "--method risk-dami).")
    if n < synth.min_rows:
        raise ValueError(f"{owner} needs at least {synth.min_rows} rows to fit. Got {n} instead.")
    for c, t in (synth.transforms or {}).items():
        if t == "log" and c in cont and min(ch["min"][c] for ch in checks) <= 0:
            raise ValueError(f"The 'log' transform given for column '{c}' needs positive values; the column has values <= 0.")
    meta = ddf._meta
    synth.quasi_identifiers_ = qi
    synth.keep_ = keep_cols
    synth.columns_ = cols
    synth.dtypes_ = meta.dtypes.copy()
    synth.whole_number_columns_ = [c for c in cont if pd.api.types.is_float_dtype(meta[c])
                                   and sum(ch["fractional"][c] for ch in checks) == 0]
    synth.n_ = n
    synth.data_ = meta.copy()

    # encoders: mean, then centred sum of squares (canonical order: same for any partitioning)
    if cont:
        sums = canonical_sum(ddf, offsets, lambda p: (p[cont].to_numpy(dtype=float).sum(axis=0),))[0]
        means = sums / n
        ss = canonical_sum(ddf, offsets, lambda p: (((p[cont].to_numpy(dtype=float) - means) ** 2).sum(axis=0),))[0]
    else:
        means, ss = np.zeros(0), np.zeros(0)
    mean_of = dict(zip(cont, means))
    ss_of = dict(zip(cont, ss))
    synth.order_ = synth._resolve_order(qi)
    transforms = dict(synth.transforms or {})
    unknown = [c for c in transforms if c not in qi]
    if unknown:
        raise ValueError(f"The 'transforms' parameter of {owner} names columns that are not quasi-identifiers: {unknown}.")
    for c, t in transforms.items():
        if t is not None and synth.schema_[c].kind != "continuous":
            raise ValueError(f"The transform {t!r} given for column '{c}' needs a continuous column; '{c}' is {synth.schema_[c].kind}.")
    enc = {}
    for c in keep_cols + qi:
        v = synth.schema_[c]
        if v.kind == "continuous":
            sd = float(np.sqrt(ss_of[c] / n))
            enc[c] = _Encoder(c, "continuous", float(mean_of[c]), sd if sd > 0 else 1.0)
        else:
            enc[c] = _Encoder(c, "categorical", n_levels=v.n_levels)
    synth.encoders_ = enc
    z_names = ["(Intercept)"] + [lab for c in keep_cols for lab in enc[c].labels()]
    synth.conditionals_ = []
    for j, c in enumerate(synth.order_):
        v = synth.schema_[c]
        fam = synth._family(v.kind, v.n_levels)
        cond = _Conditional(column=c, kind=v.kind, family=fam, predictors=synth.order_[:j],
                            n_categories=v.n_levels, transform=transforms.get(c))
        names = z_names + [lab for pr in cond.predictors for lab in enc[pr].labels()]
        cond.coef_names = names if cond.intercept else names[1:]
        if c in rule_of:
            cond.rule = rule_of[c][0]
        synth.conditionals_.append(cond)
    # a ruled column's model on its free rows: kept columns aliased there are dropped (pivoted QR of the
    # Gram matrix summed over partitions), as in memory; the design is a template rebound per partition
    ruled_idx = [j for j, cd in enumerate(synth.conditionals_) if cd.rule is not None]
    if ruled_idx:
        from ..models.conditional import AdditiveDesign
        from ..models.rubin import _non_aliased_gram

        light0 = _copy.copy(synth)
        light0.retain_records()
        grams = canonical_sum(ddf, offsets, lambda p: tuple(g for j in ruled_idx for g in _free_gram(light0, j)(p)))
        for j, G in zip(ruled_idx, grams):
            cond = synth.conditionals_[j]
            idx = _non_aliased_gram(G)
            cond.design = AdditiveDesign(np.zeros((1, len(z_names))), z_names,
                                         [enc[pr] for pr in cond.predictors], cond.intercept, idx)
            cond.coef_names = list(cond.design.names)

    # bounds and grid of the continuous QIs (synthmi.models.truncation), as in memory: the observed range
    # by reduction; the grid "auto" is the whole-number grid when no value has a fractional part (finer
    # grids such as halves are detected in memory only)
    from ..models.truncation import Support

    synth.supports_ = {}
    for c in qi:
        if synth.schema_[c].kind != "continuous":
            continue
        lo = min(ch["min"][c] for ch in checks)
        hi = max(ch["max"][c] for ch in checks)
        step = synth.grid.get(c, "auto") if isinstance(synth.grid, dict) else synth.grid
        if step == "auto":
            grid = (0.0, 1.0) if sum(ch["fractional"][c] for ch in checks) == 0 and hi - lo >= 2 else None
        else:
            grid = None if step is None else (0.0, float(step))
        synth.supports_[c] = Support(float(lo), float(hi), "observed", grid)
    for cond in synth.conditionals_:
        cond.support = synth.supports_.get(cond.column)
    normal_idx = [j for j, cd in enumerate(synth.conditionals_) if cd.family == "normal"]
    cat_idx = [j for j, cd in enumerate(synth.conditionals_) if cd.family != "normal"]
    light = _copy.copy(synth)  # what the partition tasks need (no dask objects inside)
    light.retain_records()  # shipped to this job's workers, never published: pickled whole
    if normal_idx:
        stats = canonical_sum(ddf, offsets, _normal_stats(light, normal_idx))
        for k, j in enumerate(normal_idx):
            XtX, Xty, yty, nn = stats[4 * k: 4 * k + 4]
            cond = synth.conditionals_[j]
            try:
                cond.fast = _normal_posterior(XtX, Xty, float(yty), float(nn))
            except ValueError as err:
                # name the column modelled and its design, as the in-memory fit does
                raise ValueError(f"The normal model of column '{cond.column}' (predictors {cond.coef_names}): "
                                 f"{err}") from None
    K = n_buckets(n)
    if cat_idx:
        pieces = map_partitions_with_offset(ddf, offsets, _partition_groups, light, cat_idx, K)
        merge = dask.delayed(_merge_bucket, pure=True)
        for j in cat_idx:
            cond = synth.conditionals_[j]
            p = len(cond.coef_names)
            buckets = [merge([pc[(j, k)] for pc in pieces], cond.family, p, cond.n_categories, float(synth.prior_sd))
                       for k in range(K)]
            buckets = list(dask.persist(*buckets))
            # category totals of the rows the model is fitted on (a ruled column: its free rows)
            code_counts = rule_of[cond.column][1] if cond.rule is not None else \
                sum(ch["levels"][cond.column] for ch in checks)
            cond.fast = BucketedCategoricalModel(cond.family, p, cond.n_categories, float(synth.prior_sd), buckets,
                                                 np.asarray(code_counts, dtype=float))
    if isinstance(synth, DAMISynthesizer):
        _fit_masks(synth, {c: ss_of.get(c) for c in qi}, n)
    synth.dask_ = {"frame": ddf, "offsets": offsets, "n_buckets": K}
    return synth


def _fit_masks(synth, ss_of: dict, n: int) -> None:
    """DA-MI's masking models, as in :meth:`DAMISynthesizer._fit_extra` (variance by reduction)."""
    owner = type(synth).__name__
    qi = synth.quasi_identifiers_
    specs = dict(synth.masks or {})
    unknown = [c for c in specs if c not in qi]
    if unknown:
        raise ValueError(f"The 'masks' parameter of {owner} names columns that are not quasi-identifiers: {unknown}. "
                         f"Quasi-identifiers: {qi}.")
    transforms = dict(synth.transforms or {})
    synth.masks_ = {}
    for c in qi:
        if c not in specs:
            continue
        mask = make_masking(specs[c], c)
        kind = synth.schema_[c].kind
        if kind == "continuous":
            if not isinstance(mask, NormalMasking):
                raise mask_kind_error(c, kind, mask)
            if not mask.is_null and transforms.get(c) is not None:
                raise ValueError(f"Column '{c}' has the {transforms[c]!r} transform and a normal mask: the mask acts on the raw "
                                 "scale and the regression on the transformed one, so the predictive is not normal. Drop one of the two.")
            if not mask.is_calibrated:
                var = ss_of[c] / (n - 1)  # ddof = 1, as NormalMasking.calibrate
                mask = NormalMasking(mask.K, sigma_e=float(np.sqrt(mask.K * var * (1.0 / mask.reliability - 1.0))))
        else:
            if isinstance(mask, NormalMasking):
                raise mask_kind_error(c, kind, mask)
            if isinstance(mask, TransitionMasking):
                mask = mask.bind(synth.schema_[c].n_levels)
        synth.masks_[c] = mask
    synth.w_entropy_ = entropy_from(check_random_state(synth.random_state))


# --------------------------------------------------------------------------- sample
def _partition_view(light, part: pd.DataFrame, offset: int):
    """The fitted synthesizer restricted to the rows of one partition (global position ``offset``)."""
    from ..models.dami import DAMISynthesizer

    local = _copy.copy(light)
    local.data_ = part
    local._Z_design_ = _encode_z(light, part)
    local.rule_rows_ = _rule_rows(light, part)
    if isinstance(light, DAMISynthesizer):
        local._x_conf_ = {c: _values(light, part, c) for c in light.masks_}
        local.W_ = {c: mk.draw(local._x_conf_[c], light._w_rng(c, offset))
                    for c, mk in light.masks_.items() if not mk.is_null}
    return local


def _sample_partition(part: pd.DataFrame, offset: int, light, thetas: list, entropy, copies: list[int]) -> list[pd.DataFrame]:
    local = _partition_view(light, part, offset)
    return [local._assemble(local._sample_copy(i, thetas, PositionalRNG(entropy, tag=(i,), offset=offset))) for i in copies]


def _write_partition(part: pd.DataFrame, offset: int, k: int, light, thetas, entropy, m: int, directory: str) -> int:
    frames = _sample_partition(part, offset, light, thetas, entropy, list(range(m)))
    for i, f in enumerate(frames, start=1):
        f.to_parquet(os.path.join(directory, f"copy_{i:02d}", f"part.{k:05d}.parquet"), index=True)
    return len(part)


def _select(part: pd.DataFrame, offset: int, light, thetas, entropy, i: int) -> pd.DataFrame:
    return _sample_partition(part, offset, light, thetas, entropy, [i])[0]


@dataclass
class DaskSyntheticData:
    """M partially synthetic copies of a Dask DataFrame, computed lazily partition by partition.

    ``copy(i)`` is a lazy dask DataFrame of copy ``i`` (1-based, index = the original's);
    :meth:`to_parquet` writes all copies partition by partition, never gathering them.
    ``diagnostics_check`` is the record of the convergence check the copies passed (or, with
    ``accept_diagnostics=True``, failed and were accepted), written to ``metadata.json``.
    """

    m: int
    method: str
    params: dict
    seed: int | None
    quasi_identifiers: list[str]
    diagnostics: Any
    diagnostics_check: dict
    _light: Any
    _thetas: list
    _entropy: tuple
    _frame: Any
    _offsets: np.ndarray

    def copy(self, i: int):
        import dask.dataframe as dd

        if not 1 <= int(i) <= self.m:
            raise ValueError(f"The copy number must be in 1..{self.m}. Got {i!r} instead.")
        tasks = map_partitions_with_offset(self._frame, self._offsets, _select, self._light, self._thetas,
                                           self._entropy, int(i) - 1)
        return dd.from_delayed(tasks, meta=self._light.data_[self._light.columns_], verify_meta=False)

    @property
    def copies(self) -> list:
        return [self.copy(i) for i in range(1, self.m + 1)]

    def compute(self) -> list[pd.DataFrame]:
        """All copies as pandas frames (small data and tests only)."""
        import dask

        return list(dask.compute(*self.copies))

    def to_parquet(self, directory: str, source: dict[str, Any] | None = None) -> dict[str, Any]:
        """Write ``directory/copy_XX/part.NNNNN.parquet`` for every copy and partition, and ``metadata.json``
        (the one writer of it; ``source``: where the data came from, recorded under ``"source"``).

        ``directory`` must not exist yet (nothing the user did not name is overwritten).
        """
        import dask

        if os.path.exists(directory):
            raise FileExistsError(f"The output directory '{directory}' already exists; give a new path.")
        os.makedirs(directory)
        for i in range(1, self.m + 1):
            os.makedirs(os.path.join(directory, f"copy_{i:02d}"))
        f = dask.delayed(_write_partition, pure=True)
        tasks = [f(p, int(o), k, self._light, self._thetas, self._entropy, self.m, directory)
                 for k, (p, o) in enumerate(zip(self._frame.to_delayed(), self._offsets[:-1]))]
        rows = int(sum(dask.compute(*tasks)))
        meta = {
            "method": self.method, "m": self.m, "seed": self.seed, "params": _jsonable(self.params),
            "quasi_identifiers": self.quasi_identifiers, "n_records": rows,
            "n_partitions": len(tasks), "engine": "dask", "diagnostics": _jsonable(self.diagnostics),
            "diagnostics_check": _jsonable(self.diagnostics_check),
            "layout": "copy_XX/part.NNNNN.parquet, partition k of copy XX; index = original record labels",
        }
        if source is not None:
            meta["source"] = _jsonable(dict(source))
        with open(os.path.join(directory, "metadata.json"), "w") as fh:
            json.dump(meta, fh, indent=2, sort_keys=True)
        return meta


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating, float)):
        return float(x) if np.isfinite(x) else None
    if isinstance(x, (str, int, bool)) or x is None:
        return x
    return repr(x)


def sample(synth, m: int = 1, random_state: Any = None) -> DaskSyntheticData:
    """``m`` copies of a synthesizer fitted by :func:`fit` (posterior draws here, records per partition)."""
    synth._check_fitted()
    m = check_scalar(m, "m", type(synth).__name__, kind="int", lower=1)
    seed = random_state if isinstance(random_state, (int, np.integer)) else None
    rng = check_random_state(random_state)
    thetas, entropy = synth._sampling_plan(m, rng)
    diagnostics = synth._diagnostics()
    # fail closed, as the in-memory sample(): a sampler that failed the convergence check gives no
    # copies, not even lazy ones, unless the user accepted the failure (then it is recorded)
    check = enforce_diagnostics(
        diagnostics, owner=type(synth).__name__, accept=getattr(synth, "accept_diagnostics", False),
        rhat_max=getattr(synth, "rhat_max", RHAT_MAX), ess_min=getattr(synth, "ess_min", ESS_MIN),
    )
    synth._check_diagnostics()
    light = _copy.copy(synth)
    light.retain_records()  # shipped to this job's workers, never published: pickled whole
    light.dask_ = None
    light.conditionals_ = []
    for cond in synth.conditionals_:
        c2 = _copy.copy(cond)
        if isinstance(cond.fast, BucketedCategoricalModel):
            c2.fast = cond.fast.template
        light.conditionals_.append(c2)
    d = synth.dask_
    return DaskSyntheticData(
        m=m, method=synth.method, params=synth.get_params(), seed=None if seed is None else int(seed),
        quasi_identifiers=list(synth.quasi_identifiers_), diagnostics=diagnostics, diagnostics_check=check,
        _light=light, _thetas=thetas, _entropy=entropy, _frame=d["frame"], _offsets=d["offsets"],
    )
