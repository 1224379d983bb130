"""Where a line of a large file starts, without reading the file to it.

The read tool shows a page of a file and says how many lines it has. Reading a 200 MB log line
by line to get there took 0.4 s a page, whichever page. A file over INDEXED_FROM is instead
counted once, a chunk at a time, and the count of line breaks before each chunk is kept
(`LineIndex`, by the file's device and inode, for the last few files): a page then costs a
seek and the lines it shows. The index is used while the file's size and times are those it
was counted at (the change time, which no program can set back) and its first and last bytes
are the same (a file written anew in the same clock tick, under a reused inode, is not taken
for the old one). A file that only
grew (a log) is counted on from its last whole chunk, once the last bytes of every whole
chunk are found unchanged (a file cut and written again longer is counted again); any other
change counts it again.
"""

from __future__ import annotations

import bisect
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import BinaryIO

CHUNK = 1 << 20
INDEXED_FROM = 4 * CHUNK  # smaller files are read line by line, as before
_CHECKED = 4096  # the bytes compared at each end of a file, and _SAMPLE at each chunk's end
_SAMPLE = 64
_KEPT = 16


@dataclass(frozen=True, slots=True)
class LineIndex:
    size: int
    times: tuple[int, int]  # modification and change time, ns
    breaks_before: tuple[int, ...]  # line breaks before each chunk's first byte
    breaks: int  # line breaks in the whole file
    ends_with_break: bool
    samples: tuple[bytes, ...]  # the last _SAMPLE bytes of each whole chunk
    ends: bytes  # the file's first and last _CHECKED bytes when counted

    @property
    def lines(self) -> int:
        """The file's lines as the read tool counts them (a last line without a break too)."""
        return self.breaks + (0 if self.ends_with_break or self.size == 0 else 1)


_indexes: OrderedDict[tuple[int, int], LineIndex] = OrderedDict()
_lock = threading.Lock()


def index_of(handle: BinaryIO) -> LineIndex:
    """The open file's index: kept, counted on from where it ended, or counted."""
    info = os.fstat(handle.fileno())
    key = (info.st_dev, info.st_ino)
    with _lock:
        found = _indexes.get(key)
    times = (info.st_mtime_ns, info.st_ctime_ns)
    if found is not None and (found.size, found.times) != (info.st_size, times):
        found = _grown(handle, found, info.st_size, times)
    elif found is not None and _ends(handle, found.size) != found.ends:
        found = None
    if found is None:
        found = _count(handle, info.st_size, times, (), 0, 0)
    with _lock:
        _indexes[key] = found
        _indexes.move_to_end(key)
        while len(_indexes) > _KEPT:
            _indexes.popitem(last=False)
    return found


def seek_line(handle: BinaryIO, index: LineIndex, line: int) -> None:
    """Put `handle` at the first byte of line `line` (1-based; past the end: at the end)."""
    if line <= 1:
        handle.seek(0)
        return
    wanted = line - 1  # line breaks before the line
    if wanted > index.breaks:
        handle.seek(index.size)
        return
    # The last chunk that starts with fewer breaks before it than wanted holds the break.
    chunk = bisect.bisect_left(index.breaks_before, wanted) - 1
    start = chunk * CHUNK
    handle.seek(start)
    data = handle.read(CHUNK)
    position = -1
    for _ in range(wanted - index.breaks_before[chunk]):
        position = data.find(b"\n", position + 1)
    handle.seek(start + position + 1)


def _grown(handle: BinaryIO, old: LineIndex, size: int, times: tuple[int, int],
           ) -> LineIndex | None:
    """The index of a file that only grew since `old` was counted, or None."""
    whole = old.size // CHUNK
    if size <= old.size or whole == 0:
        return None
    for chunk, sample in enumerate(old.samples[:whole]):
        handle.seek((chunk + 1) * CHUNK - len(sample))
        if handle.read(len(sample)) != sample:
            return None
    return _count(handle, size, times, old.breaks_before[: whole - 1],
                  old.breaks_before[whole - 1], (whole - 1) * CHUNK, old.samples[: whole - 1])


def _count(handle: BinaryIO, size: int, times: tuple[int, int], before: tuple[int, ...],
           breaks: int, start: int, samples: tuple[bytes, ...] = ()) -> LineIndex:
    """Count on from `start` (a chunk's first byte, with `breaks` line breaks before it)."""
    counted = list(before)
    sampled = list(samples)
    handle.seek(start)
    last = b""
    position = start
    while position < size:
        data = handle.read(min(CHUNK, size - position))
        if not data:
            break
        counted.append(breaks)
        breaks += data.count(b"\n")
        position += len(data)
        last = data[-1:]
        if len(data) == CHUNK:
            sampled.append(data[-_SAMPLE:])
    return LineIndex(position, times, tuple(counted), breaks, last == b"\n", tuple(sampled),
                     _ends(handle, position))


def _ends(handle: BinaryIO, size: int) -> bytes:
    handle.seek(0)
    first = handle.read(min(_CHECKED, size))
    handle.seek(max(0, size - _CHECKED))
    return first + handle.read(_CHECKED)
