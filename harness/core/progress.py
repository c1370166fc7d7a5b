"""Progress lines for long work (build, boot, run, analyse); silent in CI or when asked."""

from __future__ import annotations

import os
import sys
import time


class Progress:
    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet or os.environ.get("CI", "").lower() in ("1", "true", "yes")
        self.start = time.monotonic()

    def step(self, message: str) -> None:
        if not self.quiet:
            print(f"[{time.monotonic() - self.start:6.1f}s] {message}", file=sys.stderr, flush=True)

    def in_flight(self, names: list[str], jobs: int) -> None:
        """Every run under way at once (jobs > 1), on one line, each time the set changes."""
        self.step(f"in flight ({len(names)} of {jobs} at once): {', '.join(names) or 'none'}")

    def warn(self, message: str) -> None:
        """Printed even when quiet: something about the result the user must know."""
        print(f"netrepro: warning: {message}", file=sys.stderr, flush=True)
