"""Rubin MI and DA-MI on a Dask frame run the models' own fit and sample (synthmi.engine):
same seed -> the same copies for every partitioning, equal to the pandas path's.

Every model that claims partition support (``supports_partitions``) is covered, with a
0/1 integer quasi-identifier (issue 27: ``KeyError: 'female'`` on Dask, handled in memory).
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from synthmi.data import load_adult  # noqa: E402
from synthmi.models.dami import DAMISynthesizer  # noqa: E402
from synthmi.models.rubin import RubinSynthesizer  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:.*flagged as unconverged:RuntimeWarning")

# a 0/1 integer quasi-identifier ("female"), as a new user's survey file codes it
QI = ["age", "female", "race"]
KEEP = ["income", "education"]


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cl, \
            distributed.Client(cl) as c:
        yield c


@pytest.fixture(scope="module")
def data():
    a = load_adult()[["age", "sex", "race", "income", "education"]].iloc[:2000].reset_index(drop=True)
    a["female"] = (a["sex"] == "Female").astype("int64")
    return a[QI + KEEP]


def _models():
    # sampler="imh" and short chains as in tests/test_scale.py (copies accepted, flagged unconverged)
    kw = dict(random_state=7, draws=100, chains=2, progressbar=False, sampler="imh", accept_diagnostics=True)
    return {
        "rubin": lambda: RubinSynthesizer(**{k: v for k, v in kw.items() if k != "random_state"}),
        "dami": lambda: DAMISynthesizer(masks={"age": {"K": 3, "sigma_e": 5.0}, "female": {"p": 0.9}}, **kw),
    }


@pytest.mark.parametrize("name", ["rubin", "dami"])
def test_integer_binary_qi_copies_equal_pandas_for_every_partitioning(client, data, name):
    make = _models()[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mem = make().fit(data, QI, KEEP).sample(2, random_state=11).copies
        for P in (1, 3):
            got = make().fit(dd.from_pandas(data, npartitions=P), QI, KEEP).sample(2, random_state=11).compute()
            for a, b in zip(got, mem):
                pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert mem[0]["female"].dtype == np.int64 and set(mem[0]["female"].unique()) <= {0, 1}
