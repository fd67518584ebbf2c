"""The one contract every synthesizer keeps.

``__init__(**tuning)`` stores parameters unchanged and does no work; the
parameters are declared once, as data, in ``_parameter_constraints``
(scikit-learn's style) and checked at the start of ``fit``; ``get_params`` /
``set_params`` make ``sklearn.base.clone`` work.
``fit(df, spec)`` (or the shortcut ``fit(df, quasi_identifiers=[...], keep=None,
schema=None)``, which builds a :class:`~synthmi.spec.ReleaseSpec`) validates roles
and dtypes, fits, returns ``self``; ``sample(m, random_state=None)`` returns a
:class:`~synthmi.synthetic.SyntheticData` carrying the spec (its public part),
the combining rule the copies need and a fingerprint of the original.
``save(path)`` / :func:`load` keep a fitted synthesizer (its posterior, not the data).

Partially synthetic subclasses implement ``_fit(self, X, Z)`` and
``_sample(self, m, rng)`` (a list of ``m`` frames of the quasi-identifier
columns), and may override ``_check_params`` (checks across parameters),
``_diagnostics`` and ``_structure``. Fully synthetic ones (DPSyn) override
``_fit_release(df, spec)`` and ``_draw_copies(m, rng)`` instead.

Confidential records: a fitted synthesizer holds the original records only
in the attributes listed in ``_confidential_attributes`` (and the
quasi-identifier columns of ``data_``). Pickling and :meth:`Synthesizer.save`
leave them out unless the user asks (:meth:`Synthesizer.retain_records`, or
``save(..., include_records=True)``); a synthesizer whose sampler conditions
on the records then refuses to sample, saying why.
"""
from __future__ import annotations

import abc
import inspect
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .._validate import (
    NotFittedError,
    check_dataframe,
    check_finite,
    check_no_missing,
    check_not_degenerate,
    check_random_state,
    check_scalar,
    validate_params,
)
from ..provenance import original_fingerprint
from ..diagnostics import ESS_MIN, RHAT_MAX
from ..diagnostics import enforce as enforce_diagnostics
from ..schema import Schema
from ..scale._frames import is_dask_frame as _is_dask_frame
from ..spec import ReleaseSpec, as_spec
from ..synthetic import SyntheticData


class ParamsMixin:
    """scikit-learn's parameter protocol: ``get_params`` / ``set_params`` / ``repr``,
    and the check of ``_parameter_constraints`` (declared once, as data)."""

    #: parameter name -> list of allowed forms (None, "boolean", "random_state",
    #: "columns", "dict", "array-like", "object", a type, Interval(...), Options(...))
    _parameter_constraints: dict[str, list] = {}

    # ---- parameters (scikit-learn style) ---------------------------------
    @classmethod
    def _get_param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return sorted(
            p for p, v in sig.parameters.items()
            if p != "self" and v.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
        )

    # kept for callers of the old name
    _param_names = _get_param_names

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor parameters; with ``deep``, also those of parameter objects that have ``get_params``."""
        out: dict[str, Any] = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update({f"{name}__{k}": v for k, v in value.get_params().items()})
            out[name] = value
        return out

    def set_params(self, **params: Any) -> "Synthesizer":
        """Set constructor parameters (``name__sub`` for a parameter object's own); returns self."""
        valid = self._get_param_names()
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            name, sep, sub = key.partition("__")
            if name not in valid:
                raise ValueError(
                    f"Invalid parameter {name!r} for {type(self).__name__}. Valid parameters are: {valid}."
                )
            if sep:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
        for name, sub in nested.items():
            getattr(self, name).set_params(**sub)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params(deep=False).items())
        return f"{type(self).__name__}({args})"

    def _validate_params(self) -> None:
        """The declared constraints, then the checks across parameters."""
        validate_params(self.get_params(deep=False), self._parameter_constraints, type(self).__name__)
        self._check_params()

    def _check_params(self) -> None:
        """Checks that involve several parameters (called after the declared constraints)."""


class Synthesizer(ParamsMixin, abc.ABC):
    """Base class: parameters, spec resolution, validation, fitted-state bookkeeping, copies."""

    method: str = "base"
    #: combining rule of the copies (overridden per fit by ``_structure(m)["rule"]``)
    combining_rule: str = "partial"
    #: every released column is synthesized (DPSyn); otherwise only the quasi-identifiers
    fully_synthetic: bool = False
    #: the fit is differentially private: nothing data-dependent may be recorded
    differentially_private: bool = False
    #: minimum number of complete rows needed to fit
    min_rows: int = 10
    #: whether the model can take missing values in the data (most cannot)
    allows_missing: bool = False
    #: fitted attributes holding original record-level values (left out of pickles)
    _confidential_attributes: tuple[str, ...] = ()
    #: whether the copies record the sampling seed (DP releases do not)
    _publishes_seed: bool = True

    # ---- fit ---------------------------------------------------------------
    def fit(
        self,
        df: pd.DataFrame,
        spec: ReleaseSpec | dict | str | Sequence[str] | None = None,
        keep: Sequence[str] | None = None,
        schema: Schema | dict | None = None,
        *,
        quasi_identifiers: Sequence[str] | None = None,
        **fit_params: Any,
    ) -> "Synthesizer":
        """Validate roles and dtypes, then fit the synthesis model.

        Parameters
        ----------
        df : DataFrame
            The confidential data. Never modified.
        spec : ReleaseSpec, dict, path or list of str
            The release spec (roles, kinds, public levels/bounds, masks). A list of
            column names is the ``quasi_identifiers`` shortcut (positional form).
        keep : list of str, optional
            Shortcut: non-identifying columns Z released unchanged and used as
            predictors. Default: every column not in ``quasi_identifiers``; columns
            in neither list are excluded (not released).
        schema : Schema or dict, optional
            Shortcut: column kinds; a dict maps column -> kind and overrides inference.
        quasi_identifiers : list of str
            Shortcut: columns X to synthesize.
        """
        if _is_dask_frame(df):
            # partitioned data: fit by reduction (synthmi.scale); refuses models without a Dask path
            from ..scale import synthesis as _dask_synthesis

            if isinstance(spec, (ReleaseSpec, dict, str)):
                s = as_spec(spec)
                quasi_identifiers = quasi_identifiers or s.quasi_identifiers
                keep = keep if keep is not None else s.keep
                schema = s.schema()
            elif spec is not None:
                quasi_identifiers = spec
            return _dask_synthesis.fit(self, df, quasi_identifiers, keep, schema)
        self.dask_ = None
        self._validate_params()
        check_dataframe(df, "df")
        if spec is not None and not isinstance(spec, (ReleaseSpec, dict, str)) and isinstance(spec, Sequence):
            if quasi_identifiers is not None:
                raise ValueError("Give the quasi-identifiers once: positionally or as 'quasi_identifiers=', not both.")
            spec, quasi_identifiers = None, spec
        resolved = self._resolve_spec(df, spec, quasi_identifiers, keep, schema)
        # set first: _fit reads the spec's masks, models and visit sequence (see _from_spec)
        self.spec_ = resolved
        try:
            self._fit_release(df, resolved, **fit_params)
        except BaseException:
            del self.spec_
            raise
        self.fingerprint_ = original_fingerprint(df[resolved.released], private_count=self.differentially_private)
        return self

    def _resolve_spec(self, df, spec, quasi_identifiers, keep, schema) -> ReleaseSpec:
        owner = type(self).__name__
        if spec is not None:
            if schema is not None:
                raise ValueError(f"Give column kinds in the spec, not also with 'schema=' ({owner}.fit).")
            resolved = as_spec(spec)
            if quasi_identifiers is not None or keep is not None:
                resolved = resolved.with_roles(quasi_identifiers, keep)
        else:
            if quasi_identifiers is None:
                if not self.fully_synthetic:
                    raise ValueError(
                        f"{owner}.fit needs a spec or the 'quasi_identifiers' to synthesize. "
                        "Got neither."
                    )
                quasi_identifiers = [c for c in df.columns if keep is None or c not in keep]
            if isinstance(quasi_identifiers, str):
                quasi_identifiers = [quasi_identifiers]
            qi = list(quasi_identifiers)
            missing = [c for c in qi if c not in df.columns]
            if missing:
                raise ValueError(
                    f"The 'quasi_identifiers' parameter names columns not in 'df': {missing}. "
                    f"Available columns: {list(df.columns)}."
                )
            dup = sorted({c for c in qi if qi.count(c) > 1})
            if dup:
                raise ValueError(f"The 'quasi_identifiers' parameter names columns more than once: {dup}.")
            if keep is not None:
                keep = [keep] if isinstance(keep, str) else list(keep)
                missing = [c for c in keep if c not in df.columns]
                if missing:
                    raise ValueError(
                        f"The 'keep' parameter names columns not in 'df': {missing}. "
                        f"Available columns: {list(df.columns)}."
                    )
                both = [c for c in keep if c in qi]
                if both:
                    raise ValueError(
                        f"Columns {both} are given both as quasi-identifiers and as kept (Z) columns; "
                        "a column is either synthesized or released unchanged."
                    )
            resolved = ReleaseSpec.from_roles(df, qi, keep, schema, private=self.differentially_private)
        if not resolved.quasi_identifiers and not self.fully_synthetic:
            raise ValueError(f"The 'quasi_identifiers' parameter of {owner} must name at least one column. Got [] instead.")
        resolved.check_data(df, "df")
        return resolved

    def _from_spec(self, param: str, key: str) -> Any:
        """A parameter's value, or when it is None the spec's entry ``key`` (masks,
        models, visit_sequence): explicit parameters win over the spec."""
        value = getattr(self, param)
        if value is None and getattr(self, "spec_", None) is not None:
            return getattr(self.spec_, key)
        return value

    def _fit_release(self, df: pd.DataFrame, spec: ReleaseSpec) -> None:
        """Partial synthesis: fit X (quasi-identifiers) given Z (kept columns)."""
        owner = type(self).__name__
        qi, keep_cols = spec.quasi_identifiers, spec.keep
        used = [c for c in df.columns if c in set(qi) | set(keep_cols)]
        check_not_degenerate(df, used, "df")
        self.schema_ = spec.schema(used)
        check_finite(df, used, "df")
        if not self.allows_missing:
            check_no_missing(
                df, used, "df",
                why=f"{owner} needs complete data (impute first, or use RiskTargetedSynthesizer which models missing values).",
            )
        if len(df) < self.min_rows:
            raise ValueError(f"{owner} needs at least {self.min_rows} rows to fit. Got {len(df)} instead.")
        self.quasi_identifiers_ = list(qi)
        self.keep_ = list(keep_cols)
        self.columns_ = used
        self.dtypes_ = df[used].dtypes.copy()
        self.whole_number_columns_ = [
            c for c in used
            if spec.kind(c) == "integer" or (
                self.schema_.kind(c) == "continuous" and pd.api.types.is_float_dtype(df[c])
                and bool(np.all(np.mod(df[c].dropna().to_numpy(), 1.0) == 0.0))
            )
        ]
        self.n_ = len(df)
        # A private copy of the released columns: later changes to the caller's
        # frame cannot leak into copies, and excluded columns are not held at all.
        self.data_ = df[used].copy()
        self._fit(self.data_[qi], self.data_[keep_cols])

    def _fit(self, X: pd.DataFrame, Z: pd.DataFrame) -> None:
        """Fit the synthesis model of X given Z (both already validated)."""
        raise NotImplementedError(f"{type(self).__name__} implements neither _fit nor _fit_release.")

    # ---- sample ------------------------------------------------------------
    def _check_fitted(self) -> None:
        if not hasattr(self, "spec_") and getattr(self, "dask_", None) is None:
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' with "
                "appropriate arguments before using 'sample'."
            )

    def sample(self, m: int = 1, random_state: int | np.random.Generator | None = None) -> SyntheticData:
        """Draw ``m`` synthetic copies.

        Each copy has the released columns in the original's order and dtypes;
        for partial synthesis the kept (Z) columns are the original's and the
        quasi-identifiers synthetic. Same ``random_state`` -> identical copies.

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
        if getattr(self, "_records_left_out", False) and self._needs_records_to_sample():
            raise ValueError(
                f"This {type(self).__name__} was pickled or saved without the original records, and its sampler "
                "draws each copy conditional on them. Save it with include_records=True (the file is then as "
                "confidential as the data), or fit it again."
            )
        seed = random_state if isinstance(random_state, (int, np.integer)) and self._publishes_seed else None
        rng = self._sampling_rng(random_state)
        copies = self._draw_copies(m, rng)
        diagnostics = self._diagnostics()
        # fail closed: no copies leave a sampler that did not converge, unless the user accepts it
        check = enforce_diagnostics(
            diagnostics, owner=type(self).__name__,
            accept=getattr(self, "accept_diagnostics", False),
            rhat_max=getattr(self, "rhat_max", RHAT_MAX), ess_min=getattr(self, "ess_min", ESS_MIN),
        )
        structure = self._structure(m)
        return SyntheticData(
            copies=copies,
            method=self.method,
            params=self._published_params(),
            seed=None if seed is None else int(seed),
            quasi_identifiers=list(self.spec_.released if self.fully_synthetic else self.spec_.quasi_identifiers),
            diagnostics=diagnostics,
            structure=structure,
            diagnostics_check=check,
            rule=structure.get("rule") or ("nested" if {"m", "r"} <= set(structure) else self.combining_rule),
            spec=self.spec_.public_view(),
            fingerprint=dict(self.fingerprint_),
        )

    def _sampling_rng(self, random_state: Any) -> np.random.Generator:
        return check_random_state(random_state)

    def _published_params(self) -> dict[str, Any]:
        """The parameters recorded with the copies."""
        return self.get_params(deep=False)

    def _draw_copies(self, m: int, rng: np.random.Generator) -> list[pd.DataFrame]:
        return [self._assemble(X) for X in self._sample(m, rng)]

    def _sample(self, m: int, rng: np.random.Generator) -> list[pd.DataFrame]:
        """Return ``m`` frames holding synthetic values of the quasi-identifiers."""
        raise NotImplementedError(f"{type(self).__name__} implements neither _sample nor _draw_copies.")

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

    # ---- confidential records, pickling, save / load --------------------------
    def _needs_records_to_sample(self) -> bool:
        """Whether ``sample`` reads the attributes in ``_confidential_attributes``."""
        return False

    def retain_records(self, retain: bool = True) -> "Synthesizer":
        """Keep (``True``) or leave out (default) the original records when pickled; returns self."""
        self._retain_records = bool(retain)
        return self

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        if state.get("_retain_records", False):
            return state
        dropped = False
        for name in self._confidential_attributes:
            if name in state:
                state.pop(name)
                dropped = True
        data = state.get("data_")
        qi = [c for c in state.get("quasi_identifiers_", []) if data is not None and c in data.columns]
        if qi:
            # keep the kept (released) columns, index and dtypes; blank the quasi-identifiers
            blank = data.copy()
            for c in qi:
                blank[c] = _blank_like(data[c])
            state["data_"] = blank
            dropped = True
        dropped = self._strip_records(state) or dropped
        if dropped:
            state["_records_left_out"] = True
        return state

    def _strip_records(self, state: dict[str, Any]) -> bool:
        """Remove record-level values held inside fitted objects from ``state`` (a copy
        of ``__dict__``; replace, never mutate, its values); True if anything was removed."""
        return False

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    # copy.copy / copy.deepcopy stay in this process: they keep everything
    # (without these they would go through __getstate__ and drop the records)
    def __copy__(self) -> "Synthesizer":
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    def __deepcopy__(self, memo: dict) -> "Synthesizer":
        import copy

        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return new

    def save(self, path, overwrite: bool = False, include_records: bool = False):
        """Save the fitted synthesizer (see :func:`synthmi.models.persist.save`)."""
        from .persist import save

        return save(self, path, overwrite=overwrite, include_records=include_records)

    @classmethod
    def load(cls, path) -> "Synthesizer":
        """A synthesizer written by :meth:`save` (see :func:`synthmi.models.persist.load`)."""
        from .persist import load

        synth = load(path)
        if not isinstance(synth, cls):
            raise TypeError(f"'{path}' holds a {type(synth).__name__}, not a {cls.__name__}.")
        return synth


def _blank_like(s: pd.Series) -> pd.Series:
    """A column of ``s``'s dtype and index holding no data value."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        return pd.Series(pd.Categorical([None] * len(s), dtype=s.dtype), index=s.index, name=s.name)
    if pd.api.types.is_integer_dtype(s.dtype) and not isinstance(s.dtype, pd.api.extensions.ExtensionDtype):
        return pd.Series(np.zeros(len(s), dtype=s.dtype), index=s.index, name=s.name)
    if pd.api.types.is_bool_dtype(s.dtype):
        return pd.Series(np.zeros(len(s), dtype=bool), index=s.index, name=s.name)
    return pd.Series([None] * len(s), index=s.index, name=s.name, dtype=s.dtype if s.dtype != object else object)
