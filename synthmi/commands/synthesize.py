"""``synthmi synthesize``: fit a synthesizer and write M partially synthetic copies."""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Sequence

from ._common import (
    COMMA_NAMES_HELP,
    EXAMPLES_FMT,
    add_common_flags,
    add_convergence_flags,
    add_sep_flag,
    categorical_kinds,
    check_output_dir,
    coded_columns,
    identifier_columns,
    input_label,
    na_values_of,
    progress_enabled,
    sep_of,
    show_caught_warnings,
    spec_and_quasi_identifiers,
    split_list,
    warn_coded,
    warn_markers,
    warn_identifiers,
)
from ..errors import ColumnError, InputError, ParameterError
from ..spec import WHOLE_MODELS

# name -> synthesizer class, as "module:Class" so that `synthmi --help` does not
# import PyMC. A new method is one line here.
METHODS: dict[str, str] = {
    "rubin": "synthmi.models.rubin:RubinSynthesizer",
    "cart": "synthmi.models.cart:CartSynthesizer",
    "dami": "synthmi.models.dami:DAMISynthesizer",
    "risk-dami": "synthmi.models.risk_targeted:RiskTargetedSynthesizer",
    "dpsyn": "synthmi.privacy.dpsyn:DPSynSynthesizer",
}

# Fully synthetic DP methods: every released column (--qi and --keep) is
# synthesized, and numeric columns need public bounds (--bounds) because reading
# their range from the data would spend privacy budget.
FULLY_SYNTHETIC: tuple[str, ...] = ("dpsyn",)
# Public domains of the bundled data (levels and bounds from their documentation,
# never from the data) are the files synthmi/data/*.domain.json; see load_domain.
BUNDLED_DOMAINS: tuple[str, ...] = ("adult", "nhanes")

# Methods that take the --mask options, and the constructor argument they go to.
MASK_PARAMETER: dict[str, str] = {"dami": "masks", "risk-dami": "masks"}
# Methods whose masks may differ by risk subgroup (--mask COLUMN@GROUP:SPEC).
RISK_GROUPS: dict[str, tuple[str, ...]] = {"risk-dami": ("low", "medium", "high")}

# Non-identifying columns released unchanged when --keep is not given, for the
# bundled data: the complete (no missing values) columns that are not recodes
# of a quasi-identifier (Adult's education_num would reveal education) and not
# bookkeeping (fnlwgt, split).
def default_keep(source: str) -> list[str] | None:
    """The bundled data's default kept columns (``None`` for a user's file).

    Imported on use: ``synthmi --help`` and a call that fails validation need not import
    the data package, and with it pandas (issue 30).
    """
    from ..data.workloads import ADULT  # the Adult workload, defined once there

    return {"adult": list(ADULT.keep), "nhanes": ["smoked_100_cigarettes"]}.get(str(source).lower())

EXAMPLES = """examples:
  # DA-MI, 20 copies of Adult's quasi-identifiers, noisy copies of age and masked categories
  synthmi synthesize --data adult --qi age,sex,race,education --method dami --m 20 --seed 1 \\
      --mask age:K=3,sigma=5 --mask sex:alpha=2 --mask race:p=0.8 --mask education:alpha=2 --out syn/
  # synthpop-style CART, proper (bootstrap) synthesis
  synthmi synthesize --data adult --qi age,sex,race,education --method cart --param proper=true --out syn_cart/
  # improper DA-MI (synthpop's proper = FALSE): every copy uses the posterior mean of tree leaves;
  # every quasi-identifier needs a "tree" (or "cart") model: --models tree, or the spec's "models"
  synthmi synthesize --data survey.csv --spec spec.json --method dami --mask sex:p=0.8 \\
      --models tree --param proper=false --m 5 --seed 1 --out syn_improper/
  # risk-targeted DA-MI: weaker masking (more protection) for high-risk records
  synthmi synthesize --data nhanes --qi age,gender,race_ethnicity,education,marital_status \\
      --keep bmi,diabetes --method risk-dami --m 5 \\
      --mask age@low:K=3,sigma=2 --mask age@medium:K=2,sigma=4 --mask age@high:K=1,sigma=8 --out syn_risk/
  # differentially private, fully synthetic copies (DPSyn), eps = 1, delta = 1e-9; the bundled
  # data carry their public domain; a CSV needs one (--domain): levels and bounds are never read from data
  synthmi synthesize --data adult --qi age,sex,race,education --keep income,hours_per_week \
      --method dpsyn --param epsilon=1 --param delta=1e-9 --m 5 --out syn_dp/
  synthmi synthesize --data survey.csv --qi age,sex,region --keep income --method dpsyn \
      --domain survey.domain.json --map-other --m 5 --out syn_dp/
  # fit once and save the model; later, 50 more copies from it without refitting (no --data)
  synthmi synthesize --data survey.csv --qi age,sex --keep income --method rubin --seed 1 --out syn/ \
      --save-model model/
  synthmi synthesize --model model/ --m 50 --seed 2 --out syn_more/
  # your own CSV; the columns named in --keep are released unchanged, the others dropped
  synthmi synthesize --data survey.csv --qi age,sex --keep income,region --method rubin --m 5 --out syn/
  # an agency file coding missing values as '?' or -9, a region coded 1..5
  synthmi synthesize --data survey.csv --qi age,sex,region --na-values '?,-9' --categorical region \
      --method rubin --m 5 --out syn/
  # agency microdata: a survey weight, a zero-heavy income with missing values, a skip pattern
  synthmi synthesize --data person.csv --qi age,sex,race,hours_per_week,income \
      --keep state,employed,occupation,bmi --weights weight --semicont income=0 \
      --transform income=log --rule "hours_per_week:employed == 'No'" --method rubin --m 5 --out syn/

missing values (cart, rubin, dami): kept columns are released unchanged; a synthesized column
with missing values is synthesized with them (a categorical one with <NA> as a level, a numeric
one by a two-part model: which part, then the value given it), --semicont COLUMN=0 adds point
masses to that first part; --rule COLUMN[=VALUE]:CONDITION sets COLUMN (missing by default)
where CONDITION holds in the copy (synthpop's rules / rvalues); when CONDITION reads only kept
columns, COLUMN's models are fitted on the rows the rule leaves free (rubin, dami). risk-dami
imputes missing values and releases the observed missingness pattern.

masks (--mask COLUMN:SPEC, repeatable; dami and risk-dami; for risk-dami COLUMN@GROUP:SPEC
with GROUP low, medium or high sets subgroup-specific tuning):
  K=3,sigma=5         continuous: K >= 1 noisy copies W_k = X + N(0, sigma^2)
  K=3,reliability=0.9 continuous: sigma set from the reliability 1/(1 + sigma^2/(K var X))
  alpha=2             categorical: W = alpha * code(X) + N(0, 1)
  p=0.8               categorical: W = X with probability p, else another category at random

saved models (--save-model DIR, --model DIR): the same convergence check (the fit's override only)
and release guard as a fresh fit; a model without records (cart, rubin with normal models only)
needs --original FILE for the guard; a dpsyn model holds no seed or count, and its copies are
post-processing of its noised measurements (no new privacy budget).

output: DIR/copy_01.csv ... copy_MM.csv and DIR/metadata.json (method, tuning, seed,
versions, diagnostics, dtypes); read back with synthmi.SyntheticData.from_dir(DIR)."""


def method_terms(text: str) -> str:
    """A message in command-line terms: a synthesizer class named in it (``RubinSynthesizer``,
    ``RiskTargetedSynthesizer.fit``) becomes the ``--method`` name a user typed
    (``method 'rubin'``, ``method 'risk-dami'``)."""
    import re

    for name, target in METHODS.items():
        cls = target.split(":")[1]
        text = re.sub(rf"\b{cls}\b(?:\.(?:fit|sample)\b)?", f"method '{name}'", text)
    return text


def resolve_method(name: str) -> type:
    """The synthesizer class registered under ``name``."""
    if name not in METHODS:
        raise InputError(
            f"The '--method' option must be one of {', '.join(sorted(METHODS))}. Got {name!r} instead."
        )
    module, cls = METHODS[name].split(":")
    return getattr(importlib.import_module(module), cls)


def _number(text: str) -> Any:
    """A mask or parameter value: int, float, bool, None, or the text itself."""
    low = text.strip().lower()
    if low in ("true", "yes"):
        return True
    if low in ("false", "no"):
        return False
    if low in ("none", "null"):
        return None
    try:
        return int(low)
    except ValueError:
        pass
    try:
        return float(low)
    except ValueError:
        return text.strip()


def parse_mask(text: str) -> tuple[str, dict[str, Any]]:
    """``"age:K=3,sigma=5"`` -> ``("age", {"K": 3, "sigma": 5})``."""
    col, sep, spec = text.partition(":")
    col = col.strip()
    if not sep or not col or not spec.strip():
        raise InputError(
            f"The '--mask' option takes COLUMN:KEY=VALUE[,KEY=VALUE], e.g. age:K=3,sigma=5. Got {text!r} instead."
        )
    out: dict[str, Any] = {}
    for part in split_list(spec):
        key, eq, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not key or not value:
            raise InputError(
                f"The '--mask' option for column '{col}' takes KEY=VALUE pairs such as K=3,sigma=5. Got {part!r} instead."
            )
        v = _number(value)
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise InputError(f"The '--mask' value of '{key}' for column '{col}' must be a number. Got {value!r} instead.")
        if key in out:
            raise InputError(f"The '--mask' option for column '{col}' gives '{key}' twice.")
        out[key] = v
    return col, out


# The keys a --mask takes (the command line's names: sigma for NormalMasking's sigma_e).
MASK_KEYS: dict[str, tuple[str, ...]] = {
    "continuous": ("K", "sigma", "sigma_e", "reliability"),
    "categorical": ("alpha", "p", "n_categories"),
}


def _check_mask_keys(spec: dict[str, Any], col: str, item: str) -> None:
    """A --mask's keys in the terms the user typed: unknown keys, keys of both mask kinds, a
    missing K or noise level, and K < 1 (K is the number of noisy copies W_k = X + e_k of the
    seeds' DA-MI masking model; K = 0 would add none, so the column is left out of --mask)."""
    accepted = "K with sigma (or sigma_e) or reliability (continuous); alpha or p (categorical)"
    unknown = [k for k in spec if k not in MASK_KEYS["continuous"] + MASK_KEYS["categorical"]]
    if unknown:
        which = f"an unknown key '{unknown[0]}'" if len(unknown) == 1 else f"unknown keys {unknown}"
        raise InputError(f"The '--mask' option for column '{col}' (in {item!r}) has {which}; accepted keys: {accepted}.")
    cont = [k for k in spec if k in MASK_KEYS["continuous"]]
    cat = [k for k in spec if k in MASK_KEYS["categorical"]]
    if cont and cat:
        raise InputError(f"The '--mask' option for column '{col}' (in {item!r}) mixes keys of a continuous mask "
                         f"({', '.join(cont)}) and a categorical one ({', '.join(cat)}); accepted keys: {accepted}.")
    if "alpha" in cat and "p" in cat:
        raise InputError(f"The '--mask' option for column '{col}' (in {item!r}) gives both 'alpha' and 'p'; "
                         "a categorical mask takes one of them.")
    if cont:
        noise = [k for k in cont if k != "K"]
        if "K" not in spec:
            raise InputError(f"The '--mask' option for column '{col}' (in {item!r}) needs K, the number of noisy "
                             "copies, e.g. K=3,sigma=5.")
        if isinstance(spec["K"], (int, float)) and spec["K"] < 1:
            raise InputError(f"The '--mask' value of 'K' for column '{col}' (in {item!r}) must be >= 1 (the number "
                             "of noisy copies W_k = X + e_k); to leave a column unmasked, leave it out of --mask. "
                             f"Got {spec['K']!r} instead.")
        if not noise:
            raise InputError(f"The '--mask' option for column '{col}' (in {item!r}) needs the noise level: add "
                             "sigma=... (> 0) or reliability=... (in (0, 1)), e.g. K=3,sigma=5.")
        if len(noise) > 1:
            raise InputError(f"The '--mask' option for column '{col}' (in {item!r}) gives {' and '.join(noise)}; "
                             "give one noise level: sigma or reliability.")


def _cli_masking(make, spec: dict[str, Any], col: str, item: str):
    """``make_masking`` with its parameter errors in the terms of the --mask the user typed:
    "The 'sigma_e' parameter of NormalMasking must be > 0" -> "The '--mask' value of 'sigma'
    for column 'age' (in 'age:K=3,sigma=-5') must be > 0" (the key as typed: sigma or sigma_e)."""
    import re

    _check_mask_keys(spec, col, item)
    try:
        return make(spec, column=col)
    except ValueError as exc:
        def typed(m: re.Match) -> str:
            key = m.group(1)
            if key == "sigma_e" and "sigma_e" not in spec and "sigma" in spec:
                key = "sigma"
            return f"The '--mask' value of '{key}' for column '{col}' (in {item!r})"

        raise InputError(re.sub(r"The '(\w+)' parameter of \w*Masking", typed, str(exc))) from None


def build_masks(items: list[str] | None, groups: tuple[str, ...] = (), columns: Sequence[str] | None = None,
                quasi_identifiers: Sequence[str] | None = None, make: bool = True) -> dict[str, Any]:
    """``--mask`` options -> {column: masking model} (validated by the masking classes).

    With ``groups`` (risk subgroups), ``COLUMN@GROUP:SPEC`` sets a mask for one
    subgroup; then every mask must name its group and the result is
    {group: {column: masking model}} with every group present. With ``columns`` (the
    data's) and ``quasi_identifiers``, a mask's column is checked first, before its keys.
    ``make=False`` checks the syntax only and returns the parsed key dicts (run() calls
    it before reading the data, and again with the columns once they are known).
    """
    from ..models.masking import make_masking

    def built(spec: dict[str, Any], col: str, item: str):
        if columns is not None and col not in columns:
            raise InputError(f"The '--mask' option names column '{col}', which is not in the data. "
                             f"Available columns: {list(columns)}.")
        if quasi_identifiers is not None and col not in quasi_identifiers:
            raise InputError(f"The '--mask' option names column '{col}', which is not a quasi-identifier: only "
                             f"synthesized columns are masked. Quasi-identifiers (--qi): {list(quasi_identifiers)}.")
        return _cli_masking(make_masking, spec, col, item) if make else spec

    flat: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {}
    for item in items or []:
        col, spec = parse_mask(item)
        if "@" in col:
            col, group = (t.strip() for t in col.rsplit("@", 1))
            if group not in groups:
                where = f"one of {', '.join(groups)}" if groups else "not used by this method"
                raise InputError(f"The '--mask' option names group {group!r} for column '{col}'; groups are {where}.")
            if col in nested.setdefault(group, {}):
                raise InputError(f"The '--mask' option is given twice for column '{col}' in group '{group}'.")
            nested[group][col] = built(spec, col, item)
        else:
            if col in flat:
                raise InputError(f"The '--mask' option is given twice for column '{col}'.")
            flat[col] = built(spec, col, item)
    if flat and nested:
        raise InputError("The '--mask' options either all name a risk group (COLUMN@GROUP:SPEC) or none does.")
    if nested:
        return {g: nested.get(g, {}) for g in groups}
    return flat


def parse_params(items: list[str] | None, cls: type) -> dict[str, Any]:
    """``--param name=value`` -> constructor keyword arguments of ``cls``."""
    allowed = _param_names(cls)
    out: dict[str, Any] = {}
    for item in items or []:
        for part in split_list(item):
            key, eq, value = part.partition("=")
            key = key.strip()
            if not eq or not key:
                raise InputError(f"The '--param' option takes NAME=VALUE pairs. Got {part!r} instead.")
            if key not in allowed:
                raise InputError(
                    f"The '--param' option names '{key}', which is not a parameter of {cls.__name__} "
                    f"(parameters: {', '.join(allowed)})."
                )
            out[key] = _number(value)
    return out


def register(subparsers: argparse._SubParsersAction) -> None:
    from ..models.base import UNMODIFIED_MAX  # the release guard's threshold, quoted in --help (no PyMC import)

    p = subparsers.add_parser(
        "synthesize",
        help="fit a synthesizer and write M partially synthetic copies",
        description=(
            "Replace the quasi-identifiers (--qi) by draws from a synthesis model fitted to the data; "
            "the --keep columns are released unchanged and used as predictors (partially synthetic data, "
            "Reiter 2003). Other columns are not written."
        ),
        epilog=EXAMPLES,
        formatter_class=EXAMPLES_FMT,
    )
    p.add_argument("--data", default=None,
                   help="'adult', 'nhanes' (bundled, recoded) or a CSV path (required unless --model)")
    add_sep_flag(p)
    p.add_argument("--spec", default=None, metavar="SPEC.json",
                   help="release spec (roles, kinds, public levels/bounds, masks, analyses; draft one with "
                   "'synthmi spec'); --qi/--keep/--mask given as well override it")
    p.add_argument("--qi", default=None, action="append",
                   help=f"comma-separated quasi-identifiers to synthesize (repeatable; {COMMA_NAMES_HELP}; or give --spec)")
    p.add_argument(
        "--keep", action="append",
        help="comma-separated columns released unchanged (repeatable; default for adult/nhanes: a complete "
        "non-identifying set; for a CSV: every other column)",
    )
    p.add_argument(
        "--categorical", action="append", metavar="COLUMNS",
        help="comma-separated numeric columns holding codes of categories (1/2 for sex, 1..5 for a region): "
        "modelled as categories, not numbers (cart, rubin, dami, risk-dami; repeatable). Without it a numeric "
        "column is a number, as in synthpop; with --spec, this sets the columns' kind",
    )
    p.add_argument("--method", default=None, help=f"one of {', '.join(sorted(METHODS))} (default dami)")
    p.add_argument("--m", type=int, default=20, help="number of synthetic copies (default 20)")
    p.add_argument("--seed", type=int, default=None,
                   help="random seed; same seed -> identical files (default: drawn and recorded). For dpsyn the "
                        "default is secret OS randomness, never recorded; a seed makes the release reproducible and "
                        "NOT private against anyone who learns it")
    p.add_argument("--mask", action="append", metavar="COLUMN:SPEC", help="DA-MI masking model for a column (repeatable)")
    p.add_argument("--param", action="append", metavar="NAME=VALUE", help="synthesizer parameter, e.g. proper=true (repeatable)")
    p.add_argument(
        "--domain", metavar="domain.json",
        help="public domain of the columns for dpsyn: levels, bounds, point masses (JSON; see synthmi.domain). "
        "Required for a CSV; the bundled data carry theirs, which this extends or overrides",
    )
    p.add_argument(
        "--map-other", action="store_true",
        help="dpsyn: map values outside a column's declared levels to its declared 'other' level instead of "
        "refusing",
    )
    p.add_argument(
        "--bounds", action="append", metavar="COLUMN=LO:HI",
        help="dpsyn shorthand: declare a numeric column CONTINUOUS on [LO, HI] (repeatable; overrides --domain). "
        "Integer-coded or 0/1 columns need --domain with kind integer or binary to come back as integers",
    )
    p.add_argument(
        "--levels", action="append", metavar="COLUMN=A,B,...",
        help="dpsyn shorthand: declare a categorical column's public levels, one column per option (repeatable; "
        "overrides --domain); levels that are increasing numbers are ordinal, e.g. --levels rating=1,2,3,4,5",
    )
    p.add_argument(
        "--engine", choices=("pandas", "dask"), default="pandas",
        help="pandas (in memory, default) or dask: --data is a Parquet file or directory read partition by "
        "partition, the model (rubin, dami; sampler fast) is fitted by reduction and the copies are written as "
        "Parquet partition by partition (OUT/copy_XX/part.NNNNN.parquet), never gathered",
    )
    p.add_argument(
        "--scheduler", metavar="ADDRESS",
        help="with --engine dask: address of a running Dask scheduler (e.g. tcp://10.0.0.5:8786, from "
        "dask-jobqueue or a Kubernetes deployment); default: Dask's local threaded scheduler",
    )
    p.add_argument("--weights", metavar="COLUMN", default=None,
                   help="survey weight column: released unchanged, not a predictor, left out of pMSE/tables, "
                        "used by weighted analyses")
    p.add_argument("--weight-as-predictor", action="store_true",
                   help="with --weights: also use the weight as a predictor of the synthesized columns (needed "
                        "for valid weighted analyses when selection depends on columns not in the file)")
    p.add_argument("--transform", action="append", metavar="COLUMN=log|log1p|rank",
                   help="transform of a continuous quasi-identifier's model (rubin, dami; repeatable)")
    p.add_argument("--models", choices=list(WHOLE_MODELS), default=None,
                   help="rubin, dami: 'auto' chooses each quasi-identifier's model by posterior predictive checks of "
                        "its release (one- and two-way table S_pMSE; synthmi.models.model_choice), the models a "
                        "--spec names for its columns winning; 'tree' (or 'cart') gives every quasi-identifier that "
                        "model (synthpop's method = \"cart\"; with --param proper=false its plug-in leaves)")
    p.add_argument("--semicont", action="append", metavar="COLUMN=V[:V2]",
                   help="point masses (e.g. zeros) of a numeric quasi-identifier: two-part model (repeatable)")
    p.add_argument("--rule", action="append", metavar="COLUMN[=VALUE]:CONDITION",
                   help="structural rule applied to every copy, e.g. \"hours:employed == 'No'\" (repeatable)")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--overwrite", action="store_true", help="replace copies already in --out")
    p.add_argument("--holdout-share", type=float, default=None, metavar="SHARE",
                   help="hold out this share of the rows (drawn with --seed) and synthesize from the rest; "
                        "metadata.json records the held-out row positions (no value), so 'synthmi disclosure' "
                        "measures membership inference against them (default: no holdout; not for DP methods)")
    p.add_argument(
        "--accept-diagnostics", action="store_true",
        help="write the copies even if the posterior sampler fails its convergence check "
        "(they are flagged as unconverged in metadata.json and in the report)",
    )
    p.add_argument(
        "--allow-unmodified", action="store_true",
        help="write the copies even if their quasi-identifier keys agree with the original's, record by record, "
        f"beyond chance by more than {UNMODIFIED_MAX} (Cohen's kappa; copies identical to the input score 1), e.g. risk-dami "
        "without --mask, which only imputes; recorded in metadata.json and the report. Without it such copies "
        "are refused",
    )
    p.add_argument(
        "--allow-identifiers", action="store_true",
        help="release a kept column that holds a different value in every row (a record identifier) although "
        "it links each synthetic row to its person; without it such a column is an error",
    )
    add_convergence_flags(p)
    p.add_argument("--max-seconds", default=None, metavar="S",
                   help="time budget of the fit for risk-dami (default 300; 'none': no budget). A 100-iteration pilot "
                        "times an iteration and prints its estimate of what the convergence check needs; with "
                        "risk-dami's default --param n_iter=auto the chains run 1,000 iterations, then continue until "
                        "the check holds, and the command stops within the budget, with the estimate and what to "
                        "change, when the planned iterations or, after a failed check, the projected ones do not fit "
                        "in it (a projection from the slowest quantity so far: a lower bound). An integer n_iter "
                        "runs exactly that many")
    p.add_argument("--save-model", default=None, metavar="DIR",
                   help="also write the fitted model to DIR (a new directory; Synthesizer.save format, with a "
                        "manifest.json of SHA-256 digests), so that 'synthesize --model DIR' draws more copies "
                        "without refitting. It holds the original records when the method's sampler conditions on "
                        "them (then it is as confidential as the data); a DP model holds no seed and no count")
    p.add_argument("--model", default=None, metavar="DIR",
                   help="draw the copies from a model saved with --save-model instead of fitting one (no --data; "
                        "the fit options are the saved model's); --out must be a new directory")
    p.add_argument("--original", default=None, metavar="FILE",
                   help="with --model: the original data, needed when the saved model holds no records (the "
                        "release guard compares the copies with them); checked against the model's columns and "
                        "row count")
    add_common_flags(p)
    p.set_defaults(func=run)


def _parallel_chains(method: str, cls: type, params: dict[str, Any], cpus: int | None) -> None:
    """risk-dami's copula chains in parallel processes by default: ``n_jobs`` = min(chains, cores).

    The chains ran in turn (``n_jobs=1``), so a 2-chain fit took twice its wall time on a
    2-core machine (issue 28's wall-time target). The fit is the same whatever ``n_jobs``
    (each chain has its own random stream), so only the wall time changes; ``--param
    n_jobs=1`` keeps the chains in one process.
    """
    if method != "risk-dami" or "n_jobs" in params:
        return
    import inspect

    chains = params.get("chains", inspect.signature(cls.__init__).parameters["chains"].default)
    params["n_jobs"] = max(1, min(int(chains), int(cpus or 1)))


def _param_names(cls: type) -> list[str]:
    """Constructor parameters of any synthesizer class (DPSyn is not a
    :class:`~synthmi.models.base.Synthesizer` subclass: privacy/ stands beside models/)."""
    import inspect

    sig = inspect.signature(cls.__init__)
    return [n for n, p in sig.parameters.items() if n != "self" and p.kind is not inspect.Parameter.VAR_KEYWORD]


def _with_kinds(spec, data, kinds: dict[str, str]):
    """``spec`` with the ``--categorical`` columns redrafted as categorical (levels as observed,
    marked inferred)."""
    import dataclasses

    from ..spec import draft_column

    cols = dict(spec.columns)
    for c, kind in kinds.items():
        cols[c] = draft_column(c, data[c], cols[c].role, kind)
    return dataclasses.replace(spec, columns=cols)


def parse_bounds(items: list[str] | None) -> dict[str, tuple[float, float]]:
    """``["age=17:90", "bmi=10:90"]`` -> ``{"age": (17.0, 90.0), "bmi": (10.0, 90.0)}``."""
    out: dict[str, tuple[float, float]] = {}
    for item in items or []:
        for part in split_list(item):
            col, _, rng = part.partition("=")
            lo, _, hi = rng.partition(":")
            try:
                out[col.strip()] = (float(lo), float(hi))
            except ValueError:
                raise InputError(f"The '--bounds' option takes COLUMN=LO:HI. Got {part!r} instead.") from None
    return out


def parse_levels(items: list[str] | None) -> dict[str, list[Any]]:
    """``["sex=F,M", "rating=1,2,3"]`` -> ``{"sex": ["F", "M"], "rating": [1, 2, 3]}`` (one column per item)."""
    out: dict[str, list[Any]] = {}
    for item in items or []:
        col, eq, rest = item.partition("=")
        col = col.strip()
        levels = [_number(v) for v in split_list(rest)] if eq else []
        if not col or not levels:
            raise InputError(f"The '--levels' option takes COLUMN=A,B,..., e.g. sex=F,M. Got {item!r} instead.")
        if col in out:
            raise InputError(f"The '--levels' option is given twice for column '{col}'.")
        out[col] = levels
    return out


def _log(args: argparse.Namespace, msg: str, summary: bool = False) -> None:
    """A step line; with --quiet only the one summary line per step (``summary=True``)."""
    if progress_enabled(args) or summary:
        _end_live()
        print(f"synthmi synthesize: {msg}", file=sys.stderr, flush=True)


_LIVE = {"on": False, "copy": None}


def _end_live() -> None:
    if _LIVE["on"]:
        print(file=sys.stderr, flush=True)
        _LIVE["on"] = False


def _progress_callback(args: argparse.Namespace):
    """Live progress: per copy and column, overwritten in place on a terminal; one line per
    copy and per posterior otherwise; nothing with --quiet."""
    if not progress_enabled(args):
        return None
    tty = sys.stderr.isatty()

    def report(msg: str) -> None:
        if tty:
            print(f"\r\033[Ksynthmi synthesize: {msg}", end="", file=sys.stderr, flush=True)
            _LIVE["on"] = True
            return
        copy = msg.split(":", 1)[0] if msg.startswith("copy ") else None
        if copy is not None and copy == _LIVE["copy"]:
            return
        _LIVE["copy"] = copy
        print(f"synthmi synthesize: {msg}", file=sys.stderr, flush=True)

    return report


def parse_transforms(items: list[str] | None) -> dict[str, str]:
    """``["income=log", "age=rank"]`` -> ``{"income": "log", "age": "rank"}``."""
    out: dict[str, str] = {}
    for item in items or []:
        for part in split_list(item):
            col, eq, t = (x.strip() for x in part.partition("="))
            if not eq or not col or t not in ("log", "log1p", "rank", "none"):
                raise InputError(f"The '--transform' option takes COLUMN=log|log1p|rank. Got {part!r} instead.")
            if col in out:
                raise InputError(f"The '--transform' option is given twice for column '{col}'.")
            out[col] = None if t == "none" else t
    return out


def parse_semicont(items: list[str] | None) -> dict[str, list[float]]:
    """``["income=0", "hours=0:99"]`` -> ``{"income": [0.0], "hours": [0.0, 99.0]}``."""
    out: dict[str, list[float]] = {}
    for item in items or []:
        for part in split_list(item):
            col, eq, vals = (x.strip() for x in part.partition("="))
            try:
                pts = [float(v) for v in vals.split(":")] if eq and col and vals else None
            except ValueError:
                pts = None
            if not pts:
                raise InputError(f"The '--semicont' option takes COLUMN=VALUE[:VALUE], e.g. income=0. Got {part!r} instead.")
            out[col] = pts
    return out


def parse_rules(items: list[str] | None) -> dict[str, dict[str, Any]]:
    """``["hours:employed == 'No'", "pay=0:age < 16"]`` -> {col: {"rule": ..., "value": ...}}."""
    out: dict[str, dict[str, Any]] = {}
    for item in items or []:
        head, sep, cond = item.partition(":")
        col, eq, value = (x.strip() for x in head.partition("="))
        if not sep or not col or not cond.strip() or (eq and not value):
            raise InputError(
                f"The '--rule' option takes COLUMN[=VALUE]:CONDITION, e.g. \"hours:employed == 'No'\". Got {item!r} instead."
            )
        out[col] = {"rule": cond.strip(), "value": _number(value) if eq else None}
    return out


def _check_not_degenerate(data, qi: list[str], keep: list[str], keep_from: str = "option", spec=None,
                          qi_from: str = "option") -> None:
    """An entirely missing or constant released column, refused in the terms of the option
    that names it (the synthesizers' own check says only that it is constant). ``keep_from``
    says where the kept columns came from: ``"option"`` (--keep), ``"spec"`` (the --spec's
    roles) or ``"default"`` (no --keep: every other column), so the error does not blame an
    option the user did not give; ``qi_from`` the same for the quasi-identifiers (``"option"`` or
    ``"spec"``). A column whose role came from the ``spec`` is named with that role
    (quasi-identifier, kept, outcome, weight)."""
    for cols, opt in ((qi, "--qi"), (keep, "--keep")):
        empty = [c for c in cols if c in data.columns and int(data[c].notna().sum()) == 0]
        constant = [c for c in cols if c in data.columns and c not in empty and data[c].nunique(dropna=True) < 2]
        for bad, what in ((empty, "entirely missing"), (constant, "constant (one observed value)")):
            if bad and spec is not None and {"--qi": qi_from, "--keep": keep_from}[opt] == "spec":
                listed = spec.columns_with_roles(bad)
                it = "it" if len(bad) == 1 else "them"
                raise InputError(
                    f"The '--spec' file releases {listed}, which {'is' if len(bad) == 1 else 'are'} {what} in the "
                    f"data: {'it carries' if len(bad) == 1 else 'they carry'} no information to synthesize or "
                    f"release. Give {it} the role \"excluded\" in the spec."
                )
            if bad:
                names = ", ".join(f"'{c}'" for c in bad)
                if opt == "--keep" and keep_from != "option":
                    where = ("The kept columns of the '--spec' file include" if keep_from == "spec" else
                             "Without '--keep', every column not in --qi is kept; the default keep includes")
                    raise InputError(
                        f"{where} {names}, which {'is' if len(bad) == 1 else 'are'} {what} in the data: nothing to "
                        f"model or release. Pass --keep naming the columns to release, without {names}."
                    )
                # One rule for --qi and --keep: such a column carries no information, so it is neither
                # synthesized nor released (the synthesizers refuse it as a predictor too); the advice
                # names every step that makes the command run, never "--keep" for a column --keep refuses.
                it = "it" if len(bad) == 1 else "them"
                advice = f"Drop {it} from {opt}."
                if opt == "--qi" and keep_from != "option":
                    advice = (f"Drop {it} from --qi and leave {it} out of the released columns: without '--keep' "
                              f"every column not in --qi is kept, so pass --keep naming the columns to release, "
                              f"without {names}.")
                raise InputError(
                    f"The '{opt}' option names {names}, which {'is' if len(bad) == 1 else 'are'} {what} in the data: "
                    f"{'it carries' if len(bad) == 1 else 'they carry'} no information to synthesize or release "
                    f"(neither --qi nor --keep takes such a column). {advice}"
                )


def copies_recoded(source: str, encoding: str | None) -> bool | None:
    """Whether :func:`restore_kept_text` writes the copies in ``encoding`` (not UTF-8); None
    for a bundled data set (its copies are left as written)."""
    import codecs

    from ..data import is_bundled_name

    if is_bundled_name(source):
        return None
    return encoding is not None and codecs.lookup(encoding).name != "utf-8"


def restore_kept_text(out: Path, m: int, source: str, keep: list[str], data, sep: str, encoding: str | None,
                      rows: dict | None = None) -> bool:
    """Write the kept columns of the copies in ``out`` exactly as the input spells them.

    A kept column is released unchanged in value, but a CSV writer re-spells numbers
    (``40.0`` -> ``40``, ``0.50`` -> ``0.5``). Each cell whose value in the copy is the
    original's is written back as the input's text, so a diff of a kept column is empty;
    missing cells and cells a model changed (imputed kept columns of risk-dami with
    ``impute_keep``) keep the writer's form. Read back, every cell parses to the same value.
    The copies are written in the input's ``encoding`` (--encoding), so a kept column's bytes
    equal the input's (issue 30 item 6); returns whether they were (then ``metadata.json``
    records it under ``source.copies_encoding`` for :meth:`SyntheticData.from_dir`).
    """
    import numpy as np
    import pandas as pd

    from ..data import read_csv_checked

    recode = copies_recoded(source, encoding)
    if recode is None:
        return False
    if not keep and not recode:
        return False
    cols = [c for c in keep if c in data.columns]
    if cols:
        raw = read_csv_checked(source, sep=sep, encoding=encoding, dtype=str, keep_default_na=False, na_filter=False,
                               usecols=lambda c: c in set(cols))
        if rows is not None and len(raw) == rows["n_rows_original"]:
            # the copies are aligned with the training rows: the input's text of those rows
            from ._common import split_holdout

            raw = split_holdout(raw, rows)[0]
        if len(raw) != len(data):
            cols = []
    width = max(2, len(str(m)))
    for j in range(1, m + 1):
        f = out / f"copy_{j:0{width}d}.csv"
        text = pd.read_csv(f, dtype=str, keep_default_na=False, na_filter=False)
        written = pd.read_csv(f)
        changed = False
        for c in cols:
            if c not in text.columns:
                continue
            a, b = data[c], written[c]
            if pd.api.types.is_numeric_dtype(a.dtype) and pd.api.types.is_numeric_dtype(b.dtype):
                same = a.to_numpy(dtype=float, na_value=np.nan) == b.to_numpy(dtype=float, na_value=np.nan)
            else:
                same = np.asarray(a.astype(object).astype(str).to_numpy() == b.astype(object).astype(str).to_numpy())
            same &= a.notna().to_numpy() & b.notna().to_numpy()
            new = np.where(same, raw[c].to_numpy(dtype=object), text[c].to_numpy(dtype=object))
            if not np.array_equal(new, text[c].to_numpy(dtype=object)):
                text[c] = new
                changed = True
        if changed or recode:
            text.to_csv(f, index=False, encoding=encoding)
    return recode


def _check_rules_before_fit(data, rules: dict, spec, owner: str) -> None:
    """The synthesizers' own check of ``rules`` (:func:`synthmi.models.base.check_rules`), run on
    the released columns with the kinds of the release's spec, which the fit takes too."""
    from ..models.base import check_rules

    check_rules(data, rules, owner, spec.schema([c for c in data.columns if c in spec.columns]))


def _check_copies_combinable(args: argparse.Namespace, cls: type, params: dict[str, Any]) -> None:
    """Refuse, before fitting, a number of copies the release's combining rule cannot use.

    Every rule estimates the between-copy variance, so it needs M >= 2 copies;
    the nested rule (Reiter 2004) needs m >= 2 completed data sets with r >= 2 copies each.
    """
    rule = _rule_of(args.method, params)
    r = params.get("r")
    if args.m < 2:
        raise InputError(
            f"The '--m' option must be >= 2: copies from --method {args.method} are combined with the "
            f"'{rule}' rule, which estimates the between-copy variance from at least 2 copies "
            f"('synthmi analyse' and the report would refuse the release). Got --m {args.m} instead."
        )
    if rule == "nested" and r is not None and int(r) < 2:
        raise ParameterError(
            f"The 'r' parameter (--param r=...) must be >= 2: nested copies are combined with the 'nested' rule "
            f"(Reiter 2004), which needs r >= 2 copies per completed data set. Got --param r={r} instead.", parameter='r'
        )


def _rule_of(method: str, params: dict[str, Any]) -> str:
    """The combining rule the method's copies need (as the synthesizers record it)."""
    if method in FULLY_SYNTHETIC:
        return "full"
    if method == "risk-dami":
        if params.get("r") is not None and params.get("masks"):
            return "nested"
        return "rubin"
    return "partial"


def _require_declared(domain, data) -> None:
    """Every released column declared public, or one error in command-line terms naming both
    forms (``--levels COLUMN=A,B,...``, ``--bounds COLUMN=LO:HI``) and ``--domain``."""
    import shlex

    missing = [c for c in data.columns if c not in domain]
    if not missing:
        return
    first = missing[0]
    # The same words whatever the dtypes: which form a column needs (levels or bounds) is the
    # user's declaration; a reader's dtype is a guess from the private values (a '?' turns a
    # numeric column into text, 0/1 reads as a number), so it must not shape the message.
    which = f"Column '{missing[0]}' has" if len(missing) == 1 else f"Columns {missing} have"
    raise InputError(
        f"{which} no declared public domain: a DP release cannot read levels or bounds from the data "
        f"without spending privacy budget. Declare {'it' if len(missing) == 1 else 'each'} with --levels "
        f"COLUMN=A,B,... (a categorical, binary or ordinal column: its public levels) or --bounds COLUMN=LO:HI "
        f"(a numeric column: its documented range, not the observed minimum and maximum), e.g. "
        f"--levels {shlex.quote(f'{first}=A,B')} or --bounds {shlex.quote(f'{first}=LO:HI')}, or in a domain "
        f"file, --domain domain.json (format: synthmi.domain)."
    )


def _report_rare_levels(synth) -> None:
    """Say which declared levels the noise threshold suppressed or pooled: always one line,
    shown even with --quiet.

    Which levels fell below the threshold is decided from noisy counts only, so
    saying so costs no privacy (post-processing); silence would change the data's
    nature without a word.
    """
    suppressed = getattr(synth, "suppressed_levels_", {})
    pooled = getattr(synth, "pooled_levels_", {})
    no_missing = getattr(synth, "suppressed_missing_", [])
    parts = [f"{col}: {', '.join(map(str, lv))}" for col, lv in suppressed.items()]
    parts += [f"{col}: {', '.join(map(str, p['levels']))} (pooled into '{p['into']}')" for col, p in pooled.items()]
    if not parts:
        msg = "no declared level fell below the noise threshold."
    else:
        msg = "declared levels below the noise threshold -- " + "; ".join(parts) + "."
        if suppressed:
            msg += (" Suppressed levels cannot appear in the copies: pool them into a declared 'other' level "
                    "(--param rare=pool) or lower the threshold at an accuracy cost (--param theta_scale=2 "
                    "--param theta_min=0).")
    print(f"synthmi synthesize: rare levels: {msg}", file=sys.stderr, flush=True)
    from ..privacy.dpsyn import continuous_lines

    # range, mean and truncation of each numeric column (issue 25): fixed words, noisy values
    for line in continuous_lines(getattr(synth, "continuous_", {})):
        print(f"synthmi synthesize: numeric column {line}", file=sys.stderr, flush=True)
    if any(c.has_missing_level for c in getattr(synth, "_columns", [])) and not no_missing:
        # printed whenever the domain allows missing values (public), so that whether this
        # line appears never depends on the noise
        print("synthmi synthesize: missing values: kept in every column whose domain allows them.",
              file=sys.stderr, flush=True)
    if no_missing:
        # The missing cell faces the same threshold; a column the domain lets hold missing
        # values whose noisy missing count is below it comes back complete.
        print(f"synthmi synthesize: missing values: the noisy count of missing values fell below the noise "
              f"threshold in {', '.join(map(str, no_missing))}, so the copies hold no missing values there. "
              "To keep them, lower the threshold at an accuracy cost (--param theta_scale=2 --param theta_min=0), "
              "or declare \"missing\": false for columns that have none.", file=sys.stderr, flush=True)


def _dp_data(args: argparse.Namespace, source: str, data, spec=None):
    """The released columns conformed to their declared public domain, and that domain.

    The domain is the bundled data's own (documented levels and bounds), extended or
    overridden by ``--domain`` and then ``--bounds``; every released column must be
    declared (one error naming it and the flag), and values outside the domain are an
    error naming the column only (or go to its declared 'other' level with --map-other).
    The conformed frame's dtypes follow the declaration, not what a CSV reader saw.
    """
    from ..data import load_domain
    from ..domain import PublicDomain

    domain = load_domain(source.lower(), recode=True) if source.lower() in BUNDLED_DOMAINS else PublicDomain()
    if spec is not None:
        # the values the spec DECLARES public (inferred ones never reach DP code)
        domain = domain.merged(spec.public_domain())
    if args.domain:
        domain = domain.merged(PublicDomain.from_json(args.domain))
    levels = parse_levels(getattr(args, "levels", None))
    if levels:
        both = [c for c in levels if c in parse_bounds(args.bounds)]
        if both:
            raise InputError(f"The '--levels' and '--bounds' options both declare column '{both[0]}'; declare it once.")
        domain = domain.merged(PublicDomain.from_legacy(domain=levels, source="--levels"))
    if args.bounds:
        domain = domain.merged(PublicDomain.from_legacy(bounds=parse_bounds(args.bounds), source="--bounds"))
    _require_declared(domain, data)
    domain = domain.select(data.columns)
    return domain.conform(data, out_of_domain="other" if args.map_other else "error"), domain


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from ..data import load_dataset

    t0 = time.perf_counter()
    if getattr(args, "model", None) is not None:
        return _run_saved_model(args, t0)
    if getattr(args, "original", None) is not None:
        raise InputError("The '--original' option is for --model DIR (drawing from a saved model); a fit reads --data.")
    if args.data is None:
        raise InputError("The '--data' option is required (or --model DIR, to draw copies from a saved model).")
    args.method = args.method or "dami"
    cls = resolve_method(args.method)
    if args.seed is not None and args.seed < 0:
        raise InputError(f"The '--seed' option must be >= 0. Got {args.seed} instead.")
    params = parse_params(args.param, cls)
    if args.mask:
        if args.method not in MASK_PARAMETER:
            raise InputError(
                f"The '--mask' option is for {', '.join(sorted(MASK_PARAMETER))}; method {args.method!r} takes no masks."
            )
        if MASK_PARAMETER[args.method] in params:
            raise InputError(f"Give the masks either with --mask or with --param {MASK_PARAMETER[args.method]}=..., not both.")
        # the syntax now (a bad --mask costs no reading); the columns, keys and models once the
        # data's columns are known (a misspelt column is named before its keys are judged)
        params[MASK_PARAMETER[args.method]] = build_masks(args.mask, RISK_GROUPS.get(args.method, ()), make=False)
    if "progressbar" in _param_names(cls) and "progressbar" not in params:
        # a sampler's live bar (tqdm) only on a terminal: redirected, its carriage returns
        # fill the log; the step lines below say the same
        params["progressbar"] = progress_enabled(args) and sys.stderr.isatty()
    transforms = parse_transforms(args.transform)
    if transforms:
        if "transforms" not in _param_names(cls):
            takes = ", ".join(sorted(m for m in METHODS if m in ("rubin", "dami")))
            raise InputError(f"The '--transform' option is for {takes}; method {args.method!r} takes no transforms.")
        if "transforms" in params:
            raise InputError("Give the transforms either with --transform or with --param transforms=..., not both.")
        params["transforms"] = transforms
    if getattr(args, "models", None) is not None:
        if "models" not in _param_names(cls):
            takes = ", ".join(sorted(m for m in METHODS if m in ("rubin", "dami")))
            raise InputError(f"The '--models' option is for {takes}; method {args.method!r} takes no models.")
        if "models" in params:
            raise InputError("Give the models either with --models or with --param models=..., not both.")
        params["models"] = args.models
    semicont = parse_semicont(args.semicont)
    rules = parse_rules(args.rule)
    if args.method in FULLY_SYNTHETIC and (semicont or rules or args.weights):
        raise InputError(f"The '--weights', '--semicont' and '--rule' options are not available for method {args.method!r}.")
    if semicont and getattr(cls, "allows_missing", False):
        raise InputError(
            f"The '--semicont' option is for cart, rubin and dami; method {args.method!r} models "
            "point masses through its copula margins."
        )
    # the release check (synthmi.diagnostics) of the methods with a posterior sampler
    from ..diagnostics import convergence_thresholds

    args.rhat_max, args.ess_min = convergence_thresholds(args.convergence, args.rhat_max, args.ess_min)
    for name in ("accept_diagnostics", "rhat_max", "ess_min"):
        if name in _param_names(cls) and name not in params:
            params[name] = getattr(args, name)
    if args.max_seconds is not None:
        if "max_seconds" not in _param_names(cls):
            raise InputError(f"The '--max-seconds' option is for risk-dami; method {args.method!r} takes no time budget.")
        try:
            params["max_seconds"] = None if args.max_seconds.strip().lower() == "none" else float(args.max_seconds)
        except ValueError:
            raise InputError(f"The '--max-seconds' option takes seconds > 0 or 'none'. Got {args.max_seconds!r} instead.") from None

    _parallel_chains(args.method, cls, params, os.cpu_count())
    _check_holdout_share(args)
    # the output location first: a bad --out must cost nothing (no reading, no fitting)
    out = check_output_dir(args.out, "--out", args.overwrite, owned=["copy_*.csv", "metadata.json"])
    old = sorted(out.glob("copy_*.csv")) if out.is_dir() else []
    if getattr(args, "save_model", None) is not None:
        if args.engine == "dask":
            raise InputError("The '--save-model' option is for --engine pandas (a partition-wise model is not saved).")
        _check_new_dir(args.save_model, "--save-model", "a saved model")
    _check_copies_combinable(args, cls, params)

    spec, qi = spec_and_quasi_identifiers(args)
    if spec is not None and "models" in _param_names(cls) and "models" not in params:
        # the spec's "models" are used: judged as tune --spec judges them, naming the file (not --models)
        from ..models.conditional import check_spec_models

        check_spec_models(spec, args.spec, cls.__name__)
    if args.method == "dami" and not params.get("masks") and not (spec is not None and spec.masks):
        # (a spec's masks, e.g. written by 'synthmi tune', are used when --mask is not given)
        print("synthmi synthesize: warning: --method dami without --mask gives the same copies as --method rubin; "
              "add --mask COLUMN:SPEC (see --help) or use --method rubin.", file=sys.stderr, flush=True)
    if (args.method == "risk-dami" and not params.get("masks") and not (spec is not None and spec.masks)
            and not args.allow_unmodified):
        # Without masks the copula only imputes missing values: on complete data the copies are the
        # input. No default masks are documented (the seeds tune them per data set), so refuse
        # here, before the fit, rather than after it at the release guard.
        raise InputError(
            "The '--mask' option is required for method 'risk-dami': without masks it imputes missing values "
            "and synthesizes nothing, so the copies would hold the original quasi-identifiers. Add masks per "
            "risk group, e.g. --mask age@low:K=3,sigma=2 --mask age@medium:K=2,sigma=4 --mask age@high:K=1,sigma=8 "
            "(see --help), or add --allow-unmodified for a multiple-imputation release of the original."
        )
    if args.scheduler and args.engine != "dask":
        raise InputError("The '--scheduler' option is for --engine dask.")
    if args.engine == "dask":
        return _run_dask(args, cls, params, qi, out, t0)
    source = str(args.data)
    na_values = na_values_of(args, spec)
    # Under add/remove-one DP the number of records is itself private: a DP
    # release must not print or record it (DPSyn keeps only a noisy estimate).
    dp_release = args.method in FULLY_SYNTHETIC
    # A DP release reads the file without scanning its values (no row numbers, no
    # categories from the values seen): it conforms it to the declared domain (issue 25).
    df = load_dataset(source, sep=sep_of(args), option="--data", na_values=na_values, private=dp_release,
                      encoding=args.encoding)
    _log(args, f"read {source}: {df.shape[1]} columns" if dp_release else f"read {source}: {len(df)} rows, {df.shape[1]} columns")
    if spec is not None:
        # (DP: the columns only; the declared domain checks the values, naming the column only)
        spec.check_data(df, "--data", dtypes=not dp_release)
        keep = spec.keep
        keep_from = "option" if args.keep is not None else "spec"
    elif args.keep is not None:
        keep = split_list(args.keep)
        keep_from = "option"
    elif default_keep(source) is not None:
        keep = [c for c in default_keep(source) if c not in qi]
        keep_from = "default"
    else:
        keep = [c for c in df.columns if c not in qi]
        keep_from = "default"
    if args.weights is not None:
        if args.weights not in df.columns:
            raise InputError(f"The '--weights' option names '{args.weights}', which is not a column of the data.")
        if args.weights in qi:
            raise InputError(f"The '--weights' column '{args.weights}' is also in --qi; a weight is released unchanged.")
        if args.weights not in keep:
            keep = keep + [args.weights]  # released unchanged (not a predictor)
    unknown = [c for c in qi + keep if c not in df.columns]
    if unknown:
        opt = "--qi" if any(c in qi for c in unknown) else "--keep"
        raise InputError(f"The '{opt}' option names columns not in the data: {unknown}. Available columns: {list(df.columns)}.")
    both = [c for c in keep if c in qi]
    if both:
        raise ColumnError(f"Columns {both} are in both --qi and --keep; a column is either synthesized or released unchanged.")
    if args.mask:
        params[MASK_PARAMETER[args.method]] = build_masks(args.mask, RISK_GROUPS.get(args.method, ()),
                                                          columns=list(df.columns), quasi_identifiers=qi)
    # Only the named columns are released: the rest are dropped before fitting.
    data = df[[c for c in df.columns if c in qi or c in keep]]
    if na_values is None and not dp_release:
        warn_markers("synthesize", data)
    elif dp_release:
        # A DP release does not scan the values for markers (whether some record holds
        # one is private): it says, always, which cells it reads as missing.
        print("synthmi synthesize: missing values: "
              + (f"cells {', '.join(repr(v) for v in na_values)} and empty cells are read as missing"
                 if na_values else "only empty cells (and NA / NaN) are read as missing; markers such as '?' or "
                 "'.' are values (declare them with --na-values)") + ".", file=sys.stderr, flush=True)
    categorical = split_list(args.categorical)
    kinds = {}
    if categorical:
        if args.method in FULLY_SYNTHETIC:
            raise InputError(f"The '--categorical' option is not for method {args.method!r}: a DP release takes "
                             "its kinds from the declared public domain (--domain, kind \"categorical\").")
        outside = [c for c in categorical if c in df.columns and c not in data.columns]
        if outside:
            raise InputError(f"The '--categorical' option names columns that are not released (not in --qi or "
                             f"--keep): {outside}.")
        kinds = categorical_kinds(data, categorical)
        if spec is not None:
            spec = _with_kinds(spec, data, kinds)
    if args.method not in FULLY_SYNTHETIC and args.method != "cart":
        # cart draws observed values, so codes stay codes; the parametric models would fit
        # a normal model to them: say so once (a spec column the user declared is left alone)
        modelled = [c for c in data.columns if c != args.weights and c not in kinds
                    and not (spec is not None and c in spec and (spec[c].is_categorical or spec[c].declared))]
        warn_coded("synthesize", coded_columns(data, modelled),
                   "in the --spec" if spec is not None else "in a spec ('synthmi spec')")
    if args.method not in FULLY_SYNTHETIC:
        _check_not_degenerate(data, qi, keep, keep_from, spec, "option" if args.qi or spec is None else "spec")
        ids = identifier_columns(data, [c for c in keep if c != args.weights])
        if ids and not args.allow_identifiers:
            names = ", ".join(f"'{c}'" for c in ids)
            raise InputError(
                f"The '--keep' option releases {names} unchanged, and {'it holds' if len(ids) == 1 else 'they hold'} "
                "a different value in every row, like a record identifier: it would link each synthetic row to "
                "its person. Leave it out of --keep (or set its role to 'excluded' in the --spec), or add "
                "--allow-identifiers if it is public."
            )
        warn_identifiers("synthesize", ids, "Released because --allow-identifiers was given.")

    if dp_release:
        # The privacy noise comes from OS entropy unless the user gives --seed; the
        # seed is then passed to the synthesizer (which warns once that it undoes the
        # privacy) and never printed or recorded.
        seed = None if args.seed is None else int(args.seed)
        if "random_state" in params:
            raise InputError("Give the seed of a DP release with --seed, not --param random_state=....")
        params["random_state"] = seed
        data, domain = _dp_data(args, source, data, spec)
    else:
        seed = int(np.random.SeedSequence().entropy % 2**32) if args.seed is None else int(args.seed)
        if "random_state" in _param_names(cls) and "random_state" not in params:
            # randomness drawn at fit time (e.g. DA-MI's pseudo-variables W) follows --seed too
            params["random_state"] = seed
    holdout_meta, n_input = None, len(data)
    if args.holdout_share is not None:
        # (not a DP release: _check_holdout_share refused those)
        data, holdout_meta = hold_out(data, args.holdout_share, seed)
        _log(args, f"held out {len(holdout_meta['positions'])} of {n_input} rows (share {args.holdout_share:g}, "
                   f"seed {seed}); fitting on {len(data)}")
    if spec is None and not dp_release:
        # The release's spec, built once here from --qi / --keep / --categorical (or read from
        # --spec above): the rules check and the fit take it; nothing below re-resolves roles.
        from ..spec import ReleaseSpec

        spec = ReleaseSpec.from_roles(data, qi, keep, kinds or None)
    if rules and not dp_release:
        # a misspelled column or level is refused before the (possibly long) fit, in the
        # terms of --rule (the synthesizer runs the same check again)
        dropped = [c for c in rules if c in df.columns and c not in data.columns]
        if dropped:
            raise InputError(f"The '--rule' option names '{dropped[0]}', which is not released: only the --qi and "
                             "--keep columns are written (add it to --keep, or leave the rule out).")
        _check_rules_before_fit(data, rules, spec, cls.__name__)
    synth = cls(**params)
    _log(args, f"fitting method {args.method!r} (quasi-identifiers {qi}; {len(keep)} kept columns)")
    if dp_release:
        fit_kwargs: dict[str, Any] = {"domain": domain, "out_of_domain": "other" if args.map_other else "error"}
        if spec is not None:
            fit_kwargs["spec"] = spec
    elif args.bounds or args.levels or args.domain or args.map_other:
        flag = ("--bounds" if args.bounds else "--levels" if args.levels else "--domain" if args.domain
                else "--map-other")
        raise InputError(f"The '{flag}' option is for {', '.join(FULLY_SYNTHETIC)}; method {args.method!r} takes none.")
    else:
        fit_kwargs = {"spec": spec}
        # the per-variable options apply with a --spec too (they were dropped silently before)
        for name, value in (("weights", args.weights), ("semicont", semicont or None), ("rules", rules or None)):
            if value is not None:
                fit_kwargs[name] = value
        if args.weight_as_predictor:
            if args.weights is None:
                raise InputError("The '--weight-as-predictor' option needs '--weights COLUMN'.")
            fit_kwargs["weight_as_predictor"] = True
    if hasattr(synth, "set_progress"):
        synth.set_progress(_progress_callback(args))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        synth.fit(data, **fit_kwargs)
        t_fit = time.perf_counter()
        if dp_release:
            # no timings: they grow with the private record count (issue 25)
            _log(args, f"fitted; drawing {args.m} copies", summary=True)
        else:
            _log(args, f"fitted in {t_fit - t0:.1f} s; drawing {args.m} copies (seed {seed})", summary=True)
        syn = _draw(synth, args, seed)
        _log(args, f"drew {args.m} copies" + ("" if dp_release else f" in {time.perf_counter() - t_fit:.1f} s"),
             summary=True)
    # Warnings (e.g. r_hat > 1.01) are shown even with --quiet, once each, on one line.
    # ("DAMISynthesizer has no masks" is said above in command-line terms)
    show_caught_warnings(caught, "synthesize", args, text=method_terms, skip=("DAMISynthesizer has no masks",))
    if dp_release:
        _report_rare_levels(synth)
        if args.map_other:
            # evaluation maps the original's out-of-domain values to 'other' the same way
            syn.structure["out_of_domain"] = "other"
    source_meta = _source_metadata(args, source, keep, data, syn, na_values, dp_release)
    if holdout_meta is not None:
        source_meta["holdout"] = holdout_meta
    if getattr(args, "save_model", None) is not None:
        # saved before the copies are written: a model that cannot be saved stops the release
        source_meta["saved_model"] = _save_model(synth, Path(args.save_model), source_meta, syn, dp_release)
    for f in old:
        f.unlink()
    # the release writes metadata.json alone (masks as their to_dict(), the source block)
    syn.to_dir(out, source=source_meta)
    if not dp_release:
        restore_kept_text(out, syn.m, source, keep, data, sep_of(args), getattr(args, "encoding", None),
                          rows=None if holdout_meta is None else holdout_meta)
    _log(args, f"wrote {syn.m} copies and metadata.json to {out}"
         + ("" if dp_release else f" in {time.perf_counter() - t0:.1f} s"), summary=True)
    return 0


def _check_holdout_share(args: argparse.Namespace) -> None:
    """``--holdout-share``: a share in (0, 1), for a fit of a method that is not DP, on pandas."""
    share = getattr(args, "holdout_share", None)
    if share is None:
        return
    if not (0.0 < share < 1.0):
        raise InputError(f"The '--holdout-share' option must be a share in (0, 1), e.g. 0.2. Got {share!r} instead.")
    if args.method in FULLY_SYNTHETIC:
        # The held-out positions follow from the seed and the record count, and the count of a DP
        # release is private (add/remove-one DP): recording them would publish it.
        raise InputError(
            f"The '--holdout-share' option is not available for the DP method {args.method!r}: the held-out row "
            "positions depend on the number of records, which a DP release must not publish. Split the file "
            "yourself, synthesize from one part and give the other to 'synthmi disclosure --holdout FILE'.")
    if args.engine == "dask":
        raise InputError("The '--holdout-share' option is for --engine pandas (the default).")


def hold_out(data, share: float, seed: int):
    """(training rows, metadata block) of a seeded holdout of ``share`` of the rows
    (:func:`synthmi.evaluation.membership.holdout_positions`); the block records the held-out
    positions (row positions in the input, no value), the share and n, so that
    :func:`synthmi.commands._common.split_holdout` recovers both parts."""
    from ..evaluation.membership import holdout_positions, split_at

    n = len(data)
    k = int(round(share * n))
    if k < 1 or n - k < 2:
        raise InputError(f"The '--holdout-share' option {share:g} of {n} rows leaves "
                         f"{'no row held out' if k < 1 else 'fewer than 2 rows to fit'}; choose a share that does not.")
    positions = holdout_positions(n, share, seed)
    return (split_at(data, positions)[0],
            {"share": float(share), "n_rows_original": int(n), "positions": [int(i) for i in positions]})


def _draw(synth, args: argparse.Namespace, seed: int | None, saved: Path | None = None):
    """``synth.sample`` with the release checks' errors in command-line terms (a fresh fit and
    a saved model, ``saved``, pass the same diagnostics check and release guard)."""
    from ..diagnostics import DiagnosticsFailed
    from ..models.base import UnmodifiedRelease

    try:
        return synth.sample(args.m, random_state=seed, allow_unmodified=args.allow_unmodified)
    except DiagnosticsFailed as exc:
        cli = exc.for_cli()
        if saved is not None:
            # the override is the fit's (recorded in the model), never a new one at drawing time
            head = str(cli).split(" No copies were released.")[0]
            cli.args = (f"{head}. No copies were drawn from the model in '--model' {saved}, fitted without "
                        "--accept-diagnostics: fit again (without --model) with more draws (--param n_iter=auto or n_iter=... or "
                        "--param draws=...), or with --accept-diagnostics to release unconverged copies, flagged.",)
        raise cli from None
    except UnmodifiedRelease as exc:
        raise UnmodifiedRelease(method_terms(str(exc)).replace(
            "pass allow_unmodified=True (command line: --allow-unmodified)", "add --allow-unmodified")) from None


def _check_new_dir(path: str, option: str, what: str) -> Path:
    """A directory the command creates: refused when it exists (nothing is overwritten or added to)."""
    p = Path(path)
    if p.exists():
        raise InputError(f"The '{option}' directory '{p}' already exists; {what} goes to a new directory (nothing "
                         "is overwritten): name one that does not exist.")
    return check_output_dir(p, option, False)


# Why a saved DP model's copies cost no budget (recorded in their metadata.json).
DP_POST_PROCESSING = (
    "drawn from the saved model's noised measurements, the output of the fitted release's DP mechanisms: "
    "post-processing, so no new privacy budget is spent (epsilon and delta are those of that release); the "
    "model directory is as public as that release, and holds no seed and no record count")


def _save_model(synth, path: Path, source_meta: dict[str, Any], syn, dp_release: bool) -> dict[str, Any]:
    """``--save-model DIR``: the fitted model (:func:`synthmi.models.persist.save`) with the release's
    source block, so that ``--model DIR`` writes the same metadata; returns what metadata.json records.

    The records are kept only when the sampler conditions on them (``sample`` refuses a model
    saved without them); a DP model never keeps them, nor its seed (persist.save)."""
    from ..provenance import file_sha256

    synth.set_progress(None)  # this run's callback: not part of the model (and not picklable)
    # a DP source block holds no row count (_source_metadata): only what the DP release publishes
    synth.cli_release_ = {"source": dict(source_meta), "out_of_domain": (syn.structure or {}).get("out_of_domain")}
    include = not dp_release and (synth._needs_records_to_sample()
                                  or bool(getattr(synth, "model_frame_recoded_", False)))
    synth.save(path, include_records=include)
    if include:
        held = "it holds the original records (the sampler conditions on them): keep it as confidential as the data"
    elif dp_release:
        held = "it holds no original records, no seed and no record count (a DP model)"
    else:
        held = "it holds no original records (drawing from it needs --original FILE for the release guard)"
    print(f"synthmi synthesize: saved the fitted model to {path}; {held}.", file=sys.stderr, flush=True)
    return {"dir": path.name, "manifest_sha256": file_sha256(path / "manifest.json"), "includes_records": include}


# The options that shape a fit: with --model the saved model's settings apply, so they are refused.
_FIT_OPTIONS = ("data", "spec", "qi", "keep", "categorical", "method", "mask", "param", "domain", "map_other",
                "bounds", "levels", "engine", "scheduler", "weights", "weight_as_predictor", "transform", "semicont",
                "models", "rule", "accept_diagnostics", "convergence", "rhat_max", "ess_min", "max_seconds", "allow_identifiers",
                "save_model", "overwrite", "holdout_share")


def _fit_options_given(args: argparse.Namespace) -> list[str]:
    """The fit options given on the command line (values other than the parser's defaults)."""
    sub = argparse.ArgumentParser().add_subparsers()
    register(sub)
    parser = sub.choices["synthesize"]
    return ["--" + d.replace("_", "-") for d in _FIT_OPTIONS if getattr(args, d, None) != parser.get_default(d)]


def _run_saved_model(args: argparse.Namespace, t0: float) -> int:
    """``--model DIR``: draw ``--m`` copies from a saved model, without refitting.

    Fails closed as a fresh ``synthesize``: the model's own convergence check (with the
    override recorded at its fit, never a new one) and the release guard against the original
    (from the saved records, or ``--original`` for a model saved without them); ``--out`` must be
    new. The same seed gives the copies ``Synthesizer.load(DIR).sample(m, random_state=seed)`` gives.
    """
    import numpy as np

    from ..data import load_dataset
    from ..models.base import Synthesizer
    from ..provenance import check_original, file_sha256

    given = _fit_options_given(args)
    if given:
        raise InputError(f"The '{given[0]}' option sets the fit, and --model DIR draws from a saved model without "
                         "refitting (its data, columns, method, masks, parameters and convergence check are the saved "
                         "ones); leave it out, or fit again without --model.")
    if args.seed is not None and args.seed < 0:
        raise InputError(f"The '--seed' option must be >= 0. Got {args.seed} instead.")
    model_dir = Path(args.model)
    if not model_dir.exists():
        raise InputError(f"The '--model' option names '{model_dir}', which does not exist.")
    if not model_dir.is_dir() or not (model_dir / "manifest.json").is_file():
        raise InputError(f"The '--model' option must name a directory written by --save-model (or Synthesizer.save); "
                         f"'{model_dir}' holds no manifest.json.")
    out = _check_new_dir(args.out, "--out", "a release from --model")
    try:
        synth = Synthesizer.load(model_dir)
    except InputError as exc:
        if "SHA-256" in str(exc):
            raise InputError(f"The '--model' directory '{model_dir}' was changed since it was saved: a file does not "
                             "match the SHA-256 digest in its manifest.json (tampered or damaged); save the model "
                             "again.") from None
        raise InputError(f"The '--model' option: {exc}") from None
    except Exception as exc:  # unreadable manifest or pickle: not a directory this tool wrote
        raise InputError(f"The '--model' option must name a directory written by --save-model (or Synthesizer.save); "
                         f"'{model_dir}' could not be read as one ({type(exc).__name__}).") from None
    dp = bool(synth.differentially_private)
    method = synth.method
    args.method = method
    _check_copies_combinable(args, type(synth), synth.get_params(deep=False))
    saved = dict(getattr(synth, "cli_release_", None) or {})
    source = dict(saved.get("source") or {})
    source.pop("saved_model", None)
    records_left_out = bool(getattr(synth, "_records_left_out", False))
    columns = list((getattr(synth, "fingerprint_", None) or {}).get("columns") or synth.columns_)
    original = None
    unread = [o for o, v in (("--sep", args.sep != ","), ("--na-values", args.na_values is not None),
                             ("--encoding", args.encoding is not None)) if v]
    if unread and args.original is None:
        raise InputError(f"The '{unread[0]}' option says how to read a file, and with --model only --original "
                         "is read; give it with --original FILE, or leave it out.")
    if args.original is not None:
        if dp:
            raise InputError("The '--original' option is not read with a differentially private --model: its copies "
                             "are drawn from the saved noised measurements alone.")
        encoding = args.encoding or source.get("encoding")
        df = load_dataset(args.original, sep=sep_of(args), option="--original",
                          na_values=na_values_of(args, None, source.get("na_values")), encoding=encoding)
        missing = [c for c in columns if c not in df.columns]
        if missing:
            raise InputError(f"The '--original' file lacks the columns {missing}: the model in '--model' was fitted on "
                             f"other columns ({columns}).")
        if source.get("holdout"):
            # fitted with --holdout-share: the model's data are the training rows of the file
            from ._common import split_holdout

            df = split_holdout(df, source["holdout"])[0]
        check_original(df, synth.fingerprint_, name="--original")
        original = df[list(synth.columns_)]
        if records_left_out:
            # the release guard compares the copies with the original's quasi-identifiers, in the fit's dtypes
            frame = original.copy()
            for c in frame.columns:
                try:
                    frame[c] = frame[c].astype(synth.dtypes_[c])
                except (TypeError, ValueError, KeyError):
                    pass
            synth.released_ = frame
        source["data"] = input_label(args.original)
    elif records_left_out and not dp:
        raise InputError(f"The '--original' option is required with --model '{model_dir}': the saved model holds no "
                         "original records, and the release guard compares the copies with them (--original FILE, "
                         "the data the model was fitted on).")
    if dp:
        seed = None if args.seed is None else int(args.seed)
    else:
        seed = int(np.random.SeedSequence().entropy % 2**32) if args.seed is None else int(args.seed)
    synth.set_progress(_progress_callback(args))
    _log(args, f"loaded the {method!r} model saved in {model_dir}; drawing {args.m} copies without refitting"
         + ("" if dp else f" (seed {seed})"), summary=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        syn = _draw(synth, args, seed, saved=model_dir)
    show_caught_warnings(caught, "synthesize", args, text=method_terms, skip=("DAMISynthesizer has no masks",))
    if dp:
        _report_rare_levels(synth)
    if saved.get("out_of_domain"):
        syn.structure["out_of_domain"] = saved["out_of_domain"]
    if not source:  # saved with the Python API: no source block of a release
        source = {"data": None, "keep": list(getattr(synth.spec_, "keep", []) or []), "columns": list(synth.columns_)}
    if (syn.structure or {}).get("unmodified", {}).get("allowed"):
        source["allow_unmodified"] = True
    source["model"] = {"dir": model_dir.name, "manifest_sha256": file_sha256(model_dir / "manifest.json"),
                       "refit": False, "includes_records": not records_left_out and not dp}
    if dp:
        source["model"]["privacy"] = DP_POST_PROCESSING
    # the kept columns' input text can be restored only from the input file (--original)
    encoding = args.encoding or source.get("encoding")
    recode = original is not None and copies_recoded(args.original, encoding)
    source.pop("copies_encoding", None)
    if recode:
        source["copies_encoding"] = encoding
    syn.to_dir(out, source=source)
    if original is not None:
        restore_kept_text(out, syn.m, args.original, [c for c in source.get("keep", []) if c in original.columns],
                          original, sep_of(args), encoding, rows=source.get("holdout"))
    _log(args, f"wrote {syn.m} copies and metadata.json to {out} (no refit)"
         + ("" if dp else f" in {time.perf_counter() - t0:.1f} s"), summary=True)
    return 0


def _source_metadata(args: argparse.Namespace, source: str, keep: list[str], data, syn, na_values,
                     dp_release: bool) -> dict[str, Any]:
    """What metadata.json records under ``source``: how the evaluation verbs read the original
    back (file base name, kept columns, encoding, missing-value markers) and, for a DP release,
    the declared domain instead of the record count."""
    encoding = getattr(args, "encoding", None)
    # the file's base name only: metadata.json is shared, the local path is not
    meta: dict[str, Any] = {"data": input_label(source), "keep": keep, "columns": list(data.columns)}
    if not dp_release and copies_recoded(source, encoding):
        meta["copies_encoding"] = encoding  # the copies' text, as the input's (restore_kept_text)
    if (syn.structure or {}).get("unmodified", {}).get("allowed"):
        meta["allow_unmodified"] = True
    if args.encoding:
        meta["encoding"] = args.encoding  # the evaluation verbs' default --encoding
    if na_values:
        # the evaluation verbs read the original with the same markers (their default)
        meta["na_values"] = na_values
    if dp_release:
        meta["domain"] = args.domain or ("bundled" if source.lower() in BUNDLED_DOMAINS else None)
    else:
        meta["n_rows"] = int(len(data))
    return meta


def _read_parquet(dd, source: str):
    """``dd.read_parquet`` with a file that is not Parquet refused in the terms of --data: its
    base name and extension are named, never the reader's text (which may quote the file)."""
    try:
        return dd.read_parquet(source)
    except Exception:  # pyarrow's ArrowInvalid, OSError or dask's ValueError around them
        path = Path(source)
        what = ("a directory holding no readable Parquet files" if path.is_dir() else
                f"a '{path.suffix}' file" if path.suffix else "a file without an extension")
        hint = (" Read a CSV file with --engine pandas (the default), or convert it to Parquet first "
                "(pandas: read_csv(...).to_parquet(...))." if path.suffix.lower() in (".csv", ".tsv", ".txt") else "")
        raise InputError(f"The '--data' option of --engine dask takes a Parquet file or a directory of Parquet "
                         f"files. Got '{input_label(source)}', {what} that is not Parquet."
                         + hint) from None


def _run_dask(args: argparse.Namespace, cls: type, params: dict, qi: list[str], out: Path, t0: float) -> int:
    """``--engine dask``: Parquet in, Parquet copies out, partition by partition (synthmi.engine)."""
    import numpy as np

    import dask.dataframe as dd

    if args.method not in ("rubin", "dami"):
        raise InputError(f"The '--engine dask' option runs the methods rubin and dami; {args.method!r} has no Dask path.")
    if args.bounds or args.levels or args.domain or args.map_other:
        raise InputError("The '--bounds', '--levels', '--domain' and '--map-other' options are for DP methods, not "
                         "--engine dask.")
    given = [opt for opt, v in (("--weights", args.weights), ("--weight-as-predictor", args.weight_as_predictor),
                                ("--semicont", args.semicont), ("--rule", args.rule)) if v]
    if given:
        # the partition-wise fit models complete data with main-effects models; dropping these
        # silently released copies without the weight column and without the rules
        raise InputError(f"The '{given[0]}' option is not available with --engine dask (the partition-wise fit has no "
                         "survey weights, point masses or structural rules); synthesize in memory (--engine pandas).")
    if args.spec:
        # the partition-wise fit reads no spec: its roles, kinds, models and masks were dropped
        # silently, and its excluded columns released as kept (a nominal code modelled as normal)
        raise InputError("The '--spec' option is not available with --engine dask (the partition-wise fit does not "
                         "read a spec's roles, kinds, models or masks); give --qi, --keep and --mask, or synthesize "
                         "in memory (--engine pandas).")
    if out.exists() and any(out.iterdir()):
        raise InputError(f"The '--out' directory '{out}' is not empty; --engine dask writes into a new or empty directory.")
    source = str(args.data)
    if not Path(source).exists():
        raise InputError(f"The '--data' option of --engine dask must be a Parquet file or directory. '{source}' does not exist.")
    client = None
    if args.scheduler:
        from distributed import Client

        client = Client(args.scheduler)
        _log(args, f"connected to the Dask scheduler at {args.scheduler}")
    try:
        ddf = _read_parquet(dd, source)
        # text columns and categoricals of unknown levels: one pass to list their levels
        meta = ddf._meta
        todo = [c for c in ddf.columns if meta[c].dtype == object or pd_is_string(meta[c].dtype)
                or (str(meta[c].dtype) == "category" and not ddf[c].cat.known)]
        if todo:
            ddf = ddf.categorize(columns=todo)
        _log(args, f"read {source}: {ddf.npartitions} partitions, {len(ddf.columns)} columns")
        keep = split_list(args.keep) if args.keep is not None else [c for c in ddf.columns if c not in qi]
        unknown = [c for c in qi + keep if c not in ddf.columns]
        if unknown:
            opt = "--qi" if any(c in qi for c in unknown) else "--keep"
            raise InputError(f"The '{opt}' option names columns not in the data: {unknown}. Available columns: {list(ddf.columns)}.")
        if args.mask:
            params[MASK_PARAMETER[args.method]] = build_masks(args.mask, RISK_GROUPS.get(args.method, ()),
                                                              columns=list(ddf.columns), quasi_identifiers=qi)
        data = ddf[[c for c in ddf.columns if c in qi or c in keep]]
        seed = int(np.random.SeedSequence().entropy % 2**32) if args.seed is None else int(args.seed)
        if "random_state" in _param_names(cls) and "random_state" not in params:
            params["random_state"] = seed
        synth = cls(**params)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            synth.fit(data, quasi_identifiers=qi, keep=keep)
            _log(args, f"fitted in {time.perf_counter() - t0:.1f} s; drawing {args.m} copies (seed {seed})", summary=True)
            from ..diagnostics import DiagnosticsFailed

            try:
                syn = synth.sample(args.m, random_state=seed)
            except DiagnosticsFailed as exc:
                raise exc.for_cli() from None
        show_caught_warnings(caught, "synthesize", args)
        if out.exists():
            out.rmdir()  # empty (checked above); to_parquet creates it
        meta_out = syn.to_parquet(str(out), source={
            "data": input_label(source), "keep": keep, "columns": list(data.columns), "engine": "dask",
            "scheduler": args.scheduler or "local threads"})
    finally:
        if client is not None:
            client.close()
    _log(args, f"drew and wrote {args.m} copies ({meta_out['n_partitions']} partitions each) to {out} in "
         f"{time.perf_counter() - t0:.1f} s", summary=True)
    return 0


def pd_is_string(dtype) -> bool:
    import pandas as pd

    return pd.api.types.is_string_dtype(dtype) and not isinstance(dtype, pd.CategoricalDtype)
