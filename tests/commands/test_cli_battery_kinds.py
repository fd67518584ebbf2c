"""The battery's table S_pMSE follows the spec's kinds, as ``synthmi utility`` does.

A new user's trial (nu1, statsmodels' ``randhie``): ``black`` is a float column (0.0 / 1.0 and a few
imputed fractions) declared ``--categorical``. ``synthmi utility`` tabulated it by its levels
(one-way S_pMSE 2.4, black:educdec 43.3), but the report's battery -- which tune and the frontier
use too -- read the copies' float dtype, cut ``black`` into quantile bins that all collapsed to one,
dropped its one-way table and reported "black:educdec" = educdec's one-way figure (260.0 both):
a battery that contradicted the tables printed beside it.
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from synthmi.cli import main


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    d = tmp_path_factory.mktemp("battery_kinds")
    rng = np.random.default_rng(2)
    n = 400
    # a float-coded category with more codes (7) than a table has bins (5), 85% zeros: as a number its
    # 20/40/60/80% quantiles are all 0 and its bins collapse into one
    code = rng.choice([0.0, 1.0, 0.5, 0.25, 0.75, 0.1, 0.9], n, p=[0.85, 0.1, 0.01, 0.01, 0.01, 0.01, 0.01])
    df = pd.DataFrame({"grp": code, "age": rng.integers(20, 70, n), "y": rng.normal(size=n).round(3)})
    df.to_csv(d / "o.csv", index=False)
    assert main(["spec", "--data", str(d / "o.csv"), "--qi", "grp,age", "--categorical", "grp",
                 "--analysis", "y ~ age", "--family", "gaussian", "--out", str(d / "s.json"), "--quiet"]) == 0
    assert json.loads((d / "s.json").read_text())["columns"]["grp"]["kind"] == "nominal"
    assert main(["synthesize", "--data", str(d / "o.csv"), "--spec", str(d / "s.json"), "--method", "cart",
                 "--m", "2", "--seed", "3", "--out", str(d / "syn"), "--quiet"]) == 0
    return d


def test_report_battery_tables_equal_utility_tables(release, tmp_path):
    tables = tmp_path / "u.json"
    assert main(["utility", "--original", str(release / "o.csv"), "--synthetic", str(release / "syn"),
                 "--tables", "1,2", "--out", str(tables), "--quiet"]) == 0
    page = tmp_path / "r.html"
    assert main(["report", "--original", str(release / "o.csv"), "--synthetic", "cart=" + str(release / "syn"),
                 "--tol", "age=1", "--out", str(page), "--quiet"]) == 0
    html = page.read_text()
    s = {r["variables"]: r["s_pmse"] for r in json.loads(tables.read_text())["utility_tables"]["tables"]}
    assert "grp" in s  # utility tabulates the category by its levels
    crit = html.split("every criterion", 1)[1].split("</table>", 1)[0]
    # the battery lists the same tables with the same figures (4 decimals in the page)
    for name, key in (("grp", "grp"), ("age:grp", "grp:age")):
        assert f"table / {name}</td>" in crit, name
        shown = float(crit.split(f"table / {name}</td><td>", 1)[1].split("<", 1)[0])
        assert shown == pytest.approx(s[key], abs=5e-5), name
