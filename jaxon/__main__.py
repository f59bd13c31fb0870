"""`python -m jaxon script.py [args…]` or `python -m jaxon -m module [args…]`: runs a program
written for JAX on jaxon, unedited, with `import jax` giving jaxon (`jaxon.install_as_jax`).
The program sees the argv and `sys.path[0]` that `python script.py` / `python -m module`
would give it."""
from __future__ import annotations

import os
import runpy
import sys

import jaxon

USAGE = ("usage: python -m jaxon script.py [args...]\n"
         "       python -m jaxon -m module [args...]\n"
         "Runs a program written for JAX with `import jax` resolving to jaxon.")


def main(argv: list[str]) -> None:
  if not argv or argv[0] in ("-h", "--help") or argv == ["-m"]:
    print(USAGE, file=sys.stderr)
    sys.exit(0 if argv and argv[0] in ("-h", "--help") else 2)
  jaxon.install_as_jax()
  if argv[0] == "-m":
    sys.argv = argv[1:]  # run_module puts the module's file name in argv[0]
    runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
  else:
    sys.argv = argv
    sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
    runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
  main(sys.argv[1:])
