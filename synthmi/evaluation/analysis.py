r"""The analyst's model on the original and on each synthetic copy, combined.

``analyse(formula, family, original, synthetic, rule)`` fits a GLM (statsmodels
formula interface) to the original data and to every copy, combines the copies
with :func:`~synthmi.evaluation.combining.combine`, and lays the result out as
the DA-MI result tables of the short-course slides: original estimate and 95% CI, combined synthetic
estimate and CI, standardized difference and CI overlap per coefficient.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .._validate import check_copies, check_dataframe, check_option, check_same_structure
from .ci_overlap import ci_overlap
from ..results import Result
from .combining import RULES, CombineResult, combine
from .standardized_difference import standardized_difference
from ..errors import InputError, ParameterError
from ..spec import FAMILIES

#: families of a count response (non-negative integers), log link
COUNT_FAMILIES = ("poisson", "negbin")
#: the search interval of the negative binomial alpha: 1e-6 is a Poisson fit for any
#: practical purpose (and keeps lgamma(y + 1/alpha) - lgamma(1/alpha) accurate in double
#: precision); 1e3, a variance a thousand times mu^2
_NB_ALPHA_BOUNDS = (1e-6, 1e3)


def _family(name: str, alpha: float | None = None):
    import statsmodels.api as sm

    if name == "probit":
        return sm.families.Binomial(link=sm.families.links.Probit())
    if name == "logit":
        return sm.families.Binomial()
    if name == "poisson":
        return sm.families.Poisson()
    if name == "negbin":
        return sm.families.NegativeBinomial(alpha=alpha)
    return sm.families.Gaussian()


def _response_name(formula: str) -> str:
    if "~" not in formula:
        raise ParameterError(f"The 'formula' parameter of analyse must look like 'y ~ x1 + x2'. Got {formula!r} instead.", parameter='formula', owner='analyse')
    lhs = formula.split("~", 1)[0].strip()
    # a name with spaces is quoted in the formula (patsy's Q("..."), formulaic's backticks);
    # the column it names is the response
    quoted = re.fullmatch(r"""Q\(\s*(["'])(.*)\1\s*\)|`(.*)`""", lhs)
    if quoted:
        return quoted.group(2) if quoted.group(2) is not None else quoted.group(3)
    return lhs


def _response_levels(s: pd.Series) -> list | None:
    """The two-or-more levels of a categorical / text / bool response, or None for a numeric one."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        return list(s.cat.categories)
    if pd.api.types.is_bool_dtype(s) or pd.api.types.is_object_dtype(s) or pd.api.types.is_string_dtype(s):
        return sorted(s.dropna().unique(), key=str)
    return None


def _prepare_frame(df: pd.DataFrame, response: str, family: str, name: str, levels: list | None = None) -> pd.DataFrame:
    """A binary categorical response becomes 0/1 (1 = its last category).

    ``levels``: the original's two levels, so that a copy in which one level
    never occurs is coded on the same scale (and its fit flagged as separated)
    instead of being refused.
    """
    if response not in df.columns:
        return df  # a transformed response such as np.log(y): leave it to the formula
    s = df[response]
    if family in ("probit", "logit"):
        cats = _response_levels(s)
        if cats is not None:
            if levels is not None and set(cats) <= set(levels):
                cats = list(levels)
            if len(cats) != 2:
                raise InputError(
                    f"The response '{response}' of a {family} model must have 2 categories; "
                    f"'{name}' has {len(cats)}."
                )
            out = df.copy()
            out[response] = np.where(s.isna(), np.nan, (s.astype(object) == cats[1]).astype(float))
            return out
        # A numeric response of a binary model must be coded 0/1: statsmodels fits any other
        # numbers without complaint and returns meaningless estimates (1e16 on a BMI column).
        # No value is echoed: cells can be confidential.
        obs = pd.to_numeric(s, errors="coerce").dropna()
        if not obs.isin([0, 1]).all():
            where = "the original" if name == "original" else f"the copy {name}"
            coded = obs.nunique() == 2
            raise InputError(
                f"The response '{response}' of a {family} model must be binary (--family {family}): two "
                f"categories, or numbers 0/1; in {where} it holds "
                + ("two numbers other than 0/1 (a code such as 1/2). Declare it a category, modelled as 1 = "
                   f"its second level: --categorical {response} when synthesizing, or kind \"binary\" for "
                   f"'{response}' in a --spec (spec=... in Python)."
                   if coded else
                   "numbers other than 0 and 1. For a continuous response use --family gaussian "
                   "(family='gaussian').")
            )
    if family in COUNT_FAMILIES:
        # statsmodels fits a Poisson / negative binomial GLM to negative or fractional numbers
        # without complaint (its log-likelihood is then meaningless). No value is echoed.
        where = "the original" if name == "original" else f"the copy {name}"
        if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
            what = "values that are not numbers"
        else:
            obs = s.dropna().to_numpy(dtype=float)
            what = ("negative values" if (obs < 0).any() else
                    "values that are not whole numbers" if (obs != np.round(obs)).any() else None)
        if what is not None:
            raise InputError(
                f"The response '{response}' of a {family} model must be non-negative integer counts "
                f"(--family {family}); in {where} it holds {what}. For a continuous response use "
                "--family gaussian (family='gaussian').")
    return df


#: the column an expression response (``I(sex == 2) ~ ...``) is fitted as, once made 0/1
_EXPR_RESPONSE = "_synthmi_response_"


def _expression_response(formula: str, df: pd.DataFrame, name: str,
                         levels: list[str] | None = None) -> tuple[str, pd.DataFrame, list[str] | None]:
    """An expression response that patsy turns into several columns, made one 0/1 column.

    patsy codes a boolean or categorical response such as ``I(sex == 2)`` as one
    indicator column per level (``[False]``, ``[True]``); statsmodels' binomial GLM
    reads a two-column response as (successes, failures), so it would model the
    *first* level, ``sex != 2``: every coefficient with its sign reversed. The
    formula means the last level (``True``), as for a categorical response column
    (1 = its last category). ``levels``: the original's level columns, so that a copy
    in which one level never occurs is coded on the same scale.

    Returns the formula to fit, the frame (with the 0/1 column added) and the level
    columns (None when the response is a column or a one-column expression).
    """
    import patsy

    lhs, rhs = formula.split("~", 1)
    if _response_name(formula) in df.columns:
        return formula, df, None
    try:
        # names other than columns resolve in this module's namespace (np), as in the fit
        y = patsy.dmatrix("0 + " + lhs.strip(), df, NA_action=patsy.NAAction(NA_types=[]),
                          return_type="dataframe", eval_env=0)
    except Exception:
        return formula, df, None  # statsmodels reports what is wrong with it
    if y.shape[1] == 1 and levels is None:
        return formula, df, None
    cols = list(levels) if levels is not None else list(y.columns)
    if len(cols) != 2:
        raise InputError(
            f"The response {lhs.strip()!r} of the formula {formula!r} takes {len(cols)} values in "
            f"'{name}'; a response must be numeric or have two levels (e.g. I(x == 2)).")
    unknown = [c for c in y.columns if c not in cols]
    if unknown:
        raise InputError(f"The response {lhs.strip()!r} of the formula {formula!r} takes values in '{name}' "
                         "that it does not take in the original.")
    out = df.copy()
    out[_EXPR_RESPONSE] = y.reindex(columns=cols, fill_value=0.0)[cols[1]].to_numpy(dtype=float)
    return f"{_EXPR_RESPONSE} ~ {rhs}", out, cols


WEIGHT_TYPES = ("probability", "frequency")


def _fit(formula: str, data: pd.DataFrame, family: str, weights: str | None = None,
         weight_type: str = "probability"):
    r"""The GLM fit and whether it is separated; with ``weights`` a survey-weighted fit.

    A binary response that is constant, or perfectly predicted by the
    covariates (complete or quasi-complete separation; Albert & Anderson 1984,
    *Biometrika* 71:1-10), has no finite maximum-likelihood estimate: the
    reported estimates and standard errors are wherever the iterations
    stopped. statsmodels signals it with ``PerfectSeparationWarning``.

    ``weight_type="probability"`` (survey weights, the inverse inclusion
    probabilities): statsmodels GLM with ``var_weights`` and the robust
    sandwich covariance ``cov_type="HC0"`` times :math:`n/(n-1)`, the
    design-based (linearization) variance of a weighted regression (Binder
    1983, Int. Stat. Rev. 51:279-292) for a one-stage with-replacement design
    without strata or clusters:

    .. math::

        \widehat V(\hat\beta) = A^{-1} \Big[\frac{n}{n-1} \sum_i z_i z_i^\top\Big] A^{-1},
        \qquad z_i = w_i\, s_i(\hat\beta),\quad A = -\sum_i w_i\, \partial s_i/\partial\beta,

    :math:`s_i` the record's score (the :math:`z_i` sum to zero at
    :math:`\hat\beta`, so centring them changes nothing). The factor
    :math:`n/(n-1)` is the with-replacement variance estimator of a total,
    :math:`\frac{n}{n-1}\sum_i (z_i - \bar z)^2`, that Binder's
    linearization applies to the :math:`z_i`; it is what R's ``survey``
    package computes for ``svyglm``/``svymean`` on
    ``svydesign(ids=~1, weights=~w)`` (Lumley 2010, *Complex Surveys*, Wiley,
    sec. 2.2 and 5.2: ``scale = nPSU/(nPSU-1)``). statsmodels' HC0 omits it and
    HC1 uses :math:`n/(n-p)` (a regression degrees-of-freedom correction, not
    the design's), so HC0 is scaled by statsmodels' ``scaling_factor``. For the
    mean this is the Hajek estimator :math:`\bar y_w = \sum w_i y_i / \sum w_i`
    with variance
    :math:`\frac{n}{n-1}\sum w_i^2 (y_i - \bar y_w)^2 / (\sum w_i)^2`
    (a test checks this by hand).
    ``weight_type="frequency"``: ``freq_weights`` (each record stands for w
    identical records) with model-based standard errors.

    ``family="negbin"``: the NB2 model, :math:`\operatorname{Var}(y) = \mu + \alpha\mu^2`,
    log link, with :math:`\alpha` estimated in *this* data set (see :func:`_negbin_alpha`).
    """
    import statsmodels.formula.api as smf

    kw: dict[str, Any] = {}
    fit_kw: dict[str, Any] = {}
    if weights is not None:
        w = data[weights].to_numpy(dtype=float)
        if weight_type == "probability":
            kw["var_weights"] = w
            fit_kw["cov_type"] = "HC0"
        else:
            kw["freq_weights"] = w
    with warnings.catch_warnings(record=True) as caught:
        # collected, not printed once per fit: the caller reports separated copies in one warning
        warnings.simplefilter("always")
        alpha = _negbin_alpha(formula, data, kw) if family == "negbin" else None
        model = smf.glm(formula, data=data, family=_family(family, alpha), **kw)
        if fit_kw.get("cov_type") == "HC0":
            n = float(model.nobs)  # records in the fit (after patsy drops incomplete ones)
            fit_kw["cov_kwds"] = {"scaling_factor": n / (n - 1.0)}
        res = model.fit(**fit_kw)
    separated = family != "gaussian" and (
        any(type(w.message).__name__ == "PerfectSeparationWarning" for w in caught) or not bool(res.converged)
        or _quasi_separated(res, family)
    )
    return res, separated


#: a fitted mean this close to the edge of its range (0, or 1 for a binary response) marks a
#: quasi-complete separation (below)
_SEPARATION_EDGE = 1e-8


def _quasi_separated(res: Any, family: str) -> bool:
    r"""Whether a GLM fit shows quasi-complete separation (Albert & Anderson 1984, *Biometrika* 71:1-10).

    Under quasi-complete separation the maximum-likelihood estimate does not exist: the likelihood
    keeps rising as some coefficients go to :math:`\pm\infty`, and the fitted probability (count mean)
    of the records they separate goes to 0 or 1 (0). statsmodels stops at its convergence tolerance
    with no warning, coefficients of about -25 and standard errors of about 1e6 (one event among 840
    records and a factor: the new-user review's CI "overlap" 0.66 of such intervals entered tune's
    battery). A fitted mean within ``_SEPARATION_EDGE`` of the edge flags it; a probability of 1e-8
    is about 18 logit units from 1/2, far beyond any estimated rare event on a real file."""
    mu = np.asarray(res.fittedvalues, dtype=float)
    if mu.size == 0:
        return False
    if family in ("probit", "logit"):
        return bool(np.nanmin(mu) < _SEPARATION_EDGE or np.nanmax(mu) > 1.0 - _SEPARATION_EDGE)
    return bool(np.nanmin(mu) < _SEPARATION_EDGE)


def nb_alpha_text(alpha: float) -> str:
    r"""An NB2 dispersion :math:`\hat\alpha` for people: three significant digits (``0.0141``, ``1.29``), or
    ``0 (boundary: Poisson)`` for an estimate at the lower end of its search (:data:`_NB_ALPHA_BOUNDS`,
    within a factor 10 of it), where the likelihood rises towards :math:`\alpha = 0`, the Poisson model:
    printed to three decimals it read ``0.000``, as if estimated as zero. Within that factor the extra
    variance :math:`\alpha\mu^2` is below :math:`10^{-5}\mu^2`, under 1% of the Poisson variance
    :math:`\mu` for any mean below 1000."""
    a = float(alpha)
    if not np.isfinite(a):
        return "nan"
    return "0 (boundary: Poisson)" if a < 10 * _NB_ALPHA_BOUNDS[0] else f"{a:.3g}"


def _negbin_alpha(formula: str, data: pd.DataFrame, kw: dict[str, Any]) -> float:
    r"""The maximum-likelihood NB2 dispersion :math:`\hat\alpha` of ``formula`` in ``data``.

    The profile log-likelihood :math:`\ell_p(\alpha) = \max_\beta \ell(\beta, \alpha)`, with
    the NB2 log-likelihood (Cameron & Trivedi 2013, *Regression Analysis of Count Data*,
    2nd ed., Cambridge University Press, ch. 3; statsmodels' ``NegativeBinomial.loglike_obs``)

    .. math::

        \ell(\beta, \alpha) = \sum_i w_i \Big[ \ln\Gamma(y_i + \alpha^{-1}) - \ln\Gamma(\alpha^{-1})
        - \ln\Gamma(y_i + 1) + y_i \ln(\alpha\mu_i) - (y_i + \alpha^{-1}) \ln(1 + \alpha\mu_i) \Big],
        \qquad \mu_i = e^{x_i^\top\beta},

    maximised over :math:`\ln\alpha` in :data:`_NB_ALPHA_BOUNDS` (Brent's bounded search), the
    inner maximum by statsmodels' GLM with ``families.NegativeBinomial(alpha)``. Without weights
    it is statsmodels' discrete ``NegativeBinomial`` (NB2) MLE of alpha (a test checks it); with
    weights (``var_weights`` / ``freq_weights`` in ``kw``) the weighted (pseudo-)likelihood, as
    the GLM's own. statsmodels' GLM default, a fixed :math:`\alpha = 1`, is not used: the
    standard errors of a negative binomial model depend on :math:`\alpha` (randhie's doctor
    visits have :math:`\hat\alpha = 1.29`).
    """
    import statsmodels.api as sm
    import statsmodels.formula.api as smf
    from scipy import optimize

    # the design (and the weights after patsy drops incomplete rows) built once, not per evaluation
    m0 = smf.glm(formula, data=data, family=sm.families.NegativeBinomial(), **kw)
    weights = {k: getattr(m0, k) for k in ("freq_weights", "var_weights") if k in kw}

    def nll(log_alpha: float) -> float:
        fam = sm.families.NegativeBinomial(alpha=float(np.exp(log_alpha)))
        return -float(sm.GLM(m0.endog, m0.exog, family=fam, **weights).fit().llf)

    lo, hi = np.log(_NB_ALPHA_BOUNDS[0]), np.log(_NB_ALPHA_BOUNDS[1])
    # xatol 1e-6 on ln(alpha): alpha to a relative 1e-6, far below its standard error
    r = optimize.minimize_scalar(nll, bounds=(lo, hi), method="bounded", options={"xatol": 1e-6})
    return float(np.exp(r.x))


@dataclass
class AnalysisResults(Result):
    """Original-data vs combined synthetic-data inference for one analysis model.

    Attributes
    ----------
    formula, family, rule : str
    original : dict
        ``params``, ``bse``, ``ci_lower``, ``ci_upper`` (Series) of the original fit.
    combined : CombineResult
        The synthetic copies combined under ``rule``.
    estimates, variances : ndarray
        Per-copy estimates and variances, shape (M, p) (nested: (m, r, p)).
    separated : list of int
        Copies (0-based) whose fit is separated (a constant or perfectly
        predicted binary outcome): their estimates are not finite MLEs, so
        the combined interval and the CI overlap are meaningless.
    nb_alpha : dict
        ``family="negbin"``: the dispersion estimated in the original
        (``"original"``) and in each copy (``"copies"``); empty otherwise.
    """

    formula: str
    family: str
    rule: str
    alpha: float
    terms: list[str]
    original: dict[str, pd.Series]
    combined: CombineResult
    estimates: np.ndarray
    variances: np.ndarray
    n_original: int
    separated: list[int] = field(default_factory=list)
    original_separated: bool = False
    nb_alpha: dict[str, Any] = field(default_factory=dict)
    not_estimable: dict[str, int] = field(default_factory=dict)
    weights: str | None = None
    weight_type: str | None = None
    _frame: pd.DataFrame | None = field(default=None, repr=False)

    @property
    def weights_note(self) -> str:
        """How survey weights were treated, in one sentence (for reports)."""
        if self.weights is None:
            return "unweighted analysis (no survey weight given)"
        if self.weight_type == "probability":
            return (f"survey-weighted by '{self.weights}' (released unchanged): pseudo-maximum-likelihood GLM "
                    "with var_weights and design-based (linearization sandwich with n/(n-1), with-replacement) standard errors in the "
                    f"original and in every copy, copies combined by rule={self.rule!r} (Mitra & Reiter 2006)")
        return f"frequency-weighted by '{self.weights}' (freq_weights, model-based standard errors)"

    @property
    def M(self) -> int:
        return self.combined.M

    def to_frame(self) -> pd.DataFrame:
        """One row per coefficient: original vs combined synthetic inference."""
        if self._frame is None:
            o = self.original
            c = self.combined
            idx = pd.Index(self.terms, name="term")
            # The combination covers the estimable terms only; the others stay NaN.
            syn_terms = pd.Index(c.names if c.names is not None else self.terms)
            syn = lambda a: pd.Series(np.asarray(a, dtype=float), index=syn_terms).reindex(idx).to_numpy()  # noqa: E731
            df = pd.DataFrame(
                {
                    "est_orig": o["params"].reindex(idx).to_numpy(),
                    "se_orig": o["bse"].reindex(idx).to_numpy(),
                    "ci_lower_orig": o["ci_lower"].reindex(idx).to_numpy(),
                    "ci_upper_orig": o["ci_upper"].reindex(idx).to_numpy(),
                    "est_syn": syn(c.estimate),
                    "se_syn": syn(c.se),
                    "ci_lower_syn": syn(c.ci_lower),
                    "ci_upper_syn": syn(c.ci_upper),
                    "df_syn": syn(c.df),
                },
                index=idx,
            )
            df["estimable"] = [t not in self.not_estimable for t in self.terms]
            df["copies_not_estimable"] = [int(self.not_estimable.get(t, 0)) for t in self.terms]
            ok = df["estimable"].to_numpy()
            df["std_diff"] = np.nan
            df["ci_overlap"] = np.nan
            if ok.any():
                d = df.loc[ok]
                df.loc[ok, "std_diff"] = standardized_difference(d["est_orig"], d["est_syn"], d["se_orig"])
                df.loc[ok, "ci_overlap"] = ci_overlap(d["ci_lower_orig"], d["ci_upper_orig"], d["ci_lower_syn"], d["ci_upper_syn"])
            self._frame = df
        return self._frame.copy()

    def _mean_over_estimable(self, column: str) -> float:
        f = self.to_frame()
        keep = [t for t in f.index if t != "Intercept" and bool(f.loc[t, "estimable"])]
        return float(f.loc[keep, column].mean()) if keep else float("nan")

    @property
    def mean_ci_overlap(self) -> float:
        """Mean CI overlap over the estimable coefficients, the intercept excluded
        (terms not estimable are left out and counted in :attr:`not_estimable`)."""
        return self._mean_over_estimable("ci_overlap")

    @property
    def mean_std_diff(self) -> float:
        """Mean standardized difference over the estimable coefficients, the intercept excluded."""
        return self._mean_over_estimable("std_diff")

    def table(self) -> pd.DataFrame:
        """The slides' layout: per term, 'Estimate' and '95% CI' rows, original vs synthetic."""
        f = self.to_frame()
        level = f"{100 * (1 - self.alpha):.0f}% CI"
        rows = []
        for t in f.index:
            r = f.loc[t]
            orig_est = format_estimate(r.est_orig) if np.isfinite(r.est_orig) else "not estimable"
            orig_ci = f"({format_estimate(r.ci_lower_orig)}, {format_estimate(r.ci_upper_orig)})" if np.isfinite(r.est_orig) else ""
            if not r.estimable:
                k = int(r.copies_not_estimable)
                why = f"not estimable ({k} of {self.M} copies)" if k else "not estimable"
                rows.append((t, "Estimate", orig_est, why, "", ""))
                rows.append((t, level, orig_ci, "", "", ""))
                continue
            rows.append((t, "Estimate", orig_est, format_estimate(r.est_syn), f"{r.std_diff:.3f}", f"{r.ci_overlap:.3f}"))
            rows.append((t, level, orig_ci, f"({format_estimate(r.ci_lower_syn)}, {format_estimate(r.ci_upper_syn)})", "", ""))
        out = pd.DataFrame(rows, columns=["term", "", "original", f"synthetic (M={self.M})", "std. diff", "CI overlap"])
        return out.set_index(["term", ""])

    @property
    def _summary_title(self) -> str:
        return f"Analysis: {self.formula}  [{self.family}]"

    def _summary_rows(self) -> pd.DataFrame:
        return self.table()

    def _summary_notes(self) -> list[str]:
        notes = [f"original n = {self.n_original}; synthetic copies combined by rule={self.rule!r}, M = {self.M}"]
        if self.weights is not None:
            notes.append(f"weights: {self.weights_note}")
        if self.nb_alpha:
            a = np.asarray(self.nb_alpha["copies"], dtype=float)
            lo, hi = nb_alpha_text(a.min()), nb_alpha_text(a.max())
            notes.append(f"negative binomial alpha (estimated in each data set): original "
                         f"{nb_alpha_text(self.nb_alpha['original'])}, copies "
                         + (f"all {lo}" if lo == hi else f"{lo} to {hi}"))
        n_bad = len([t for t in self.not_estimable if t != "Intercept"])
        left_out = f"; {n_bad} term(s) not estimable, left out" if n_bad else ""
        notes.append(f"mean CI overlap = {self.mean_ci_overlap:.3f}, "
                     f"mean standardized difference = {self.mean_std_diff:.3f} (intercept excluded{left_out})")
        if self.separated:
            notes.append("WARNING: " + _separation_message(self.separated, self.M))
        return notes

    def _dict_extra(self) -> dict[str, Any]:
        return {"formula": self.formula, "family": self.family, "rule": self.rule, "alpha": self.alpha,
                "M": self.M, "n_original": self.n_original, "terms": self.to_frame().reset_index(),
                "mean_ci_overlap": self.mean_ci_overlap, "mean_std_diff": self.mean_std_diff,
                "separated_copies": list(self.separated), "nb_alpha": dict(self.nb_alpha), "not_estimable": dict(self.not_estimable),
                "weights": self.weights, "weight_type": self.weight_type}

    def __repr__(self) -> str:
        return str(self.summary())


def format_estimate(x: float) -> str:
    """Three decimals, or three significant digits in exponent form for huge values (a
    full-synthesis interval with very few degrees of freedom can be astronomically wide)."""
    return f"{x:.3f}" if abs(x) < 1e6 else f"{x:.3g}"


def analyse(
    formula: str | None = None,
    family: str | None = None,
    original: pd.DataFrame | None = None,
    synthetic: Any = None,
    rule: str | None = None,
    alpha: float = 0.05,
    weights: str | None = None,
    weight_type: str = "probability",
    spec: Any = None,
) -> AnalysisResults:
    r"""Fit ``formula`` on the original and on each copy; combine the copies.

    Parameters
    ----------
    formula : str
        statsmodels / patsy formula, e.g. ``"income ~ age + sex + race + education"``.
        A binary Categorical response is modelled as 1 = its last category; an
        expression response such as ``I(sex == 2)`` as 1 = true (its last level).
    family : {"probit", "logit", "gaussian", "poisson", "negbin"}
        GLM family: binary (probit, logit), linear (gaussian) or count
        (``poisson``; ``negbin``, NB2 with a log link). A count response must hold
        non-negative whole numbers. The negative binomial dispersion
        :math:`\alpha` is estimated by maximum likelihood in each data set, the
        original and every copy, as the Gaussian family estimates its variance in
        each: the combining rules (Reiter 2003) take the estimate and variance the
        analyst's own procedure gives on each copy, and an analyst of the copies
        has no original to take :math:`\alpha` from. A fixed :math:`\alpha`
        (statsmodels' default 1, or the original's held fixed) would hide a
        copy whose overdispersion differs from the original's: its intervals
        would keep the original's width. The intervals of the count and binary
        families are normal (Wald), of the Gaussian t.
    original : DataFrame
    synthetic : list of DataFrame or SyntheticData
        For ``rule="nested"``, a SyntheticData whose ``structure`` has ``m``
        and ``r`` (copies ordered nest by nest), or a list of lists.
    rule : str, optional
        Combining rule for :func:`combine` (``"partial"`` for partially
        synthetic copies, Reiter 2003). Default: the rule recorded with a
        SyntheticData (``synthetic.rule``), else ``"partial"``.
    alpha : float
        1 - confidence level (0.05 gives the 95% intervals of the source tables).
    weights : str, optional
        A survey weight column, released unchanged in every copy. Each copy
        (and the original) is analysed with the weights (see ``weight_type``);
        the per-copy design-based estimates and variances are then combined by
        ``rule`` as any other (Mitra & Reiter 2006, "Adjusting survey weights
        when altering identifying design variables via synthetic data",
        Privacy in Statistical Databases, LNCS 4302:177-188: with partially
        synthetic data the analyst computes the usual design-based point and
        variance estimates in each copy and combines them with Reiter's 2003
        rules). Default: the column recorded in ``synthetic.structure["weights"]``
        when the copies carry one; pass ``weights=False`` for an unweighted fit.
    weight_type : {"probability", "frequency"}
        Survey (inverse-probability) weights with sandwich standard errors, or
        frequency weights.
    spec : ReleaseSpec, dict or path, optional
        Kinds of the variables (instead of dtypes) and, when ``formula`` is
        None, the analysis (its first ``analyses`` entry, formula and family).

    Returns
    -------
    AnalysisResults
    """
    from ..spec import spec_frames

    if rule is None:
        rule = getattr(synthetic, "rule", None) or "partial"
    if spec is not None and formula is None:
        from ..spec import as_spec

        analyses = as_spec(spec).analyses
        if not analyses:
            raise ParameterError("The 'formula' parameter of analyse is required: the spec lists no analyses.", parameter='formula', owner='analyse')
        formula, family = analyses[0]["formula"], family or analyses[0]["family"]
    if not isinstance(formula, str):
        raise ParameterError(f"The 'formula' parameter of analyse must be a formula such as 'y ~ x1 + x2'. Got {formula!r} instead.", parameter='formula', owner='analyse')
    family = check_option(family or "probit", "family", "analyse", FAMILIES)
    weight_type = check_option(weight_type, "weight_type", "analyse", WEIGHT_TYPES)
    check_dataframe(original, "original", min_rows=2)
    response = _response_name(formula)
    structure = getattr(synthetic, "structure", {}) or {}
    if weights is None:
        weights = recorded_weights(synthetic)
    elif weights is False:
        weights = None
    if weights is not None:
        if weights not in original.columns:
            raise ParameterError(f"The 'weights' parameter of analyse names '{weights}', which is not a column of 'original'.", parameter='weights', owner='analyse', data='original')
        w = original[weights]
        if not pd.api.types.is_numeric_dtype(w) or w.isna().any() or (w.to_numpy(dtype=float) <= 0).any():
            raise InputError(f"The weight column '{weights}' must be numeric, positive and complete.")
    nested_lists = isinstance(synthetic, (list, tuple)) and synthetic and isinstance(synthetic[0], (list, tuple))
    if nested_lists:
        shape = (len(synthetic), len(synthetic[0]))
        copies = check_copies([c for nest in synthetic for c in nest], "synthetic")
    else:
        copies = check_copies(synthetic, "synthetic")
        shape = (structure["m"], structure["r"]) if "m" in structure and "r" in structure else None
    for j, c in enumerate(copies):
        check_same_structure(original, c, f"synthetic[{j}]")
    _, original, copies = spec_frames(spec, original, copies)

    fit_formula, orig_frame, response_levels = _expression_response(formula, original, "original")
    orig_fit, orig_separated = _fit(fit_formula, _prepare_frame(orig_frame, response, family, "original"), family,
                                    weights, weight_type)
    levels = _response_levels(original[response]) if response in original.columns else None
    terms = list(orig_fit.params.index)
    # GLM Wald intervals: normal for the binomial and count families (no scale is estimated:
    # their dispersion is 1, or a function of the NB2 alpha); t with the residual df
    # for the Gaussian family (the OLS interval), as the combined intervals are t-based.
    z = stats.t.ppf(1 - alpha / 2, orig_fit.df_resid) if family == "gaussian" else stats.norm.ppf(1 - alpha / 2)
    o = {
        "params": orig_fit.params,
        "bse": orig_fit.bse,
        "ci_lower": orig_fit.params - z * orig_fit.bse,
        "ci_upper": orig_fit.params + z * orig_fit.bse,
    }
    if orig_separated:
        warnings.warn(
            f"The {family} model '{formula}' is separated on the original data (the outcome is constant or "
            "perfectly predicted): it has no finite estimates to compare the copies with.",
            RuntimeWarning,
            stacklevel=2,
        )
    est = np.empty((len(copies), len(terms)))
    var = np.empty_like(est)
    # A term is not estimable from a data set when its design column is all zero there
    # (a category absent from it: the GLM would report 0.000 with a zero or undefined
    # standard error), when the fit leaves it out, or when its SE is not positive/finite.
    bad_orig = _not_estimable(orig_fit, terms)
    absent = np.zeros(len(terms), dtype=int)
    separated = []
    copy_alpha = []
    for j, c in enumerate(copies):
        if response_levels is not None:
            c = _expression_response(formula, c, f"synthetic[{j}]", response_levels)[1]
        frame = _prepare_frame(c, response, family, f"synthetic[{j}]", levels)
        _check_gaussian_response_varies(frame, response, family, f"synthetic[{j}]")
        fit, fit_separated = _fit(fit_formula, frame, family, weights, weight_type)
        if fit_separated:
            separated.append(j)
        if family == "negbin":
            copy_alpha.append(float(fit.model.family.alpha))
        bad = _not_estimable(fit, terms)
        absent += bad
        est[j] = fit.params.reindex(terms).to_numpy()
        var[j] = fit.bse.reindex(terms).to_numpy() ** 2
    not_est = {t: int(absent[i]) for i, t in enumerate(terms) if absent[i] > 0 or bad_orig[i]}
    good = [i for i, t in enumerate(terms) if t not in not_est]
    if not good:
        raise InputError(
            f"No term of {formula!r} is estimable from every copy and the original (categories absent from the copies?)."
        )
    est, var = est[:, good], var[:, good]
    if RULES.get(str(rule).lower()) == "nested":
        if shape is None:
            raise InputError(
                "rule='nested' needs the copies' nest structure: pass a SyntheticData with structure "
                "{'m': ..., 'r': ...} or a list of m lists of r copies."
            )
        est = est.reshape(shape[0], shape[1], -1)
        var = var.reshape(shape[0], shape[1], -1)
    comb = combine(est, var, rule=rule, alpha=alpha, names=[terms[i] for i in good])
    if separated:
        warnings.warn(_separation_message(separated, len(copies)), RuntimeWarning, stacklevel=2)
    return AnalysisResults(
        formula=formula,
        family=family,
        rule=comb.rule,
        alpha=alpha,
        terms=terms,
        original=o,
        combined=comb,
        estimates=est,
        variances=var,
        n_original=int(orig_fit.nobs),
        separated=separated,
        original_separated=bool(orig_separated),
        nb_alpha={"original": float(orig_fit.model.family.alpha), "copies": copy_alpha} if family == "negbin" else {},
        not_estimable=not_est,
        weights=weights,
        weight_type=weight_type if weights is not None else None,
    )


def _check_gaussian_response_varies(frame: pd.DataFrame, response: str, family: str, name: str) -> None:
    """A Gaussian model of a response that is constant in a data set has no residual variance: statsmodels
    stops with "The first guess on the deviance function returned a nan" (seen on a DPSyn copy whose
    zero-inflated income kept only its point mass). Say which data set and why instead; no value is echoed."""
    if family != "gaussian" or response not in frame.columns:
        return
    obs = pd.to_numeric(frame[response], errors="coerce").dropna()
    if len(obs) and obs.nunique() == 1:
        raise InputError(f"The response '{response}' of the gaussian model is constant in {name}: the model has no "
                         "residual variance to estimate there, so it cannot be compared with the original "
                         "(a release that kept only one value of this column).")


def _separation_message(separated: list[int], M: int) -> str:
    shown = ", ".join(f"synthetic[{j}]" for j in separated[:10]) + (", ..." if len(separated) > 10 else "")
    return (
        f"{len(separated)} of {M} copies give a separated fit ({shown}): the outcome is constant or perfectly "
        "predicted in them, so their estimates and standard errors are not finite MLEs and the combined "
        "interval, standardized difference and CI overlap are not meaningful."
    )


def _not_estimable(fit, terms: list[str]) -> np.ndarray:
    """Per term: True when this fit cannot estimate it (see :func:`analyse`)."""
    params = fit.params.reindex(terms)
    bse = fit.bse.reindex(terms)
    exog = pd.DataFrame(fit.model.exog, columns=fit.model.exog_names).reindex(columns=terms)
    all_zero = (exog.fillna(0.0) == 0).all(axis=0).to_numpy()
    se = bse.to_numpy(dtype=float)
    return params.isna().to_numpy() | all_zero | ~np.isfinite(se) | (se <= 0)


def recorded_weights(release: Any) -> str | None:
    """The survey weight column recorded with a release (``synthesize --weights``,
    ``weights=`` or the spec's role "weight"), or None.

    The one place the evaluation (``analyse``, the report) and the command-line verbs
    read it from: the copies' ``structure["weights"]`` in metadata.json. ``release``
    is a :class:`SyntheticData` or anything with a ``structure`` mapping (a list of
    copies has none).
    """
    w = (getattr(release, "structure", None) or {}).get("weights")
    return str(w) if w else None
