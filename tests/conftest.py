import os

# One BLAS thread per process (PyMC forks chains; default threading oversubscribes 2 cores).
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
