"""Issue #32 item 2: the README's install lines stay the ones CI runs, and the CPU-only line takes the
same torch pin from PyTorch's CPU wheel index (a plain `pip install torch` on Linux gets the CUDA build)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CPU_INDEX = "--index-url https://download.pytorch.org/whl/cpu"


def _install_lines() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("## Install and run", 1)[1].split("\n## ", 1)[0]
    return [line for block in re.findall(r"```bash\n(.*?)```", section, re.S) for line in block.splitlines()
            if "pip install torch" in line]


def _pin() -> str:
    return next(line for line in (REPO / "constraints.txt").read_text().splitlines() if line.startswith("torch=="))


def test_the_readme_gives_the_one_line_install_and_a_cpu_only_one_with_the_same_pin():
    lines = _install_lines()
    plain = [line for line in lines if CPU_INDEX not in line]
    cpu = [line for line in lines if CPU_INDEX in line]
    assert len(plain) == 1 and len(cpu) == 1
    assert cpu[0].replace(f" {CPU_INDEX}", "") == plain[0]  # the same command, only the index added
    assert f"pip install {_pin()} " in plain[0]


def test_ci_installs_torch_as_the_readme_s_one_line_form():
    ci = (REPO / ".ci" / "run").read_text()
    plain = next(line for line in _install_lines() if CPU_INDEX not in line)
    torch_step = re.search(r"pip install (torch==\S+)", plain).group(1)
    assert f"pip install -q {torch_step}" in ci
    assert 'pip install -q -c constraints.txt -e ".[test,fracast,corpus,foundation,ray,supervised,submitit]"' in ci
    assert 'pip install -c constraints.txt -e ".[test,fracast,corpus,foundation,ray,supervised,submitit]"' in plain
