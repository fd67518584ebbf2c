"""DOMIAS's density estimator: Gaussian KDE (likelihood-CV bandwidth) vs k-nearest-neighbour (k = 1).

The split and releases of benchmarks/disclosure_attacks.py (three equal seeded parts: training,
control = non-members, independent; Adult all 48,842 rows, NHANES the 4,233 complete cases):
(a) the training rows released as they are (DOMIAS should score near its maximum), (b) an
independent release (the third part: AUC should be 0.5), (c) a CART release of 5 copies (QIs
synthesized). ``membership_inference(attack="domias")`` with 1000 members and 1000 non-members
(the reference half of the control part), ``density`` "kde" and "knn", n_boot 200; the distance
attack beside as the ceiling. AUC with its 95% CI, TPR at FPR 0.01; CPU seconds.

Run::

    OPENBLAS_NUM_THREADS=1 python benchmarks/domias_density.py
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench import write_json  # noqa: E402
from disclosure_attacks import load_parts, releases  # noqa: E402

M = 5  # copies of the CART release, as in disclosure_attacks.py


def main() -> None:
    from synthmi.evaluation.membership import membership_inference

    out: dict = {"sample": 1000, "n_boot": 200, "copies_cart": M, "rows": {}}
    for name in ("nhanes", "adult"):
        train, control, indep = load_parts(name, None)
        rels = {"original": [train], "independent": [indep]}
        for rel, copies, *_ in releases(name, train, M, 0, {"cart"}):
            rels[rel] = copies
        rows = []
        for rel, copies in rels.items():
            row: dict = {"release": rel}
            for label, kw in (("distance", {"attack": "distance"}), ("kde", {"attack": "domias", "density": "kde"}),
                              ("knn", {"attack": "domias", "density": "knn"})):
                t = time.process_time()
                f = membership_inference(train, control, copies, sample=1000, random_state=0, **kw).figures
                row.update({f"{label}_auc": f["membership_auc"], f"{label}_auc_ci_low": f["membership_auc_ci_low"],
                            f"{label}_auc_ci_high": f["membership_auc_ci_high"],
                            f"{label}_tpr_at_fpr_0.01": f["membership_tpr_at_fpr_0.01"],
                            f"{label}_cpu_seconds": time.process_time() - t})
            row["null_auc_sd"] = f["null_auc_sd"]
            rows.append(row)
            print(name, row, flush=True)
        out["rows"][name] = {"training": len(train), "control": len(control), "results": rows}
    write_json("domias_density", out)


if __name__ == "__main__":
    main()
