"""The collective generators (``from eidola.generators import ring_allreduce``); they live in `eidola.workload`."""

from .workload.generators import *  # noqa: F403  (the public generator functions, as listed there)
from .workload.generators import __all__  # noqa: F401

if __name__ == "__main__":
    from .workload.generators import main

    main()
