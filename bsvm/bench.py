"""``python -m bsvm.bench NAME [options]``: the benchmarks under the name the issues use.

The benchmarks live in the repository's top-level ``benchmarks/`` directory and are not installed with
the package (scikit-learn keeps its benchmarks outside the package too, and they need the optional peers
of the ``bench`` extra). From a source checkout, or an editable install of one, this forwards to
``python -m benchmarks NAME [options]``; from an installed wheel it says where to find them.
"""

from __future__ import annotations

import sys
from pathlib import Path

HOW = ("The benchmarks are not part of the installed package: from a checkout of the repository run "
       "`python -m benchmarks NAME` (NAME: sbsvm, sbsvm_stream, msbpm, subgradient, seeger, dashboard or "
       "smoke), after `pip install -e \".[bench]\"` for the peers they compare with.")


def _import_runner():
    try:
        from benchmarks.__main__ import main
        return main
    except ImportError:
        pass
    checkout = Path(__file__).resolve().parent.parent  # bsvm/ imported from a source tree
    if (checkout / "benchmarks" / "__main__.py").is_file():
        sys.path.insert(0, str(checkout))
        try:
            from benchmarks.__main__ import main
            return main
        except ImportError:
            return None
    return None


def main(argv=None) -> int:
    run = _import_runner()
    if run is None:
        print(HOW, file=sys.stderr)
        return 2
    return int(run(argv) or 0)


if __name__ == "__main__":
    sys.exit(main())
