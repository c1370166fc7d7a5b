"""The console reads the firmware's lines whole, whatever QEMU writes into the stream they share."""

from __future__ import annotations

import pexpect

from harness.rig.console import Console

NOTE = "Warning: The guest is now late by 4.0 to 5.0 seconds\\n"


def _console(tmp_path, script: str) -> Console:
    child = pexpect.spawn("/bin/sh", ["-c", script], encoding="utf-8", timeout=5)
    return Console(child, tmp_path / "console.log")


def test_qemus_late_note_inside_a_commands_answer_is_taken_out(tmp_path):
    """CI saw `threads` answer "THREADS count=7 ... mbox_fWarning: The guest is now late by 4.0 to 5.0 seconds"
    and then "ull=0 ...": the totals lost mbox_full."""
    script = ("read line; printf 'THREAD name=idle run_us=5\\nTHREADS count=7 mbox_f" + NOTE
              + "ull=0 mbox_used=1\\nnetrepro> '")
    out = _console(tmp_path, script).command("threads")
    assert out.splitlines()[-1] == "THREADS count=7 mbox_full=0 mbox_used=1", out


def test_an_event_line_cut_by_the_note_is_read_whole_once_it_has_ended(tmp_path):
    # the line's end comes half a second after the note: the event must not be taken at the note's newline
    script = "printf 'SOCK dir=rx by" + NOTE + "'; sleep 0.5; printf 'tes=5 ms=3\\n'"
    event = _console(tmp_path, script).wait_event("SOCK", timeout=5)
    assert event.fields == {"dir": "rx", "bytes": "5", "ms": "3"}
