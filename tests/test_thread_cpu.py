"""Each thread's share of the board's time over a workload, from two readings of the kernel's
counters (harness.runs.result.thread_cpu), and the `run` line that names the busiest thread."""

from __future__ import annotations

from harness.runs.result import busiest_threads, thread_cpu, threads_text
from harness.studies.cases import thread_notes


def _reading(run_us: dict[str, int], switches: dict[str, int], mbox_full: int = 0) -> dict:
    threads = [{"name": n, "run_us": us, "switches": switches[n]} for n, us in run_us.items()]
    return {"threads": threads, "totals": {"switches": sum(switches.values()), "mbox_full": mbox_full,
                                           "mbox_full_tcpip": mbox_full, "mbox_fail": 0}}


BEFORE = _reading({"idle": 1000, "main": 500, "tcpip_thread": 200}, {"idle": 3, "main": 2, "tcpip_thread": 1})
AFTER = _reading({"idle": 4000, "main": 1500, "tcpip_thread": 5200, "sock": 1000},
                 {"idle": 13, "main": 4, "tcpip_thread": 41, "sock": 9}, mbox_full=5)


def test_shares_are_of_the_interval_the_threads_ran() -> None:
    cpu = thread_cpu(BEFORE, AFTER)
    # deltas: idle 3000, main 1000, tcpip 5000, sock 1000 (a thread that appeared counts from 0) = 10 ms
    assert cpu["total_ms"] == 10.0
    assert [r["name"] for r in cpu["threads"]] == ["tcpip_thread", "idle", "main", "sock"]
    assert [r["percent"] for r in cpu["threads"]] == [50.0, 30.0, 10.0, 10.0]
    assert [r["switches"] for r in cpu["threads"]] == [40, 10, 2, 9]
    assert cpu["idle_percent"] == 30.0
    assert cpu["switches"] == 67 - 6 and cpu["mbox_full"] == 5


def test_the_busiest_thread_is_never_idle() -> None:
    idle_most = _reading({"idle": 9000, "main": 1000}, {"idle": 5, "main": 5})
    cpu = thread_cpu(_reading({"idle": 0, "main": 0}, {"idle": 0, "main": 0}), idle_most)
    assert [r["name"] for r in busiest_threads(cpu)] == ["main"]
    assert busiest_threads(thread_cpu(idle_most, idle_most)) == []  # nothing ran in between


def test_the_text_names_the_busiest_threads_first() -> None:
    text = threads_text(thread_cpu(BEFORE, AFTER), top=2)
    assert text == "tcpip_thread 50 % (40 switches in), main 10 % (2 switches in); idle 30 %; " \
                   "61 context switches; 5 posts met a full mailbox"


def test_a_table_lists_the_threads_of_the_rows_that_ran_them() -> None:
    rows = [{"case": "no_sys 1", "threads": None},
            {"case": "no_sys 0", "threads": threads_text(thread_cpu(BEFORE, AFTER), top=1)}]
    assert thread_notes(rows, "case") == [
        "", "threads (NO_SYS 0; the median run's board time by thread, busiest first, from the kernel's counters):",
        "  no_sys 0: tcpip_thread 50 % (40 switches in); idle 30 %; 61 context switches; 5 posts met a full mailbox"]
    assert thread_notes(rows[:1], "case") == []  # a NO_SYS 1 table is as it was
