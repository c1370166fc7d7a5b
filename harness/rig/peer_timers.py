"""The peer's TCP timers in the board's time.

In device time the board and the link run D times slower than the wall clock; Linux's TCP timers
do not. A timer computed from the RTT the peer measures (the RTO's srtt + 4 rttvar, the tail-loss
probe's 2 srtt) is already in the board's time, since that RTT is D times the board's; the fixed
floors and constants are not, and to the board they look D times shorter. This scales the ones
Linux lets a network namespace set, and names the ones it does not:

- the minimum RTO (200 ms): per route (`ip route ... rto_min`) and the namespace's default
  (net.ipv4.tcp_rto_min_us, Linux 6.11 and later);
- SACK compression (net.ipv4.tcp_comp_sack_delay_ns, 1 ms; its slack, 100 us): the namespace's;
- delayed ACKs (40-200 ms): Linux has no route or namespace setting for their timer, only `quickack`
  on a route, which ACKs every segment; used where the report's peer did that, else not scaled;
- the initial RTO (1 s, the SYN's): only a BPF sock_ops program can set it; not scaled.

`PeerTimers.apply` sets them in a run's namespace and returns what result.json records as
`peer_timers`: every timer, whether it was scaled, by what, and its value in the board's time.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from harness.rig.peer import Addresses, Namespace

# Linux's constants (include/net/tcp.h), in ms
RTO_MIN_MS = 200.0
DELACK_MIN_MS, DELACK_MAX_MS = 40.0, 200.0
INITIAL_RTO_MS = 1000.0
COMP_SACK_DELAY_NS, COMP_SACK_SLACK_NS = 1_000_000, 100_000  # the namespace's defaults (sysctl)


@dataclass(frozen=True)
class PeerTimers:
    """What to set: the run's D and whether the peer ACKs every segment (the report's peer did)."""

    dilation: float
    quickack: bool = False

    def route_options(self) -> list[str]:
        """The options of the peer's route to the board: the minimum RTO scaled by D, and quickack if asked."""
        options = ["rto_min", f"{round(RTO_MIN_MS * self.dilation)}ms"] if self.dilation != 1.0 else []
        return options + (["quickack", "1"] if self.quickack else [])

    def sysctls(self) -> dict[str, int]:
        """The namespace's timer settings scaled by D (none at D = 1)."""
        if self.dilation == 1.0:
            return {}
        return {"net/ipv4/tcp_rto_min_us": round(RTO_MIN_MS * 1000 * self.dilation),
                "net/ipv4/tcp_comp_sack_delay_ns": round(COMP_SACK_DELAY_NS * self.dilation),
                "net/ipv4/tcp_comp_sack_slack_ns": round(COMP_SACK_SLACK_NS * self.dilation)}

    def apply(self, namespace: Namespace, addresses: Addresses, device: str) -> dict[str, Any]:
        """Set them in the namespace (after its tap is up); what was set, as result.json records it."""
        applied = {}
        for key, value in self.sysctls().items():
            done = namespace.run(["sh", "-c", f"echo {value} > /proc/sys/{key}"], check=False).returncode == 0
            applied[key] = done
        route = self.route_options()
        if route:
            namespace.run(["ip", "route", "replace", f"{_network(addresses)}/{addresses.prefix}", "dev", device,
                           "proto", "kernel", "scope", "link", "src", addresses.peer, *route])
        return self.record(applied)

    def record(self, applied: dict[str, bool] | None = None) -> dict[str, Any]:
        """Each timer: whether it was scaled, how, and what the board sees of it (ms of its time). At D = 1
        nothing needs scaling: the board's time is the wall's."""
        d, applied = self.dilation, applied or {}

        def entry(linux_ms: float, scaled: bool, how: str) -> dict[str, Any]:
            how = how if d != 1.0 else "D = 1: the board's time is the wall's"
            return {"scaled": scaled and d != 1.0, "linux_ms": linux_ms,
                    "board_ms": round(linux_ms if scaled else linux_ms / d, 3), "how": how}

        namespace_rto = applied.get("net/ipv4/tcp_rto_min_us")
        rto = entry(RTO_MIN_MS, True, f"route rto_min {round(RTO_MIN_MS * d)} ms; net.ipv4.tcp_rto_min_us "
                    + (f"{round(RTO_MIN_MS * 1000 * d)}" if namespace_rto else "not in this kernel"))
        sack_ok = bool(applied.get("net/ipv4/tcp_comp_sack_delay_ns"))
        sack = entry(COMP_SACK_DELAY_NS / 1e6, sack_ok, "net.ipv4.tcp_comp_sack_delay_ns and _slack_ns x D"
                     if sack_ok else "not scaled: this kernel refused net.ipv4.tcp_comp_sack_delay_ns")
        if self.quickack:
            delack = {"scaled": False, "quickack": True, "board_ms": 0.0,
                      "how": "route quickack 1: the peer ACKs every segment, as the report's peer did"}
        else:
            delack = {**entry(DELACK_MIN_MS, False, "not scaled: Linux has no route or namespace setting for the "
                              "delayed-ACK timer (40-200 ms)"), "quickack": False}
        initial = entry(INITIAL_RTO_MS, False, "not scaled: only a BPF sock_ops program sets the initial RTO")
        return {"dilation": d, "rto_min": rto, "comp_sack_delay": sack, "delayed_ack": delack,
                "initial_rto": initial}


def _network(addresses: Addresses) -> str:
    """The subnet's network address (the peer's address with its host bits cleared)."""
    return str(ipaddress.ip_interface(f"{addresses.peer}/{addresses.prefix}").network.network_address)
