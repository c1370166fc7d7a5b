"""The README's report tables, made from the stored results they quote.

    .venv/bin/python tools/readme_tables.py          # rewrite the README's tables from benchmarks/results
    .venv/bin/python tools/readme_tables.py --check  # exit 1 (naming the table) when one differs

A README block marked `stored: benchmarks/results/reproduce-NAME.md` holds the table of that
file's `format_report` output: from its header row (`case ...`) to the summary line that closes
it. benchmarks/reproduce_bench.py writes those files; this script copies their tables, so a
figure the README quotes is always one a stored run produced (tests/test_readme.py runs --check).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
_MARKER = re.compile(r"^stored:\s*(benchmarks/results/reproduce-[\w.-]+\.md)\s*$")


def stored_table(path: Path) -> list[str]:
    """The table of a stored reproduce result: its header row through its summary line."""
    lines = path.read_text().splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("case ")), None)
    end = next((i for i, line in enumerate(lines) if "report figures agree within" in line), None)
    if start is None or end is None or end < start:
        raise SystemExit(f"readme_tables: {path} holds no report table; rerun benchmarks/reproduce_bench.py")
    return lines[start:end + 1]


def rewritten(text: str) -> tuple[str, list[str]]:
    """The README with every stored table replaced from its file, and the files whose table changed."""
    lines, out, changed, i = text.splitlines(), [], [], 0
    while i < len(lines):
        out.append(lines[i])
        match = _MARKER.match(lines[i].strip())
        i += 1
        if not match:
            continue
        while i < len(lines) and not lines[i].startswith("```"):  # the rest of the comment, up to the fence
            out.append(lines[i])
            i += 1
        if i >= len(lines):
            break
        out.append(lines[i])  # the opening fence
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        table = stored_table(ROOT / match[1])
        if lines[i + 1:end] != table:
            changed.append(match[1])
        out += table
        i = end
    return "\n".join(out) + "\n", changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check; exit 1 when a table differs")
    args = parser.parse_args()
    text, changed = rewritten(README.read_text())
    if args.check:
        for name in changed:
            print(f"README.md: the table from {name} differs; run .venv/bin/python tools/readme_tables.py")
        return 1 if changed else 0
    README.write_text(text)
    print(f"README.md: {len(changed)} table(s) rewritten" + (f" ({', '.join(changed)})" if changed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
