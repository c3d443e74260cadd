"""The hostile corpus (tests/hostile_files.py) through `patchbay check` and `patchbay run --headless
--frames 2`, each in a subprocess under a time limit and a memory cap, with an audit hook.

Every case ends with the exit status it expects: 2 with exactly one line on stderr (at most about
300 characters, control characters escaped, no traceback), or 0. No case may open a file outside its
patch's folder, the package (code and built-in resources), the Python installation and the
person's config folder. The time limit only catches hangs (a FIFO opened, a super-linear parser):
it is far above what any case needs.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.hostile_files import CASES, HostileCase, document, write

ROOT = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("hostile_probe.py")
MEMORY_CAP_BYTES = 3 * 1024**3  # the file-made bombs asked for 7 GB and more
TIME_LIMIT_SECONDS = 120
ONE_LINE_CHARS = 330  # a message of at most 300 characters, and the command's prefix


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP_BYTES, MEMORY_CAP_BYTES))


def _allowed_folders(case_folder: Path) -> list[str]:
    python = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    python.update(sysconfig.get_paths().values())
    package = [ROOT / name for name in ("app", "nodes", "evaluators", "resources", "tests")]
    package.append(ROOT / "patchbay.egg-info")  # our own entry points, read to find node packs
    harmless = ["/dev/null"]  # opened by the GL context's loader
    return sorted({*python, *map(str, package), *harmless, str(case_folder / "patch"),
                   str(case_folder / "config")})  # fmt: skip


def run_case(
    case: HostileCase, folder: Path, trusted: bool = False
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run a case; `trusted` keeps PATCHBAY_TRUSTED_DIRS from the environment."""
    (folder / "patch").mkdir(parents=True)
    path = case.make(folder / "patch")
    if case.command == "run":
        arguments = ["run", str(path), "--headless", "--frames", "2"]
    else:
        arguments = ["check", str(path)]
    log = folder / "opened-outside.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CONFIG_HOME": str(folder / "config")}
    if not trusted:
        env.pop("PATCHBAY_TRUSTED_DIRS", None)
    result = subprocess.run(
        [sys.executable, str(PROBE), str(log), json.dumps(_allowed_folders(folder)), "--",
         *arguments, *case.extra],
        capture_output=True,
        text=True,
        errors="replace",
        cwd=folder / "patch",
        env=env,
        timeout=TIME_LIMIT_SECONDS,
        preexec_fn=_cap_memory,
    )  # fmt: skip
    opened = log.read_text().splitlines() if log.exists() else []
    return result, opened


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_hostile_file(case: HostileCase, tmp_path: Path) -> None:
    result, opened = run_case(case, tmp_path / case.name)
    stderr = result.stderr.strip()
    assert "Traceback" not in stderr, stderr[-2000:]
    assert result.returncode == case.exit_code, stderr[-2000:]
    if case.exit_code == 2:
        assert len(stderr.splitlines()) == 1, stderr[-2000:]
        assert len(stderr) <= ONE_LINE_CHARS, stderr
        assert "\x1b" not in stderr
        assert case.says in stderr, stderr
    assert opened == [], f"opened outside the patch's folder: {opened[:5]}"


def test_the_audit_hook_sees_files_opened_outside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook is no empty check: a shader in a trusted folder is opened (rightly, the person
    trusts it) and shows up, being outside the patch's folder."""
    library = tmp_path / "case" / "library"
    library.mkdir(parents=True)
    (library / "x.glsl").write_text("uniform float a;")
    monkeypatch.setenv("PATCHBAY_TRUSTED_DIRS", str(library))

    def make(folder: Path) -> Path:
        values = {"source": "", "file": "../library/x.glsl"}
        return write(folder, document([{"id": "s", "type": "gpu.shader", "values": values}]))

    result, opened = run_case(HostileCase("trusted", make, 0), tmp_path / "case", trusted=True)
    assert result.returncode == 0, result.stderr
    assert json.dumps(str(library / "x.glsl")) in opened


def test_the_corpus_covers_the_cases_of_the_issue() -> None:
    names = {case.name for case in CASES}
    assert len(names) == len(CASES)
    for needed in ("shader_source_spaces", "shader_file_fifo", "sidecar_fifo", "image_fifo_run",
                   "links_reversed_8000", "array_range_1e9_run", "gpu_solid_16384_run",
                   "zip_bomb_unreferenced", "npz_header_8_tib", "array_as_list",
                   "array_as_dict_keys", "int_5000_digits", "sidecar_empty", "sidecar_truncated",
                   "sidecar_bad_crc", "sidecar_plain_npy", "shader_file_nosuchuser",
                   "shader_file_dev_zero_run", "shader_file_absolute_run",
                   "shader_file_symlink_out_run", "escape_sequences_in_ids", "pos_1e308",
                   "pos_nan"):  # fmt: skip
        assert needed in names
