"""netrepro: reproduce embedded network-performance reports on emulated boards."""

__version__ = "0.1.0"
