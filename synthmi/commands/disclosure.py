"""``synthmi disclosure``: record-level re-identification risk of released copies."""
from __future__ import annotations

import argparse
import time

from ._common import (
    COMMA_NAMES_HELP,
    EXAMPLES_FMT,
    add_summary_outputs,
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

--target: also attribute disclosure of that column given the QIs (synthpop's DiSCO,
DCAP, TCAP, repU, ... from exact keys, and the matching attribute risk with --tol);
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
    add_summary_outputs(p, "summaries")
    add_common_flags(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..evaluation.risk import reidentification_risk

    check_summary_outputs(args)
    original_full, original, syn = load_release(args)
    spec = load_spec_option(args, syn)
    from ..spec import resolve_quasi_identifiers

    qi = resolve_quasi_identifiers(split_list(args.qi), spec, option="--qi")
    # every column option is checked before any matching runs (a misspelt --target was
    # refused only after "matched ... targets" had been printed)
    unknown = [c for c in qi if c not in original.columns]
    if unknown:
        raise InputError(f"The '--qi' option names columns not in the release: {unknown}. "
                         f"Available columns: {list(original.columns)}.")
    if args.target and args.target not in original.columns:
        raise InputError(f"The '--target' option names a column not in the release: {args.target!r}. "
                         f"Available columns: {list(original.columns)}.")
    if args.target and args.target in qi:
        raise InputError(f"The '--target' column '{args.target}' is also in --qi: a column is either a "
                         "quasi-identifier the intruder knows or the attribute to learn; drop it from one.")
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

    # base names only: the summary is shared, the local paths are not
    extra = {"synthetic": input_label(args.synthetic.rstrip("/\\")), "original": input_label(args.original)}
    if args.target:
        from ..evaluation.attribute_disclosure import attribute_disclosure

        t1 = time.perf_counter()
        attr = attribute_disclosure(original, syn.copies, qi, args.target, tolerance=tol,
                                    target_tolerance=args.target_tol, threshold=args.threshold, by=by, spec=spec)
        step_line(args, "disclosure", f"attribute disclosure of '{args.target}' in {time.perf_counter() - t1:.1f} s",
                  summary=True)
        res = _WithAttribute(res, attr)
    write_summary_and_records(args, "disclosure", res, extra)
    return 0


class _WithAttribute:
    """Identity risk and attribute disclosure written as one JSON and one per-record CSV."""

    def __init__(self, risk, attr):
        self.risk, self.attr = risk, attr

    def to_dict(self):
        d = self.risk.to_dict()
        d["attribute_disclosure"] = self.attr.to_dict()
        return d

    def to_frame(self):
        return self.risk.to_frame().join(self.attr.to_frame().add_prefix("attr_"))

    def summary(self):
        """Both summary tables, one above the other (``measure`` = identity / attribute),
        for ``--out`` as CSV."""
        import pandas as pd

        from ..results import SummaryTable

        frame = pd.concat({"identity": self.risk.summary().to_frame(), "attribute": self.attr.summary().to_frame()},
                          names=["measure"])
        return SummaryTable(frame, "Re-identification risk and attribute disclosure")

    def report(self):
        return self.risk.report() + "\n\n" + self.attr.report()
