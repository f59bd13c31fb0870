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
  python tools/run_optax_chex_tests.py --backend jaxon --subset   # SUBSET only
  python tools/run_optax_chex_tests.py --backend jaxon --subset --strict   # CI: fails on a failure

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
# A fixed sample of the suites for CI: quick files (about 3 minutes in all on jaxon with two
# workers) that pass on JAX 0.10.2 and between them touch every layer optax uses
# (transformations, losses, schedules, pytree utilities, chex's dataclasses and asserts).
SUBSET = [
    "optax/_src/base_test.py", "optax/_src/combine_test.py", "optax/_src/factorized_test.py",
    "optax/_src/lookahead_test.py", "optax/_src/transform_test.py", "optax/_src/update_test.py",
    "optax/contrib/_sam_test.py", "optax/experimental/_aggregating_test.py",
    "optax/losses/_ranking_test.py", "optax/losses/_regression_test.py",
    "optax/losses/_self_supervised_test.py", "optax/losses/_smoothing_test.py",
    "optax/schedules/_inject_test.py", "optax/transforms/_adding_test.py",
    "optax/transforms/_combining_test.py", "optax/transforms/_conditionality_test.py",
    "optax/transforms/_constraining_test.py", "optax/transforms/_freezing_test.py",
    "optax/transforms/_masking_test.py", "optax/transforms/_monitoring_test.py",
    "optax/tree_utils/_casting_test.py", "optax/tree_utils/_random_test.py",
    "optax/tree_utils/_state_utils_test.py", "optax/tree_utils/_tree_math_test.py",
    "chex/_src/asserts_internal_test.py", "chex/_src/dataclass_test.py",
    "chex/_src/dimensions_test.py", "chex/_src/warnings_test.py",
]


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


def subset_files(env_dir: Path) -> list[str]:
  """The SUBSET's test files in the venv's installed packages."""
  site_packages = {Path(d).name: Path(d).parent for d in suite_dirs(env_dir)}
  return [str(site_packages[f.split("/")[0]] / f) for f in SUBSET]


def results_name(backend: str, subset: bool) -> str:
  """The stem of a run's junit XML and log under --out; a subset run has its own."""
  return f"{backend}-subset" if subset else backend


def run_suites(backend: str, env_dir: Path, out: Path, workers: int, timeout: int,
               subset: bool) -> None:
  tests = subset_files(env_dir) if subset else suite_dirs(env_dir)
  name = results_name(backend, subset)
  # Test ids are dotted paths from site-packages (`optax._src.base_test.…`) in every run,
  # so that a subset's results line up with a full run's.
  site_packages = Path(suite_dirs(env_dir)[0]).parent
  cmd = [env_python(env_dir), "-m", "pytest", *tests, "-q", "-rN", f"--rootdir={site_packages}",
         "-p", "no:cacheprovider", f"--timeout={timeout}", f"--junitxml={out / name}.xml"]
  if workers > 1:
    cmd += ["-n", str(workers)]
  env = dict(os.environ)
  if backend == "jaxon":
    cmd += ["-p", "pytest_jaxon_as_jax"]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TOOLS), env.get("PYTHONPATH")]))
  log = out / f"{name}.log"
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


def summarize(out: Path, top: int, subset: bool) -> int:
  """Counts per backend and jaxon's failures by cause (a subset's JAX baseline is the full
  JAX run's results for the subset's tests when there is no JAX subset run); returns how
  many tests failed or errored on jaxon."""
  results = {}
  for b in BACKENDS:
    paths = [out / f"{results_name(b, subset)}.xml"]
    if b == "jax":
      paths.append(out / "jax.xml")
    for path in paths:
      if path.exists():
        results[b] = read_results(path)
        break
  if subset and "jaxon" in results and "jax" in results:
    modules = {f[:-3].replace("/", ".") for f in SUBSET}
    results["jax"] = {t: r for t, r in results["jax"].items()
                      if t.split("::")[0].rpartition(".")[0] in modules}
  for backend, res in results.items():
    print(f"{backend}: {counts(res)}")
  if "jaxon" not in results:
    return 0
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
  return len(broken)


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
  parser.add_argument("--subset", action="store_true",
                      help="run only the SUBSET's test files (a few minutes; for CI)")
  parser.add_argument("--strict", action="store_true",
                      help="exit with status 1 when a test fails or errors on jaxon (CI)")
  args = parser.parse_args()
  args.out.mkdir(parents=True, exist_ok=True)
  if not args.summarize_only:
    for backend in BACKENDS if args.backend == "both" else [args.backend]:
      env_dir = args.env_root / f"optax-env-{backend}"
      set_up_env(backend, env_dir)
      run_suites(backend, env_dir, args.out, args.workers, args.timeout, args.subset)
  broken = summarize(args.out, args.top, args.subset)
  if args.strict and broken:
    sys.exit(f"{broken} optax/chex tests failed on jaxon")


if __name__ == "__main__":
  main()
