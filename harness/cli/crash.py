"""An exception netrepro did not turn into one line: one line on stderr, the traceback in a log file.

The log goes under the cache folder ($NETREPRO_CACHE or ~/.cache/netrepro, logs/), not a run folder: main()
does not know whether a run folder exists yet, and the failure may be the run folder itself (an --out or
--html that cannot be written). When the cache cannot be written either, the system's temporary folder."""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

from harness.core.cache import cache_dir


def write_crash_log(exc: BaseException, argv: list[str]) -> Path | None:
    """The traceback and the command line in logs/crash-TIME-PID.log; None when no folder takes it."""
    name = f"crash-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    text = (f"netrepro {' '.join(argv)}\npython {sys.version.split()[0]}\n\n"
            + "".join(traceback.format_exception(exc)))
    for folder in (lambda: cache_dir("logs"), lambda: Path(tempfile.gettempdir())):
        try:
            path = folder() / name
            path.write_text(text)
            return path
        except OSError:
            continue
    return None


def report_crash(exc: BaseException, argv: list[str]) -> None:
    """One line on stderr: what happened and where its traceback is."""
    path = write_crash_log(exc, argv)
    where = f"the traceback is in {path}" if path else "its traceback could not be written anywhere"
    print(f"netrepro: unexpected error: {type(exc).__name__}: {exc}; {where} (please report it)",
          file=sys.stderr)
