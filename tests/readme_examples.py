"""The README's examples as tests: Sybil finds the fenced blocks, this module says how each runs.

Sybil's Markdown lexer finds every fenced block of README.md; the HTML comment right before a
block (`<!-- example: ... -->`, visible in the Markdown source only) says how it runs. One rule
a line:

    + ARGS                  every command of the block runs with ARGS appended (a shortened form)
    PREFIX + ARGS           the commands that start with PREFIX (e.g. `./netrepro run`) do
    not run: REASON         no command of the block runs, and why (a netrepro command's options
    PREFIX not run: REASON  are still checked by its parser; a Python block is still compiled)
    pytest: WHERE           a Python block that is a pytest module of a user's project; WHERE
                            names the test that runs it (in a fresh install)
    stored: PATH            an output block copied from a stored result, which must hold it verbatim
    shape: COMMAND          ... and shaped like what COMMAND prints now (COMMAND runs)
    not rerun: REASON       ... or why its command does not run here

A block without a comment runs as it stands: each `sh` line, each `$ ` line of a `console` block
(whose other lines are that command's output, checked in shape: the same lines and columns, with
numbers, paths, verdicts and claims free), or a `python` block as a script. An output block
without `stored:` is refused. `# ...` after ARGS is a comment.

Commands run from a working folder that mirrors the checkout (a symbolic link for every entry
but .git and runs/), so `./netrepro` and `./test` run exactly as in the checkout while the run
folders they make stay out of it. Identical commands run once per test process.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sybil import Document, Example, Region
from sybil.parsers.markdown.lexers import RawFencedCodeBlockLexer

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
COMMAND_TIMEOUT_S = 900

# The lexer of Sybil's Markdown code-block parser, taking the whole info string (also none).
FENCES = RawFencedCodeBlockLexer(info_pattern=re.compile(r"(?P<language>[^\n]*)$\n", re.M))
MARKER_BEFORE = re.compile(r"<!--\s*example:(?P<body>(?:(?!-->).)*)-->\s*\Z", re.S)
COMMAND_LANGUAGES = ("sh", "console")
CLAIMS = ("holds", "FAILS", "unknown", "by-construction")
AGREES = ("yes", "no", "fitted", "chosen")  # a figure against the report's


# ------------------------------------------------------------------ parsing


@dataclass
class Rule:
    prefix: tuple[str, ...]            # the first words of the commands it applies to; () = all
    append: tuple[str, ...] = ()
    not_run: str | None = None

    def applies(self, argv: list[str]) -> bool:
        return tuple(argv[:len(self.prefix)]) == self.prefix


@dataclass
class Command:
    argv: list[str]
    output: list[str] = field(default_factory=list)   # console blocks: the lines shown after it
    rule: Rule | None = None

    @property
    def effective(self) -> list[str]:
        return self.argv + list(self.rule.append if self.rule else ())

    @property
    def runs(self) -> bool:
        return not (self.rule and self.rule.not_run)


@dataclass
class Block:
    """One fenced block of the document and what its marker says."""

    language: str
    source: str
    line: int
    marker: str | None = None
    rules: list[Rule] = field(default_factory=list)
    pytest: str | None = None
    stored: str | None = None
    shape: list[str] | None = None
    not_rerun: str | None = None
    problems: list[str] = field(default_factory=list)
    commands: list[Command] = field(default_factory=list)

    @property
    def kind(self) -> str:
        if self.pytest is not None:
            return "pytest"
        if self.stored is not None:
            return "stored"
        if self.language in COMMAND_LANGUAGES:
            return "commands"
        if self.language == "python":
            return "python"
        if self.language == "toml":
            return "toml"   # a file's text shown: it must read as TOML
        return "output"

    @property
    def not_run(self) -> str | None:
        """Why the block (all of it) does not run, if it says so."""
        reasons = [r.not_run for r in self.rules if r.not_run and not r.prefix]
        return reasons[0] if reasons else None

    @property
    def title(self) -> str:
        first = self.commands[0].argv if self.commands else None
        what = shlex.join(first[:3]) if first else self.stored or self.language or "output"
        return f"line {self.line}: {self.kind}: {what}"

    def runs_anything(self) -> bool:
        if self.kind == "commands":
            return any(c.runs for c in self.commands)
        if self.kind == "stored":
            return self.shape is not None
        return self.kind in ("pytest", "python") and self.not_run is None


def parse_marker(body: str, block: Block) -> None:
    for raw in body.strip().splitlines():
        line = raw.strip()
        if not line:
            continue
        if m := re.fullmatch(r"pytest:\s*(.+)", line):
            block.pytest = m[1]
        elif m := re.fullmatch(r"stored:\s*(\S+)", line):
            block.stored = m[1]
        elif m := re.fullmatch(r"shape:\s*(.+)", line):
            block.shape = shlex.split(m[1], comments=True)
        elif m := re.fullmatch(r"not rerun:\s*(.+)", line):
            block.not_rerun = m[1]
        elif m := re.fullmatch(r"(?P<prefix>.*?)\s*(?:\+\s+(?P<args>.+)|not run:\s*(?P<reason>.+))", line):
            prefix = tuple(shlex.split(m["prefix"]))
            if m["args"] is not None:
                block.rules.append(Rule(prefix, append=tuple(shlex.split(m["args"], comments=True))))
            else:
                block.rules.append(Rule(prefix, not_run=m["reason"].strip()))
        else:
            block.problems.append(f"cannot read the marker's line {line!r}")


def parse_commands(block: Block) -> None:
    lines = block.source.splitlines()
    if block.language == "console":
        for line in lines:
            if line.startswith("$ "):
                block.commands.append(Command(shlex.split(line[2:], comments=True)))
            elif block.commands:
                block.commands[-1].output.append(line.rstrip())
            elif line.strip():
                block.problems.append(f"output before the first `$ ` command: {line!r}")
        return
    logical, pending = [], ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    for line in logical:
        argv = shlex.split(line, comments=True)
        if argv:
            block.commands.append(Command(argv))


def make_block(language: str, source: str, line: int, before: str) -> Block:
    block = Block(language, source, line)
    found = MARKER_BEFORE.search(before)
    if found:
        block.marker = found["body"].strip()
        parse_marker(found["body"], block)
    if block.language in COMMAND_LANGUAGES and block.pytest is None and block.stored is None:
        parse_commands(block)
        for command in block.commands:
            rules = [r for r in block.rules if r.applies(command.argv)]
            command.rule = max(rules, key=lambda r: len(r.prefix), default=None)
        for rule in block.rules:
            if rule.prefix and not any(rule.applies(c.argv) for c in block.commands):
                block.problems.append(f"the marker's rule for {shlex.join(rule.prefix)!r} matches no command")
        if not block.commands:
            block.problems.append("a command block without a command")
    kind = block.kind
    if kind == "output":
        block.problems.append("an output block must say where it comes from (`stored: PATH`) "
                              "and how it is checked (`shape: COMMAND` or `not rerun: REASON`)")
    if kind == "stored" and (block.shape is None) == (block.not_rerun is None):
        block.problems.append("a stored block needs exactly one of `shape: COMMAND` and `not rerun: REASON`")
    for rule in block.rules:
        if rule.not_run is not None and len(rule.not_run) < 10:
            block.problems.append(f"`not run` needs a reason a reader can check, not {rule.not_run!r}")
    return block


def parse_blocks(document: Document) -> Iterator[Region]:
    """The Sybil parser: every fenced block of the document, each with this module's evaluator."""
    for lexed in FENCES(document):
        source = str(lexed.lexemes["source"])
        line = document.text.count("\n", 0, lexed.start) + 1
        block = make_block(lexed.lexemes["language"].strip(), source, line, document.text[:lexed.start])
        yield Region(lexed.start, lexed.end, block, evaluate)


def parse_text(text: str, path: Path = README) -> Document:
    """A document from text (a README or a deliberately changed copy), parsed as README.md is."""
    document = Document(text, str(path))
    for region in parse_blocks(document):
        document.add(region)
    return document


def readme_examples(path: Path = README) -> list[Example]:
    return list(parse_text(path.read_text(), path).examples())


def fenced_block_count(text: str) -> int:
    """Fenced blocks counted without Sybil, to check that none escapes the parser."""
    fences = re.findall(r"^(?:```|~~~)", text, re.M)
    return len(fences) // 2


# ------------------------------------------------------------------ running


class Workspace:
    """The mirrored working folder and the commands already run in it (by their argv)."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self.done: dict[tuple[str, ...], subprocess.CompletedProcess[str]] = {}
        self.failed = False

    def folder(self) -> Path:
        if self.path is None:
            self.path = Path(tempfile.mkdtemp(prefix="netrepro-readme-"))
            for entry in ROOT.iterdir():
                if entry.name not in (".git", "runs", ".netrepro", ".pytest_cache"):
                    (self.path / entry.name).symlink_to(entry)
        return self.path

    def run(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        key = tuple(argv)
        if key not in self.done:
            env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
            env["CI"] = "true"
            try:
                self.done[key] = subprocess.run(argv, cwd=self.folder(), capture_output=True, text=True,
                                                env=env, timeout=COMMAND_TIMEOUT_S)
            except FileNotFoundError as exc:
                self.done[key] = subprocess.CompletedProcess(argv, 127, "", str(exc))
        return self.done[key]

    def close(self) -> None:
        """Removes the folder and its run folders, unless an example of the README failed."""
        if self.path is not None and not self.failed:
            shutil.rmtree(self.path, ignore_errors=True)
            self.path = None
        self.done.clear()


WORKSPACE = Workspace()


def _tail(text: str, lines: int = 25) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def _ran(argv: list[str], proc: subprocess.CompletedProcess[str]) -> str:
    return (f"`{shlex.join(argv)}` exited {proc.returncode} (in {WORKSPACE.path})\n"
            f"--- stdout (end) ---\n{_tail(proc.stdout)}\n--- stderr (end) ---\n{_tail(proc.stderr)}")


def check_options(argv: list[str]) -> str | None:
    """A netrepro command that does not run here still has to parse."""
    if not argv or Path(argv[0]).name != "netrepro":
        return None
    from harness.cli.main import build_parser

    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
            build_parser().parse_args(argv[1:])
    except SystemExit as exc:
        if exc.code:
            lines = said.getvalue().strip().splitlines() or ["it does not parse"]
            return f"`{shlex.join(argv)}`: {lines[-1]}"
    return None


# ------------------------------------------------------------------ shapes

_PATH = re.compile(r"(?:(?<=[\s(])|^)(?:/|\./|~/|runs/)[^\s;,)]*")
_NUMBER = re.compile(r"(?:(?<![\w.])[+-])?\d+(?:\.\d+)?")  # a sign only where no figure ends before it
_RUNS = re.compile(r"\b(runs?)\b")  # "1 run", "3 runs"


def _verdicts() -> tuple[str, ...]:
    from harness.analysis import VERDICTS

    return tuple(VERDICTS)


def _summary(line: str) -> str:
    """A report table's summary line without what depends on which cases ran: its notes in parentheses
    (figures several cases measure, host-dependent ones, claims by construction), "distinct", the plural,
    and the note of runs the host disturbed (they were replaced; how often depends on the machine)."""
    if "report figures agree within" not in line:
        return line
    line = re.sub(r" \([^()]*\)", "", line).replace("distinct report figures", "report figures")
    line = re.sub(r"; \d+ cases? had a run the host disturbed[^;]*", "", line)  # the host's, not the report's
    return re.sub(r"\b(cases? fails?)\b", "case(s) fail(s)", line)


def shape(line: str) -> tuple[str, ...]:
    """A line's cells (split at two or more spaces) with the figures made free: numbers (and their
    signs), paths, verdicts, agreement and claim outcomes; words, units and column names stay; a
    report table's summary line keeps only its clauses (_summary)."""
    verdicts = _verdicts()
    line = _summary(line)
    cells = []
    for cell in re.split(r"\s{2,}", line.strip()):
        cell = _RUNS.sub("run(s)", _NUMBER.sub("<n>", _PATH.sub("<path>", cell)))
        cells.append("<verdict>" if cell in verdicts else "<claim>" if cell in CLAIMS else
                     "<agrees>" if cell in AGREES else cell)
    return tuple(cells)


def _table_rows(doc: list[str]) -> set[int]:
    """Indexes of the table rows in a block: the lines under a rule (----) with as many cells as the
    first of them (a header may join two narrow column names with one space)."""
    rows: set[int] = set()
    for i in range(1, len(doc) - 1):
        if re.fullmatch(r"-{10,}", doc[i].strip()) and i - 1 not in rows:  # not the rule closing a table
            width = len(shape(doc[i + 1]))
            j = i + 1
            while j < len(doc) and doc[j].strip() and len(shape(doc[j])) == width:
                rows.add(j)
                j += 1
    return rows


_HOST_RUNS = "runs the host disturbed"  # the header of cases.replaced_notes' list


def _without_host_runs(printed: list[str]) -> list[str]:
    """The printed lines without the list of runs the host disturbed (its blank line, header and indented
    lines): how many there are depends on the machine, not on the report, so the README cannot show it."""
    kept: list[str] = []
    skipping = False
    for line in printed:
        if line.startswith(_HOST_RUNS):
            skipping = True
            if kept and not kept[-1]:
                kept.pop()
            continue
        if skipping and line.startswith("  "):
            continue
        skipping = False
        kept.append(line)
    return kept


def compare_shape(doc: list[str], printed: list[str], from_first_match: bool = False) -> str | None:
    """None if what the command printed has the shape of the README's lines, in order. README
    rows of cases the shortened command did not run are passed over (they keep the table's
    columns); from_first_match: the README shows only a part, from its first line to its last."""
    doc = [line.rstrip() for line in doc]
    while doc and not doc[-1]:
        doc.pop()
    printed = [line.rstrip() for line in printed]
    if not any(line.startswith(_HOST_RUNS) for line in doc):
        printed = _without_host_runs(printed)
    while printed and not printed[-1]:
        printed.pop()
    if not doc:
        return "the README shows no output"
    if from_first_match:
        start = next((i for i, line in enumerate(printed) if shape(line) == shape(doc[0])), None)
        if start is None:
            return f"the command printed no line shaped like the README's first line {doc[0]!r}"
        printed = printed[start:]
    rows = _table_rows(doc)
    i = 0
    for line in printed:
        while i < len(doc) and i in rows and shape(doc[i]) != shape(line):
            i += 1
        if i == len(doc) and from_first_match:
            break  # the README shows a part: from its first line to its last
        if i == len(doc):
            return f"the command printed {line!r}, which the README's output does not show"
        if shape(doc[i]) != shape(line):
            return (f"the README shows\n    {doc[i]!r}\nwhere the command printed\n    {line!r}\n"
                    f"(shapes {shape(doc[i])} and {shape(line)})")
        i += 1
    extra = [doc[j] for j in range(i, len(doc)) if j not in rows]
    if extra:
        return f"the README shows {extra[0]!r}, which the command did not print"
    return None


# ------------------------------------------------------------------ evaluating


def run_pytest_block(block: Block, namespace: dict[str, Any]) -> str | None:
    """The block as the test file of a project of its own, outside the repository, run by pytest
    with `namespace["python"]` (default: this interpreter) in `namespace["project"]` (default: a
    new temporary folder)."""
    python = namespace.get("python", sys.executable)
    project = Path(namespace.get("project") or tempfile.mkdtemp(prefix="netrepro-user-project-"))
    project.mkdir(parents=True, exist_ok=True)
    (project / "test_window.py").write_text(block.source)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(CI="true", PYTHONPATH="")
    argv = [str(python), "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA",
            "--netrepro-runs", str(project / "runs"), *namespace.get("pytest_args", ()), "test_window.py"]
    proc = subprocess.run(argv, cwd=project, capture_output=True, text=True, env=env, timeout=COMMAND_TIMEOUT_S)
    namespace["pytest_run"] = (project, proc)
    out = proc.stdout + proc.stderr
    summary = out.strip().splitlines()[-1] if out.strip() else ""
    if proc.returncode != 0 or not re.search(r"\d+ passed", summary) or re.search(r"skipped|xfail", summary):
        return f"pytest on the README's block ({project}) did not pass: {summary}\n{_tail(out, 60)}"
    return None


def run_commands(block: Block) -> str | None:
    for command in block.commands:  # the ones that do not run first: they cost nothing
        problem = None if command.runs else check_options(command.argv)
        if problem:
            return problem
    for command in block.commands:
        if not command.runs:
            continue
        proc = WORKSPACE.run(command.effective)
        if proc.returncode != 0:
            return _ran(command.effective, proc)
        if command.output:
            mismatch = compare_shape(command.output, proc.stdout.splitlines())
            if mismatch:
                return f"`{shlex.join(command.effective)}`: {mismatch}\n--- printed ---\n{proc.stdout}"
    return None


def verbatim_in(source: str, text: str) -> bool:
    """The block's lines stand in the text as they are, or all indented alike (a fenced block's common
    indentation is not part of its source)."""
    lines = source.splitlines(keepends=True)
    return any("".join(" " * indent + line if line.strip() else line for line in lines) in text
               for indent in range(9))


def check_stored(block: Block) -> str | None:
    stored = ROOT / block.stored
    if not stored.is_file():
        return f"{block.stored} does not exist"
    if not verbatim_in(block.source, stored.read_text()):
        return f"the block is not verbatim in {block.stored}: copy the table from there (or rerun it)"
    if block.shape is None:
        return None
    proc = WORKSPACE.run(block.shape)
    if proc.returncode != 0:
        return _ran(block.shape, proc)
    mismatch = compare_shape(block.source.splitlines(), proc.stdout.splitlines(), from_first_match=True)
    return f"`{shlex.join(block.shape)}`: {mismatch}\n--- printed ---\n{proc.stdout}" if mismatch else None


def evaluate(example: Example) -> str | None:
    """Sybil's evaluator: None when the block does what the README says, else what went wrong."""
    block: Block = example.parsed
    if block.problems:
        return "; ".join(block.problems)
    if block.kind == "pytest":
        result = run_pytest_block(block, example.namespace)
    elif block.kind == "stored":
        result = check_stored(block)
    elif block.kind == "commands":
        result = run_commands(block)
    elif block.kind == "toml":
        try:
            tomllib.loads(block.source)
        except tomllib.TOMLDecodeError as exc:
            return f"is not TOML: {exc}"
        result = None
    else:  # python
        try:
            code = compile(block.source, f"{example.path}:{block.line}", "exec")
        except SyntaxError as exc:
            return f"does not compile: {exc}"
        result = None
        if block.not_run is None:
            exec(code, {"__name__": "readme_example"})
    return result


def examples_of_kind(examples: Iterable[Example], kind: str) -> list[Example]:
    return [e for e in examples if e.parsed.kind == kind]


def example_param(example: Example) -> Any:
    """An example as a pytest parameter: marked real when it runs anything, named by its line and kind."""
    marks = [pytest.mark.real] if example.parsed.runs_anything() else []
    return pytest.param(example, marks=marks, id=example.parsed.title)
