"""The link's tap: the peer's frames keep the time the peer's kernel sent them into the tap, however late the
link reads them (a packet socket on the tap gives each its transmit stamp; harness/link/c/endpoint.h)."""

from __future__ import annotations

import itertools
import socket

from linkbench import frozen, one_way

from harness.link import Link, LinkSpec, read_pcap_ns
from harness.rig.peer import Addresses, Namespace

GAP_S = 0.02  # between the peer's frames, at least (a busy machine only lengthens a sleep)
SENDS = 4
# the peer sends its datagrams from inside the namespace, GAP_S apart, to the device's address behind the tap
SENDER = (f"import socket, time\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\nfor i in range({SENDS}):\n"
          f"    s.sendto(b'frame %d' % i, ('{Addresses().device}', 9))\n    time.sleep({GAP_S})\n")


def test_frames_read_late_from_the_tap_keep_the_time_the_peer_sent_them(root, no_leftovers):
    addresses = Addresses()
    spec = LinkSpec(to_device=one_way(delay_s=0.001), to_peer=one_way())
    qemu = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)  # the device's side, as QEMU's NIC would be
    qemu.bind(str(root / "qemu"))
    qemu.settimeout(5)
    try:
        with Namespace(root) as ns:
            link = Link(spec, root / "dev", root / "qemu", root / "run", tap="nrt0",
                        tap_addr=f"{addresses.peer}/{addresses.prefix}", prefix=ns.prefix(), capture_at="peer",
                        rt_priority=None, nice=None)
            with link:
                ns.run(["ip", "neigh", "add", addresses.device, "lladdr", "02:00:00:00:00:02", "dev", "nrt0"])
                with frozen(link.pid):  # the link reads nothing until every frame was sent
                    ns.run(["python3", "-c", SENDER])
                frames = [qemu.recv(2048) for _ in range(SENDS)]
                counters = link.stop()
    finally:
        qemu.close()
    assert [f[-7:] for f in frames] == [b"frame %d" % i for i in range(SENDS)]
    stamps = [t for t, _ in read_pcap_ns(link.pcap_path)]  # at the peer's side: each frame's arrival at the link
    assert len(stamps) == SENDS
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    assert min(gaps) >= 0.9 * GAP_S * 1e9, gaps  # read at once after the link woke, they would be microseconds apart
    arrivals = counters.to_device
    assert (arrivals.arrivals_kernel_stamped, arrivals.arrivals_stamped_on_read) == (SENDS, 0)
