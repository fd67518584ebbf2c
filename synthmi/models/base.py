"""The one contract every synthesizer keeps.

``__init__(**tuning)`` stores parameters unchanged and does no work;
``fit(df, quasi_identifiers=[...], keep=None, schema=None)`` validates roles and
dtypes, fits, returns ``self``; ``sample(m, random_state=None)`` returns a
:class:`~synthmi.synthetic.SyntheticData`.

Subclasses implement ``_fit(self, X, Z)`` and ``_sample(self, m, rng)`` (a list
of ``m`` frames of the quasi-identifier columns), and may override
``_check_params``, ``_diagnostics`` and ``_structure``.
"""
from __future__ import annotations

import abc
import inspect
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .._validate import (
    NotFittedError,
    check_columns_exist,
    check_dataframe,
    check_finite,
    check_no_missing,
    check_not_degenerate,
    check_random_state,
    check_scalar,
)
from ..diagnostics import ESS_MIN, RHAT_MAX
from ..diagnostics import enforce as enforce_diagnostics
from ..schema import Schema
from ..scale._frames import is_dask_frame as _is_dask_frame
from ..synthetic import SyntheticData


class Synthesizer(abc.ABC):
    """Base class: validation, fitted-state bookkeeping and assembly of copies."""

    method: str = "base"
    #: minimum number of complete rows needed to fit
    min_rows: int = 10
    #: whether the model can take missing values in the data (most cannot)
    allows_missing: bool = False

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
        used = qi + keep_cols
        check_not_degenerate(df, used, "df")
        if isinstance(schema, Schema):
            inferred = Schema.infer(df)
            self.schema_ = Schema({c: schema[c] if c in schema else inferred[c] for c in df.columns})
        else:
            self.schema_ = Schema.infer(df, schema)
        check_finite(df, used, "df")
        if not self.allows_missing:
            check_no_missing(
                df, used, "df",
                why=f"{owner} needs complete data (impute first, or use RiskTargetedSynthesizer which models missing values).",
            )
        if len(df) < self.min_rows:
            raise ValueError(f"{owner} needs at least {self.min_rows} rows to fit. Got {len(df)} instead.")
        self.quasi_identifiers_ = qi
        self.keep_ = keep_cols
        self.columns_ = list(df.columns)
        self.dtypes_ = df.dtypes.copy()
        self.whole_number_columns_ = [
            c for c in used
            if self.schema_.kind(c) == "continuous" and pd.api.types.is_float_dtype(df[c])
            and bool(np.all(np.mod(df[c].dropna().to_numpy(), 1.0) == 0.0))
        ]
        self.n_ = len(df)
        # A private copy: later changes to the caller's frame cannot leak into copies.
        self.data_ = df.copy()
        self._fit(self.data_[qi], self.data_[keep_cols])
        return self

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
        copies = [self._assemble(X) for X in X_list]
        return SyntheticData(
            copies=copies,
            method=self.method,
            params=self.get_params(),
            seed=None if seed is None else int(seed),
            quasi_identifiers=list(self.quasi_identifiers_),
            diagnostics=diagnostics,
            structure=self._structure(m),
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
        out = self.data_.copy()
        for c in X.columns:
            col = X[c]
            dt = self.dtypes_[c]
            if isinstance(dt, pd.CategoricalDtype):
                values = col.to_numpy() if isinstance(col.dtype, pd.CategoricalDtype) else np.asarray(col, dtype=object)
                out[c] = pd.Categorical(values, dtype=dt)
            elif pd.api.types.is_integer_dtype(dt) or c in self.whole_number_columns_:
                x = np.rint(np.asarray(col, dtype=float))
                out[c] = x.astype(dt) if pd.api.types.is_integer_dtype(dt) else x.astype(dt, copy=False)
            else:
                # through a Series: pandas 3 reads text as the extension dtype ``str``, which
                # numpy's astype cannot take
                out[c] = pd.Series(np.asarray(col), index=out.index).astype(dt)
        return out[self.columns_]
