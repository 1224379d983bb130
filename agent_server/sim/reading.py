"""Reading on: a step that reads a stretch of a file to see all of it reads on when a result
comes back cut.

"Read the log from the start" asks for every line of the page, not for what a client's bound
lets through. A step may name the lines its reads are meant to show (`Step.sees`: each a
`Location` with its path, text and line). When the results of the step's calls, and of the
reads on it has made since, do not show every one of them, the model reads on as a model that
sees "[... Continue with offset=N]", or a head and a tail with the middle cut out, would: from
the line after the last one it saw before the first one it did not, to the line before the next
one it did see (to the end of the stretch when it saw none after). Texts are compared as the
knowledge check compares them (`knowledge.normalise`: line numbers and whitespace aside).

A client whose bound holds the whole stretch reads nothing more; one that cuts it pays for the
reads it takes to see it all, in as many model calls (`read-on:<turn>:<step>`, neither a
scenario step nor a recovery). A read on that shows none of the lines (an error, a tool that
broke) ends the reading on, as it would end a model's, and so do `MAX_READS_ON` reads on for
one step: nothing makes the model loop.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent_server.sim.knowledge import normalise
from agent_server.sim.scenario import Location, ToolInvocation

MAX_READS_ON = 12
_SEPARATOR = "\x00"


def read_on(sees: tuple[Location, ...], shown: Iterable[str], latest: Iterable[str] = ()
            ) -> ToolInvocation | None:
    """The read of the first stretch of `sees` (in order of path and line) that the texts
    `shown` (the step's results) leave out; None when they show every line, or when `latest`
    (the results of the read on just answered, if that is what was answered) shows none of
    them: an error, or the same cut again, and reading on once more would not help."""
    text = _SEPARATOR.join(normalise(piece) for piece in shown)
    answered = _SEPARATOR.join(normalise(piece) for piece in latest)

    def seen(place: Location, within: str = text) -> bool:
        return place.text is not None and normalise(place.text) in within

    if answered and not any(seen(place, answered) for place in sees):
        return None
    missing = next((index for index, place in enumerate(sees) if not seen(place)), None)
    if missing is None:
        return None
    place = sees[missing]
    assert place.line is not None  # parse_scenario requires it of what a step sees
    before = sees[missing - 1] if missing else None
    first = (before.line + 1 if before is not None and before.path == place.path
             and before.line is not None else place.line)
    last = place.line
    for later in sees[missing + 1 :]:
        if later.path != place.path or later.line is None or seen(later):
            break
        last = later.line
    return ToolInvocation("read", {"path": place.path, "offset": first,
                                   "limit": last - first + 1})
