"""``synthmi dp``: differentially private Beta-posterior release, exact audit, accounting."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._common import (EXAMPLES_FMT, add_common_flags, add_overwrite_flag, add_sep_flag, check_output_file, sep_of,
                      show_caught_warnings, step_line)
from .._json import dumps as json_dumps
from ..errors import ColumnError, InputError

EXAMPLES = """examples:
  synthmi dp bayes --n 100 --k 50 --eps 1 --mechanism global
  synthmi dp bayes --data adult --column sex --positive Male --eps 0.5 --mechanism global --seed 3
  synthmi dp bayes --data survey.csv --column smoker --domain survey.domain.json --eps 1
  synthmi dp kmeans --data nhanes --columns age,bmi --k 3 --eps 1 --out centres.json
  synthmi dp audit --n 1000 --eps 1 --mechanism smooth --delta 1e-5 --out audit.json
  synthmi dp audit --n 200 --eps 0.1 --mechanism local --prior 0.1,0.1
  synthmi dp audit --empirical dpsyn --eps 1 --delta 1e-6 --runs 2000 --confidence 0.95 --out audit.json
  synthmi dp audit --empirical kmeans --eps 1 --runs 2000
  synthmi dp sigma --eps 1 --delta 1e-5 --marginals 91
  synthmi dp spent --sigma 1 --count 1 --delta 1e-5

mechanisms: global (eps-DP), smooth ((eps, delta)-DP), laplace, laplace_rounded,
posterior_sample (eps-DP baselines), local (NOT private; 'bayes' refuses it, 'audit'
studies it). Neighbours: data sets of the same size differing in one record
(substitution), so n is fixed and public; with --data it is the row count, the
coding comes from --positive or the column's declared binary domain (--domain; the bundled
data carry theirs), never from the data, and missing values are refused.
'smooth' is certified by the exact audit for n <= 1000 only (it warns above).

audit --empirical: a statistical LOWER bound on epsilon (Jagielski, Ullman & Oprea 2020):
the release runs --runs times with and without a worst-case canary record, a threshold
test on the canary's statistic is chosen on half the runs, and Clopper-Pearson bounds on
the other half give the bound at --confidence. Above the claimed epsilon: the claim is
false. Below it: consistent with the claim, but no proof.

kmeans: DP Lloyd iterations (eps split over 2T Laplace releases) on numeric columns
scaled by their DECLARED bounds (--domain, or the bundled data's own); centres are
printed in the original units.

The noise of every release comes from secret OS randomness; --seed makes a release
reproducible and NOT private against anyone who learns the seed (a warning says so),
and the seed is never written to the output."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "dp",
        help="DP Beta-posterior release, exact privacy audit, accountant",
        description="Differential privacy tools (issue 6); see the epilog.",
        epilog=EXAMPLES,
        formatter_class=EXAMPLES_FMT,
    )
    sub = p.add_subparsers(dest="dp_action", metavar="ACTION")
    sub.required = True

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument("--eps", type=float, required=True, help="epsilon (> 0)")
        q.add_argument("--mechanism", default="global", help="global | smooth | laplace | laplace_rounded | posterior_sample | local")
        q.add_argument("--delta", type=float, default=None, help="delta in (0, 1) (needed by 'smooth')")
        q.add_argument("--prior", default="1,1", help="Beta prior a,b (default 1,1)")
        q.add_argument("--out", default=None, help="write the result as JSON here")
        add_overwrite_flag(q)
        add_common_flags(q)

    b = sub.add_parser("bayes", help="release a private Beta posterior for a binary variable",
                       epilog=EXAMPLES, formatter_class=EXAMPLES_FMT)
    b.add_argument("--n", type=int, default=None,
                   help="number of records (with --k); with --data optional, and if given it must equal the "
                        "data's row count (n is public and fixed: neighbours differ by substituting one record)")
    b.add_argument("--k", type=int, default=None, help="number of ones (with --n)")
    b.add_argument("--data", default=None, help="'adult', 'nhanes' or a CSV path (with --column); "
                                                 "n is its row count, public under substitution neighbours")
    add_sep_flag(b)
    b.add_argument("--column", default=None, help="column to code 0/1 (no missing values allowed)")
    b.add_argument("--positive", default=None,
                   help="the level of --column that counts as 1, every other value 0 (public, never read from "
                        "the data); required for text/categorical columns; numeric columns default to 0/1 with 1, "
                        "bool columns to True")
    b.add_argument("--domain", default=None, metavar="domain.json",
                   help="public domain declaring --column (binary: its second level counts as 1 unless --positive)")
    b.add_argument("--seed", type=int, default=None,
                   help="seed of the noise (default: secret OS randomness; a seed undoes the privacy for anyone who "
                        "learns it and is never recorded)")
    common(b)
    b.set_defaults(func=run_bayes)

    km = sub.add_parser("kmeans", help="differentially private k-means centres of numeric columns",
                        epilog=EXAMPLES, formatter_class=EXAMPLES_FMT)
    km.add_argument("--data", required=True, help="'adult', 'nhanes' or a CSV path")
    km.add_argument("--columns", required=True, help="comma-separated numeric columns")
    km.add_argument("--domain", default=None, metavar="domain.json",
                    help="public domain with the columns' bounds (required for a CSV)")
    km.add_argument("--k", type=int, default=3, help="number of clusters (default 3)")
    km.add_argument("--eps", type=float, required=True, help="epsilon (> 0)")
    km.add_argument("--iters", type=int, default=5, help="Lloyd iterations T (default 5)")
    km.add_argument("--clip", type=float, default=None,
                    help="l1 radius in scaled units (columns on [-1, 1]); default: the number of columns (no clipping)")
    km.add_argument("--seed", type=int, default=None,
                    help="seed of the noise (default: secret OS randomness; never recorded)")
    km.add_argument("--out", default=None, help="write the centres as JSON here")
    add_common_flags(km)
    km.set_defaults(func=run_kmeans)

    a = sub.add_parser("audit", help="exact worst-case privacy loss over all neighbouring data sets, or an "
                                     "empirical lower bound on epsilon (--empirical)",
                       epilog=EXAMPLES, formatter_class=EXAMPLES_FMT)
    a.add_argument("--n", type=int, default=None,
                   help="data set size (public); required by the exact audit; with --empirical the records of the "
                        "made-up audit data set without the canary (default 50)")
    a.add_argument("--empirical", default=None, choices=["dpsyn", "kmeans", "beta"],
                   help="instead of the exact audit, run this release --runs times on two neighbouring data sets "
                        "(with and without a worst-case canary) and report a lower bound on its epsilon "
                        "('beta' audits --mechanism)")
    a.add_argument("--runs", type=int, default=1000,
                   help="with --empirical: runs on each data set (>= 4; half choose the test, half bound epsilon)")
    a.add_argument("--confidence", type=float, default=0.95,
                   help="with --empirical: probability that the bound is below the true epsilon (default 0.95)")
    a.add_argument("--seed", type=int, default=0,
                   help="with --empirical: seed of the audit's runs (made-up public data; default 0)")
    common(a)
    a.set_defaults(func=run_audit)

    s = sub.add_parser("sigma", help="DPSyn Gaussian sigma for t marginals at (eps, delta)")
    s.add_argument("--eps", type=float, required=True)
    s.add_argument("--delta", type=float, required=True)
    s.add_argument("--marginals", type=int, required=True)
    add_common_flags(s)
    s.set_defaults(func=run_sigma)

    t = sub.add_parser("spent", help="total (eps, delta) of k Gaussian releases under RDP / basic composition")
    t.add_argument("--sigma", type=float, required=True)
    t.add_argument("--sensitivity", type=float, default=1.0)
    t.add_argument("--count", type=int, default=1)
    t.add_argument("--delta", type=float, required=True)
    add_common_flags(t)
    t.set_defaults(func=run_spent)


def _prior(text: str) -> tuple[float, float]:
    try:
        a, b = (float(v) for v in text.split(","))
    except ValueError:
        raise InputError(f"The '--prior' option takes two numbers 'a,b'. Got {text!r} instead.") from None
    return a, b


def _write(out: str | None, payload: dict, args: argparse.Namespace) -> None:
    if out:
        path = Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json_dumps(payload, indent=2, sort_keys=True))
        step_line(args, f"dp {args.dp_action}", f"wrote {path}", summary=True)


def _declared_domain(data: str, domain_path: str | None):
    """The bundled data's own public domain (recoded as loaded) extended by ``--domain``."""
    from ..data import load_domain
    from ..domain import PublicDomain
    from ._common import is_bundled

    domain = load_domain(data.lower(), recode=True) if is_bundled(data) else PublicDomain()
    if domain_path:
        domain = domain.merged(PublicDomain.from_json(domain_path))
    return domain


def _binary_column(data: str, column: str, positive: str | None, n_declared: int | None, domain_path: str | None = None,
                   sep: str = ",", na_values: list[str] | None = None, encoding: str | None = None):
    """0/1 indicator of ``column == positive`` and the public n.

    The coding comes only from the command line or the column's declared public
    domain, never from the observed values (a level's presence or the set of levels
    in a CSV would be read from the private data without budget). A declared column
    is checked against its domain (an error names the column only). Missing values are
    refused: dropping them would make n a data-dependent count. n is the frame
    length, public under the substitution neighbouring relation the mechanisms assume
    (neighbours have the same size).
    """
    import numpy as np

    from ..domain import level_key
    from ._common import load_original

    df, _ = load_original(data, sep, option="--data", na_values=na_values, private=True, encoding=encoding)
    if column not in df.columns:
        raise InputError(f"The '--column' option names a column not in the data: {column!r}.")
    s = df[column]
    if n_declared is not None and n_declared != len(s):
        raise InputError(
            f"The '--n' option must equal the number of rows of '--data' (n is public and fixed under "
            f"substitution neighbours). Got {n_declared} instead."
        )
    if s.isna().any():
        # No count in the message: how many are missing is a data-dependent figure.
        raise ColumnError(
            f"Column '{column}' has missing values. The release needs a public record count n; drop or "
            f"impute them beforehand by a rule that does not depend on this column's values."
        )
    domain = _declared_domain(data, domain_path)
    if column in domain:
        cd = domain[column]
        conformed = cd.conform(s)  # values outside the declared domain: error naming the column only
        if cd.is_discrete:
            if positive is None:
                if cd.kind != "binary":
                    raise InputError(
                        f"The '--positive' option is required for the {cd.kind} column '{column}': name the declared "
                        f"level that counts as 1."
                    )
                level = cd.levels[1]
            else:
                keys = [level_key(v) for v in cd.levels]
                if level_key(positive) not in keys:
                    raise InputError(
                        f"The '--positive' option must be one of the declared levels of column '{column}': "
                        f"{list(cd.levels)}. Got {positive!r} instead."
                    )
                level = cd.levels[keys.index(level_key(positive))]
            return (conformed.astype(object).to_numpy() == level).astype(np.int64), len(s)
        s = conformed
    # An undeclared column: the coding comes from --positive, or the public default 0/1.
    # Values are matched by their text form (1, 1.0, "1" and True alike), never by the
    # dtype a CSV reader guessed from the private values (a '?' turns numbers into text),
    # so the outcome and every message are the same whatever that dtype (issue 25).
    def key(v) -> str:
        k = level_key(v)
        return {"true": "1", "false": "0"}.get(k.lower(), k)

    keys = np.array([key(v) for v in s.astype(object).to_numpy()], dtype=object)
    if positive is None:
        if not np.isin(keys, ["0", "1"]).all():
            raise InputError(
                f"The '--positive' option is required for column '{column}' unless it is coded 0/1: name the level "
                f"that counts as 1 (every other value counts as 0), or declare the column binary in --domain. It is "
                f"not inferred from the data."
            )
        return (keys == "1").astype(np.int64), len(s)
    return (keys == key(positive)).astype(np.int64), len(s)


def run_bayes(args: argparse.Namespace) -> int:
    import numpy as np

    from ..privacy.dp_bayes import PrivateBetaPosterior, global_sensitivity

    check_output_file(args.out, "--out", args.overwrite)

    if args.mechanism == "local":
        raise InputError("mechanism 'local' is NOT differentially private; use 'synthmi dp audit' to study it.")
    if args.data is not None:
        if args.column is None:
            raise InputError("The '--data' option needs '--column'.")
        if args.k is not None:
            raise InputError("The '--k' option cannot be combined with '--data' (k is counted privately).")
        from ._common import na_values_of

        x, _ = _binary_column(args.data, args.column, args.positive, args.n, args.domain, sep_of(args),
                              na_values_of(args), getattr(args, "encoding", None))
    else:
        if args.n is None or args.k is None:
            raise InputError("Give either '--n' and '--k' or '--data' and '--column'.")
        if args.n < 1:
            raise InputError(f"The '--n' option must be >= 1. Got {args.n} instead.")
        if not 0 <= args.k <= args.n:
            raise InputError(f"The '--k' option must be in [0, n = {args.n}]. Got {args.k} instead.")
        x = np.r_[np.ones(args.k, dtype=np.int64), np.zeros(args.n - args.k, dtype=np.int64)]
    import warnings

    from ..privacy.noise_source import noise_provenance

    if args.data is None and args.domain is not None:
        raise InputError("The '--domain' option goes with '--data'.")
    prior = _prior(args.prior)
    mech = PrivateBetaPosterior(epsilon=args.eps, mechanism=args.mechanism, delta=args.delta, prior=prior).fit(x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = mech.sample(random_state=args.seed)
    show_caught_warnings(caught, "dp", args)
    print(res.summary())
    payload = res.to_frame().iloc[0].to_dict()
    # The noise's seed is never written: only whether the user gave one.
    payload.update({
        "prior": list(prior), "global_sensitivity": global_sensitivity(res.n, prior),
        "neighbours": "substitution of one record (n is public)", "noise": noise_provenance(args.seed is not None),
    })
    if args.data is None:
        # n and k came from the command line (not confidential): the exact accuracy is a public figure.
        eh = mech.expected_hellinger(args.n, args.k)
        payload["expected_hellinger"] = eh
        print(f"  exact expected Hellinger distance to the non-private posterior: {eh:.4f}")
    _write(args.out, payload, args)
    return 0


def run_kmeans(args: argparse.Namespace) -> int:
    import warnings

    import numpy as np

    from ..privacy.kmeans import DPKMeans
    from ._common import load_original, split_list

    cols = split_list(args.columns)
    if not cols:
        raise InputError("The '--columns' option must name at least one column.")
    df, _ = load_original(args.data, option="--data", private=True)
    unknown = [c for c in cols if c not in df.columns]
    if unknown:
        raise InputError(f"The '--columns' option names columns not in the data: {unknown}.")
    domain = _declared_domain(args.data, args.domain)
    domain.require(cols, flag="--domain")
    clip = float(len(cols)) if args.clip is None else args.clip
    km = DPKMeans(n_clusters=args.k, epsilon=args.eps, n_iter=args.iters, clip_norm=clip, random_state=args.seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        km.fit(df[cols], domain=domain.select(cols))
    show_caught_warnings(caught, "dp", args)
    centres = np.asarray(km.cluster_centers_)
    print(f"DP k-means (epsilon={args.eps:g}, {args.iters} iterations, k={args.k}) on {', '.join(cols)}")
    for j, row in enumerate(centres):
        print(f"  centre {j + 1}: " + ", ".join(f"{c}={v:.4g}" for c, v in zip(cols, row))
              + f"  (noisy count {int(km.noisy_counts_[j])})")
    payload = {
        "columns": cols,
        "centres": [[float(v) for v in row] for row in centres],
        "noisy_counts": [int(v) for v in km.noisy_counts_],
        "k": args.k, "iterations": args.iters, "clip_norm_scaled": clip,
        "privacy": km.privacy_statement(),
        "domain": domain.select(cols).to_dict(),
    }
    _write(args.out, payload, args)
    return 0


def _run_empirical_audit(args: argparse.Namespace) -> int:
    import math

    from ..privacy.empirical_audit import empirical_privacy_audit

    if not (math.isfinite(args.eps) and args.eps > 0):
        raise InputError(f"The '--eps' option must be a finite number > 0. Got {args.eps} instead.")
    pure = args.empirical == "kmeans" or (args.empirical == "beta" and args.mechanism != "smooth")
    if pure:
        if args.delta not in (None, 0.0):
            raise InputError(f"The '--delta' option must be omitted (or 0) for the pure-DP release "
                             f"'{args.empirical}'. Got {args.delta} instead.")
    elif args.delta is None:
        what = "DPSyn" if args.empirical == "dpsyn" else "the 'smooth' Beta posterior"
        raise InputError(f"The '--delta' option is required by '--empirical {args.empirical}': {what} is an "
                         "(epsilon, delta)-DP release, so the audit needs the delta claimed for it, e.g. --delta 1e-6.")
    elif not 0.0 < args.delta < 1.0:
        raise InputError(f"The '--delta' option must be in the open interval (0, 1) for '{args.empirical}'. "
                         f"Got {args.delta} instead.")
    if args.runs < 4:
        raise InputError(f"The '--runs' option must be an integer >= 4. Got {args.runs} instead.")
    if not 0.0 < args.confidence < 1.0:
        raise InputError(f"The '--confidence' option must be in the open interval (0, 1). Got {args.confidence} "
                         f"instead.")
    if args.seed < 0:
        raise InputError(f"The '--seed' option must be an integer >= 0. Got {args.seed} instead.")
    n = 50 if args.n is None else args.n
    if n < 4:
        raise InputError(f"The '--n' option must be >= 4 for the empirical audit. Got {n} instead.")
    if args.empirical == "beta" and args.mechanism == "local":
        raise InputError("mechanism 'local' is NOT differentially private: it has no claim to audit.")
    res = empirical_privacy_audit(args.empirical, args.eps, None if pure else args.delta, runs=args.runs,
                          confidence=args.confidence, seed=args.seed, n=n, beta_mechanism=args.mechanism,
                          prior=_prior(args.prior))
    print(res.summary())
    _write(args.out, res.to_dict(), args)
    return 0


def run_audit(args: argparse.Namespace) -> int:
    from ..privacy.audit import audit_privacy_loss
    from ..privacy.dp_bayes import PrivateBetaPosterior

    check_output_file(args.out, "--out", args.overwrite)
    if args.empirical is not None:
        return _run_empirical_audit(args)
    if args.n is None:
        raise InputError("The '--n' option is required by the exact audit (or give '--empirical').")

    mech = PrivateBetaPosterior(
        epsilon=args.eps, mechanism=args.mechanism, delta=args.delta, prior=_prior(args.prior),
        allow_non_private=(args.mechanism == "local"),
    )
    res = audit_privacy_loss(mech, args.n)
    print(res.summary())
    _write(args.out, {k: (v.item() if hasattr(v, "item") else v) for k, v in res.to_frame().iloc[0].to_dict().items()}, args)
    return 0


def run_sigma(args: argparse.Namespace) -> int:
    from ..privacy.accountant import dpsyn_sigma

    print(f"{dpsyn_sigma(args.eps, args.delta, args.marginals):.6f}")
    return 0


def run_spent(args: argparse.Namespace) -> int:
    from ..privacy.accountant import PrivacyAccountant

    acc = PrivacyAccountant().add_gaussian(args.sigma, args.sensitivity, args.count)
    print(acc.summary(delta=args.delta))
    return 0
