"""Text from the model, a file or a tool, shown literally.

Whatever shows such text (the terminal, a notification, a log line; the editor's webview has
the same rule in client-vscode/src/webview/literal.ts) shows the characters that are there
and nothing else: no markup interpreted, no escape sequence acted on, nothing reordered or
hidden. This module is the one definition of the characters that would act instead of
showing, and of how they are shown instead:

- C0 and C1 control characters and DEL (ESC starts a terminal's escape sequences; CR and BS
  move back over what was printed), except the line breaks and tabs a caller keeps;
- Unicode's bidirectional controls (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C),
  which reorder the text around them ("Trojan Source");
- invisible format characters that can hide or smuggle text: zero-width space, word joiner
  and the invisible operators, the byte order mark, soft hyphen, the tag characters
  (U+E0000-U+E007F), line and paragraph separators, lone surrogates.

Each becomes a visible escape in Python's notation (`\\r`, `\\x1b`, `\\u202e`, `\\U000e0041`). The
zero-width joiner and non-joiner are left alone: scripts and emoji need them, and they hide
nothing.

A file's content that the model reads and then edits (the read and grep tools) cannot take
Python's notation: a source file holds `\\x1b` as four characters often enough. Its control
characters become Unicode's control pictures instead (`as_pictures`: ESC is U+241B, `␛`; DEL
is `␡`), one character for one, and the others, which have no picture, their code point
between mathematical angle brackets (`⟨U+202E⟩`, which no source file writes by chance); the
edit and write tools take both back (`from_pictures`).

Where a program's text is read for its meaning rather than shown (a compaction hook's
answer), its terminal escape sequences are taken out whole instead (`without_escape_sequences`):
a colourful script's `\\x1b[31m` is no part of what it said. A command's output keeps its
colours, which an editor draws, and loses every other sequence (`output_text`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator

_C0_AND_DEL = "\x00-\x08\x0b-\x1f\x7f"  # C0 (except tab and newline), DEL
# The rest, which has no control picture (a file's are shown as `⟨U+202E⟩`: `as_pictures`).
_UNPICTURED = (
    "\x80-\x9f"  # C1
    "\u00ad\u061c\u180e"  # soft hyphen, Arabic letter mark, Mongolian vowel separator
    "\u200b\u200e\u200f"  # zero-width space, left-to-right and right-to-left marks
    "\u2028\u2029"  # line and paragraph separators
    "\u202a-\u202e"  # bidi embeddings and overrides
    "\u2060-\u2064"  # word joiner, invisible operators
    "\u2066-\u206f"  # bidi isolates, deprecated format controls
    "\ufeff\ufff9-\ufffb"  # byte order mark, interlinear annotation controls
    "\U000e0000-\U000e007f"  # tag characters
    "\ud800-\udfff"  # lone surrogates
)
_INVISIBLE = _C0_AND_DEL + _UNPICTURED
# ECMA-48's 7-bit escape sequences: CSI (colours, cursor moves), the string sequences OSC,
# DCS, SOS, PM and APC (a window title, a hyperlink) up to their BEL or ST, and any other
# (a charset switch `\x1b(B`, `\x1b7`). A string sequence never reaches past the next ESC, so
# the search is linear.
_ESCAPE_SEQUENCE = re.compile(
    "\x1b\\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"
    "|\x1b[\\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\\\)"
    "|\x1b[\x20-\x2f]*[\x30-\x7e]"
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_PATTERNS: dict[str, re.Pattern[str]] = {}


def _pattern(keep: str) -> re.Pattern[str]:
    """The characters to escape; `keep` may spare the tab and the newline, nothing else."""
    pattern = _PATTERNS.get(keep)
    if pattern is None:
        if set(keep) - {"\n", "\t"}:
            raise ValueError(f"only line breaks and tabs can be kept, not {keep!r}")
        spared = "".join(ch for ch in "\t\n" if ch not in keep)
        pattern = _PATTERNS[keep] = re.compile(f"[{_INVISIBLE}{re.escape(spared)}]")
    return pattern


def hidden_pattern(keep: str = "\n\t") -> re.Pattern[str]:
    """The characters `literal` escapes, but for the line breaks and tabs in `keep`: for a
    caller that shows them its own way (a listed file name, quoted: agent/tools/paths.py)."""
    return _pattern(keep)


def escape_of(char: str) -> str:
    """The visible stand-in for one character: `\\x1b`, `\\u202e`, `\\U000e0041`."""
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def pieces(text: str, *, keep: str = "\n\t") -> Iterator[tuple[str, bool]]:
    """`text` as runs of (literal text, False) and (escape, True), in order; a CR LF line
    ending counts as a line break when line breaks are kept."""
    if "\n" in keep:
        text = text.replace("\r\n", "\n")
    start = 0
    for match in _pattern(keep).finditer(text):
        if match.start() > start:
            yield text[start : match.start()], False
        yield escape_of(match.group()), True
        start = match.end()
    if start < len(text):
        yield text[start:], False


def literal(text: str, *, keep: str = "\n\t") -> str:
    """`text` with every character that would act instead of showing replaced by its
    escape; `keep` lists the line breaks and tabs that stay (pass "" for one line)."""
    if not _pattern(keep).search(text) and ("\r\n" not in text or "\n" not in keep):
        return text
    return "".join(piece for piece, _escaped in pieces(text, keep=keep))


def without_escape_sequences(text: str) -> str:
    """`text` without its terminal escape sequences (see the module docstring); a lone ESC
    and other control characters stay, for `literal` to show."""
    return _ESCAPE_SEQUENCE.sub("", text) if "\x1b" in text else text


# ECMA-48's SGR (Select Graphic Rendition): colours and bold, and nothing else (no cursor
# move, no title, no link, no clipboard): an editor that shows a command's output draws them.
_SGR = re.compile("\x1b\\[[0-9;:]*m")


def output_text(text: str) -> str:
    """A program's output as text, for the model and the editor alike: its colours (SGR)
    kept, every other escape sequence taken out whole (a window title, OSC 52's clipboard,
    OSC 8's link, a cursor move or a screen clear), any other control or invisible character
    shown as its escape (a lone ESC, a CR, U+202E)."""
    if "\x1b" not in text:
        return literal(text)
    pieces, start = [], 0
    for colour in _SGR.finditer(text):
        pieces += [literal(without_escape_sequences(text[start : colour.start()])), colour[0]]
        start = colour.end()
    pieces.append(literal(without_escape_sequences(text[start:])))
    return "".join(pieces)


_CONTROLS = re.compile(f"[{_C0_AND_DEL}]")
_OTHERS = re.compile(f"[{_UNPICTURED}]")
_PICTURES = re.compile("[\u2400-\u241f\u2421]")
_NOTATION = re.compile("\u27e8U\\+([0-9A-F]{4,6})\u27e9")
_DEL, _DEL_PICTURE = 0x7F, 0x2421


def as_pictures(text: str) -> str:
    """A file's text with its control characters (C0 but tab and newline, and DEL) shown as
    Unicode's control pictures (U+2400-U+241F, U+2421): `\x1b` becomes `␛`; and each other
    character `literal` escapes (C1, a bidi control, an invisible format character) as its
    code point between mathematical angle brackets: U+202E becomes `⟨U+202E⟩`."""
    if _CONTROLS.search(text):
        text = _CONTROLS.sub(_picture, text)
    if _OTHERS.search(text):
        text = _OTHERS.sub(lambda match: f"\u27e8U+{ord(match.group()):04X}\u27e9", text)
    return text


def from_pictures(text: str) -> str:
    """The inverse of `as_pictures`: each control picture back to its control character,
    each `⟨U+202E⟩` of a character `as_pictures` shows so back to that character."""
    if _PICTURES.search(text):
        text = _PICTURES.sub(_control, text)
    if "\u27e8U+" in text:
        text = _NOTATION.sub(_unnoted, text)
    return text


def _picture(match: re.Match[str]) -> str:
    code = ord(match.group())
    return chr(_DEL_PICTURE if code == _DEL else 0x2400 + code)


def _control(match: re.Match[str]) -> str:
    code = ord(match.group())
    return chr(_DEL if code == _DEL_PICTURE else code - 0x2400)


def _unnoted(match: re.Match[str]) -> str:
    code = int(match.group(1), 16)
    char = chr(code) if code <= 0x10FFFF else ""
    return char if char and _OTHERS.fullmatch(char) else match.group()


def has_hidden(text: str) -> bool:
    """Whether `text` holds a character that `literal` would escape (line breaks and tabs
    aside)."""
    return _pattern("\n\t").search(text.replace("\r\n", "\n")) is not None


class LiteralLogFormatter(logging.Formatter):
    """Log lines that cannot forge other lines or act on a terminal: a message's own line
    breaks and control characters are escaped; a traceback keeps its lines."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return literal(super().formatMessage(record), keep="\t")
