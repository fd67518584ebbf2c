"""``python -m synthmi VERB ...``: the same command line as the ``synthmi`` script."""
import sys

from .cli import main

sys.exit(main())
