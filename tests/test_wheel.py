"""The wheel is what users install. `make dist` builds it; every file of the package tree is in it, with the package
version; and a fresh virtual environment holding the wheel, not the source tree, runs the quick demo's steps (train,
probe, report) from a folder outside the tree, reading the package's data from the installed copy.

The fresh environment gets no dependencies of its own (torch and friends would be a download of gigabytes): a `.pth`
file puts this environment's site-packages on its sys.path. A plain path line in a `.pth` file adds the folder
without running the `.pth` files inside it, so the editable install's finder, which would serve the source tree,
stays off; the tests check that it does.
"""

import json
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path

import pytest
from helpers_training import subprocess_env

import hf_minattn

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
# This environment's site-packages: the dependencies the fresh one borrows, and the editable install's finder.
SITE_PACKAGES = Path(sysconfig.get_paths()["purelib"]).resolve()
TEST_PREFIX = Path(sys.prefix).resolve()  # may lie inside the source tree (.venv)

# Installed into the fresh environment: with WHEEL_TEST_OPEN_LOG set, each process lists the files it opened there
# (one list a process, written at exit), so the test can tell where the package data was read from.
OPEN_LOG_MODULE = '''
import atexit, os, sys
_folder = os.environ.get("WHEEL_TEST_OPEN_LOG")
if _folder:
    _opened = set()

    def _hook(event, args):
        if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
            _opened.add(os.path.abspath(os.fsdecode(args[0])))

    def _write():
        with open(os.path.join(_folder, f"{os.getpid()}.txt"), "w") as f:
            f.write("\\n".join(sorted(_opened)))

    sys.addaudithook(_hook)
    atexit.register(_write)
'''

# Where the fresh environment found the package, its metadata and the editable install's finder (run inside it).
WHERE_SCRIPT = """
import importlib.metadata, json, sys
import hf_minattn
print(json.dumps({"file": hf_minattn.__file__, "version": hf_minattn.__version__, "path": sys.path,
                  "metadata_version": importlib.metadata.version("hf_minattn"),
                  "metadata_at": str(importlib.metadata.distribution("hf_minattn").locate_file("")),
                  "editable_modules": sorted(m for m in sys.modules if m.startswith("__editable__"))}))
"""

# pip check, without pip's view of the borrowed site-packages: each requirement of the installed hf_minattn (no extra)
# has a distribution in the specified versions, and every top-level module of that distribution can be found.
REQUIREMENTS_SCRIPT = """
import importlib.metadata as md, importlib.util, json, re
from packaging.requirements import Requirement

def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()

modules = {}
for module, dists in md.packages_distributions().items():
    for dist in dists:
        modules.setdefault(norm(dist), []).append(module)
checked, problems = [], []
for line in md.requires("hf_minattn"):
    requirement = Requirement(line)
    if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
        continue
    try:
        version = md.version(requirement.name)
    except md.PackageNotFoundError:
        problems.append(f"{requirement}: not installed")
        continue
    if not requirement.specifier.contains(version, prereleases=True):
        problems.append(f"{requirement}: {version} is installed")
    found = [m for m in modules.get(norm(requirement.name), []) if importlib.util.find_spec(m) is not None]
    if not found:
        problems.append(f"{requirement}: no module of it can be imported")
    checked.append(requirement.name)
print(json.dumps({"checked": checked, "problems": problems}))
"""


@dataclass
class FreshVenv:
    root: Path
    site_packages: Path

    def run(self, argv, cwd, open_log=None, timeout=300) -> subprocess.CompletedProcess:
        """`argv` (argv[0] a program of the environment's bin/) run from `cwd` as the environment's user runs it."""
        env = {k: v for k, v in subprocess_env().items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
        env.update(PATH=f"{self.root / 'bin'}{os.pathsep}{env['PATH']}", VIRTUAL_ENV=str(self.root))
        if open_log is not None:
            env["WHEEL_TEST_OPEN_LOG"] = str(open_log)
        result = subprocess.run([str(self.root / "bin" / argv[0]), *map(str, argv[1:])], cwd=cwd, env=env,
                                capture_output=True, text=True, timeout=timeout)
        assert result.returncode == 0, f"{argv[:3]} failed:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
        return result


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The folder `make dist` wrote (an sdist and a wheel, twine-checked), run with this environment's python;
    `-o` keeps make from (re)creating the project's virtual environment."""
    out = tmp_path_factory.mktemp("dist")
    # not the variables of a `make test` this runs under (its VENV, its job server)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    result = subprocess.run(["make", "-s", "-C", str(REPO), "dist", f"DIST={out}", f"PY={sys.executable}",
                             "-o", ".venv/.installed"], env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"make dist failed:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    assert result.stdout.count("PASSED") == 2, result.stdout[-2000:]  # twine check: the sdist and the wheel
    return out


@pytest.fixture(scope="module")
def wheel(dist) -> Path:
    (path,) = dist.glob("hf_minattn-*.whl")
    return path


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> FreshVenv:
    """A new virtual environment with the wheel installed (no dependencies), borrowing this one's site-packages."""
    root = tmp_path_factory.mktemp("fresh") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, timeout=300)
    fresh = FreshVenv(root, root)
    fresh.run(["python", "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check", wheel], cwd=root)
    purelib = fresh.run(["python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=root)
    fresh.site_packages = Path(purelib.stdout.strip()).resolve()
    # a plain path line: the folder joins sys.path after the fresh site-packages; its own .pth files are not run
    (fresh.site_packages / "borrowed_site_packages.pth").write_text(f"{SITE_PACKAGES}\n")
    (fresh.site_packages / "_wheel_test_open_log.py").write_text(OPEN_LOG_MODULE)
    (fresh.site_packages / "_wheel_test_open_log.pth").write_text("import _wheel_test_open_log\n")
    return fresh


def test_the_wheel_holds_every_file_of_the_package_tree_and_the_package_version(dist, wheel):
    """Every file git tracks under hf_minattn/ (templates, scripts, styles, the schema, the data files) is in the
    wheel's RECORD: a pattern missing from package-data in pyproject.toml fails here. Both archives carry
    hf_minattn.__version__ and the wheel the `hf-minattn` command."""
    tracked = subprocess.run(["git", "ls-files", "hf_minattn"], cwd=REPO, capture_output=True, text=True,
                             check=True).stdout.split()
    assert any(not name.endswith(".py") for name in tracked), tracked
    info = f"hf_minattn-{hf_minattn.__version__}.dist-info"
    with zipfile.ZipFile(wheel) as archive:
        record = {line.split(",")[0] for line in archive.read(f"{info}/RECORD").decode().splitlines()}
        metadata = Parser().parsestr(archive.read(f"{info}/METADATA").decode())
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
    missing = sorted(set(tracked) - record)
    assert not missing, f"tracked but not in the wheel (package-data in pyproject.toml): {missing}"
    assert metadata["Name"] == "hf_minattn" and metadata["Version"] == hf_minattn.__version__
    assert "hf-minattn = hf_minattn.cli:main" in entry_points
    (sdist,) = dist.glob("hf_minattn-*.tar.gz")
    with tarfile.open(sdist) as archive:
        pkg_info = archive.extractfile(f"hf_minattn-{hf_minattn.__version__}/PKG-INFO").read().decode()
    assert Parser().parsestr(pkg_info)["Version"] == hf_minattn.__version__


def test_the_fresh_environment_imports_the_installed_package_not_the_source_tree(venv, tmp_path):
    """hf_minattn and its metadata come from the fresh site-packages; the source tree is not on sys.path and the
    editable install's finder never ran; the borrowed site-packages is on sys.path; `hf-minattn --version` works."""
    where = json.loads(venv.run(["python", "-c", WHERE_SCRIPT], cwd=tmp_path).stdout)
    assert Path(where["file"]).resolve().is_relative_to(venv.site_packages), where["file"]
    assert Path(where["metadata_at"]).resolve() == venv.site_packages
    assert where["version"] == where["metadata_version"] == hf_minattn.__version__
    assert where["editable_modules"] == []
    path = [Path(p).resolve() for p in where["path"] if p]
    assert SITE_PACKAGES in path and REPO not in path
    assert path.index(venv.site_packages) < path.index(SITE_PACKAGES)
    printed = venv.run(["hf-minattn", "--version"], cwd=tmp_path).stdout
    assert printed == f"hf-minattn {hf_minattn.__version__}\n"


def test_every_requirement_of_the_installed_package_is_present_and_importable(venv, tmp_path):
    """What `pip check` would say of the wheel's requirements, as the fresh environment sees them."""
    report = json.loads(venv.run(["python", "-c", REQUIREMENTS_SCRIPT], cwd=tmp_path).stdout)
    assert report["problems"] == []
    assert {"torch", "transformers", "jinja2"} <= set(report["checked"]), report["checked"]


def opened_files(folder: Path) -> set[Path]:
    """The files the fresh environment's processes opened, as OPEN_LOG_MODULE listed them."""
    return {Path(line).resolve() for log in folder.glob("*.txt") for line in log.read_text().splitlines() if line}


# The package data the demo's steps read: the model card's template, the report's templates, the attention view's
# script and style, the WordSim-353 subsets, the homonym senses.
DEMO_READS = ["model_card_template.md", "probes/report.html.j2", "probes/report_macros.html.j2",
              "probes/attention_view.html.j2", "probes/attention_view.js", "probes/attention_view.css",
              "probes/data/wordsim_similarity_goldstandard.txt", "probes/data/wordsim_relatedness_goldstandard.txt",
              "probes/data/senses.tsv"]


@pytest.fixture(scope="module")
def demo(venv, tmp_path_factory):
    """The quick demo's steps (training/demo.sh --quick) on a tiny budget, run with the fresh environment from a
    folder outside the source tree: train a few steps on the default corpus, then `hf-minattn probe` (which writes
    the report). Returns the model folder and the files the processes opened."""
    work, log = tmp_path_factory.mktemp("work"), tmp_path_factory.mktemp("open_log")
    assert not work.resolve().is_relative_to(REPO)
    venv.run(["python", "-m", "hf_minattn.run_mlm", "--output_dir", "model", "--model_size", "tiny",
              "--vocab_size", 1000, "--max_steps", 5, "--warmup_steps", 1, "--logging_steps", 2,
              "--per_device_train_batch_size", 8, "--per_device_eval_batch_size", 16, "--max_train_samples", 200,
              "--max_eval_samples", 32, "--learning_rate", 1e-3, "--mlm_probability", 0.3, "--bf16", "false",
              "--seed", 42, "--disable_tqdm", "true"], cwd=work, open_log=log)
    venv.run(["hf-minattn", "probe", "model", "--out", "model/probes", "--max-sentences", 60, "--head-sentences", 10,
              "--min-count", 2, "--no-word2vec", "--vector-max-sentences", 300, "--bootstrap", 20,
              "--mlm-probability", 0.3],  # the rate it was trained at, as the demo probes
             cwd=work, open_log=log)
    return work / "model", opened_files(log)


def test_the_demo_steps_run_from_the_wheel_and_write_a_report_whose_links_resolve(demo):
    model, _ = demo
    for name in ("config.json", "model.safetensors", "tokenizer.json", "modeling_minattn.py", "README.md",
                 "drift.json", "probes/probes.json"):
        assert (model / name).is_file(), name
    page = (model / "probes" / "report.html").read_text(encoding="utf-8")
    links = {link for link in re.findall(r'(?:href|src)="([^"]+)"', page)
             if not re.match(r"(#|data:|[a-z]+://|mailto:)", link)}
    missing = sorted(link for link in links if not (model / "probes" / link.split("#")[0]).exists())
    assert not missing, f"report.html links to files that do not exist: {missing}"


def test_the_demo_steps_read_the_package_data_from_the_installed_package(demo, venv):
    """Each data file the steps need was opened from the fresh site-packages, and no file of the source tree was
    opened (this environment, whose site-packages the fresh one borrows, may lie inside it: .venv)."""
    _, opened = demo
    installed = venv.site_packages / "hf_minattn"
    missing = [name for name in DEMO_READS if installed / name not in opened]
    assert not missing, f"not read from {installed}: {missing}"
    from_tree = sorted(str(p) for p in opened if p.is_relative_to(REPO) and not p.is_relative_to(TEST_PREFIX))
    assert not from_tree, f"files of the source tree were opened: {from_tree[:20]}"
