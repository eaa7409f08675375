"""Dispatch ``python -m benchmarks NAME [options]`` to ``benchmarks.NAME.main``.

``smoke`` runs every benchmark's tiny smoke variant (used by CI to keep the scripts working).
"""

import importlib
import pkgutil
import sys

import benchmarks as _pkg


def _names():
    return sorted(m.name for m in pkgutil.iter_modules(_pkg.__path__) if not m.name.startswith("_"))


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    names = _names()
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m benchmarks {" + ",".join([*names, "smoke"]) + "} [options]")
        return 0
    name, rest = argv[0], argv[1:]
    if name == "smoke":
        for n in names:
            mod = importlib.import_module(f"benchmarks.{n}")
            if hasattr(mod, "smoke"):
                print(f"== smoke: {n}")
                mod.smoke()
        return 0
    if name not in names:
        print(f"unknown benchmark {name!r}; choose from {names + ['smoke']}")
        return 2
    return importlib.import_module(f"benchmarks.{name}").main(rest) or 0


if __name__ == "__main__":
    sys.exit(main())
