"""Capture analysis: what each TCP side advertised, and what limited the throughput.

``load_capture(path, ...)`` reads a capture and returns a ``CaptureAnalysis``; its
``to_summary()`` is what a run records (``AnalysisSummary``), ``format_table`` the text of
``netrepro inspect``. The work is split by job, each step reading only what the one before
returned:

- ``capture``: tshark's TCP dissection as rows of fields (through pyshark, in a worker thread);
- ``frames``: the rows as connections and segments; which connection to analyse;
- ``facts`` and ``transfer``: what the frames show, per side and for the data direction (no
  judgement);
- ``verdict``: ``judge(facts)``, a pure function from the facts to a ``Verdict``;
- ``capture_analysis``: the facts and the verdict together, with the expect_* helpers
  (``expect``) for pytest;
- ``summary``: the typed record of a run (``AnalysisSummary``, as_dict/from_dict);
- ``table`` and ``plots``: text and figures;
- ``board_capture``: a real board's capture read into the facts a report needs
  (``read_board_capture``), with the bottleneck's rate estimated from the capture itself.
"""

from harness.analysis.board_capture import CaptureReading, read_board_capture
from harness.analysis.capture import TSHARK_FIELDS, TSHARK_PREFS
from harness.analysis.capture_analysis import CaptureAnalysis
from harness.analysis.facts import Facts, WindowStats
from harness.analysis.frames import Connection, Endpoint
from harness.analysis.load import load_capture
from harness.analysis.summary import AnalysisSummary
from harness.analysis.table import format_table
from harness.analysis.verdict import VERDICTS, Verdict, judge

__all__ = [
    "TSHARK_FIELDS",
    "TSHARK_PREFS",
    "VERDICTS",
    "AnalysisSummary",
    "CaptureAnalysis",
    "CaptureReading",
    "Connection",
    "Endpoint",
    "Facts",
    "Verdict",
    "WindowStats",
    "format_table",
    "judge",
    "load_capture",
    "read_board_capture",
]
