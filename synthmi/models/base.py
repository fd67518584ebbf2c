"""The one contract every synthesizer keeps.

``__init__(**tuning)`` stores parameters unchanged and does no work;
``fit(df, quasi_identifiers=[...], keep=None, schema=None)`` validates roles and
dtypes, fits, returns ``self``; ``sample(m, random_state=None)`` returns a
:class:`~synthmi.synthetic.SyntheticData`.

Subclasses implement ``_fit(self, X, Z)`` and ``_sample(self, m, rng)`` (a list
of ``m`` frames of the quasi-identifier columns), and may override
``_check_params``, ``_diagnostics`` and ``_structure``.

Agency microdata (missing values, point masses, survey weights, structural
rules) are handled here, once, for every model that does not model missing
values itself (``allows_missing = False``), in synthpop's way (Nowok, Raab &
Dibben 2016, J. Stat. Softw. 74(11), sections 3.4-3.5, arguments ``semicont``,
``rules`` and ``rvalues`` of ``syn``):

* a kept column with missing values is released unchanged; as a predictor a
  numeric one enters as its values (missing -> the observed mean) plus a 0/1
  indicator ``<col>_NA``, a categorical one with ``<NA>`` as its own level;
* a synthesized categorical column gets ``<NA>`` as its own level;
* a synthesized numeric column with missing values and/or point masses
  (``semicont``, e.g. zeros of an income) becomes two parts: a categorical
  ``<col>_part`` (levels ``value``, the point masses, ``<NA>``) synthesized
  just before it, then the column's own model fitted on the ``value`` rows
  only and drawn for every row, the point mass or missing value replacing the
  draw where the synthetic part says so;
* ``rules`` (``{col: {"rule": "employed == 'No'", "value": None}}``) are
  applied to every copy after synthesis, evaluated on the copy;
* a survey weight column (``weights``) is released unchanged and is not a
  predictor unless ``weight_as_predictor=True``.
"""
from __future__ import annotations

import abc
import inspect
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .._validate import (
    NotFittedError,
    param_error,
    check_columns_exist,
    check_dataframe,
    check_finite,
    check_not_degenerate,
    check_random_state,
    check_scalar,
)
from ..diagnostics import ESS_MIN, RHAT_MAX
from ..diagnostics import enforce as enforce_diagnostics
from ..schema import Schema
from ..scale._frames import is_dask_frame as _is_dask_frame
from ..synthetic import SyntheticData

#: level that stands for a missing value of a categorical column in the models
NA_LEVEL = "<NA>"
#: first level of a ``<col>_part`` indicator: the column's model decides the value
VALUE_LEVEL = "value"
#: method names used in messages (the CLI's ``--method``), by class name
CLI_NAMES = {
    "RubinSynthesizer": "rubin", "DAMISynthesizer": "dami", "CartSynthesizer": "cart",
    "RiskTargetedSynthesizer": "risk-dami",
}


class Synthesizer(abc.ABC):
    """Base class: validation, fitted-state bookkeeping and assembly of copies."""

    method: str = "base"
    #: minimum number of complete rows needed to fit
    min_rows: int = 10
    #: whether the model can take missing values in the data (most cannot)
    allows_missing: bool = False
    #: progress callback ``f(message)`` (the CLI sets one; None: silent)
    _progress = None

    def set_progress(self, callback) -> "Synthesizer":
        """Report progress (per step, copy and column) to ``callback(message)``; None silences."""
        self._progress = callback
        return self

    # ---- parameters (scikit-learn style) ---------------------------------
    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p for p in sig.parameters if p != "self" and sig.parameters[p].kind != inspect.Parameter.VAR_KEYWORD]

    def get_params(self) -> dict[str, Any]:
        return {p: getattr(self, p) for p in self._param_names()}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def _check_params(self) -> None:
        """Validate tuning parameters (called at the start of ``fit``)."""

    # ---- fit ---------------------------------------------------------------
    def fit(
        self,
        df: pd.DataFrame,
        quasi_identifiers: Sequence[str],
        keep: Sequence[str] | None = None,
        schema: Schema | dict | None = None,
        weights: str | None = None,
        semicont: dict[str, Sequence[float]] | None = None,
        rules: dict[str, dict[str, Any]] | None = None,
        weight_as_predictor: bool = False,
    ) -> "Synthesizer":
        """Validate roles and dtypes, then fit the synthesis model.

        Parameters
        ----------
        df : DataFrame
            The confidential data. Never modified.
        quasi_identifiers : list of str
            Columns X to synthesize.
        keep : list of str, optional
            Non-identifying columns Z released unchanged and used as predictors.
            Default: every column not in ``quasi_identifiers``.
        schema : Schema or dict, optional
            Column kinds; a dict maps column -> kind and overrides inference.
        weights : str, optional
            A survey weight column: released unchanged, not a predictor
            (unless ``weight_as_predictor``), recorded in the copies'
            ``structure["weights"]`` so that evaluation leaves it out of
            pMSE / tables and analyses can weight by it.
        semicont : dict, optional
            Numeric quasi-identifier -> point masses (e.g. ``{"income": [0]}``),
            synthesized by a two-part model (synthpop's ``semicont``).
        rules : dict, optional
            Column -> ``{"rule": <pandas query on the copy>, "value": v}``:
            where the rule holds the column is set to ``v`` (None = missing) in
            every copy (synthpop's ``rules`` / ``rvalues``).
        weight_as_predictor : bool
            Use the weight column as a predictor as well.
        """
        if _is_dask_frame(df):
            # partitioned data: fit by reduction (synthmi.scale); refuses models without a Dask path
            from ..scale import synthesis as _dask_synthesis

            return _dask_synthesis.fit(self, df, quasi_identifiers, keep, schema)
        self.dask_ = None
        owner = type(self).__name__
        self._check_params()
        check_dataframe(df, "df")
        qi = check_columns_exist(df, quasi_identifiers, "quasi_identifiers", "df")
        if not qi:
            raise ValueError(f"The 'quasi_identifiers' parameter of {owner} must name at least one column. Got [] instead.")
        if keep is None:
            keep_cols = [c for c in df.columns if c not in qi]
        else:
            keep_cols = check_columns_exist(df, keep, "keep", "df")
            both = [c for c in keep_cols if c in qi]
            if both:
                raise ValueError(
                    f"Columns {both} are given both as quasi-identifiers and as kept (Z) columns; "
                    "a column is either synthesized or released unchanged."
                )
        self.weights_ = self._check_weights(df, weights, qi, owner)
        if self.weights_ is not None and not weight_as_predictor:
            keep_cols = [c for c in keep_cols if c != self.weights_]
        elif self.weights_ is not None and self.weights_ not in keep_cols:
            keep_cols = keep_cols + [self.weights_]
        used = qi + keep_cols
        check_not_degenerate(df, used, "df")
        if isinstance(schema, Schema):
            inferred = Schema.infer(df)
            released_schema = Schema({c: schema[c] if c in schema else inferred[c] for c in df.columns})
        else:
            released_schema = Schema.infer(df, schema)
        check_finite(df, used, "df")
        if len(df) < self.min_rows:
            raise ValueError(f"{owner} needs at least {self.min_rows} rows to fit. Got {len(df)} instead.")
        self.semicont_ = self._check_semicont(df, semicont, qi, released_schema, owner)
        self.rules_ = self._check_rules(df, rules, owner)
        self.released_qi_ = list(qi)
        self.keep_ = keep_cols
        self.columns_ = list(df.columns)
        self.dtypes_ = df.dtypes.copy()
        self.whole_number_columns_ = [
            c for c in used
            if released_schema.kind(c) == "continuous" and pd.api.types.is_float_dtype(df[c])
            and bool(np.all(np.mod(df[c].dropna().to_numpy(), 1.0) == 0.0))
        ]
        self.n_ = len(df)
        # A private copy: later changes to the caller's frame cannot leak into copies.
        self.released_ = df.copy()
        if self.allows_missing:
            self.schema_ = released_schema
            self.parts_, self.na_level_columns_, self.value_rows_, self.na_indicators_ = {}, [], {}, {}
            self.quasi_identifiers_ = qi
            self.data_ = self.released_
            model_keep = keep_cols
        else:
            self.data_, self.quasi_identifiers_, model_keep = self._model_frame(df, qi, keep_cols, released_schema)
            # columns recoded with a <NA> level (unordered: an ordinal with <NA> is modelled
            # as nominal) and the new _part / _NA columns get their kinds from the model frame
            inferred = Schema.infer(self.data_)
            self.schema_ = Schema({
                c: released_schema[c] if c in released_schema and c not in self.na_level_columns_ else inferred[c]
                for c in self.data_.columns
            })
        self.model_keep_ = model_keep
        self.model_frame_recoded_ = bool(self.parts_ or self.na_level_columns_ or self.na_indicators_)
        if not self.model_frame_recoded_:
            # nothing recoded: one frame (synthmi.scale swaps data_ for a partition and assembles from it)
            self.data_ = self.released_
        self._fit(self.data_[self.quasi_identifiers_], self.data_[model_keep])
        return self

    # ---- agency microdata: weights, missing values, point masses, rules ---------
    def _check_weights(self, df: pd.DataFrame, weights: str | None, qi: list[str], owner: str) -> str | None:
        if weights is None:
            return None
        if not isinstance(weights, str) or weights not in df.columns:
            raise ValueError(
                f"The 'weights' parameter of {owner} must name a column of df. Got {weights!r} instead."
            )
        if weights in qi:
            raise ValueError(f"The weight column '{weights}' cannot be a quasi-identifier: weights are released unchanged.")
        w = df[weights]
        if not pd.api.types.is_numeric_dtype(w) or isinstance(w.dtype, pd.CategoricalDtype):
            raise ValueError(f"The weight column '{weights}' must be numeric. Got dtype {w.dtype} instead.")
        x = w.to_numpy(dtype=float)
        if np.isnan(x).any() or np.any(x <= 0) or not np.all(np.isfinite(x)):
            raise ValueError(f"The weight column '{weights}' must hold positive finite values with none missing.")
        return weights

    def _check_semicont(self, df, semicont, qi, schema, owner) -> dict[str, list[float]]:
        if semicont is None:
            return {}
        if not isinstance(semicont, dict):
            raise param_error("semicont", owner, "a dict mapping numeric quasi-identifiers to point masses", semicont)
        out = {}
        for c, pts in semicont.items():
            if c not in qi:
                raise ValueError(f"The 'semicont' parameter of {owner} names '{c}', which is not a quasi-identifier ({qi}).")
            if schema.kind(c) != "continuous":
                raise ValueError(f"The 'semicont' parameter of {owner} needs a numeric column; '{c}' is {schema.kind(c)}.")
            pts = [pts] if np.isscalar(pts) else list(pts)
            try:
                pts = [float(p) for p in pts]
            except (TypeError, ValueError):
                raise ValueError(f"The point masses given for '{c}' in 'semicont' must be numbers. Got {pts!r} instead.") from None
            if not pts:
                raise ValueError(f"The 'semicont' entry for '{c}' names no point mass.")
            out[c] = pts
        return out

    def _check_rules(self, df, rules, owner) -> dict[str, tuple[str, Any]]:
        if rules is None:
            return {}
        if not isinstance(rules, dict):
            raise param_error("rules", owner, "a dict column -> {'rule': condition, 'value': value}", rules)
        out = {}
        for c, r in rules.items():
            if c not in df.columns:
                raise ValueError(f"The 'rules' parameter of {owner} names '{c}', which is not a column of df.")
            if isinstance(r, str):
                cond, value = r, None
            elif isinstance(r, dict) and "rule" in r:
                cond, value = r["rule"], r.get("value")
            else:
                raise ValueError(
                    f"The rule for column '{c}' must be a condition string or {{'rule': condition, 'value': value}}. "
                    f"Got {r!r} instead."
                )
            try:
                hit = df.eval(cond)
            except Exception as exc:  # pandas raises many kinds for a bad expression
                raise ValueError(f"The rule {cond!r} for column '{c}' cannot be evaluated on df: {exc}") from None
            if not (isinstance(hit, pd.Series) and pd.api.types.is_bool_dtype(hit)):
                raise ValueError(f"The rule {cond!r} for column '{c}' must give True/False for every row.")
            out[c] = (cond, value)
        return out

    def _model_frame(self, df, qi, keep_cols, schema) -> tuple[pd.DataFrame, list[str], list[str]]:
        """The frame the models see: missing values and point masses recoded (module docstring)."""
        cols: dict[str, Any] = {}
        model_qi: list[str] = []
        model_keep: list[str] = []
        self.parts_: dict[str, list] = {}
        self.na_level_columns_: list[str] = []
        self.value_rows_: dict[str, np.ndarray] = {}
        self.na_indicators_: dict[str, str] = {}
        taken = set(df.columns)

        def fresh(name: str) -> str:
            while name in taken:
                name = name + "_"
            taken.add(name)
            return name

        def na_level(c: str) -> pd.Categorical:
            s = df[c]
            v = schema[c]
            vals = s.astype(object).where(s.notna(), NA_LEVEL)
            return pd.Categorical(vals, categories=list(v.categories) + [NA_LEVEL])

        for c in keep_cols:
            s = df[c]
            miss = s.isna().to_numpy()
            if not miss.any():
                cols[c] = s
                model_keep.append(c)
            elif schema[c].is_categorical:
                cols[c] = na_level(c)
                self.na_level_columns_.append(c)
                model_keep.append(c)
            else:
                x = s.to_numpy(dtype=float)
                cols[c] = np.where(miss, np.nanmean(x), x)
                ind = fresh(f"{c}_NA")
                cols[ind] = miss.astype(float)
                self.na_indicators_[c] = ind
                model_keep += [c, ind]
        for c in qi:
            s = df[c]
            miss = s.isna().to_numpy()
            if schema[c].is_categorical:
                if miss.any():
                    cols[c] = na_level(c)
                    self.na_level_columns_.append(c)
                else:
                    cols[c] = s
                model_qi.append(c)
                continue
            x = s.to_numpy(dtype=float)
            points = self.semicont_.get(c, [])
            labels = np.full(len(x), VALUE_LEVEL, dtype=object)
            levels = [VALUE_LEVEL]
            for pnt in points:
                at = ~miss & (x == pnt)
                if at.any():
                    labels[at] = repr(pnt)
                    levels.append(repr(pnt))
            if miss.any():
                labels[miss] = NA_LEVEL
                levels.append(NA_LEVEL)
            value = labels == VALUE_LEVEL
            if len(levels) == 1:
                cols[c] = s
                model_qi.append(c)
                continue
            if value.sum() < max(self.min_rows, 3) or np.unique(x[value]).size < 2:
                raise ValueError(
                    f"Column '{c}' has {int(value.sum())} rows outside its point masses / missing values; "
                    "too few to model its values."
                )
            part = fresh(f"{c}_part")
            cols[part] = pd.Categorical(labels, categories=levels)
            cols[c] = np.where(value, x, np.mean(x[value]))
            self.parts_[c] = {"column": part, "levels": levels, "fill": float(np.mean(x[value])),
                              "values": [None if lev == NA_LEVEL else float(lev) for lev in levels[1:]]}
            self.value_rows_[c] = value
            model_qi += [part, c]
        for c in df.columns:
            if c not in cols:
                cols[c] = df[c]
        return pd.DataFrame(cols, index=df.index), model_qi, model_keep

    def _part_of(self, c: str) -> str | None:
        """The ``<col>_part`` indicator of a two-part column (None if ``c`` has none)."""
        p = getattr(self, "parts_", {}).get(c)
        return None if p is None else p["column"]

    def _fill_parts(self, c: str, values: np.ndarray, part_codes: np.ndarray | None) -> np.ndarray:
        """Values of a two-part column as its later predictors saw them in the fit:
        rows whose synthetic part is not ``value`` get the fill used there."""
        if part_codes is None or c not in getattr(self, "value_rows_", {}):
            return values
        fill = self.parts_[c]["fill"]
        out = np.asarray(values, dtype=float).copy()
        out[np.asarray(part_codes) != 0] = fill
        return out

    def _restore(self, X: pd.DataFrame) -> pd.DataFrame:
        """Model-frame columns back to the released coding (parts, ``<NA>`` levels)."""
        out = {}
        for c in self.released_qi_:
            col = X[c]
            info = getattr(self, "parts_", {}).get(c)
            if info is not None:
                part = X[info["column"]]
                codes = part.cat.codes.to_numpy() if isinstance(part.dtype, pd.CategoricalDtype) else \
                    pd.Categorical(part, categories=info["levels"]).codes
                x = np.asarray(col, dtype=float).copy()
                for k, v in enumerate(info["values"], start=1):
                    x[codes == k] = np.nan if v is None else v
                out[c] = x
            elif c in getattr(self, "na_level_columns_", []):
                vals = np.asarray(col.astype(object))
                out[c] = np.where(vals == NA_LEVEL, None, vals)
            else:
                out[c] = col.to_numpy() if isinstance(col, pd.Series) else col
        return pd.DataFrame({c: pd.Series(v, index=X.index) if not isinstance(v, pd.Series) else v
                             for c, v in out.items()}, index=X.index)

    def _apply_rules(self, frame: pd.DataFrame) -> pd.DataFrame:
        for c, (cond, value) in getattr(self, "rules_", {}).items():
            hit = frame.eval(cond).to_numpy(dtype=bool)
            if hit.any():
                if value is None:
                    frame.loc[hit, c] = np.nan if not isinstance(frame[c].dtype, pd.CategoricalDtype) else None
                else:
                    frame.loc[hit, c] = value
        return frame

    @abc.abstractmethod
    def _fit(self, X: pd.DataFrame, Z: pd.DataFrame) -> None:
        """Fit the synthesis model of X given Z (both already validated)."""

    # ---- sample ------------------------------------------------------------
    def _check_fitted(self) -> None:
        if not hasattr(self, "quasi_identifiers_"):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' with "
                "appropriate arguments before using 'sample'."
            )

    def sample(self, m: int = 1, random_state: int | np.random.Generator | None = None) -> SyntheticData:
        """Draw ``m`` synthetic copies.

        Each copy has the original's columns, order and dtypes; the kept (Z)
        columns are the original's, the quasi-identifiers are synthetic.
        Same ``random_state`` -> identical copies.

        Raises :class:`~synthmi.diagnostics.DiagnosticsFailed` when the
        posterior sampler failed the convergence check (R-hat above
        ``rhat_max`` or bulk ESS below ``ess_min`` for some column) unless the
        synthesizer was built with ``accept_diagnostics=True``.
        """
        self._check_fitted()
        if getattr(self, "dask_", None) is not None:
            # fitted on a dask DataFrame: lazy copies, written partition by partition
            from ..scale import synthesis as _dask_synthesis

            return _dask_synthesis.sample(self, m, random_state)
        m = check_scalar(m, "m", type(self).__name__, kind="int", lower=1)
        seed = random_state if isinstance(random_state, (int, np.integer)) else None
        rng = check_random_state(random_state)
        X_list = self._sample(m, rng)
        diagnostics = self._diagnostics()
        # fail closed: no copies leave a sampler that did not converge, unless the user accepts it
        check = enforce_diagnostics(
            diagnostics, owner=type(self).__name__,
            accept=getattr(self, "accept_diagnostics", False),
            rhat_max=getattr(self, "rhat_max", RHAT_MAX), ess_min=getattr(self, "ess_min", ESS_MIN),
        )
        copies = [self._apply_rules(self._assemble(self._restore(X))) for X in X_list]
        structure = dict(self._structure(m))
        if getattr(self, "weights_", None) is not None:
            structure["weights"] = self.weights_
        if getattr(self, "parts_", None) or getattr(self, "na_level_columns_", None) or getattr(self, "rules_", None):
            structure["missing"] = {
                "two_part": {c: {"part_levels": p["levels"]} for c, p in self.parts_.items()},
                "na_level": list(self.na_level_columns_),
                "na_indicator": dict(self.na_indicators_),
                "rules": {c: {"rule": r, "value": v} for c, (r, v) in self.rules_.items()},
            }
        return SyntheticData(
            copies=copies,
            method=self.method,
            params=self.get_params(),
            seed=None if seed is None else int(seed),
            quasi_identifiers=list(self.released_qi_),
            diagnostics=diagnostics,
            structure=structure,
            diagnostics_check=check,
            original_fingerprint={"n_rows": int(self.n_), "columns": list(self.columns_)},
        )

    @abc.abstractmethod
    def _sample(self, m: int, rng: np.random.Generator) -> list[pd.DataFrame]:
        """Return ``m`` frames holding synthetic values of the quasi-identifiers."""

    def _diagnostics(self) -> Any:
        return None

    def _structure(self, m: int) -> dict[str, Any]:
        return {}

    def _assemble(self, X: pd.DataFrame) -> pd.DataFrame:
        """The original frame with the columns of ``X`` replaced, dtypes kept.

        ``X`` holds the synthetic quasi-identifiers (and, for models that impute,
        completed kept columns). A continuous column whose observed values are all
        whole numbers (ages in years, counts) is synthesized on that grid: draws are
        rounded, so copies keep the variable's support instead of being told apart
        from the original by their fractional parts.
        """
        # the released frame when the models saw a recoded one (missing values, parts); the
        # scale paths (synthmi.scale) set data_ to a partition and assemble from it
        out = (self.released_ if getattr(self, "model_frame_recoded_", False) else self.data_).copy()
        for c in X.columns:
            col = X[c]
            dt = self.dtypes_[c]
            if isinstance(dt, pd.CategoricalDtype):
                values = col.to_numpy() if isinstance(col.dtype, pd.CategoricalDtype) else np.asarray(col, dtype=object)
                out[c] = pd.Categorical(values, dtype=dt)
            elif pd.api.types.is_integer_dtype(dt) or c in self.whole_number_columns_:
                x = np.rint(np.asarray(col, dtype=float))
                if pd.api.types.is_integer_dtype(dt) and np.isnan(x).any():
                    out[c] = pd.array(np.where(np.isnan(x), 0, x).astype(np.int64), dtype="Int64")
                    out.loc[np.isnan(x), c] = pd.NA
                else:
                    out[c] = x.astype(dt) if pd.api.types.is_integer_dtype(dt) else x.astype(dt, copy=False)
            else:
                # through a Series: pandas 3 reads text as the extension dtype ``str``, which
                # numpy's astype cannot take
                out[c] = pd.Series(np.asarray(col), index=out.index).astype(dt)
        return out[self.columns_]
