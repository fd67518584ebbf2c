"""DOMIAS's kernel bandwidth: Scott's rule vs likelihood cross-validation, on Adult and NHANES.

For each data set: an 80/20 seeded split into training and holdout rows; two releases --
the training rows released as they are (DOMIAS should score near its maximum) and an
independent release (half of the holdout released, the other half the non-members:
AUC should be 0.5). ``membership_inference(attack="domias")`` with 1000 members and
1000 non-members (``sample=1000``), the reference half of the non-member pool, at
``bandwidth`` "scott" and "cv" and ``density_sample`` 5000 (the old default), 25000 (the default) and 40000 (the
whole copy). AUC and TPR at FPR 0.01; CPU seconds of the two calls.

Run::

    OPENBLAS_NUM_THREADS=1 python benchmarks/domias_bandwidth.py
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench import write_json  # noqa: E402


def main() -> None:
    from synthmi.data import load_adult
    from synthmi.evaluation.membership import membership_inference

    data = {"adult": load_adult().drop(columns="split"),
            "nhanes": pd.read_csv(Path(__file__).resolve().parent.parent / "synthmi/data/nhanes_2017_2018_adults.csv.gz")}
    out: dict = {"sample": 1000, "rows": {}}
    for name, df in data.items():
        perm = np.random.default_rng(0).permutation(len(df))
        cut = int(0.8 * len(df))
        train, hold = df.iloc[perm[:cut]].reset_index(drop=True), df.iloc[perm[cut:]].reset_index(drop=True)
        half = len(hold) // 2
        rel, non = hold.iloc[:half], hold.iloc[half:]
        rows = []
        for bw in ("scott", "cv"):
            for ds in (5000, 25000, 40000):
                t = time.process_time()
                a = membership_inference(train, hold, [train], attack="domias", bandwidth=bw, density_sample=ds,
                                         n_boot=20, random_state=0).figures
                b = membership_inference(train, non, [rel], attack="domias", bandwidth=bw, density_sample=ds,
                                         n_boot=20, random_state=0).figures
                rows.append({"bandwidth": bw, "density_sample": ds,
                             "original_auc": a["domias_auc"], "original_tpr_at_fpr_0.01": a["domias_tpr_at_fpr_0.01"],
                             "independent_auc": b["domias_auc"],
                             "independent_tpr_at_fpr_0.01": b["domias_tpr_at_fpr_0.01"],
                             "null_auc_sd": a["null_auc_sd"], "cpu_seconds": time.process_time() - t})
                print(name, rows[-1], flush=True)
        out["rows"][name] = {"training": len(train), "holdout": len(hold), "results": rows}
    write_json("domias_bandwidth", out)


if __name__ == "__main__":
    main()
