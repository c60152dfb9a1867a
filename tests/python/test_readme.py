"""The README's Python examples and its trace commands run as written (from the repository root)."""

import re
import subprocess
import sys


def test_every_readme_python_block_runs(repo):
    # Each block is self-contained and writes only under out/ (ignored by git).
    (repo / "out").mkdir(exist_ok=True)
    for code in re.findall(r"```python\n(.*?)```", (repo / "README.md").read_text(), re.S):
        out = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, (code, out.stderr)


def test_readme_python_example_runs(repo, tmp_path):
    text = (repo / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    code = code.replace('res.save("out/ping")', f'res.save({str(tmp_path / "ping")!r})')
    out = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    # One 4 KiB write (16 packets of 256 B, all in flight at once) then one signal, on the
    # platform with its latency overridden to 700 ns and memory at 300 ns + 5.3 TB/s:
    # GPU 1's first poll (issued at 0) sees nothing, so flag reads are at least 2.
    kernel, reads = out.stdout.split(" ", 1)
    assert float(kernel) > 1000 + 2 * (2 * 700 + 300)
    assert (tmp_path / "ping" / "summary.json").exists()


def test_readme_trace_commands_run(repo, tmp_path):
    """The README's --ranks example runs as written, the shared traces found where this checkout has them
    (test_import._shared_kineto) and out/ in a temporary folder; its compare writes one CSV row per
    collective of nccl_data (15 all_reduce, 6 broadcast)."""
    import csv

    from test_import import SHARED

    block = next(b for b in re.findall(r"```sh\n(.*?)```", (repo / "README.md").read_text(), re.S) if "--ranks" in b)
    lines = [line for line in block.splitlines() if line.strip()]
    assert len(lines) == 3
    for line in lines:
        args = line.replace("../shared/data/kineto", str(SHARED)).replace("out/", f"{tmp_path}/").split()
        assert args[0] == ".venv/bin/eidola"
        out = subprocess.run([sys.executable, "-m", "eidola", *args[1:]], cwd=repo, capture_output=True, text=True,
                             timeout=600)
        assert out.returncode == 0, (line, out.stderr)
    with open(tmp_path / "nccl8" / "compare.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["kind"] for r in rows].count("all_reduce") == 15 and len(rows) == 21
