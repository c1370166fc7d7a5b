"""lwIP's heap as blocks (firmware/port/nr_heap.c): the board's `stats` walk it, and the socket benchmark
judges every ERR_MEM by it: a heap full, or one with room for a segment in all but cut into holes.

The 8000 B heap of the RT1060's "before" profile holds nine pbufs of a full 800-byte segment (9 x 880 B of
8000) only while they lie packed; RT1060 TX before runs out of it with 944 B free in two pieces
(docs/measurements.md, "What limits RT1060 TX before"). A hole pinned into the heap (the test-only
NR_TEST_HEAP_PIN) makes that happen on every run.
"""

from __future__ import annotations

import pytest

from harness.cli.main import format_result

pytestmark = pytest.mark.real

RT1060_SEGMENT_PBUF = 16 + 56 + 800  # the pbuf struct, Ethernet (2 pad) + IP + TCP headers' room, MSS 800


@pytest.mark.parametrize(("platform", "profile", "header"), [
    ("openmv-rt1060", "mp-rt1060-before", 8),  # 16-bit offsets (MEM_SIZE under 64000), 4-byte alignment
    ("openmv-n6", "mp-n6-before", 12),         # 32-bit offsets
    ("ethernut2", "nutos-default", 5),         # 16-bit offsets, no alignment on the AVR
])
def test_the_heap_as_blocks_adds_up_to_lwips_own_count(netrepro, platform, profile, header, no_leftovers):
    with netrepro.board(platform, profile, link="ethernet") as rig:
        assert rig.ping()
        options, stats = rig.console.opts(), rig.console.stats()
    assert stats["heap.size"] == options["MEM_SIZE"] and stats["heap.header"] == header, stats
    # every byte of the heap is in a used block (lwIP's mem.used, headers included) or a free one
    assert stats["heap.size"] == stats["mem.used"] + stats["heap.free"] + stats["heap.blocks_free"] * header, stats
    assert 0 < stats["heap.largest_free"] <= stats["heap.free"], stats


def test_err_mem_with_a_hole_in_the_heap_is_judged_fragmented(netrepro, no_leftovers):
    """A 16-byte block pinned 3000 B into the 8000 B heap leaves room for 3 + 5 segment pbufs, not the 9 the
    send buffer's segments take at times: every ERR_MEM then meets free bytes enough in all, in no one block."""
    result = netrepro.run("openmv-rt1060", "mp-rt1060-before", link="ethernet", workload="sock-tx", seconds=1.0,
                          chunk=512, options={"NR_TEST_HEAP_PIN": 3000})
    counts = result.board_counts
    assert counts is not None and counts["err_mem_waits"] >= 1, counts
    assert counts["err_mem_fragmented"] + counts["err_mem_heap_full"] == counts["err_mem_waits"], counts
    assert counts["err_mem_fragmented"] >= 1, counts
    assert counts["segment_heap_request"] == RT1060_SEGMENT_PBUF, counts
    assert counts["heap_free"] >= RT1060_SEGMENT_PBUF > counts["heap_largest_free"], counts
    assert f"the heap in holes at {counts['err_mem_fragmented']} of them" in format_result(result)
    result.expect_no_leaks()  # the pin goes back with the connection


def test_a_heap_that_holds_reports_no_judgement(netrepro, no_leftovers):
    """The 13 KiB heap of the "after" profile never runs out: the SOCK line carries its waits and nothing more."""
    result = netrepro.run("openmv-rt1060", "mp-rt1060-after", link="ethernet", workload="sock-tx", seconds=1.0,
                          chunk=512)
    assert result.board_counts == {"err_mem_waits": 0, "sndbuf_waits": result.board_counts["sndbuf_waits"]}
    assert "ERR_MEM waits of 50 ms" in format_result(result) and "in holes" not in format_result(result)
