"""memdb's exceptions: one class per kind of engine error, all subclasses of MemdbError.

The native module raises these (python/src/errors.rs maps each engine error to its class).
Every exception made from an engine error has a ``kind`` attribute naming the engine's
variant (``"Locked"``, ``"Corruption"``, ...) and, where the error names them, ``path``,
``segment``, ``page``, ``offset``, ``id``, ``count`` and ``bytes``.
"""

from __future__ import annotations

__all__ = [
    "MemdbError",
    "LockedError",
    "ReadOnlyError",
    "AlreadyExistsError",
    "NoStoreError",
    "UnsupportedVersionError",
    "StorageError",
    "CorruptionError",
    "CatalogDamagedError",
    "EncryptionError",
    "ModelError",
    "NotFoundError",
    "ConsentError",
    "CapabilityError",
    "ConflictError",
    "ClosedError",
    "PolicyError",
    "InvalidItemError",
    "QueryError",
    "QuerySyntaxError",
]


class MemdbError(Exception):
    """Base class of every error memdb raises (besides TypeError/ValueError for bad arguments)."""

    kind: str | None = None


class LockedError(MemdbError):
    """Another process holds the store's write lock (raised at once, never waited for)."""


class ReadOnlyError(MemdbError):
    """A write through a store opened with ``read_only=True``."""


class AlreadyExistsError(MemdbError):
    """Creating a store where one (or other files) already is."""


class NoStoreError(MemdbError):
    """Opening (without ``create``) a folder that holds no store."""


class UnsupportedVersionError(MemdbError):
    """The store was written by an incompatible version of memdb."""


class StorageError(MemdbError):
    """An operating-system I/O call or the catalog database failed."""


class CorruptionError(MemdbError):
    """Bytes read back failed their checksum or do not decode (``Store.check`` says what is lost)."""


class CatalogDamagedError(CorruptionError):
    """The catalog file (catalog.redb) is damaged; ``memdb repair`` rebuilds it from the segments."""


class EncryptionError(MemdbError):
    """The store is encrypted and no passphrase was given (nor ``MEMDB_PASSPHRASE`` set), or
    the one given does not open it, or its key file is damaged."""


class ModelError(MemdbError):
    """The on-device encoder is missing, damaged, or not the one the store's vectors were made with."""


class NotFoundError(MemdbError, LookupError):
    """An item, memory or other thing named by the caller is not in the store."""


class ConsentError(MemdbError):
    """Forgetting would drop photo originals and ``drop_originals=True`` was not given."""


class CapabilityError(MemdbError):
    """The call deletes, purges or forgets what this handle was not allowed to: open the store
    with ``allow=[...]`` naming the capability (``delete``, ``forget``, ``purge``)."""

    capability: str


class ConflictError(MemdbError):
    """The store moved on (or other handles are open) while the call ran; try again."""


class ClosedError(MemdbError, ValueError):
    """A call on a closed store."""


class PolicyError(MemdbError, ValueError):
    """A forgetting policy is unknown or does not hold together."""


class InvalidItemError(MemdbError, ValueError):
    """An item or vector given to the store is not acceptable."""


class QueryError(MemdbError, ValueError):
    """A statement of the query language could not run (an unknown place, a time out of range)."""


class QuerySyntaxError(QueryError):
    """A statement does not follow the grammar; ``line``, ``column`` and ``suggestion`` say where."""
