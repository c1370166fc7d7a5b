"""netrepro command line: the one place that knows argparse."""

from harness.cli.main import main

__all__ = ["main"]
