"""Wall time of the full ``synthmi disclosure`` on Adult (48,842 records, M = 5, 20% holdout).

Issue 26's budget: within 2 minutes on 2 cores. Setting: ``synthmi synthesize`` with
``--method cart --m 5 --holdout-share 0.2`` on Adult (the ``split`` column dropped;
QIs age, sex, race, education, marital_status; the other columns kept), not timed; then
``synthmi disclosure`` with the recorded holdout (39,073 training / 9,769 holdout rows),
every measure: identity matching (tolerance age = 2), attribute disclosure of
``--target income``, membership inference (distance attack and DOMIAS) and the DCR
against the holdout, and anonymeter's singling out (univariate and multivariate),
linkability (the QIs split in halves) and inference (of ``income``; and, in the second
configuration, of every kept column: the default without ``--target``), 500 attacks per
copy. Median of 3 runs (1 for the default secrets: a shared machine), CPU (process user + system) and wall seconds, with the
load average at the start of each run (the machine is shared: wall time grows with load).

Run::

    OPENBLAS_NUM_THREADS=1 python benchmarks/disclosure_speed.py [--repeats 3]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench import write_json  # noqa: E402

QI = "age,sex,race,education,marital_status"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--repeats-default", type=int, default=1, help="runs of the default-secrets configuration")
    args = ap.parse_args()
    from synthmi.cli import main as cli
    from synthmi.data import load_adult

    tmp = Path(tempfile.mkdtemp(prefix="disclosure_speed_"))
    load_adult().drop(columns="split").to_csv(tmp / "adult.csv", index=False)
    t0 = time.perf_counter()
    assert cli(["synthesize", "--data", str(tmp / "adult.csv"), "--qi", QI, "--method", "cart", "--m", "5",
                "--seed", "1", "--holdout-share", "0.2", "--out", str(tmp / "syn"), "--quiet"]) == 0
    out = {"rows": 48842, "holdout_share": 0.2, "copies": 5, "qi": QI,
           "synthesize_seconds": time.perf_counter() - t0, "configurations": {}}
    configs = {"target_income": (["--target", "income"], args.repeats), "default_secrets": ([], args.repeats_default)}
    for name, (extra, repeats) in configs.items():
        runs = []
        for r in range(repeats):
            load = os.getloadavg()
            c0, w0 = time.process_time(), time.perf_counter()
            rc = cli(["disclosure", "--original", str(tmp / "adult.csv"), "--synthetic", str(tmp / "syn"), "--qi", QI,
                      "--tol", "age=2", *extra, "--out", str(tmp / f"{name}_{r}.json"), "--quiet"])
            runs.append({"wall_seconds": time.perf_counter() - w0, "cpu_seconds": time.process_time() - c0,
                         "loadavg_1min_at_start": load[0], "rc": rc})
            print(f"{name:16s} run {r}: wall {runs[-1]['wall_seconds']:6.1f} s  cpu {runs[-1]['cpu_seconds']:6.1f} s"
                  f"  load {load[0]:.1f}", flush=True)
        out["configurations"][name] = {
            "argv_extra": extra, "runs": runs,
            "wall_seconds_median": float(np.median([x["wall_seconds"] for x in runs])),
            "cpu_seconds_median": float(np.median([x["cpu_seconds"] for x in runs])),
            "within_2_minutes": bool(np.median([x["wall_seconds"] for x in runs]) <= 120.0),
        }
    write_json("disclosure_speed", out)


if __name__ == "__main__":
    main()
