"""``synthmi disclosure``: record-level re-identification risk of released copies."""
from __future__ import annotations

import argparse
import sys
import time

from ._common import (
    COMMA_NAMES_HELP,
    EXAMPLES_FMT,
    add_attack_flags,
    add_ngroups_options,
    check_ngroups_options,
    add_summary_outputs,
    attack_options,
    check_target_option,
    check_summary_outputs,
    add_common_flags,
    add_release_arguments,
    input_label,
    load_release,
    load_spec_option,
    parse_assignments,
    split_list,
    step_line,
    write_summary_and_records,
)
from ..errors import InputError

EXAMPLES = """examples:
  synthmi disclosure --original adult --synthetic syn/ --qi age,sex,race,education --tol age=2 --out risk.json
  synthmi disclosure --original adult --synthetic syn/ --qi age,sex,race,education --tol age=5% --by race --out risk.json
  synthmi disclosure --original adult --synthetic syn/ --qi age,sex,race,education --target income --out risk.json

matching: a released record matches a target when every categorical QI is equal
and every continuous QI is within --tol (absolute, or a percentage of the target's
value); continuous QIs without --tol match exactly. A missing value matches only a
missing value. The copies must be row-aligned with the original (partially synthetic).

membership inference (with a holdout: --holdout FILE, or the one 'synthesize --holdout-share 0.2'
recorded): can an intruder tell a training record from a record of the population that was not used?
AUC (0.5 = guessing) and TPR at FPR 0.01 / 0.1 of a distance attack and of DOMIAS, with 95% CIs,
written under "membership_inference" in the JSON, with the distance to closest record under "dcr".
The holdout is also the control set of anonymeter's three risks (Giomi et al. 2023), written under
"anonymeter": singling out (univariate and multivariate predicates), linkability (two auxiliary data
sets: by default the QIs split in two halves, or --link-aux A,B:C,D) and inference of each --secret
(default: --target, else the spec's kept and outcome columns, else the non-QI columns) from the QIs;
each a risk in [0, 1] (0 = no more than for people not in the data), with 95% CI and MC error over copies.

--target: also attribute disclosure of that column given the QIs (synthpop's DiSCO,
DCAP, TCAP, repU, ... from exact keys, and the matching attribute risk with --tol);
exact keys never meet a QI synthesized on a continuous scale (a warning says so):
--ngroups-keys N cuts each continuous QI into N groups for the key tables (synthpop's);
written under "attribute_disclosure" in the JSON and as attr_* columns in the CSV.
output: --out (.json: summaries overall, per copy and per --by group of 5 or more records,
settings; .csv: the summary table) and a per-record CSV at --records (default: the --out name with .records.csv, so risk.json ->
risk.records.csv): the original row label and
risk I_i with match counts, never quasi-identifier values."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "disclosure",
        help="record-level re-identification risk by matching",
        description=(
            "Re-identification risk of partially synthetic copies: the intruder knows every target's "
            "quasi-identifiers and picks one matching released record at random; I_i is the chance "
            "of picking the true record, averaged over the copies (Reiter and Mitra 2009)."
        ),
        epilog=EXAMPLES,
        formatter_class=EXAMPLES_FMT,
    )
    add_release_arguments(p)
    p.add_argument("--qi", default=None, action="append",
                   help=f"comma-separated quasi-identifiers the intruder knows (repeatable; {COMMA_NAMES_HELP}; "
                   "default: the spec's)")
    p.add_argument("--tol", action="append", metavar="COLUMN=VALUE", help="tolerance, e.g. age=2 or age=5%% (repeatable)")
    p.add_argument("--by", default=None, help="a column of the original to report the risk by")
    p.add_argument("--threshold", type=float, default=0.5, help="report the share of records with I_i above this (default 0.5)")
    p.add_argument("--target", default=None, help="also measure attribute disclosure of this column (DiSCO etc.)")
    p.add_argument("--target-tol", type=float, default=None, help="a continuous target's value counts as learnt within this distance")
    add_ngroups_options(p)
    p.add_argument("--holdout", default=None, metavar="FILE",
                   help="real records of the same population NOT used for the synthesis (CSV or Parquet, read like "
                        "--original): adds membership inference (distance attack and DOMIAS) and the distance to "
                        "closest record against them; default: the holdout 'synthesize --holdout-share' recorded "
                        "with the copies, if any")
    add_attack_flags(p)
    p.add_argument("--n-attacks", type=int, default=500,
                   help="records (predicates) attacked per copy by each anonymeter attack (default 500, anonymeter's)")
    add_summary_outputs(p, "summaries")
    add_common_flags(p)
    p.set_defaults(func=run)


#: above this share of (target, copy) pairs without any matching released record, exact matching of a
#: continuous QI is named as the likely cause (synthesized continuous values almost never equal the original's)
_NO_MATCH_WARN = 0.95


def _warn_exact_continuous(res) -> None:
    """One warning line when almost no target matches any released record and some continuous QIs are
    matched exactly (no ``--tol``): the identity risk is then near 0 by construction of the matching rule,
    not because the release protects anyone. Names and a share only, never a value."""
    import sys

    tol = res.settings.get("tolerance") or {}
    exact = [c for c in res.settings.get("continuous", [])
             if str(tol.get(c, 0)).strip().rstrip("%") in ("0", "0.0")]
    share = res.figures.get("no_match_share")
    if exact and share is not None and share > _NO_MATCH_WARN:
        names = ", ".join(f"'{c}'" for c in exact)
        print(f"synthmi disclosure: warning: {share:.1%} of the targets match no released record: the continuous "
              f"quasi-identifier{'s' if len(exact) > 1 else ''} {names} {'are' if len(exact) > 1 else 'is'} matched "
              "exactly (no --tol), and values synthesized on a continuous scale almost never equal the original's, "
              "so the identity risk is near 0 by construction. Give the closeness an intruder would use, e.g. "
              f"--tol {exact[0]}=1 (or a share: --tol {exact[0]}=5%).", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from ..evaluation.risk import reidentification_risk

    check_summary_outputs(args)
    original_full, original, syn, recorded_holdout = load_release(args, with_holdout=True)
    holdout, holdout_from = _holdout_of(args, original, recorded_holdout)
    spec = load_spec_option(args, syn)
    from ..spec import resolve_quasi_identifiers

    qi = resolve_quasi_identifiers(split_list(args.qi), spec, option="--qi")
    # every column option is checked before any matching runs (a misspelt --target was
    # refused only after "matched ... targets" had been printed)
    unknown = [c for c in qi if c not in original.columns]
    if unknown:
        raise InputError(f"The '--qi' option names columns not in the release: {unknown}. "
                         f"Available columns: {list(original.columns)}.")
    check_target_option(args.target, original.columns, qi)
    check_ngroups_options(args, keys_need_target=True)
    if args.target:  # the target's kind decides whether it can be grouped: refused before any matching
        from ..evaluation.attribute_disclosure import check_ngroups_target

        check_ngroups_target(args.ngroups_target, original, args.target, spec)
    _attack_options(args, original)  # checked before any matching runs
    by = None
    if args.by:
        if args.by not in original_full.columns:
            raise InputError(f"The '--by' option names a column not in the original: {args.by!r}. "
                             f"Available columns: {list(original_full.columns)}.")
        by = original_full[args.by]
    tol = parse_assignments(args.tol, "tol") or None
    t0 = time.perf_counter()
    step_line(args, "disclosure", f"matching {len(original)} targets against {syn.m} copies")
    res = reidentification_risk(original, syn.copies, qi, tolerance=tol, threshold=args.threshold, by=by, spec=spec)
    step_line(args, "disclosure", f"matched {len(original)} targets against {syn.m} copies in "
              f"{time.perf_counter() - t0:.1f} s", summary=True)
    _warn_exact_continuous(res)

    # base names only: the summary is shared, the local paths are not
    extra = {"synthetic": input_label(args.synthetic.rstrip("/\\")), "original": input_label(args.original)}
    if args.target:
        from ..evaluation.attribute_disclosure import attribute_disclosure

        t1 = time.perf_counter()
        attr = attribute_disclosure(original, syn.copies, qi, args.target, tolerance=tol,
                                    target_tolerance=args.target_tol, threshold=args.threshold, by=by, spec=spec,
                                    ngroups_keys=args.ngroups_keys, ngroups_target=args.ngroups_target)
        for w in attr.settings.get("warnings") or []:
            print(f"synthmi disclosure: warning: {w}", file=sys.stderr, flush=True)
        step_line(args, "disclosure", f"attribute disclosure of '{args.target}' in {time.perf_counter() - t1:.1f} s",
                  summary=True)
    else:
        attr = None
    membership, dcr = {}, None
    if holdout is not None:
        from ..evaluation.dcr import distance_to_closest_record
        from ..evaluation.membership import membership_inference

        t2 = time.perf_counter()
        cols = list(original.columns)
        for attack in ("distance", "domias"):
            # seeded: a review aggregate, the same on every run
            membership[attack] = membership_inference(original, holdout[cols], syn.copies, attack=attack,
                                                      random_state=0)
        dcr = distance_to_closest_record(original, syn.copies, columns=cols, holdout=holdout[cols])
        step_line(args, "disclosure", f"membership inference (distance, DOMIAS) against {holdout_from} in "
                  f"{time.perf_counter() - t2:.1f} s", summary=True)
        attacks, size_note = _anonymeter(args, original, syn.copies, holdout[cols], qi, spec)
    else:
        step_line(args, "disclosure", "no membership inference and no singling-out, linkability or inference "
                  "risk: " + NO_HOLDOUT, summary=True)
        attacks, size_note = {}, None
    res = _Disclosure(res, attr, membership, dcr, holdout_from, attacks, size_note)
    write_summary_and_records(args, "disclosure", res, extra)
    return 0


#: what the output says when there is no holdout (membership inference is not skipped silently)
NO_HOLDOUT = ("membership inference needs a holdout, real records of the population not used for the synthesis: "
              "synthesize with --holdout-share 0.2 (recorded with the copies), or give --holdout FILE")


def _attack_options(args, original):
    """(secrets or None, link_aux pair or None) from --secret / --target / --link-aux, checked."""
    secrets, link_aux = attack_options(args, original.columns)
    if args.n_attacks < 1:
        raise InputError(f"The '--n-attacks' option must be >= 1. Got {args.n_attacks} instead.")
    return secrets, link_aux


def _anonymeter(args, original, copies, control, qi, spec):
    """anonymeter's three risks with the holdout as the control set (checked options first)."""
    from ..evaluation.attack_risks import control_size_note, review_attacks

    secrets, link_aux = _attack_options(args, original)
    t = time.perf_counter()
    # seeded: a review aggregate, the same on every run
    attacks = review_attacks(original, copies, control, quasi_identifiers=qi, secrets=secrets, link_aux=link_aux,
                             spec=spec, n_attacks=args.n_attacks, random_state=0)
    step_line(args, "disclosure", "singling out, linkability, inference (" + ", ".join(attacks) + ") in "
              f"{time.perf_counter() - t:.1f} s", summary=True)
    note = control_size_note(len(original), len(control))
    if note:
        step_line(args, "disclosure", note, summary=True)
    return attacks, note


def _attack_report(r) -> str:
    """A few printed lines of one anonymeter-style result: risk, interval, MC error, the three rates."""
    f, k = r.figures, r.key
    mc = f[f"{k}_mc_error"]
    return (f"{r.label} risk {f[k]:.3f} (95% CI {f[k + '_ci_low']:.3f} to {f[k + '_ci_high']:.3f}"
            + f"; {f['copies']} copies x {f['n_attacks']} attacks)\n"
            # the interval is the pooled risk's; the MC error belongs to the per-copy mean, so it is printed there
            + (f"  per-copy mean {f[k + '_per_copy_mean']:.3f} (between-copy MC error {mc:.3f})\n" if mc == mc else "")
            + f"  success rate on the training records {f[k + '_attack_rate']:.3f}, on the control "
            f"{f[k + '_control_rate']:.3f}, naive baseline {f[k + '_baseline_rate']:.3f}\n  {r.describe}")


def _holdout_of(args, original, recorded):
    """(holdout frame or None, where it came from): ``--holdout`` wins over the recorded one."""
    if args.holdout is None:
        return recorded, "the holdout recorded with the copies" if recorded is not None else None
    from ._common import encoding_of, load_original, na_values_of, recorded_na_values, sep_of

    na = na_values_of(args, None, recorded_na_values(args.synthetic))
    holdout, _ = load_original(args.holdout, sep_of(args), option="--holdout", na_values=na,
                               encoding=encoding_of(args, args.synthetic))
    missing = [c for c in original.columns if c not in holdout.columns]
    if missing:
        raise InputError(f"The '--holdout' file lacks columns of the copies: {missing}.")
    if recorded is not None:
        step_line(args, "disclosure", "using --holdout, not the holdout recorded with the copies", summary=True)
    return holdout, "--holdout"


class _Disclosure:
    """Identity risk, attribute disclosure and membership inference written as one JSON and one
    per-record CSV (membership inference and DCR are aggregates only: no per-record column)."""

    def __init__(self, risk, attr=None, membership=None, dcr=None, holdout_from=None, attacks=None, size_note=None):
        self.risk, self.attr, self.membership, self.dcr = risk, attr, membership or {}, dcr
        self.holdout_from = holdout_from
        self.attacks, self.size_note = attacks or {}, size_note

    def to_dict(self):
        d = self.risk.to_dict()
        if self.attr is not None:
            d["attribute_disclosure"] = self.attr.to_dict()
        if self.membership:
            d["membership_inference"] = {"holdout": self.holdout_from,
                                         **{k: r.to_dict() for k, r in self.membership.items()}}
            d["dcr"] = self.dcr.to_dict()
        else:
            d["membership_inference"] = {"holdout": None, "note": NO_HOLDOUT}
        if self.attacks:
            d["anonymeter"] = {"control": self.holdout_from, "control_size_note": self.size_note,
                               **{k: r.to_dict() for k, r in self.attacks.items()}}
        else:
            d["anonymeter"] = {"control": None, "note": NO_HOLDOUT}
        return d

    def to_frame(self):
        if self.attr is None:
            return self.risk.to_frame()
        return self.risk.to_frame().join(self.attr.to_frame().add_prefix("attr_"))

    def summary(self):
        """The summary tables, one above the other (``measure`` = identity / attribute /
        membership_distance / membership_domias / dcr / each anonymeter attack's label), for ``--out`` as CSV."""
        import pandas as pd

        from ..results import SummaryTable

        parts = {"identity": self.risk.summary().to_frame()}
        if self.attr is not None:
            parts["attribute"] = self.attr.summary().to_frame()
        for k, r in self.membership.items():
            parts[f"membership_{k}"] = r.summary().to_frame()
        if self.dcr is not None:
            parts["dcr"] = self.dcr.summary().to_frame()
        for k, r in self.attacks.items():
            parts[k] = r.summary().to_frame()
        if len(parts) == 1:
            return self.risk.summary()
        frame = pd.concat(parts, names=["measure"])
        return SummaryTable(frame, "Re-identification risk" + (", attribute disclosure" if self.attr else "")
                            + (" and membership inference" if self.membership else ""),
                            notes=self.attr.summary().notes if self.attr is not None else ())

    def report(self):
        parts = [self.risk.report()]
        if self.attr is not None:
            parts.append(self.attr.report())
        if self.membership:
            parts += [r.report() for r in self.membership.values()] + [self.dcr.report()]
            from ..evaluation.membership import PARTIAL_RELEASE_NOTE

            parts.append("Note: " + PARTIAL_RELEASE_NOTE + ".")
        else:
            parts.append("Membership inference: not computed: " + NO_HOLDOUT + ".")
        if self.attacks:
            parts += [_attack_report(r) for r in self.attacks.values()]
            if self.size_note:
                parts.append("Note: " + self.size_note + ".")
        else:
            parts.append("Singling out, linkability and inference risks (anonymeter): not computed: the control "
                         "set they need is the holdout: " + NO_HOLDOUT + ".")
        return "\n\n".join(parts)
