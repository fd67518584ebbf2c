import os

# One BLAS thread per process (PyMC forks chains; default threading oversubscribes 2 cores).
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")


import pytest  # noqa: E402


@pytest.fixture(scope="module")
def client():
    """A small threaded Dask cluster (2 workers, one thread each) for the Dask paths' tests."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cl, \
            distributed.Client(cl) as c:
        yield c
