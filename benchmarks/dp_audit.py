"""Exact privacy audit of the Beta-posterior mechanisms at n = 1000 (issue 6: <= 5 s).

Enumerates all neighbouring pairs (counts k, k+1 for k = 0..999) and every output,
per mechanism at epsilon = 1 (smooth: delta = 1e-5; local: the NOT-private EM under
the prior Beta(0.1, 0.1), n = 200, eps = 0.1, where the audit finds the violation).
Writes ``benchmarks/results/dp_audit.json``: wall seconds (median of 3), peak
memory, the audit figures. Run: ``python benchmarks/dp_audit.py``.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import measure, write_json  # noqa: E402

from synthmi.privacy.audit import audit_privacy_loss  # noqa: E402
from synthmi.privacy.dp_bayes import PrivateBetaPosterior  # noqa: E402

CASES = {
    "em_global": (PrivateBetaPosterior(1.0, "global"), 1000),
    "em_smooth": (PrivateBetaPosterior(1.0, "smooth", delta=1e-5), 1000),
    "laplace_count": (PrivateBetaPosterior(1.0, "laplace"), 1000),
    "laplace_count_rounded": (PrivateBetaPosterior(1.0, "laplace_rounded"), 1000),
    "posterior_sample": (PrivateBetaPosterior(1.0, "posterior_sample"), 1000),
    "em_local_NOT_PRIVATE_prior_0.1": (PrivateBetaPosterior(0.1, "local", prior=(0.1, 0.1), allow_non_private=True), 200),
}


def main() -> None:
    out = {}
    for name, (mech, n) in CASES.items():
        m = measure(lambda: audit_privacy_loss(mech, n), repeats=3)
        res = m.pop("result")
        row = res.to_frame().iloc[0].to_dict()
        row = {k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()}
        out[name] = {**m, **row}
        print(f"{name:32s} {m['wall_seconds_median']:6.2f} s  {res.summary()}")
    write_json("dp_audit", {"cases": out, "limit_seconds_n1000": 5.0, "seeds": None,
                            "max_wall_n1000": max(v["wall_seconds_median"] for k, v in out.items() if v["n"] == 1000)})


if __name__ == "__main__":
    main()
