"""Helpers shared by the integration tests and the benchmark: a private Samba
(samba.py), the daemon under test (mount.py) and a fault-injecting SMB2 proxy
(smbproxy.py)."""
