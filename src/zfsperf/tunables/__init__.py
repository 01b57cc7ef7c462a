"""ZFS tunables: the registry of names (registry), where they live (backend: one protocol, files
or sysctl, here or over ssh, with a structured spec), and the journal that puts them back."""

from .backend import BackendSpec, FileTunables, TunableBackend, SysctlTunables, open_backend
from .journal import Journal, TunableSession, applied_entry, journal_path, replay
from .registry import REGISTRY, Tunable, canonical_from_freebsd, freebsd_name, normalise_value

__all__ = ["REGISTRY", "BackendSpec", "FileTunables", "Journal", "TunableBackend", "SysctlTunables", "Tunable",
           "TunableSession", "applied_entry", "canonical_from_freebsd", "freebsd_name", "journal_path", "normalise_value",
           "open_backend", "replay"]
