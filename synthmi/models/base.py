r"""The one contract every synthesizer keeps.

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
  structural: where the condition holds the value is fixed (``None``: missing).
  When the condition reads only released non-synthesized columns (kept
  columns, the weight), as synthpop does with ``rules``/``rvalues``, the
  column's models (its ``<col>_part`` indicator and its value model) are
  fitted only on the rows the rule leaves free, and in the copies the rule
  sets the value of the other rows before any later column is drawn
  (:mod:`synthmi.models.predictive`). The fit is the conditional model given
  the rule: with :math:`R_i` the rule's indicator, a function of the released
  columns alone,

  .. math:: p(x_i \mid z_i, \theta) = \mathbb 1[R_i]\, \delta_{v}(x_i)
      + \mathbb 1[\neg R_i]\, p(x_i \mid z_i, \theta, \neg R_i),

  so the rule rows carry no information about :math:`\theta` and the free
  rows are the whole likelihood. Fitting on all rows instead lets the rule's
  columns separate the response perfectly (hours missing exactly when not
  employed), an improper-looking logit posterior that the fast sampler
  needs thousands of gradient evaluations to explore. A rule that reads a
  synthesized column is applied to every copy after synthesis, evaluated on
  the copy (the models are then fitted on every row);
* a survey weight column (``weights``) is released unchanged and is not a
  predictor unless ``weight_as_predictor=True``.
"""
from __future__ import annotations

import abc
import warnings
import inspect
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .._validate import (
    NotFittedError,
    check_dataframe,
    check_finite,
    param_error,
    check_not_degenerate,
    check_random_state,
    check_scalar,
    validate_params,
)
from ..provenance import original_fingerprint
from ..diagnostics import ESS_MIN, RHAT_MAX
from ..diagnostics import enforce as enforce_diagnostics
from ..schema import Schema
from ..engine import Frame, refuse_dask
from ..engine import is_dask_frame as _is_dask_frame
from ..spec import ReleaseSpec, as_spec, resolve_quasi_identifiers
from ..synthetic import SyntheticData
from ..errors import ColumnError, InputError, InputTypeError, ParameterError, ReleaseRefused

#: level that stands for a missing value of a categorical column in the models
NA_LEVEL = "<NA>"
#: first level of a ``<col>_part`` indicator: the column's model decides the value
VALUE_LEVEL = "value"



def _named_columns(param: str, value: Any, columns: list) -> list[str]:
    """``value`` (a column name or names) as a list, every name a column of 'df'."""
    names = [value] if isinstance(value, str) else list(value)
    missing = [c for c in names if c not in columns]
    if missing:
        raise InputError(f"The '{param}' parameter names columns not in 'df': {missing}. "
                         f"Available columns: {list(columns)}.", data='df')
    return names


def check_roles(columns: list, quasi_identifiers: Any, keep: Any) -> tuple[list[str], list[str] | None]:
    """The quasi-identifiers and kept columns as lists, checked against the frame's ``columns``
    (in memory and on partitions alike): each names columns of 'df', none twice, none in both."""
    qi = _named_columns("quasi_identifiers", quasi_identifiers, columns)
    if qi:  # (an empty list is refused later, after the spec's roles)
        qi = resolve_quasi_identifiers(qi)
    if keep is not None:
        keep = _named_columns("keep", keep, columns)
        both = [c for c in keep if c in qi]
        if both:
            raise ColumnError(
                f"Columns {both} are given both as quasi-identifiers and as kept (Z) columns; "
                "a column is either synthesized or released unchanged."
            )
    return qi, keep


def rule_value(variable, c: str, value: Any) -> Any:
    """The value a structural rule sets in column ``c``, checked against the column: one of
    a categorical column's levels (returned as given), else a number (returned as float).
    Missing (``None``) is handled by the callers."""
    if variable.is_categorical:
        if value not in list(variable.categories):
            raise ParameterError(f"The rule for column '{c}' sets the value {value!r}, which is not one of the "
                             "column's levels (the 'rules' parameter).", parameter='rules')
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"The rule for column '{c}' must set a number or None (missing) (the 'rules' "
                         f"parameter). Got {value!r} instead.", parameter='rules') from None

def check_rules(df: pd.DataFrame, rules: Any, owner: str, schema: Any = None) -> dict[str, tuple[str, Any]]:
    """Structural rules (``rules=`` / ``--rule``) checked against the data: column -> (condition, value).

    Each rule's column is a column of ``df``, its condition evaluates to True/False on every
    row, and (given the ``schema`` the models use) its value is one of a categorical column's
    levels or a number (:func:`rule_value`). The one check of the synthesizers and of the
    command line, which runs it before fitting; messages name the 'rules' parameter, which
    the command line shows as its '--rule' option.
    """
    if rules is None:
        return {}
    if not isinstance(rules, dict):
        raise param_error("rules", owner, "a dict column -> {'rule': condition, 'value': value}", rules)
    out = {}
    for c, r in rules.items():
        if c not in df.columns:
            raise ParameterError(f"The 'rules' parameter of {owner} names '{c}', which is not a column of df.", parameter='rules', data='df')
        if isinstance(r, str):
            cond, value = r, None
        elif isinstance(r, dict) and "rule" in r:
            cond, value = r["rule"], r.get("value")
        else:
            raise ParameterError(
                f"The rule for column '{c}' must be a condition string or {{'rule': condition, 'value': value}} "
                f"(the 'rules' parameter). Got {r!r} instead.", parameter='rules'
            )
        try:
            hit = df.eval(cond)
        except Exception as exc:  # pandas raises many kinds for a bad expression
            raise ParameterError(f"The rule {cond!r} for column '{c}' cannot be evaluated on the data (the 'rules' "
                             f"parameter): {exc}. Columns: {list(df.columns)}.", parameter='rules') from None
        if not (isinstance(hit, pd.Series) and pd.api.types.is_bool_dtype(hit)):
            raise ParameterError(f"The rule {cond!r} for column '{c}' must give True/False for every row (the 'rules' "
                             "parameter).", parameter='rules')
        if value is not None and schema is not None and c in schema:
            rule_value(schema[c], c, value)
        out[c] = (cond, value)
    return out


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
                raise InputError(
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

    @property
    def synthesizes_quasi_identifiers(self) -> bool:
        """Whether this configuration draws new quasi-identifier values at all. False for a
        configuration that only imputes missing cells (risk-dami with ``masks=None``): its
        copies hold every observed original value, so the release guard refuses them
        whatever their agreement statistic (issue 30)."""
        return True

    #: whether the model can take missing values in the data (most cannot)
    allows_missing: bool = False
    #: fitted attributes holding original record-level values (left out of pickles)
    _confidential_attributes: tuple[str, ...] = ()
    #: progress callback ``f(message)`` (the CLI sets one; None: silent)
    _progress = None

    def set_progress(self, callback) -> "Synthesizer":
        """Report progress (per step, copy and column) to ``callback(message)``; None silences."""
        self._progress = callback
        return self
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
            # partitioned data: fit by reduction through synthmi.engine; refuses models without a partitioned fit.
            # spec_ as in memory: the given spec (its masks, models and visit sequence steer the fit through
            # _from_spec), else the one the roles stand for (set by _fit_partitioned); never a former fit's
            self.__dict__.pop("spec_", None)
            if isinstance(spec, (ReleaseSpec, dict, str)):
                if schema is not None:
                    raise InputError(f"Give column kinds in the spec, not also with 'schema=' ({type(self).__name__}.fit).")
                s = as_spec(spec)
                if quasi_identifiers is not None or keep is not None:
                    s = s.with_roles(quasi_identifiers, keep)
                quasi_identifiers = resolve_quasi_identifiers(None, s, owner=type(self).__name__)
                keep = list(s.keep)
                schema = s.schema()
                self.spec_ = s
            elif spec is not None:
                quasi_identifiers = spec
            rules = fit_params.pop("rules", None)
            given = [k for k, v in fit_params.items() if v not in (None, False, {}, [])]
            if given:
                # these were dropped silently before: refuse rather than synthesize without them
                refuse_dask(f"{type(self).__name__}.fit with '{given[0]}'",
                            "the partition-wise fit models complete data with the default main-effects models "
                            "(no survey weights or point masses)",
                            "Fit in memory (a pandas DataFrame), where they are modelled.")
            if not self.supports_partitions:
                self._refuse_partitions()
            try:
                return self._fit_partitioned(Frame(df), quasi_identifiers, keep, schema, rules=rules)
            except BaseException:
                self.__dict__.pop("spec_", None)
                raise
        self.frame_ = None
        self._validate_params()
        check_dataframe(df, "df")
        if not self.differentially_private and len(df) < self.min_rows:
            # first: on a handful of rows every other check (a constant column, a model
            # with more coefficients than rows) fails with a message that hides the cause.
            # (A DP fit says nothing about its private row count.)
            raise InputError(f"{type(self).__name__} needs at least {self.min_rows} rows to fit; the data have "
                             f"{len(df)}.")
        if spec is not None and not isinstance(spec, (ReleaseSpec, dict, str)) and isinstance(spec, Sequence):
            if quasi_identifiers is not None:
                raise InputError("Give the quasi-identifiers once: positionally or as 'quasi_identifiers=', not both.")
            spec, quasi_identifiers = None, spec
        resolved = self._resolve_spec(df, spec, quasi_identifiers, keep, schema)
        # set first: _fit reads the spec's masks, models and visit sequence (see _from_spec)
        self.spec_ = resolved
        try:
            self._fit_release(df, resolved, **fit_params)
        except BaseException:
            del self.spec_
            raise
        self.fingerprint_ = original_fingerprint(df[self.spec_.released], private_count=self.differentially_private)
        return self

    #: whether ``fit`` takes a partitioned (Dask) frame (:meth:`_fit_partitioned`)
    supports_partitions: bool = False

    def _refuse_partitions(self) -> None:
        name = type(self).__name__
        why = {
            "GaussianCopulaSynthesizer": "its Gibbs sampler updates every record's latent value in each sweep, a full pass "
            "over the data per iteration with no sufficient-statistic reduction",
            "CartSynthesizer": "tree growing needs sorted access to all records at every node",
        }.get(name, "it has no partition-wise fit")
        refuse_dask(f"{name}.fit", why, "Use RubinSynthesizer or DAMISynthesizer (sampler='fast'), or fit in memory on "
                    "a subsample (ddf.sample(frac=...).compute()).")

    def _fit_partitioned(self, frame: Frame, quasi_identifiers, keep, schema, rules=None) -> "Synthesizer":
        """Fit to a partitioned frame (:mod:`synthmi.engine`); models with ``supports_partitions`` implement it."""
        self._refuse_partitions()

    def _resolve_spec(self, df, spec, quasi_identifiers, keep, schema) -> ReleaseSpec:
        owner = type(self).__name__
        if spec is not None:
            if schema is not None:
                raise InputError(f"Give column kinds in the spec, not also with 'schema=' ({owner}.fit).")
            resolved = as_spec(spec)
            if quasi_identifiers is not None or keep is not None:
                resolved = resolved.with_roles(quasi_identifiers, keep)
        else:
            if quasi_identifiers is None:
                if not self.fully_synthetic:
                    raise InputError(
                        f"{owner}.fit needs a spec or the 'quasi_identifiers' to synthesize. "
                        "Got neither."
                    )
                quasi_identifiers = [c for c in df.columns if keep is None or c not in keep]
            qi, keep = check_roles(list(df.columns), quasi_identifiers, keep)
            resolved = ReleaseSpec.from_roles(df, qi, keep, schema, private=self.differentially_private)
        if not resolved.quasi_identifiers and not self.fully_synthetic:
            raise ParameterError(f"The 'quasi_identifiers' parameter of {owner} must name at least one column. Got [] instead.", parameter='quasi_identifiers')
        resolved.check_data(df, "df")
        return resolved

    def _from_spec(self, param: str, key: str) -> Any:
        """A parameter's value, or when it is None the spec's entry ``key`` (masks,
        models, visit_sequence): explicit parameters win over the spec."""
        value = getattr(self, param)
        if value is None and getattr(self, "spec_", None) is not None:
            return getattr(self.spec_, key)
        return value

    def _fit_release(self, df: pd.DataFrame, spec: ReleaseSpec, weights: str | None = None,
                     semicont: dict[str, Sequence[float]] | None = None, rules: dict[str, Any] | None = None,
                     weight_as_predictor: bool = False) -> None:
        """Partial synthesis: fit X (quasi-identifiers) given Z (kept columns).

        ``weights`` (or the spec's column with role "weight"), ``semicont``, ``rules``
        and ``weight_as_predictor``: see the module docstring (agency microdata).
        """
        owner = type(self).__name__
        qi, keep_cols = list(spec.quasi_identifiers), list(spec.keep)
        if weights is None:
            roles = [c for c, v in getattr(spec, "columns", {}).items() if getattr(v, "role", None) == "weight"]
            weights = roles[0] if roles else None
        used = [c for c in df.columns if c in set(qi) | set(keep_cols) | ({weights} if weights else set())]
        self.weights_ = self._check_weights(df, weights, qi, owner)
        if self.weights_ is not None and self.weights_ in spec.columns and spec.columns[self.weights_].role != "weight":
            # the spec written with the copies says what the column is (it said "keep")
            spec = self.spec_ = spec.with_weight(self.weights_)
        if self.weights_ is not None and not weight_as_predictor:
            keep_cols = [c for c in keep_cols if c != self.weights_]
            # Mitra & Reiter (2006): weighted analyses of synthetic copies are design-consistent
            # only if the synthesis models carry the design information; when selection depends
            # on variables not in the file, only the weight does (a review simulation: estimate
            # 1.77 for a population value 0.97 without it, 1.04 with it)
            warnings.warn(
                f"The survey weight '{self.weights_}' is released unchanged and is not a predictor of the "
                "synthesized columns: weighted analyses of the copies are valid only if the design "
                "(selection) depends on columns the synthesis models use. If it may depend on anything "
                "else, make the weight a predictor (--weight-as-predictor; weight_as_predictor=True).",
                UserWarning, stacklevel=3)
        elif self.weights_ is not None and self.weights_ not in keep_cols:
            keep_cols = keep_cols + [self.weights_]
        check_not_degenerate(df, qi + keep_cols, "df")
        released_schema = spec.schema(used)
        check_finite(df, used, "df")
        self.quasi_identifiers_ = list(qi)
        self.keep_ = list(keep_cols)
        self.columns_ = used
        self.dtypes_ = df[used].dtypes.copy()
        self.whole_number_columns_ = [
            c for c in used
            if spec.kind(c) == "integer" or (
                released_schema.kind(c) == "continuous" and pd.api.types.is_float_dtype(df[c])
                and bool(np.all(np.mod(df[c].dropna().to_numpy(), 1.0) == 0.0))
            )
        ]
        self.n_ = len(df)
        self.semicont_ = self._check_semicont(df, self._semicont(semicont, qi, owner), qi, released_schema, owner)
        self.rules_ = self._check_rules(df, rules, owner, released_schema)
        self.rule_rows_ = self._structural_rules(df, qi, used)
        self.released_qi_ = list(qi)
        # A private copy of the released columns: later changes to the caller's
        # frame cannot leak into copies, and excluded columns are not held at all.
        self.released_ = df[used].copy()
        if self.allows_missing:
            self.schema_ = released_schema
            self.parts_, self.na_level_columns_, self.value_rows_, self.na_indicators_ = {}, [], {}, {}
            self.ruled_, self.rule_altered_ = {}, False
            self.data_ = self.released_
            model_keep = keep_cols
        else:
            self.data_, self.quasi_identifiers_, model_keep = self._model_frame(self.released_, qi, keep_cols,
                                                                               released_schema)
            # columns recoded with a <NA> level (unordered: an ordinal with <NA> is modelled
            # as nominal) and the new _part / _NA columns get their kinds from the model frame
            inferred = Schema.infer(self.data_)
            self.schema_ = Schema({
                c: released_schema[c] if c in released_schema and c not in self.na_level_columns_ else inferred[c]
                for c in self.data_.columns
            })
        self.model_keep_ = model_keep
        self.model_frame_recoded_ = bool(self.parts_ or self.na_level_columns_ or self.na_indicators_
                                         or self.rule_altered_)
        if not self.model_frame_recoded_:
            # nothing recoded: one frame (a partitioned fit swaps data_ for a partition and assembles from it)
            self.data_ = self.released_
            self.quasi_identifiers_ = list(qi)
        self._fit(self.data_[self.quasi_identifiers_], self.data_[model_keep])

    # ---- agency microdata: weights, missing values, point masses, rules ---------
    def _check_weights(self, df: pd.DataFrame, weights: str | None, qi: list[str], owner: str) -> str | None:
        if weights is None:
            return None
        if not isinstance(weights, str) or weights not in df.columns:
            raise ParameterError(
                f"The 'weights' parameter of {owner} must name a column of df. Got {weights!r} instead.", parameter='weights', data='df'
            )
        if weights in qi:
            raise InputError(f"The weight column '{weights}' cannot be a quasi-identifier: weights are released unchanged.")
        w = df[weights]
        if not pd.api.types.is_numeric_dtype(w) or isinstance(w.dtype, pd.CategoricalDtype):
            raise InputError(f"The weight column '{weights}' must be numeric. Got dtype {w.dtype} instead.")
        x = w.to_numpy(dtype=float)
        if np.isnan(x).any() or np.any(x <= 0) or not np.all(np.isfinite(x)):
            raise InputError(f"The weight column '{weights}' must hold positive finite values with none missing.")
        return weights

    def _semicont(self, semicont, qi, owner):
        """Point masses from ``semicont=`` (--semicont) merged with the 'semicont' entries of
        ``models`` (the synthesizer's parameter or the spec's): one per-variable mechanism
        (:func:`synthmi.models.conditional.per_variable_setting`)."""
        from .conditional import expand_models, parse_models, per_variable_setting

        models = getattr(self, "models", None) if "models" in self._get_param_names() else None
        # the models a models="auto" choice made (synthmi.models.model_choice) are this fit's
        models = getattr(self, "_chosen_models", None) or models
        spec_models = self.spec_.models if getattr(self, "spec_", None) is not None else None
        if models is None and spec_models:
            # the spec may carry models of columns another release synthesizes
            models = expand_models(spec_models, qi)
            models = {c: v for c, v in models.items() if c in qi} if isinstance(models, Mapping) else models
        else:
            models = expand_models(models, qi, spec_models)
        if models is None:
            return semicont
        if semicont is not None and not isinstance(semicont, dict):
            return semicont  # refused with its own message by _check_semicont
        specs = parse_models(models, qi, owner)
        merged = per_variable_setting(specs, "semicont", semicont, "semicont", owner)
        return merged or semicont

    def _check_semicont(self, df, semicont, qi, schema, owner) -> dict[str, list[float]]:
        if semicont is None:
            return {}
        if not isinstance(semicont, dict):
            raise param_error("semicont", owner, "a dict mapping numeric quasi-identifiers to point masses", semicont)
        out = {}
        for c, pts in semicont.items():
            if c not in qi:
                raise ParameterError(f"The 'semicont' parameter of {owner} names '{c}', which is not a quasi-identifier ({qi}).", parameter='semicont')
            if schema.kind(c) != "continuous":
                raise ParameterError(f"The 'semicont' parameter of {owner} needs a numeric column; '{c}' is {schema.kind(c)}.", parameter='semicont')
            pts = [pts] if np.isscalar(pts) else list(pts)
            try:
                pts = [float(p) for p in pts]
            except (TypeError, ValueError):
                raise InputError(f"The point masses given for '{c}' in 'semicont' must be numbers. Got {pts!r} instead.") from None
            if not pts:
                raise InputError(f"The 'semicont' entry for '{c}' names no point mass.")
            out[c] = pts
        return out

    def _check_rules(self, df, rules, owner, schema=None) -> dict[str, tuple[str, Any]]:
        return check_rules(df, rules, owner, schema)

    def _structural_rules(self, df: pd.DataFrame, qi: list[str], used: list[str]) -> dict[str, np.ndarray]:
        """Rows fixed by each rule on a quasi-identifier whose condition reads only released,
        non-synthesized columns (module docstring): column -> boolean rows where the rule holds.

        These rows are a function of columns released unchanged, so they are not confidential.
        Rules that read a synthesized column (or whose names cannot be read) are left out: they
        are applied to each copy after synthesis.
        """
        fixed_by = set(used) - set(qi)
        out = {}
        for c, (cond, _) in getattr(self, "rules_", {}).items():
            if c not in qi:
                continue
            refs = rule_columns(cond, list(df.columns))
            if refs and refs <= fixed_by:
                out[c] = df.eval(cond).to_numpy(dtype=bool)
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
        # model-frame column -> (released column, value the structural rule fixes, in the model's coding)
        self.ruled_: dict[str, tuple[str, Any]] = {}
        self.rule_altered_ = False
        rule_rows = getattr(self, "rule_rows_", {})
        taken = set(df.columns)

        def fresh(name: str) -> str:
            while name in taken:
                name = name + "_"
            taken.add(name)
            return name

        def na_level(c: str, s: pd.Series | None = None, miss: np.ndarray | None = None) -> pd.Categorical:
            s = df[c] if s is None else s
            v = schema[c]
            keep = s.notna() if miss is None else ~pd.Series(miss, index=s.index)
            vals = s.astype(object).where(keep, NA_LEVEL)
            return pd.Categorical(vals, categories=list(v.categories) + [NA_LEVEL])

        def apply_rule(c: str, s: pd.Series, miss: np.ndarray) -> tuple[pd.Series, np.ndarray, Any]:
            """The column as its structural rule says (the models see what the copies will have)."""
            hit = rule_rows[c]
            value = self.rules_[c][1]
            if value is None:
                broken = int(np.sum(hit & ~miss))
                miss = miss | hit
            elif schema[c].is_categorical:
                rule_value(schema[c], c, value)
                broken = int(np.sum(hit & (miss | (s.astype(object) != value).to_numpy())))
                s = s.astype(object).where(~pd.Series(hit, index=s.index), value)
                miss = miss & ~hit
            else:
                value = rule_value(schema[c], c, value)
                x = s.to_numpy(dtype=float)
                broken = int(np.sum(hit & (miss | (x != value))))
                s = pd.Series(np.where(hit, value, x), index=s.index)
                miss = miss & ~hit
            if broken:
                # counts only: the values are confidential
                warnings.warn(
                    f"Column '{c}' breaks its rule on {broken} rows of the data; the models of '{c}' are fitted on the "
                    "rows the rule leaves free and the copies follow the rule.", UserWarning, stacklevel=5)
                self.rule_altered_ = True
            return s, miss, value

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
            ruled = c in rule_rows
            if ruled:
                s, miss, rvalue = apply_rule(c, s, miss)
            if schema[c].is_categorical:
                if miss.any():
                    cols[c] = na_level(c, s, miss)
                    self.na_level_columns_.append(c)
                else:
                    cols[c] = pd.Categorical(s, categories=list(schema[c].categories),
                                             ordered=schema[c].kind == "ordinal") if ruled else s
                if ruled:
                    self.ruled_[c] = (c, NA_LEVEL if rvalue is None else rvalue)
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
                if ruled:
                    self.ruled_[c] = (c, rvalue)
                model_qi.append(c)
                continue
            if value.sum() < max(self.min_rows, 3) or np.unique(x[value]).size < 2:
                raise ColumnError(
                    f"Column '{c}' has {int(value.sum())} rows outside its point masses / missing values; "
                    "too few to model its values."
                )
            part = fresh(f"{c}_part")
            cols[part] = pd.Categorical(labels, categories=levels)
            cols[c] = np.where(value, x, np.mean(x[value]))
            self.parts_[c] = {"column": part, "levels": levels, "fill": float(np.mean(x[value])),
                              "values": [None if lev == NA_LEVEL else float(lev) for lev in levels[1:]]}
            self.value_rows_[c] = value
            if ruled:
                # the rule fixes the indicator (missing, a point mass or "value") and, for a value
                # that is no point mass, the value column too
                if rvalue is None:
                    self.ruled_[part] = (c, NA_LEVEL)
                elif rvalue in points:
                    self.ruled_[part] = (c, repr(rvalue))
                else:
                    self.ruled_[part] = (c, VALUE_LEVEL)
                    self.ruled_[c] = (c, rvalue)
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
        # other columns (a model that imputes may return completed kept columns) pass through;
        # the _part indicators are the models' business, not released
        parts = {p["column"] for p in getattr(self, "parts_", {}).values()}
        for c in X.columns:
            if c not in out and c not in parts:
                out[c] = X[c]
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

    def _fit(self, X: pd.DataFrame, Z: pd.DataFrame) -> None:
        """Fit the synthesis model of X given Z (both already validated)."""
        raise NotImplementedError(f"{type(self).__name__} implements neither _fit nor _fit_release.")

    # ---- sample ------------------------------------------------------------
    def _check_fitted(self) -> None:
        if not hasattr(self, "spec_") and getattr(self, "frame_", None) is None:
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' with "
                "appropriate arguments before using 'sample'."
            )

    def sample(self, m: int = 1, random_state: int | np.random.Generator | None = None, *,
               allow_unmodified: bool = False) -> SyntheticData:
        """Draw ``m`` synthetic copies.

        Each copy has the released columns in the original's order and dtypes;
        for partial synthesis the kept (Z) columns are the original's and the
        quasi-identifiers synthetic. Same ``random_state`` -> identical copies.

        Raises :class:`~synthmi.diagnostics.DiagnosticsFailed` when the
        posterior sampler failed the convergence check (R-hat above
        ``rhat_max`` or bulk ESS below ``ess_min`` for some column) unless the
        synthesizer was built with ``accept_diagnostics=True``.

        Raises :class:`UnmodifiedRelease` when a copy's quasi-identifier keys
        agree with the original's, record by record, beyond chance (Cohen's
        kappa, :func:`unmodified_share`) by more than :data:`UNMODIFIED_MAX`
        (:func:`check_unmodified`): such copies are (nearly) the original, e.g.
        ``RiskTargetedSynthesizer(masks=None)`` on complete data, which imputes
        and synthesizes nothing, or hold a quasi-identifier the kept columns
        determine. ``allow_unmodified=True`` releases
        them anyway and records the choice (``structure["unmodified"]``).
        """
        self._check_fitted()
        if getattr(self, "frame_", None) is not None:
            # fitted on a dask DataFrame: lazy copies, drawn partition by partition
            return self._sample_partitioned(m, random_state)
        m = check_scalar(m, "m", type(self).__name__, kind="int", lower=1)
        if getattr(self, "_records_left_out", False) and (self._needs_records_to_sample() or getattr(self, "model_frame_recoded_", False)):
            raise InputError(
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
        # fail closed: copies that are (close to) the original are not a synthetic release
        # (checked after the convergence check, which says first when the sampler is not to be trusted)
        guard = check_unmodified(self, copies, allow_unmodified)
        structure = dict(self._structure(m))
        if getattr(self, "weights_", None) is not None:
            structure["weights"] = self.weights_
        if guard is not None:
            structure["unmodified"] = guard
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
        if not hasattr(self, "released_qi_"):  # fitted on partitions (no agency recoding)
            return [self._assemble(X) for X in self._sample(m, rng)]
        return [self._apply_rules(self._assemble(self._restore(X))) for X in self._sample(m, rng)]

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
        # the released frame when the models saw a recoded one (missing values, parts); the
        # partitioned fit (_on_rows) sets data_ to a partition and assembles from it
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
        # released_ is the original's released columns (data_ itself unless recoded for the models)
        for name in tuple(self._confidential_attributes) + ("released_", "value_rows_"):
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
        if "released_" not in self.__dict__ and "data_" in self.__dict__ and not self.__dict__.get("model_frame_recoded_"):
            self.released_ = self.data_

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

        synth = load(path, expected=Synthesizer)
        if not isinstance(synth, cls):
            raise InputTypeError(f"'{path}' holds a {type(synth).__name__}, not a {cls.__name__}.")
        return synth


#: agreement beyond chance (Cohen's kappa of the record keys, see :func:`unmodified_share`)
#: with the original's quasi-identifier keys above which a copy is "the original", refused
#: by :func:`check_unmodified`. It separates two populations measured with the tool (share of
#: records keeping their own key / kappa):
#:
#: - legitimate releases: Adult 5,000 rows, 5 copies (age, sex, race, education) CART 3.5% / 0.03,
#:   Rubin 0.01, DA-MI with the workload masks 0.17, risk-dami with them 0.16; statsmodels fair
#:   (6,366 rows, a 3-level age group as the only QI, 8 kept columns, 3 copies) CART 84% / 0.70-0.72,
#:   DA-MI without mask 0.59-0.61, DA-MI ``agegrp:p=0.8`` 87% / 0.76-0.77 (the kept ``yrs_married``
#:   predicts the age group: the copies reveal what the kept columns already reveal); randhie
#:   (2,000 rows, QIs idp, hlthg) CART 0.54-0.57 (idp alone 0.93-0.94: the kept columns nearly
#:   determine it), DA-MI without masks 0.11-0.12; anes96 (QIs age, educ, income) CART 0.010
#:   (the issue-30 trial: randhie DA-MI 0.37). Largest: 0.77.
#: - the original released by accident (a path that synthesizes nothing: identity copies,
#:   risk-dami imputing only on complete data): 100% / 1.
#:
#: 0.9 lies between them with a margin of 0.13 on the legitimate side; a QI the kept columns
#: nearly determine can reach it (randhie's idp as the only QI: 0.94), and is refused with an
#: error that names it: synthesizing it protects nothing.
UNMODIFIED_MAX = 0.9

#: share of records keeping their own value of a quasi-identifier from which the copies are
#: said to hold the original values (nothing synthesized), rather than a QI reproduced from
#: the kept columns
UNCHANGED_SHARE = 0.99


class UnmodifiedRelease(ReleaseRefused):
    """Copies whose quasi-identifier keys equal the original's for too many records."""


def _key_ids(frames: list[pd.DataFrame], columns: Sequence[str]) -> list[np.ndarray]:
    """One integer per record and joint quasi-identifier key, shared across ``frames``
    (numbers compared as floats, so 40 == 40.0; a missing value is a key value of its own)."""
    _na = "\x00<NA>"
    parts = []
    for f in frames:
        cols = {}
        for c in columns:
            x = f[c]
            if pd.api.types.is_numeric_dtype(x.dtype) and not pd.api.types.is_bool_dtype(x.dtype):
                cols[c] = pd.Series(x.to_numpy(dtype=float, na_value=np.nan), index=f.index).astype(object)
            else:
                cols[c] = x.astype(object)
            cols[c] = cols[c].where(x.notna(), _na)
        parts.append(pd.DataFrame(cols).reset_index(drop=True))
    both = pd.concat(parts, ignore_index=True)
    ids = both.groupby(list(both.columns), sort=False, dropna=False).ngroup()
    ids = ids.to_numpy()
    out, start = [], 0
    for p in parts:
        out.append(ids[start:start + len(p)])
        start += len(p)
    return out


def unmodified_share(original: pd.DataFrame, copy: pd.DataFrame, columns: Sequence[str]) -> tuple[float, float]:
    r"""Share of records whose quasi-identifier key in ``copy`` is their own original key,
    and Cohen's kappa of that agreement.

    .. math:: s = \frac{1}{n} \sum_{i=1}^{n} \mathbb 1[\tilde k_i = k_i], \qquad
        e = \sum_k \hat p(k)\, \hat{\tilde p}(k), \qquad \kappa = \frac{s - e}{1 - e},

    with :math:`k_i` the joint key of the quasi-identifiers of record :math:`i` (a missing
    value equal to a missing value), :math:`e` the agreement two independent draws from the
    original's and the copy's key distributions have by chance (Cohen 1960). A single binary
    quasi-identifier agrees for about half the records of any good synthesis; kappa removes
    that, and is 1 for copies identical to the original. Records are compared row by row
    (partially synthetic copies are aligned with the original); a copy with another number
    of rows is not the original (0, 0).
    """
    if len(copy) != len(original) or not len(original):
        return 0.0, 0.0
    ko, kc = _key_ids([original, copy], list(columns))
    s = float(np.mean(ko == kc))
    size = int(max(ko.max(), kc.max())) + 1
    e = float(np.dot(np.bincount(ko, minlength=size), np.bincount(kc, minlength=size))) / len(ko) ** 2
    kappa = (s - e) / (1.0 - e) if e < 1.0 else 0.0
    return s, float(kappa)


def check_unmodified(synth: "Synthesizer", copies: list[pd.DataFrame], allow: bool) -> dict[str, Any] | None:
    r"""The release guard every synthesizer's ``sample`` passes through.

    Refuses (:class:`UnmodifiedRelease`) copies that are (nearly) the original: the Cohen's
    kappa of their joint quasi-identifier keys with the original's (:func:`unmodified_share`)
    exceeds :data:`UNMODIFIED_MAX` (0.9) by more than 3 of Cohen's standard errors, so that
    chance on a small file does not decide,

    .. math:: \kappa - 3\,\frac{\sqrt{s(1-s)/n}}{1-e} > 0.9,

    unless ``allow``. The threshold and the figures it rests on are at :data:`UNMODIFIED_MAX`:
    a copy released by accident scores 1, the legitimate releases measured at most 0.77 (a
    coarse QI that a kept column predicts). The error gives each quasi-identifier's share and
    kappa and says why: every QI unchanged for at least :data:`UNCHANGED_SHARE` of the records
    (nothing was synthesized), or which QIs the synthesis reproduces (nearly determined by the
    kept columns: synthesizing them protects nothing). Returns what metadata records (largest
    share and kappa, the threshold, whether allowed; for copies above the threshold the cause
    and the per-QI figures), or None when the synthesizer holds no original records to
    compare (a DP fit keeps none; a model saved without its records).
    """
    original = getattr(synth, "released_", None)
    if original is None or synth.differentially_private:
        return None
    spec = synth.spec_
    qi = [c for c in (spec.released if synth.fully_synthetic else spec.quasi_identifiers) if c in original.columns]
    if not qi or not copies:
        return None
    stats = [unmodified_share(original, c, qi) for c in copies]
    n = len(original)
    # Cohen's (1960) large-sample standard error of kappa under agreement s with chance e,
    # sqrt(s (1 - s) / (n (1 - e)^2)); e is recovered from s and kappa.
    lower = []
    for share, kappa in stats:
        one_minus_e = (1.0 - share) / (1.0 - kappa) if kappa < 1.0 else 1.0
        se = float(np.sqrt(share * (1.0 - share) / n)) / one_minus_e if one_minus_e > 0 else 0.0
        lower.append(kappa - 3.0 * se)
    k = int(np.argmax(lower))
    by_design = not synth.synthesizes_quasi_identifiers
    above = by_design or lower[k] > UNMODIFIED_MAX
    if not above:
        k = int(np.argmax([kap for _, kap in stats]))
        return {"max_share": round(stats[k][0], 4), "max_kappa": round(stats[k][1], 4), "threshold": UNMODIFIED_MAX,
                "allowed": False}
    share, kappa = stats[k]
    per_qi = {q: unmodified_share(original, copies[k], [q]) for q in qi}
    unsynthesized = by_design or all(s_q >= UNCHANGED_SHARE for s_q, _ in per_qi.values())
    figures = ", ".join(f"{q}: {s_q:.1%} unchanged, kappa {k_q:.2f}" for q, (s_q, k_q) in per_qi.items())
    driving = [q for q, (_, k_q) in per_qi.items() if k_q > UNMODIFIED_MAX] or [max(per_qi, key=lambda q: per_qi[q][1])]
    if unsynthesized:
        why = ("The copies hold the original values of every quasi-identifier: nothing was synthesized (e.g. "
               "risk-dami without masks imputes missing values only; on complete data it changes nothing), or the "
               "kept columns determine every quasi-identifier. Synthesize the quasi-identifiers (masks, another "
               "method), or")
    else:
        names = ", ".join(map(str, driving))
        why = (f"The synthesis reproduces {names}: the kept columns nearly determine "
               f"{'it' if len(driving) == 1 else 'them'}, so synthesizing {'it' if len(driving) == 1 else 'them'} "
               f"protects nothing. Drop {names} from the quasi-identifiers, or move the columns that determine "
               f"{'it' if len(driving) == 1 else 'them'} to the quasi-identifiers, or")
    if not allow:
        if by_design:
            raise UnmodifiedRelease(
                f"{type(synth).__name__} refuses to release the copies: as configured it synthesizes no "
                f"quasi-identifier ({', '.join(map(str, qi))}), it only imputes missing cells, so every observed "
                f"value is the original's (in copy {k + 1}, {share:.1%} of the records carry their own original "
                f"key; per quasi-identifier: {figures}). Set masks to synthesize them, or pass allow_unmodified=True "
                "(command line: --allow-unmodified) for a multiple-imputation release of the original, recorded "
                "in metadata.json."
            )
        raise UnmodifiedRelease(
            f"{type(synth).__name__} refuses to release the copies: in copy {k + 1}, {share:.1%} of the records "
            f"carry their own original values of every quasi-identifier ({', '.join(map(str, qi))}), an agreement "
            f"beyond chance (Cohen's kappa) of {kappa:.2f}, above the limit of {UNMODIFIED_MAX:g} (by more than 3 "
            f"standard errors); per quasi-identifier: {figures}. {why} pass allow_unmodified=True (command line: "
            "--allow-unmodified) to release them anyway, recorded in metadata.json."
        )
    k_max = int(np.argmax([kap for _, kap in stats]))
    return {"max_share": round(stats[k_max][0], 4), "max_kappa": round(stats[k_max][1], 4),
            "threshold": UNMODIFIED_MAX, "allowed": True,
            "cause": "unsynthesized" if unsynthesized else "determined",
            "reproduced": [] if unsynthesized else [str(q) for q in driving],
            "per_qi": {str(q): {"share": round(s_q, 4), "kappa": round(k_q, 4)} for q, (s_q, k_q) in per_qi.items()}}


def _blank_like(s: pd.Series) -> pd.Series:
    """A column of ``s``'s dtype and index holding no data value."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        return pd.Series(pd.Categorical([None] * len(s), dtype=s.dtype), index=s.index, name=s.name)
    if pd.api.types.is_integer_dtype(s.dtype) and not isinstance(s.dtype, pd.api.extensions.ExtensionDtype):
        return pd.Series(np.zeros(len(s), dtype=s.dtype), index=s.index, name=s.name)
    if pd.api.types.is_bool_dtype(s.dtype):
        return pd.Series(np.zeros(len(s), dtype=bool), index=s.index, name=s.name)
    return pd.Series([None] * len(s), index=s.index, name=s.name, dtype=s.dtype if s.dtype != object else object)


def rule_columns(cond: str, columns: list[str]) -> set[str] | None:
    """The columns a rule's condition reads (pandas ``eval`` syntax); None when it cannot be parsed.

    Backtick-quoted names are pandas' way of naming columns that are not identifiers; ``@name``
    (a local variable) is not a column.
    """
    import ast
    import re

    quoted = set(re.findall(r"`([^`]*)`", cond))
    plain = re.sub(r"`[^`]*`", "_q_", cond).replace("@", "_local_")
    try:
        tree = ast.parse(plain, mode="eval")
    except SyntaxError:
        return None
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | quoted
    return {c for c in columns if c in names}


def infer_frame_schema(frame: Frame, overrides: Any = None, cap: int = 64) -> Schema:
    """:meth:`Schema.infer` for a partitioned frame, from :meth:`synthmi.engine.Frame.stand_in`."""
    tiny, many = frame.stand_in(cap)
    for c in many:
        if overrides and c in overrides and overrides[c] != "continuous":
            raise ColumnError(f"Column '{c}' has more than {cap} distinct values; it cannot be declared {overrides[c]!r} on Dask.")
    return Schema.infer(tiny, overrides)
