"""Runs the test suites that optax 0.2.8 and chex 0.1.92 ship in their wheels on jaxon (with
`jax` aliased to jaxon by `install_as_jax`) and, as the baseline, on JAX 0.10.2 itself; then
prints the counts and groups the failures by cause, which is the list of what those
libraries still miss in jaxon.

Each backend gets a scratch venv: jaxon's holds jaxon (editable, from this repo) and never
`jax`; JAX's holds `jax==0.10.2`. Both get optax and chex with `--no-deps` (their declared
`jax` requirement would pull the real package in) plus the same runtime and test
dependencies. flax is left out on purpose: it needs `jax` itself, so the two optax test
files that import it fail to collect under both backends.

  python tools/run_optax_chex_tests.py                   # set up, run both, summarize
  python tools/run_optax_chex_tests.py --backend jaxon   # one backend
  python tools/run_optax_chex_tests.py --summarize-only  # reread the last results

Results (junit XML and pytest's log per backend) are written under --out.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import venv
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TOOLS = REPO / "tools"
SUITES = ["optax==0.2.8", "chex==0.1.92"]
# optax's and chex's requirements other than jax/jaxlib, their test extras but flax, and
# the runner's own plugins.
SUITE_DEPS = ["absl-py>=2.3.1", "typing_extensions>=4.15.0", "toolz>=1.0.0", "numpy",
              "cloudpickle", "dm-tree", "scipy", "scikit-learn",
              "pytest", "pytest-xdist", "pytest-timeout"]
BACKEND_PACKAGES = {"jaxon": ["-e", str(REPO)], "jax": ["jax==0.10.2", "jaxlib==0.10.2"]}
BACKENDS = list(BACKEND_PACKAGES)


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
  print("+", " ".join(cmd), flush=True)
  return subprocess.run(cmd, check=True, **kwargs)


def env_python(env_dir: Path) -> str:
  return str(env_dir / "bin" / "python")


def set_up_env(backend: str, env_dir: Path) -> None:
  """Creates or completes the venv; pip skips what is already there, so reruns are quick."""
  if not (env_dir / "bin" / "python").exists():
    venv.create(env_dir, with_pip=True)
  pip = [env_python(env_dir), "-m", "pip", "install", "-q"]
  run(pip + BACKEND_PACKAGES[backend] + SUITE_DEPS)
  run(pip + ["--no-deps"] + SUITES)
  if backend == "jaxon":
    found = subprocess.run([env_python(env_dir), "-c",
                            "import importlib.util; print(importlib.util.find_spec('jax'))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    if found != "None":
      sys.exit(f"{env_dir} has a real `jax` installed ({found}): the jaxon run would not "
               "test jaxon. Remove that venv and run again.")


def suite_dirs(env_dir: Path) -> list[str]:
  """Where the installed packages (and their `*_test.py` files) are, found without
  importing them: importing optax in jaxon's venv needs the alias."""
  code = ("import importlib.util\n"
          "for name in ('optax', 'chex'):\n"
          "  print(importlib.util.find_spec(name).submodule_search_locations[0])\n")
  out = subprocess.run([env_python(env_dir), "-c", code], capture_output=True, text=True,
                       check=True).stdout
  return out.split()


def run_suites(backend: str, env_dir: Path, out: Path, workers: int, timeout: int) -> None:
  cmd = [env_python(env_dir), "-m", "pytest", *suite_dirs(env_dir), "-q", "-rN",
         "-p", "no:cacheprovider", f"--timeout={timeout}", f"--junitxml={out / backend}.xml"]
  if workers > 1:
    cmd += ["-n", str(workers)]
  env = dict(os.environ)
  if backend == "jaxon":
    cmd += ["-p", "pytest_jaxon_as_jax"]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TOOLS), env.get("PYTHONPATH")]))
  log = out / f"{backend}.log"
  print("+", " ".join(cmd), f"> {log}", flush=True)
  with open(log, "w") as f:
    subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, check=False)
  print(log.read_text().strip().splitlines()[-1])


Outcome = tuple[str, str]  # ("passed" | "failed" | "error" | "skipped", short reason)


def read_results(xml_path: Path) -> dict[str, Outcome]:
  results = {}
  for case in ET.parse(xml_path).iter("testcase"):
    test_id = f"{case.get('classname')}::{case.get('name')}"
    outcome, reason = "passed", ""
    for child in case:
      if child.tag in ("failure", "error", "skipped"):
        outcome = {"failure": "failed"}.get(child.tag, child.tag)
        reason = _reason(child.get("message") or "", child.text or "")
        break
    results[test_id] = (outcome, reason)
  return results


def _reason(message: str, text: str) -> str:
  """One line that groups failures with the same cause: the exception line, with tracers,
  numbers and addresses blanked out."""
  if message in ("", "collection failure") or message.startswith("failed on setup"):
    errors = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    message = next((e for e in errors if re.match(r"\w+(Error|Exception)\b", e)),
                   errors[-1] if errors else message)
  line = message.strip().splitlines()[0] if message.strip() else "(no message)"
  line = re.sub(r"0x[0-9a-fA-F]+", "0x…", line)
  line = re.sub(r"Traced<[^>]*>with<[^>]*>", "Traced<…>", line)
  return re.sub(r"\d+", "N", line)[:200]


def _collection_error(test_id: str, results: dict[str, Outcome]) -> str:
  """Why a test never ran: the import error of its module (junit files those under
  `::<module>`)."""
  module = test_id.split("::")[0]
  while module:
    if f"::{module}" in results:
      return "(module failed to import) " + results[f"::{module}"][1]
    module = module.rpartition(".")[0]
  return "(not run)"


def counts(results: dict[str, Outcome]) -> str:
  tally = collections.Counter(outcome for outcome, _ in results.values())
  return (f"{tally['passed']} passed, {tally['failed']} failed, {tally['error']} errors, "
          f"{tally['skipped']} skipped")


def print_groups(title: str, reasons: list[tuple[str, str]], top: int) -> None:
  groups = collections.Counter(reason for _, reason in reasons)
  example = {}
  for test_id, reason in reasons:
    example.setdefault(reason, test_id)
  print(f"\n{title}: {len(reasons)} tests, {len(groups)} distinct causes")
  for reason, n in groups.most_common(top):
    print(f"  {n:5d}  {reason}\n         e.g. {example[reason]}")


def summarize(out: Path, top: int) -> None:
  results = {b: read_results(out / f"{b}.xml") for b in BACKENDS if (out / f"{b}.xml").exists()}
  for backend, res in results.items():
    print(f"{backend}: {counts(res)}")
  if "jaxon" not in results:
    return
  jaxon_res = results["jaxon"]
  if "jax" in results:
    baseline = [t for t, (outcome, _) in results["jax"].items() if outcome == "passed"]
    passing = [t for t in baseline if jaxon_res.get(t, ("missing",))[0] == "passed"]
    print(f"\njaxon passes {len(passing)} of the {len(baseline)} tests that pass on JAX 0.10.2")
    not_yet = [(t, jaxon_res[t][1] if t in jaxon_res else _collection_error(t, jaxon_res))
               for t in baseline if t not in passing]
    print_groups("Passing on JAX, not on jaxon, by cause", not_yet, top)
  broken = [(t, reason) for t, (outcome, reason) in jaxon_res.items()
            if outcome in ("failed", "error")]
  print_groups("All jaxon failures and errors, by cause", broken, top)


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--backend", choices=BACKENDS + ["both"], default="both")
  parser.add_argument("--env-root", type=Path, default=Path("/tmp"),
                      help="where the venvs go (optax-env-jaxon, optax-env-jax)")
  parser.add_argument("--out", type=Path, default=Path("/tmp/optax-chex-results"))
  parser.add_argument("--workers", type=int, default=2, help="pytest-xdist processes")
  parser.add_argument("--timeout", type=int, default=300, help="seconds per test")
  parser.add_argument("--top", type=int, default=40, help="causes listed per group")
  parser.add_argument("--summarize-only", action="store_true")
  args = parser.parse_args()
  args.out.mkdir(parents=True, exist_ok=True)
  if not args.summarize_only:
    for backend in BACKENDS if args.backend == "both" else [args.backend]:
      env_dir = args.env_root / f"optax-env-{backend}"
      set_up_env(backend, env_dir)
      run_suites(backend, env_dir, args.out, args.workers, args.timeout)
  summarize(args.out, args.top)


if __name__ == "__main__":
  main()
