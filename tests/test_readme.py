"""The README and the repository's self-containment.

- The README's layout table names every package under harness/ (a folder with an __init__.py
  directly under harness/), so a new stage cannot appear without being described.
- No tracked file refers to notes outside the repository: the public source of a figure is
  named where the figure is used (reports/*.toml), never a file beside the checkout.
- The README stays a page a user reads: at most README_MAX_LINES lines; the long stories live in docs/.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Written split so that this file does not match itself.
OUTSIDE = ("reference" + ".md", "design" + ".md", "../" + "shared")
README_MAX_LINES = 350  # issue 31: what a user needs; narratives and history go to docs/ and benchmarks/results/


def harness_packages(root: Path = ROOT) -> list[str]:
    return sorted(p.parent.name for p in (root / "harness").glob("*/__init__.py"))


def layout_table(readme: str) -> list[str]:
    """The first cells of the table under the README's "## Layout" heading."""
    match = re.search(r"^## Layout[^\n]*\n(.*?)(?=^## |\Z)", readme, re.S | re.M)
    assert match, 'README.md has no "## Layout" section'
    rows = [line for line in match.group(1).splitlines() if line.startswith("|")]
    cells = [row.split("|")[1].strip() for row in rows[2:]]  # skip the header and its rule
    assert cells, 'the "## Layout" section of README.md has no table'
    return cells


def missing_packages(readme: str, packages: list[str]) -> list[str]:
    named = {cell.strip("`").rstrip("/") for cell in layout_table(readme)}
    return [p for p in packages if f"harness/{p}" not in named]


def tracked_text_files(root: Path = ROOT) -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
    files = []
    for name in listed.decode().split("\0"):
        path = root / name
        if not name or not path.is_file():  # deleted in the working tree, or a submodule
            continue
        head = path.read_bytes()[:8192]
        if b"\0" in head:  # binary (captures, images)
            continue
        files.append(path)
    return files


def outside_references(files: list[Path], root: Path = ROOT) -> list[str]:
    found = []
    for path in files:
        text = path.read_text(errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            for word in OUTSIDE:
                if word in line:
                    found.append(f"{path.relative_to(root)}:{number}: {word!r}: {line.strip()[:100]}")
    return found


def test_layout_table_names_every_harness_package():
    packages = harness_packages()
    assert packages, "no package found under harness/"
    missing = missing_packages((ROOT / "README.md").read_text(), packages)
    assert not missing, (f"README.md's layout table does not name {', '.join(f'harness/{p}' for p in missing)}: "
                         "add a row for each")


def test_the_readme_is_at_most_its_length():
    lines = len((ROOT / "README.md").read_text().splitlines())
    assert lines <= README_MAX_LINES, (f"README.md has {lines} lines, over {README_MAX_LINES}: move a narrative to "
                                       "docs/ (docs/reports/, docs/measurements.md) and link it")


def test_no_tracked_file_refers_outside_the_repository():
    found = outside_references(tracked_text_files())
    assert not found, ("files refer to notes outside the repository; name the public source instead:\n"
                       + "\n".join(found))


# The checks themselves, on made-up input: they must fail when the README or a file is wrong.

def test_layout_check_sees_a_missing_package():
    readme = "# x\n\n## Layout\n\n| path | what |\n|---|---|\n| `harness/core` | c |\n| `docs/` | d |\n\n## Next\n"
    assert missing_packages(readme, ["core", "rig"]) == ["rig"]
    assert missing_packages(readme, ["core"]) == []


def test_layout_check_ignores_packages_named_outside_the_table():
    readme = ("# x\n\nharness/rig is mentioned here.\n\n## Layout\n\n| path | what |\n|---|---|\n"
              "| `harness/core` | c |\n\n## Next\n\n| `harness/rig` | another table |\n")
    assert missing_packages(readme, ["core", "rig"]) == ["rig"]


def test_layout_check_needs_the_section():
    with pytest.raises(AssertionError):
        layout_table("# x\n\nno layout here\n")


def test_outside_check_finds_each_word(tmp_path):
    good, bad = tmp_path / "good.toml", tmp_path / "bad.toml"
    good.write_text("# source: https://github.com/micropython/micropython/pull/19629\n")
    bad.write_text("\n".join(f"# see {word}" for word in OUTSIDE) + "\n")
    found = outside_references([good, bad], root=tmp_path)
    assert len(found) == len(OUTSIDE) and all(f.startswith("bad.toml:") for f in found)


def test_the_readme_report_tables_are_the_stored_results():
    """Each table the README quotes is the one its stored result holds (tools/readme_tables.py rewrites them)."""
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "readme_tables.py"), "--check"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_readme_table_that_differs_from_its_stored_result_is_named(tmp_path):
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import readme_tables
    finally:
        sys.path.pop(0)
    text = (ROOT / "README.md").read_text()
    stored = re.findall(r"stored:\s*(benchmarks/results/reproduce-[\w.-]+\.md)", text)
    assert stored, "the README quotes stored report tables"
    first_row = readme_tables.stored_table(ROOT / stored[0])[2]
    changed_text, changed = readme_tables.rewritten(text.replace(first_row, first_row.replace("  ", " x", 1), 1))
    assert changed == [stored[0]] and changed_text == readme_tables.rewritten(text)[0]


_DECIMAL = re.compile(r"(?<![\w.])\d+\.\d+(?![\w.])")


def unbacked_benchmark_figures(readme: str, results: Path = ROOT / "benchmarks" / "results") -> list[str]:
    """Each decimal figure of the README's benchmark table that its row's stored results (the `*.md` it
    names) do not hold, to the figure's own precision: "row: figure"."""
    section = readme[readme.index("## Benchmarks"):readme.index("\n## ", readme.index("## Benchmarks") + 1)]
    missing = []
    for row in (line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| what")):
        cell = row.rstrip(" |").split(" | ")[-1]
        stored = [f for pattern in re.findall(r"`([\w.*-]+\.md)`", cell) for f in sorted(results.glob(pattern))]
        held = re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?!\d)", " ".join(f.read_text() for f in stored))
        for figure in _DECIMAL.findall(cell):
            places = len(figure.split(".")[1])
            if not any(round(float(h), places) == float(figure) for h in held):
                missing.append(f"{cell[:40]}...: {figure}")
    return missing


def test_every_benchmark_figure_of_the_readme_is_in_its_stored_result():
    assert unbacked_benchmark_figures((ROOT / "README.md").read_text()) == []


def test_a_benchmark_figure_without_a_stored_result_is_named():
    changed = (ROOT / "README.md").read_text().replace("5 runs 0.05 % spread", "5 runs 7.77 % spread", 1)
    assert any(m.endswith(": 7.77") for m in unbacked_benchmark_figures(changed))


# The prose of the worked example and of each report's section, and the stored reproduction it quotes.
REPORT_SECTIONS = {"## A worked example": "reproduce-openmv-n6.md", "### R1:": "reproduce-openmv-n6.md",
                   "### R2:": "reproduce-openmv-rt1060.md", "### R3:": "reproduce-ethernut2.md",
                   "### R4:": "reproduce-xbox.md"}


def _prose(section: str) -> str:
    """A section's text without its fenced blocks (the tables: checked above) and its HTML comments."""
    section = re.sub(r"^```.*?^```", "", section, flags=re.S | re.M)
    return re.sub(r"<!--.*?-->", "", section, flags=re.S)


def _unbacked(prose: str, stored: str, results: Path) -> list[str]:
    """The decimal figures of `prose` that neither its stored reproduction nor a stored result it names (`name.md`
    or `name.txt`) holds, to the figure's own precision."""
    named = {Path(n).name for n in re.findall(r"`(?:benchmarks/results/)?([\w.-]+\.(?:md|txt))`", prose)}
    files = [results / name for name in sorted(named | {stored}) if (results / name).exists()]
    held = re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?!\d)", " ".join(f.read_text() for f in files))
    return [figure for figure in _DECIMAL.findall(prose)
            if not any(round(float(h), len(figure.split(".")[1])) == float(figure) for h in held)]


def unbacked_report_figures(readme: str, results: Path = ROOT / "benchmarks" / "results") -> list[str]:
    """Each decimal figure in the prose of a report's section of the README that the stored results do not hold
    (_unbacked): "section figure"."""
    missing = []
    for heading, stored in REPORT_SECTIONS.items():
        start = readme.index(heading)
        end = min(i for i in (readme.find("\n## ", start + 1), readme.find("\n### ", start + 1), len(readme)) if i > 0)
        missing += [f"{heading.strip('# ')} {f}" for f in _unbacked(_prose(readme[start:end]), stored, results)]
    return missing


def unbacked_doc_figures(doc: Path, stored: str, results: Path = ROOT / "benchmarks" / "results") -> list[str]:
    """The same for a whole page of docs/reports/ and its report's stored reproduction."""
    return [f"{doc.name} {f}" for f in _unbacked(_prose(doc.read_text()), stored, results)]


def test_every_figure_of_a_reports_prose_is_in_a_stored_result():
    """The prose around the report tables (the README's, and each report's page in docs/reports/) quotes the
    stored reproductions (or a stored result it names), so a rerun that moves a figure fails here until the
    prose says the new one."""
    assert unbacked_report_figures((ROOT / "README.md").read_text()) == []
    pages = sorted((ROOT / "docs" / "reports").glob("*.md"))
    assert pages, "each report has its page in docs/reports/"
    assert [m for page in pages for m in unbacked_doc_figures(page, f"reproduce-{page.stem}.md")] == []


def test_a_prose_figure_no_stored_result_holds_is_named():
    readme = (ROOT / "README.md").read_text()
    start = readme.index("### R1:")
    changed = readme[:start] + readme[start:].replace("Mbit/s", "Mbit/s (77.77 in a dream)", 1)
    assert "R1: 77.77" in unbacked_report_figures(changed)
