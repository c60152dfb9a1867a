"""MkDocs hook: the site's home page is the README, read at build time, so there is one source.

The README's links are relative to the repository root (they work on GitHub). On the site they
are rewritten: `docs/X` becomes `X` (the page or figure inside the docs directory), and any other
file the README links to (a figure under experiments/ or bench/) is copied into the site at the same
path, so the link resolves there unchanged. A link to something that does not exist is left as it
is, for `mkdocs build --strict` to report.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

_LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s#]+)([^)]*\))")  # [text](target "title") and ![alt](target)


def on_files(files: Files, config: Any) -> Files:
    root = Path(config.config_file_path).resolve().parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    copied: set[str] = set()

    def rewrite(m: re.Match[str]) -> str:
        target = m.group(2)
        if "://" in target or target.startswith(("/", "mailto:")):
            return m.group(0)
        if target.startswith("docs/"):
            return m.group(1) + target.removeprefix("docs/") + m.group(3)
        if (root / target).is_file() and target not in copied:
            copied.add(target)
            files.append(File(target, str(root), config.site_dir, config.use_directory_urls))
        return m.group(0)

    files.append(File.generated(config, "index.md", content=_LINK.sub(rewrite, readme)))
    return files
