"""The README's main command: the digits demo trains to its accuracy target and its
per-example gradients average to the batch gradient (it exits non-zero otherwise)."""
from __future__ import annotations

import importlib.util
import pathlib

DEMO = pathlib.Path(__file__).parent.parent / "examples" / "digits.py"


def test_digits_demo_reaches_its_targets(capsys):
  spec = importlib.util.spec_from_file_location("digits_demo", DEMO)
  demo = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(demo)
  demo.main()
  out = capsys.readouterr().out
  assert "epoch 25" in out and "their mean equals the batch gradient: True" in out
