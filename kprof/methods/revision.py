"""A method as it was at a git revision, loaded beside the working tree's (``--method NAME@REV``).

Timing a method against its own earlier version in the same rounds is the sound way to ask
whether a commit made it slower: runs on different days differ by more than their intervals.
The revision's kernel tree (``kernels/``, which imports as ``kprof.kernels``) and the method's
adapter module are read from the git objects, never from the checkout, written to a cache
folder with their ``kprof.kernels`` (and adapter) references renamed to an isolated package
``kprof_at_<sha>``, and imported from there. Everything else (the Method interface, the harness,
workloads) is the working tree's, so the revision's adapter must still fit today's interface.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import types
from pathlib import Path

from kprof.core.errors import KprofError
from kprof.methods.base import Method

KERNELS_DIR = "kernels"  # the folder that installs as kprof.kernels (pyproject package-dir)
REWRITE = 2  # version of the source rewrite below


class RevisionError(KprofError):
    """A revision that cannot be read or whose method cannot be loaded."""


def _git(repo: Path, *args: str, binary: bool = False):
    try:
        out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True, timeout=60)
    except FileNotFoundError:
        raise RevisionError("NAME@REV needs git on PATH: install git, or drop @REV") from None
    except subprocess.CalledProcessError as exc:
        raise RevisionError(exc.stderr.decode(errors="replace").strip().splitlines()[-1] if exc.stderr else str(exc)) \
            from None
    return out.stdout if binary else out.stdout.decode()


def source_repo(here: Path | None = None) -> Path:
    """The git checkout kprof's own source lives in (where revisions are read from)."""
    here = here or Path(__file__).resolve().parent
    try:
        return Path(_git(here, "rev-parse", "--show-toplevel").strip())
    except RevisionError as exc:
        raise RevisionError(f"NAME@REV needs kprof installed from a git checkout (pip install -e .), and {here} is "
                            f"not inside one that git will read (git: {exc}): drop @REV, or install kprof from its "
                            "repository") from None


def resolve(rev: str, repo: Path | None = None) -> str:
    """The full commit id of ``rev`` in kprof's checkout."""
    repo = repo or source_repo()
    try:
        return _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").strip()
    except RevisionError:
        raise RevisionError(f"unknown git revision {rev!r} in {repo}: use a commit, tag or branch that "
                            "`git rev-parse` knows (e.g. HEAD~1)") from None


def cache_root() -> Path:
    base = os.environ.get("KPROF_HOME")
    if base:
        return Path(base) / "revisions"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kprof" / "revisions"


def package_name(sha: str) -> str:
    return f"kprof_at_{sha[:12]}"


# kprof modules that moved since older revisions were written (the re-layer of 2026-12): their
# code imports the old names, which resolve to today's modules of the same interface
MOVED = {
    "kprof.errors": "kprof.core.errors", "kprof.atomic": "kprof.core.atomic",
    "kprof.execution": "kprof.core.target", "kprof.host_memory": "kprof.core.host_memory",
    "kprof.config_space": "kprof.core.config_space", "kprof.methods.reference": "kprof.methods.dense_reference",
    "kprof.validation": "kprof.methods.validation",
}
_MOVED = re.compile(r"\b(" + "|".join(re.escape(k) for k in MOVED) + r")\b(?![\w.])")


def _rewrite(text: str, pkg: str) -> str:
    """Point the revision's references to its own kernels at the isolated package, and its
    imports of kprof modules that moved since to where they are now."""
    text = _MOVED.sub(lambda m: MOVED[m.group(1)], text)
    return re.sub(r"\bkprof\.kernels\b", f"{pkg}.kernels", text)


def _adapter_path(repo: Path, sha: str, cls: type) -> str:
    """The revision's file holding the method's adapter class: the same path as today's, or the
    file that defines a class of the same name."""
    module = sys.modules[cls.__module__]
    today = Path(module.__file__).resolve()
    try:
        rel = today.relative_to(repo).as_posix()
    except ValueError:
        rel = None
    listed = set(_git(repo, "ls-tree", "-r", "--name-only", sha).split())
    if rel and rel in listed:
        return rel
    hits = [line.split(":", 2)[1] for line in
            _git_grep(repo, sha, rf"^class {re.escape(cls.__name__)}\b") if line.count(":") >= 2]
    if not hits:
        raise RevisionError(f"revision {sha[:12]} has no {cls.__name__} (the {cls.name!r} adapter): the method did "
                            "not exist then; pick a later revision")
    return hits[0]


def _git_grep(repo: Path, sha: str, pattern: str) -> list[str]:
    try:
        return _git(repo, "grep", "-E", pattern, sha, "--", "*.py").splitlines()
    except RevisionError:
        return []  # git grep exits 1 when nothing matches


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def materialise(sha: str, adapter_rel: str, repo: Path) -> Path:
    """The revision's kernel tree (built once, atomically) and the adapter file, rewritten, in the
    cache folder of that revision."""
    pkg = package_name(sha)
    root = cache_root() / f"rewrite{REWRITE}" / pkg  # a new rewrite rule never reuses old copies
    if not (root / ".complete").exists():
        names = [n for n in _git(repo, "ls-tree", "-r", "--name-only", sha, "--", KERNELS_DIR).split()
                 if n.endswith(".py")]
        if not names:
            raise RevisionError(f"revision {sha[:12]} has no {KERNELS_DIR}/ folder: pick a later revision")
        _copy_once(root, sha, {_dest_rel(name): _rewrite(_git(repo, "show", f"{sha}:{name}", binary=True).decode(),
                                                          pkg) for name in names})
    dest = root / _dest_rel(adapter_rel)
    if not dest.exists():
        _write_atomic(dest, _rewrite(_git(repo, "show", f"{sha}:{adapter_rel}", binary=True).decode(), pkg))
    folder = dest.parent
    while folder != root:  # every folder on the way a regular package
        if not (folder / "__init__.py").exists():
            _write_atomic(folder / "__init__.py", "")
        folder = folder.parent
    return root


def _importable(package_root: Path) -> None:
    """Put the folder holding an isolated package on ``sys.path`` (last, so it shadows nothing):
    multiprocessing workers the revision's code starts (santa builds its layout in a spawn pool)
    get the parent's path and import the package by the name the functions they unpickle carry."""
    folder = str(package_root.parent.resolve())
    if folder not in sys.path:
        sys.path.append(folder)


def _copy_once(root: Path, sha: str, files: dict[str, str]) -> None:
    """Write ``files`` (relative path -> text) as the folder ``root``, once and atomically: built
    beside it and renamed into place, so a concurrent or interrupted build never leaves half a copy."""
    if (root / ".complete").exists():
        return
    tmp = Path(tempfile.mkdtemp(prefix=f".{root.name}-", dir=_mkdir(root.parent)))
    try:
        for rel, text in files.items():
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_text(text)
        (tmp / ".complete").write_text(sha + "\n")
        try:
            os.replace(tmp, root)
        except OSError:  # another process won the race: its copy is the same
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _dest_rel(repo_path: str) -> str:
    """Where a revision file goes under the isolated package: kernels/x -> kernels/x, kprof/y -> y."""
    return repo_path if repo_path.startswith(KERNELS_DIR + "/") else repo_path.removeprefix("kprof/")


def _module_of(repo_path: str) -> str:
    """The module name a repository path imports as today (kernels/ -> kprof.kernels)."""
    stem = repo_path.removesuffix(".py").removesuffix("/__init__")
    if stem.startswith(KERNELS_DIR + "/"):
        stem = "kprof/" + stem
    return stem.replace("/", ".")


def _family_modules(cls: type) -> list[str]:
    """The modules a revision's method runs: its kernel family's package and ``kernels.common``
    (``<pkg>.kernels.<family>.method``), or the ``kernel_modules`` older adapters listed."""
    parts = cls.__module__.split(".")
    names = list(getattr(cls, "kernel_modules", ()))
    if "kernels" in parts[:-1]:
        k = parts.index("kernels")
        kernels = sys.modules[".".join(parts[: k + 1])]
        for sub in ([parts[k + 1]] if len(parts) > k + 2 else []) + ["common"]:
            folder = Path(kernels.__path__[0]) / sub
            names += [f"{kernels.__name__}.{sub}.{f.stem}" for f in sorted(folder.glob("*.py")) if f.stem != "__init__"]
    return names


def _home(value) -> str:
    """The module a global of the revision's code comes from ('' for plain data)."""
    if isinstance(value, types.ModuleType):
        return value.__name__
    return getattr(value, "__module__", None) or "" if callable(value) else ""


def load_method_class(name: str, cls: type, rev: str, capturing, repo: Path | None = None) -> type:
    """The revision's class for method ``name`` (today's class ``cls``), renamed ``name@<sha>``.

    ``capturing()`` is the registry's context that collects, instead of registering, the
    classes the revision's adapter registers; ``repo`` defaults to kprof's own checkout."""
    repo = repo or source_repo()
    sha = resolve(rev, repo)
    adapter_rel = _adapter_path(repo, sha, cls)
    root = materialise(sha, adapter_rel, repo)
    pkg = package_name(sha)
    module_name = f"{pkg}.{_dest_rel(adapter_rel).removesuffix('.py').replace('/', '.')}"
    _importable(root)
    if pkg not in sys.modules:
        root_module = types.ModuleType(pkg, f"kprof kernels at {sha}")
        root_module.__path__ = [str(root)]
        sys.modules[pkg] = root_module
    before = {m for m in sys.modules if m == "kprof.kernels" or m.startswith("kprof.kernels.")}
    with capturing() as registered:
        try:
            module = importlib.import_module(module_name)
            found = [c for c in registered if getattr(c, "name", None) == name]
            found = found or [c for c in vars(module).values()
                              if isinstance(c, type) and getattr(c, "name", None) == name]
            if not found:
                raise RevisionError(f"{name}@{rev}: the revision's {adapter_rel} defines no method named {name!r}")
            old = found[0]
            for kernel_module in _family_modules(old):  # adapters import their kernels lazily
                importlib.import_module(kernel_module)
            old().config_space()
        except RevisionError:
            raise
        except Exception as exc:  # noqa: BLE001 - whatever the old code raises, say it in one line
            first = (str(exc).strip().splitlines() or [""])[0]
            raise RevisionError(f"{name}@{rev}: the revision's method cannot be loaded into this kprof "
                                f"({type(exc).__name__}: {first[:200]}): its Method interface differs from "
                                "today's; compare against a later revision") from None
    leaked = sorted({m for m in sys.modules if m == "kprof.kernels" or m.startswith("kprof.kernels.")} - before)
    stray = [m for m in getattr(old, "kernel_modules", ()) if not m.startswith(pkg + ".")]
    for loaded in [module] + [sys.modules[m] for m in _family_modules(old) if m in sys.modules]:
        stray += sorted({_home(v) for v in vars(loaded).values() if _home(v).startswith("kprof.kernels")})
    if leaked or stray:
        raise RevisionError(f"{name}@{rev}: the revision's code reaches today's kernels ({', '.join(leaked + stray)}), "
                            "so the comparison would time today's code against itself: compare against another "
                            "revision")
    attrs = {"name": f"{name}@{sha[:12]}", "revision": sha, "__module__": old.__module__}
    if _declares_bytes(cls) and not _declares_bytes(old):
        # The base class's dense default would be wrong for a sparse method whose revision
        # predates byte declarations: its throughput is unknown, not dense.
        attrs["bytes_per_call"] = lambda self, workload, prepared: None
    return type(old.__name__, (old,), attrs)


def _user_rewrite(text: str, top: str, pkg: str) -> str:
    """Point a user package's absolute imports of itself at its isolated copy (relative imports
    need nothing)."""
    pattern = re.compile(rf"^(\s*(?:from|import)\s+){re.escape(top)}\b", re.M)
    return pattern.sub(lambda m: m.group(1) + pkg, text)


def load_user_object(module_name: str, attr: str, rev: str) -> tuple[object, str]:
    """``attr`` of the user's module ``module_name`` as it was at ``rev`` of the git repository
    that holds it, and the commit: the module's whole top-level package is read from the git
    objects into an isolated package ``<top>_at_<sha>``, so its siblings come from that revision too."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(module_name)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise RevisionError(f"{module_name}@{rev}: module {module_name!r} cannot be found as a source file: install "
                            "it or add its folder to PYTHONPATH")
    path = Path(spec.origin).resolve()
    top = module_name.split(".")[0]
    top_spec = importlib.util.find_spec(top)
    top_path = Path(top_spec.submodule_search_locations[0] if top_spec.submodule_search_locations
                    else top_spec.origin).resolve()
    try:
        repo = Path(_git(path.parent, "rev-parse", "--show-toplevel").strip()).resolve()
    except RevisionError:
        raise RevisionError(f"{module_name}@{rev}: {path} is not inside a git repository: commit it to one, or drop "
                            "@REV") from None
    sha = resolve(rev, repo)
    rel = top_path.relative_to(repo).as_posix()
    iso = f"{top}_at_{sha[:12]}"
    # a folder per repository: two repositories may share a package name and a 12-digit sha prefix
    root = cache_root() / "user" / hashlib.sha256(str(repo).encode()).hexdigest()[:12] / iso
    if not (root / ".complete").exists():
        names = [n for n in _git(repo, "ls-tree", "-r", "--name-only", sha, "--", rel).split() if n.endswith(".py")]
        if not names:
            raise RevisionError(f"{module_name}@{rev}: {rel} does not exist at {sha[:12]} in {repo}: pick a revision "
                                "that has it")
        _copy_once(root, sha, {
            (Path(name).relative_to(rel).as_posix() if top_path.is_dir() else "__init__.py"):
                _user_rewrite(_git(repo, "show", f"{sha}:{name}", binary=True).decode(), top, iso)
            for name in names})
    _importable(root)
    if iso not in sys.modules:
        package = types.ModuleType(iso, f"{top} at {sha}")
        package.__path__ = [str(root)]
        sys.modules[iso] = package
        if (root / "__init__.py").exists():
            spec = importlib.util.spec_from_file_location(iso, root / "__init__.py",
                                                          submodule_search_locations=[str(root)])
            module = importlib.util.module_from_spec(spec)
            sys.modules[iso] = module
            spec.loader.exec_module(module)
    inner_name = iso + module_name[len(top):]
    try:
        module = importlib.import_module(inner_name)
    except ModuleNotFoundError:
        raise RevisionError(f"{module_name}@{rev}: module {module_name!r} did not exist at {sha[:12]}: pick a later "
                            "revision") from None
    except Exception as exc:  # noqa: BLE001 - the old code fails to import: one line
        first = (str(exc).strip().splitlines() or [""])[0]
        raise RevisionError(f"{module_name}@{rev}: the revision's module cannot be imported ({type(exc).__name__}: "
                            f"{first[:200]})") from None
    if not hasattr(module, attr):
        raise RevisionError(f"{module_name}@{rev}: the revision's {module_name} has no {attr!r}: pick a later revision")
    return getattr(module, attr), sha


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _declares_bytes(cls: type) -> bool:
    return any("bytes_per_call" in vars(c) for c in cls.__mro__ if c is not Method)
