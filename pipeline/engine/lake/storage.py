"""Where the lake lives (PMW_LAKE_URL): a folder on local disk, or a bucket of an object store.

`open_store` resolves the URL into a `LakeStore` (`LocalStore`, or `ObjectStore` through fsspec), the one
interface `pipeline.engine.lake.store.Lake` is written against: objects by key, each published whole, with locks
and temporaries on the writing host's disk. Why fsspec, and how each store publishes, in docs/design.md,
"The lake's storage".
"""

from __future__ import annotations

import fcntl
import io
import os
import re
import shutil
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from functools import cache
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.engine.config import LAKE_SCHEMES, Settings, variables_with_prefix
from pipeline.engine.files import fsync_directory, leftover_temporaries, replace_durably, temporary_beside
from pipeline.engine.lake.deadlines import LakeDeadlinePassed, bounded, log_failed_request
from pipeline.engine.lake.uploads import abort_stale_uploads_once

# A location as readers name it: a local file's path, or an object's URL.
Location = Path | str
LOCAL_SCHEME = "file"
# Characters that would turn the root into a glob pattern of its own in Lake.glob.
_GLOB_CHARACTERS = frozenset("*?[]{}")
DATA_LAST = "data.parquet"  # a version's data is copied last: a version without it is incomplete
DEFAULT_DEADLINE_S = Settings.lake_deadline_s  # an object-store operation's (PMW_LAKE_DEADLINE_S) unless told
FOOTER_READ = 64 * 1024  # the bytes of an object's end read for its Parquet footer (more when the footer is longer)
T = TypeVar("T")


class LakeStore(ABC):
    """The lake's objects by key; `local` is the folder of this host's temporaries, locks and spill."""

    url: str  # the root as readers name it (a path, or a URL), without a trailing slash
    local: Path

    @abstractmethod
    def location(self, key: str) -> Location:
        """The object's path or URL, for readers and messages."""

    @abstractmethod
    def publish(self, temporary: Path, key: str) -> None:
        """Make a written local file the object `key`, whole, in one step."""

    @abstractmethod
    def open_read(self, key: str) -> BinaryIO | None:
        """The object's bytes through one handle that pins one version of it; None when there is none."""

    @abstractmethod
    def read_metadata(self, key: str) -> pq.FileMetaData:
        """The Parquet footer of the object (OSError or ArrowException when missing or unreadable)."""

    @abstractmethod
    def stamp(self, key: str) -> tuple[Any, ...] | None:
        """What changes whenever the object does; None when there is none."""

    @abstractmethod
    def glob(self, pattern: str) -> list[str]:
        """The keys matching a glob pattern of keys, sorted."""

    @abstractmethod
    def remove(self, key: str) -> None:
        """Delete the object; nothing when there is none."""

    @abstractmethod
    def copy(self, source: str, target: str) -> None:
        """Replace `target` with a copy of `source`, atomically."""

    @abstractmethod
    def freeze(self, files: Mapping[str, str], directory: str) -> None:
        """Copy the objects `files` (name -> key) into `directory`, a new version appearing whole or not at all."""

    @abstractmethod
    def subdirectories(self, key: str) -> list[str]:
        """The names of the folders right under `key` (hidden ones left out), sorted."""

    @abstractmethod
    def remove_tree(self, key: str) -> None:
        """Delete everything under `key`."""

    @abstractmethod
    def unreadable(self, key: str, is_data: Callable[[str], bool]) -> list[Location]:
        """The partition folders under a table's `key` that cannot be listed and its data objects (`is_data` of
        the name) that cannot be opened, sorted: readers that glob pass over them without a word."""

    @abstractmethod
    def attach(self, connection: duckdb.DuckDBPyConnection) -> None:
        """Let a DuckDB connection read the lake's locations."""

    def exists(self, key: str) -> bool:
        return self.stamp(key) is not None

    def local_path(self, key: str) -> Path:
        """Where `key` is staged and locked on this host."""
        return self.local / key

    def temporary(self, key: str) -> Path:
        """A new hidden local file to write `key`'s next content to (its folder made)."""
        target = self.local_path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        return temporary_beside(target)

    def remove_leftovers(self, key: str) -> None:
        """Delete the temporaries of `key` that a writer killed before it published left behind."""
        for leftover in leftover_temporaries(self.local_path(key)):
            leftover.unlink(missing_ok=True)

    @contextmanager
    def lock(self, directory: str) -> Iterator[None]:
        """An exclusive flock on the local folder of `directory` (a partition's) while it is written: writers of
        this host take turns, and a temporary found on entry is a leftover of a killed writer."""
        folder = self.local_path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


class LocalStore(LakeStore):
    """A lake in a local folder: rename over the target, hard links for versions."""

    def __init__(self, root: Path) -> None:
        resolved = Path(root).resolve()
        if _GLOB_CHARACTERS & set(str(resolved)):
            raise ValueError(f"lake root {str(resolved)!r} contains glob characters {sorted(_GLOB_CHARACTERS)}")
        self.local = resolved
        self.url = str(resolved)

    def location(self, key: str) -> Path:
        """Refuses a path that resolves outside the root, e.g. through a symlinked directory."""
        path = self.local / key
        if not path.resolve().is_relative_to(self.local):
            raise ValueError(f"partition path {path} resolves outside the lake root {self.local}")
        return path

    def publish(self, temporary: Path, key: str) -> None:
        replace_durably(temporary, self.local / key)

    def open_read(self, key: str) -> BinaryIO | None:
        try:
            return (self.local / key).open("rb")
        except FileNotFoundError:
            return None

    def read_metadata(self, key: str) -> pq.FileMetaData:
        return pq.read_metadata(self.local / key)

    def stamp(self, key: str) -> tuple[Any, ...] | None:
        try:
            status = os.stat(self.local / key)
        except OSError:
            return None
        return status.st_ino, status.st_size, status.st_mtime_ns

    def exists(self, key: str) -> bool:
        return (self.local / key).exists()

    def glob(self, pattern: str) -> list[str]:
        return sorted(path.relative_to(self.local).as_posix() for path in self.local.glob(pattern))

    def remove(self, key: str) -> None:
        path = self.local / key
        try:
            path.unlink()
        except FileNotFoundError:
            return
        fsync_directory(path.parent)

    def copy(self, source: str, target: str) -> None:
        temporary = temporary_beside(self.local / target)
        os.link(self.local / source, temporary)
        replace_durably(temporary, self.local / target)

    def freeze(self, files: Mapping[str, str], directory: str) -> None:
        folder = self.local / directory
        folder.parent.mkdir(parents=True, exist_ok=True)
        for leftover in folder.parent.glob(".*.tmp"):  # of a writer killed while linking: the caller holds the lock
            shutil.rmtree(leftover, ignore_errors=True)
        linking = folder.with_name(f".{folder.name}.tmp")
        linking.mkdir()
        for name, key in files.items():
            os.link(self.local / key, linking / name)
        linking.rename(folder)

    def subdirectories(self, key: str) -> list[str]:
        folder = self.local / key
        if not folder.is_dir():
            return []
        return sorted(path.name for path in folder.iterdir() if path.is_dir() and not path.name.startswith("."))

    def remove_tree(self, key: str) -> None:
        shutil.rmtree(self.local / key, ignore_errors=True)

    def unreadable(self, key: str, is_data: Callable[[str], bool]) -> list[Location]:
        bad: list[Location] = []

        def entries(directory: Path) -> list[os.DirEntry[str]]:
            try:
                with os.scandir(directory) as found:
                    return list(found)
            except FileNotFoundError:
                return []
            except OSError:
                bad.append(directory)
                return []

        for platform_dir in entries(self.local / key):
            for date_dir in (e for e in entries(Path(platform_dir.path)) if e.is_dir()):
                for data in (e for e in entries(Path(date_dir.path)) if is_data(e.name)):
                    try:
                        Path(data.path).open("rb").close()
                    except OSError:
                        bad.append(Path(data.path))
        return sorted(bad, key=str)

    def attach(self, connection: duckdb.DuckDBPyConnection) -> None:
        return None


class ObjectStore(LakeStore):
    """A lake in an object store's bucket (under a prefix), through an fsspec file system."""

    def __init__(self, url: str, filesystem: Any, local: Path, scheme: str = "",
                 deadline_s: float = DEFAULT_DEADLINE_S) -> None:
        """`deadline_s`: the longest one operation (an object read or written whole) may take (PMW_LAKE_DEADLINE_S)."""
        self.url = url.rstrip("/")
        self.deadline_s = deadline_s
        self.fs = filesystem
        self.scheme = scheme
        self._snapshots: weakref.WeakSet[_Snapshot] = weakref.WeakSet()  # of the connections attached
        self.root = filesystem._strip_protocol(self.url).rstrip("/")
        self.local = Path(local).resolve()

    def _full(self, key: str) -> str:
        return f"{self.root}/{key}"

    def _bounded(self, doing: str, key: str, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return bounded(self.deadline_s, doing, self.location(key), call, *args, **kwargs)

    def location(self, key: str) -> str:
        return f"{self.url}/{key}"

    def publish(self, temporary: Path, key: str) -> None:
        if self.scheme == "s3":
            abort_stale_uploads_once(self.fs, self.root, self.deadline_s)
        self._bounded("writing", key, self.fs.put_file, str(temporary), self._full(key))
        for snapshot in list(self._snapshots):
            snapshot.forget(self._full(key))

    def open_read(self, key: str) -> BinaryIO | None:
        copy = temporary_beside(self.local_path(key))
        copy.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._bounded("reading", key, self.fs.get_file, self._full(key), str(copy))
        except FileNotFoundError:
            copy.unlink(missing_ok=True)
            return None
        try:
            return copy.open("rb")  # the handle keeps the bytes once the name is gone
        finally:
            copy.unlink(missing_ok=True)

    def read_metadata(self, key: str) -> pq.FileMetaData:
        """From the object's end alone (the footer's length is in its last 8 bytes), each GET within the deadline."""
        size = self._bounded("reading", key, self.fs.info, self._full(key))["size"]
        tail = self._bounded("reading", key, self.fs.cat_file, self._full(key), start=max(0, size - FOOTER_READ))
        footer = int.from_bytes(tail[-8:-4], "little") + 8
        if len(tail) < min(footer, size):
            tail = self._bounded("reading", key, self.fs.cat_file, self._full(key), start=max(0, size - footer))
        return pq.read_metadata(pa.BufferReader(tail))

    def stamp(self, key: str) -> tuple[Any, ...] | None:
        try:
            info = self._bounded("looking at", key, self.fs.info, self._full(key))
        except FileNotFoundError:
            return None
        if info.get("type") != "file":
            return None
        return info.get("ETag") or info.get("etag"), info.get("size"), str(info.get("LastModified", ""))

    def glob(self, pattern: str) -> list[str]:
        prefix = f"{self.root}/"
        found = self._bounded("listing", pattern, matching, self.fs, self._full(pattern))
        return [name.removeprefix(prefix) for name in found]

    def remove(self, key: str) -> None:
        with suppress(FileNotFoundError):
            self._bounded("removing", key, self.fs.rm_file, self._full(key))

    def copy(self, source: str, target: str) -> None:
        self._bounded(f"copying {self.location(source)} to", target,
                      self.fs.copy, self._full(source), self._full(target))

    def freeze(self, files: Mapping[str, str], directory: str) -> None:
        for name in sorted(files, key=lambda name: name == DATA_LAST):
            self.copy(files[name], f"{directory}/{name}")

    def subdirectories(self, key: str) -> list[str]:
        try:
            found = self._bounded("listing", key, self.fs.ls, self._full(key), detail=True)
        except FileNotFoundError:
            return []
        names = (entry["name"].rstrip("/").rsplit("/", 1)[-1] for entry in found if entry["type"] == "directory")
        return sorted(name for name in names if not name.startswith(".") and self.exists(f"{key}/{name}/{DATA_LAST}"))

    def remove_tree(self, key: str) -> None:
        with suppress(FileNotFoundError):
            self._bounded("removing", key, self.fs.rm, self._full(key), recursive=True)

    def unreadable(self, key: str, is_data: Callable[[str], bool]) -> list[Location]:
        try:
            self._bounded("listing", key, self.fs.find, self._full(key))
        except FileNotFoundError:
            return []
        except LakeDeadlinePassed:
            raise
        except OSError:  # no right to list the bucket: every partition of the table is out of reach
            return [self.location(key)]
        return []

    def attach(self, connection: duckdb.DuckDBPyConnection) -> None:
        """A file system of the connection's own (`_Snapshot`), which looks at each object once for the connection."""
        filesystem = _new_filesystem(self.scheme, _variables(), listings_cached=True)
        snapshot = _Snapshot(filesystem, self.deadline_s)
        filesystem.pmw_snapshot = snapshot  # as long-lived as the connection's file system
        self._snapshots.add(snapshot)
        connection.register_filesystem(filesystem)


def open_store(url: str | None, data_dir: Path, deadline_s: float = DEFAULT_DEADLINE_S) -> LakeStore:
    """The store PMW_LAKE_URL names: None or ``file://`` a local folder (default ``<data_dir>/lake``); an object
    store's URL a bucket, with this host's temporaries and locks under ``<data_dir>/lake-local``, each operation
    bounded by `deadline_s` (PMW_LAKE_DEADLINE_S)."""
    if not url:
        return LocalStore(data_dir / "lake")
    scheme = url.partition("://")[0]
    if scheme == LOCAL_SCHEME:
        return LocalStore(Path(url.removeprefix("file://")))
    return ObjectStore(url, object_filesystem(scheme), data_dir / "lake-local", scheme, deadline_s)


def object_filesystem(scheme: str) -> Any:
    """The fsspec file system of an object store's scheme, configured by the usual environment variables; its
    listings never cached (other hosts write the lake). One per process and environment: a client costs tens of
    milliseconds to make, and every asset opens the lake. ImportError names the extra that installs it."""
    return _filesystem(scheme, os.getpid(), _variables())


def _variables() -> tuple[tuple[str, str], ...]:
    return variables_with_prefix(_CREDENTIAL_PREFIXES)


# The environment variables that configure the object stores' clients (endpoint, credentials, region, ...).
_CREDENTIAL_PREFIXES = ("AWS_", "GOOGLE_", "GCS", "AZURE_")


# How long a DuckDB connection's file system trusts its listings of folders (ObjectStore.attach), and which objects it
# holds in memory once read: each up to HELD_OBJECT_BYTES (a day's markets, a mart), up to HELD_BYTES in all.
READER_LISTINGS_S = 60.0
HELD_OBJECT_BYTES = 8 * 2**20
HELD_BYTES = 256 * 2**20


class _Snapshot:
    """A DuckDB connection's file system answering each glob once, and each object's size and date once.

    DuckDB globs a table's files whenever a query binds its view, and asks each file's size and date before it reads
    it: against an object store that was a listing per folder a view and two requests a file, over a thousand for one
    build of the models. A connection (a build, one statement of `pmw query` or `pmw shell`) now sees the lake's
    objects as they were the first time it looked at each (one listing a table), as a query over a local glob sees
    the files there when it starts; whatever this process publishes meanwhile (a build's tables) is looked at again
    (`forget`).
    """

    def __init__(self, filesystem: Any, deadline_s: float) -> None:
        self.filesystem, self.deadline_s = filesystem, deadline_s
        self.listed: dict[str, dict[str, dict[str, Any]]] = {}  # glob pattern -> the objects it matched
        self.found: dict[str, dict[str, Any]] = {}  # object -> its details
        self.info, self.open = filesystem.info, filesystem.open
        self.held: dict[str, bytes] = {}  # the small objects read so far: a build reads each many times
        filesystem.glob, filesystem.info = self.snapshot_glob, self.snapshot_info
        filesystem.size = lambda path: self.snapshot_info(path)["size"]
        filesystem.open = self.snapshot_open

    def snapshot_glob(self, path: str, **kwargs: Any) -> Any:
        pattern = self.filesystem._strip_protocol(path)
        if pattern not in self.listed:
            if _has_magic(pattern):
                self.listed[pattern] = self._bounded("listing", pattern, matching, self.filesystem, pattern)
            else:
                try:
                    self.listed[pattern] = {pattern: self.snapshot_info(pattern)}
                except FileNotFoundError:
                    self.listed[pattern] = {}
            self.found.update(self.listed[pattern])
        found = self.listed[pattern]
        return found if kwargs.get("detail") else list(found)

    def snapshot_info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        name = self.filesystem._strip_protocol(path)
        if name not in self.found:
            self.found[name] = self._bounded("looking at", name, self.info, path, **kwargs)
        return self.found[name]

    def snapshot_open(self, path: str, mode: str = "rb", **kwargs: Any) -> Any:
        """A small object read once (in one GET, within the deadline) and held for the connection; a large one read
        as it goes (each wait bounded by the client's read timeout)."""
        name = self.filesystem._strip_protocol(path)
        if mode != "rb" or self.snapshot_info(name)["size"] > HELD_OBJECT_BYTES:
            return self.open(path, mode, **kwargs)
        if name not in self.held:
            if sum(map(len, self.held.values())) > HELD_BYTES:
                self.held.clear()
            self.held[name] = self._bounded("reading", name, self.filesystem.cat_file, name)
        return io.BytesIO(self.held[name])

    def _bounded(self, doing: str, name: str, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return bounded(self.deadline_s, doing, self.filesystem.unstrip_protocol(name), call, *args, **kwargs)

    def forget(self, path: str) -> None:
        self.held.pop(path, None)
        self.found.pop(path, None)
        for pattern in [p for p in self.listed if path.startswith(_literal_prefix(p))]:
            del self.listed[pattern]


def matching(filesystem: Any, pattern: str, timeout: float | None = None) -> dict[str, dict[str, Any]]:
    """The objects a glob pattern (without protocol) matches, sorted, from one recursive listing of the folder before
    its first wildcard (fsspec's glob lists every folder of every level apart: a request a day of a table), given
    `timeout` seconds."""
    from fsspec.utils import glob_translate

    root = _literal_prefix(pattern).rsplit("/", 1)[0]
    try:
        found = filesystem.find(root, detail=True, timeout=timeout)
    except FileNotFoundError:
        found = {}
    regex = re.compile(glob_translate(pattern))
    return {name: details for name, details in sorted(found.items()) if regex.match(name)}


def _has_magic(pattern: str) -> bool:
    return any(character in pattern for character in "*?[")


def _literal_prefix(pattern: str) -> str:
    """A pattern up to its first wildcard."""
    return re.split(r"[*?\[]", pattern, maxsplit=1)[0]


@cache
def _filesystem(scheme: str, _pid: int, variables: tuple[tuple[str, str], ...]) -> Any:
    return _new_filesystem(scheme, variables, listings_cached=False)


def _new_filesystem(scheme: str, variables: tuple[tuple[str, str], ...], listings_cached: bool) -> Any:
    """A file system of `scheme` for these variables; `listings_cached`: trusting its listings READER_LISTINGS_S."""
    import fsspec

    options: dict[str, Any] = {"use_listings_cache": listings_cached, "skip_instance_cache": True}
    if listings_cached:
        options["listings_expiry_time"] = READER_LISTINGS_S
    region = dict(variables).get("AWS_REGION")
    if scheme == "s3" and region:  # botocore reads AWS_DEFAULT_REGION only; AWS_REGION is the other SDKs' name
        options["client_kwargs"] = {"region_name": region}
    if scheme == "s3":
        from aiobotocore.session import AioSession

        options["session"] = session = AioSession()
        session.register("needs-retry.s3", log_failed_request)
    try:
        return fsspec.filesystem(scheme, **options)
    except ImportError as error:
        extra = LAKE_SCHEMES.get(scheme, scheme)
        raise ImportError(f"a lake at {scheme}:// needs `pip install 'pm-warehouse[{extra}]'` ({error})") from error
