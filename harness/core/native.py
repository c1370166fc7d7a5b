"""Build netrepro's own C tools on demand, cached by content hash.

`build_tool("netrepro-link", sources, headers=headers)` compiles the sources with `cc` into
the cache (`cache_dir("bin")`), under a name that carries the hash of the sources, the headers
they include, the flags and the compiler, so a rebuild happens only when one of them changes. The binary is built
under a temporary name and renamed into place, so parallel test workers racing to build
the same tool all end up running a complete binary.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from harness.core.cache import cache_dir, content_hash
from harness.core.errors import NetreproError

DEFAULT_CFLAGS = ("-O2", "-g", "-Wall", "-Wextra", "-std=gnu11")


def compiler() -> str:
    """The C compiler: $CC or `cc`, as an absolute path; NetreproError if there is none."""
    name = os.environ.get("CC") or "cc"
    path = shutil.which(name)
    if path is None:
        raise NetreproError(
            f"no C compiler found (looked for {name!r} on PATH)",
            "install one, e.g. `apt-get install gcc`, or set CC",
        )
    return path


def _first_error(output: str) -> str:
    """The first line of compiler output that names an error, else the first non-empty line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        if "error" in line.lower():
            return line
    return lines[0] if lines else "no output"


def build_tool(
    name: str,
    sources: Sequence[Path],
    cflags: Sequence[str] = (),
    libs: Sequence[str] = (),
    headers: Sequence[Path] = (),
) -> Path:
    """Compile `sources` into an executable named after `name` and their content hash.

    cflags are added after netrepro's defaults (-O2 -g -Wall -Wextra -std=gnu11); libs are
    linker arguments such as "-lm" or "-lsimavr". headers are the sources' own headers: their
    contents are part of the hash (a changed header builds anew) and their folders are passed
    with -I. Returns the path of the binary, reusing one built earlier from the same sources,
    headers, flags and compiler.
    """
    srcs = [Path(s).resolve() for s in sources]
    hdrs = [Path(h).resolve() for h in headers]
    for src in [*srcs, *hdrs]:
        if not src.is_file():
            raise NetreproError(f"source file {src} for {name} is missing", "check the netrepro checkout")
    cc = compiler()
    includes = [f"-I{folder}" for folder in dict.fromkeys(h.parent for h in hdrs)]
    flags = [*DEFAULT_CFLAGS, *includes, *cflags]
    digest = content_hash([*srcs, *hdrs], [cc, *flags, "--", *libs])
    out = cache_dir("bin") / f"{name}-{digest}"
    if out.is_file() and os.access(out, os.X_OK):
        return out

    fd, tmp_name = tempfile.mkstemp(prefix=f".{name}-", suffix=".tmp", dir=out.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    cmd = [cc, *flags, "-o", str(tmp), *map(str, srcs), *libs]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise NetreproError(
                f"building {name} failed: {_first_error(proc.stderr + proc.stdout)}",
                f"fix the C source or the toolchain; the command was: {' '.join(cmd)}",
            )
        tmp.chmod(0o755)
        os.replace(tmp, out)  # atomic: a racing worker's identical binary is simply replaced
    finally:
        tmp.unlink(missing_ok=True)
    return out
