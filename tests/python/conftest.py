"""Shared fixtures. Tests import the installed `eidola` package (scripts/setup.sh installs it),
so they check what a user gets, native library included."""

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: Every platform file shipped in platforms/ (the examples there are Python, not platforms).
SHIPPED_PLATFORMS = sorted((REPO / "platforms").glob("*.yaml"))


def _test_models_library() -> Path | None:
    """The tests' own models (FaultInjector), built by CMake with the C++ tests (scripts/test.sh builds build/cpp)."""
    found = sorted(REPO.glob("build/*/tests/cpp/libeidola_test_models.so"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


# Set before eidola loads its native library (and inherited by the CLI subprocesses), so the
# catalog lists the test models too.
if "EIDOLA_MODEL_LIBS" not in os.environ and _test_models_library():
    os.environ["EIDOLA_MODEL_LIBS"] = str(_test_models_library())


@pytest.fixture
def interruptible():
    """subprocess.Popen for a child the test will interrupt with SIGINT, started with SIGINT at its default.

    Why: a shell starts background jobs with SIGINT ignored, and Python keeps an ignored SIGINT, so
    when the suite itself runs in the background the child would ignore the test's Ctrl-C.
    """

    def popen(cmd, **kwargs):
        return subprocess.Popen(cmd, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **kwargs)

    return popen


@pytest.fixture
def repo() -> Path:
    """The source tree."""
    return REPO


@pytest.fixture
def write_platform(tmp_path):
    """Writes a platform YAML (ideal fabric by default) into tmp_path and returns its path."""

    def write(text: str = "", name: str = "plat.yaml", **fields) -> Path:
        body = textwrap.dedent(text) if text else _platform_text(**fields)
        path = tmp_path / name
        path.write_text(body)
        return path

    return write


def _platform_text(gpus=4, workgroups=4, latency="500ns", mem_latency="300ns", mem_bw="5.3TB/s",
                   profile=None, max_outstanding=64, max_payload="256B") -> str:
    lines = [
        "eidola: 1",
        "name: test-platform",
        "gpus:",
        f"  count: {gpus}",
        f"  workgroups: {workgroups}",
        f"  max_outstanding: {max_outstanding}",
        f"  max_payload: {max_payload}",
        f"  memory: {{latency: {mem_latency}, bandwidth: {mem_bw}}}",
        "fabric:",
        "  model: ideal",
        f"  latency: {latency}",
    ]
    if profile:
        lines.append(f"profile: {profile}")
    return "\n".join(lines) + "\n"


@pytest.fixture
def cli(tmp_path):
    """Runs `python -m eidola ARGS` in tmp_path; returns the CompletedProcess."""

    def run(*args):
        return subprocess.run([sys.executable, "-m", "eidola", *map(str, args)], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)

    return run


@pytest.fixture(scope="session")
def simple_bus_lib(request):
    """Builds examples/third_party_ip with its own CMakeLists (as a vendor would), once."""
    root = request.config.rootpath
    build = root / "build" / "third_party_ip"
    # Ninja, as scripts/test.sh configures the same folder: CMake refuses to switch a folder's generator.
    subprocess.run(["cmake", "-S", root / "examples" / "third_party_ip", "-B", build, "-G", "Ninja"], check=True,
                   capture_output=True)
    subprocess.run(["cmake", "--build", build], check=True, capture_output=True)
    return build / "libsimplebus.so"
