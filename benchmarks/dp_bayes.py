"""Accuracy of private Beta-posterior release (the draft "Differentially Private Bayesian Inference"; issue 6).

For every mechanism, n in {10, 100, 1000, 10000}, epsilon in {0.1, 0.5, 1, 2} and
k in {n/2, n/10}, the EXACT expected Hellinger distance between the released
posterior and the non-private posterior Beta(1 + k, 1 + n - k) (finite sums over
the n + 1 candidate outputs; the one-posterior-sample baseline by quantile
quadrature with 4000 nodes, error < 1e-4). No simulation, so no seeds.

Mechanisms: EM with global sensitivity (eps-DP), EM with smooth sensitivity
((eps, delta)-DP, delta = 1e-5), Laplace on the count with exact discrete Laplace
noise and with rounded continuous Laplace noise (both eps-DP, clamped to [0, n]),
one posterior sample (eps-DP with tau = 0.01), and, for reference only, the
NOT-private EM with local sensitivity.

Writes ``benchmarks/results/dp_bayes.csv``, ``dp_bayes.png`` and ``dp_bayes.json``
(reference-point check, winner per setting, timing). Run:
``python benchmarks/dp_bayes.py`` (about 10 s).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import RESULTS, write_json  # noqa: E402

from synthmi.privacy.dp_bayes import PrivateBetaPosterior  # noqa: E402

NS = (10, 100, 1000, 10000)
EPSILONS = (0.1, 0.5, 1.0, 2.0)
K_FRACTIONS = {"n/2": 0.5, "n/10": 0.1}
DELTA = 1e-5
MECHANISMS = {
    "em_global": dict(mechanism="global"),
    "em_smooth": dict(mechanism="smooth", delta=DELTA),
    "laplace_count": dict(mechanism="laplace"),
    "laplace_count_rounded": dict(mechanism="laplace_rounded"),
    "posterior_sample": dict(mechanism="posterior_sample", tau=0.01),
    "em_local_NOT_PRIVATE": dict(mechanism="local", allow_non_private=True),
}
PRIVATE = [m for m in MECHANISMS if "NOT_PRIVATE" not in m]
REFERENCE = {  # issue 6, k = n/2, eps = 1
    ("em_global", 10): 0.406, ("em_global", 100): 0.682, ("em_global", 1000): 0.872,
    ("laplace_count_rounded", 10): 0.195, ("laplace_count_rounded", 100): 0.067, ("laplace_count_rounded", 1000): 0.021,
}


def table() -> pd.DataFrame:
    rows = []
    for name, kw in MECHANISMS.items():
        for eps in EPSILONS:
            mech = PrivateBetaPosterior(epsilon=eps, **kw)
            for n in NS:
                for klabel, frac in K_FRACTIONS.items():
                    k = int(round(frac * n))
                    rows.append({"mechanism": name, "private": "NOT_PRIVATE" not in name, "n": n, "k": k,
                                 "k_rule": klabel, "epsilon": eps, "delta": DELTA if name == "em_smooth" else 0.0,
                                 "expected_hellinger": mech.expected_hellinger(n, k)})
    return pd.DataFrame(rows)


def plot(df: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(EPSILONS), figsize=(16, 7.5), sharex=True, sharey=True)
    styles = {"em_global": "o-", "em_smooth": "s-", "laplace_count": "^-", "laplace_count_rounded": "v--",
              "posterior_sample": "d-", "em_local_NOT_PRIVATE": "x:"}
    for i, (klabel, _) in enumerate(K_FRACTIONS.items()):
        for j, eps in enumerate(EPSILONS):
            ax = axes[i, j]
            sub = df[(df.k_rule == klabel) & (df.epsilon == eps)]
            for name in MECHANISMS:
                s = sub[sub.mechanism == name].sort_values("n")
                ax.plot(s.n, s.expected_hellinger, styles[name], label=name, ms=4)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"k = {klabel}, eps = {eps:g}")
            ax.grid(alpha=0.3)
            if i == 1:
                ax.set_xlabel("n")
            if j == 0:
                ax.set_ylabel("E[Hellinger(released, BI(x))]")
    axes[0, 0].legend(fontsize=8)
    fig.suptitle("Private Beta-posterior release: exact expected Hellinger distance to the non-private posterior")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    t0 = time.perf_counter()
    df = table()
    wall = time.perf_counter() - t0
    RESULTS.mkdir(parents=True, exist_ok=True)
    csv = RESULTS / "dp_bayes.csv"
    df.to_csv(csv, index=False, float_format="%.6g")
    png = RESULTS / "dp_bayes.png"
    plot(df, png)

    ref = []
    for (name, n), val in REFERENCE.items():
        got = float(df[(df.mechanism == name) & (df.n == n) & (df.k_rule == "n/2") & (df.epsilon == 1.0)].expected_hellinger.iloc[0])
        ref.append({"mechanism": name, "n": n, "reference": val, "measured": round(got, 4), "ok": abs(got - val) < 5e-4})
    priv = df[df.private]
    winners = (priv.loc[priv.groupby(["k_rule", "epsilon", "n"]).expected_hellinger.idxmin()]
               [["k_rule", "epsilon", "n", "mechanism", "expected_hellinger"]])
    wide = df.pivot_table(index=["k_rule", "epsilon", "n"], columns="mechanism", values="expected_hellinger")
    print(wide.round(4).to_string())
    print("\nreference points (k = n/2, eps = 1):")
    for r in ref:
        print(f"  {r['mechanism']:22s} n={r['n']:5d}: reference {r['reference']:.3f}, measured {r['measured']:.4f}  {'OK' if r['ok'] else 'MISMATCH'}")
    print("\nbest private mechanism per setting:")
    print(winners.to_string(index=False))
    write_json("dp_bayes", {
        "wall_seconds": wall,
        "grid": {"n": NS, "epsilon": EPSILONS, "k": K_FRACTIONS, "delta_smooth": DELTA, "tau_posterior_sample": 0.01},
        "reference_check": ref,
        "winners": winners.to_dict(orient="records"),
        "win_counts": winners.mechanism.value_counts().to_dict(),
        "csv": str(csv.relative_to(RESULTS.parent.parent)),
        "png": str(png.relative_to(RESULTS.parent.parent)),
        "seeds": None,
    })


if __name__ == "__main__":
    main()
