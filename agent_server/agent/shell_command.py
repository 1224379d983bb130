"""Shell commands as the permission rules see them: words, and whether the command is simple.

A rule "always allow `npm test:*`" must never allow `npm test; rm -rf ~`. So a prefix rule
only ever matches a simple command: one command of plain words, with no operator that runs
another (`;`, `&`, `|`, a newline), no redirection or subshell (`<`, `>`, parentheses), and
no substitution (`$(...)`, backquotes, `<(...)`). Anything else is asked about again, unless
the user allowed exactly that text.
"""

from __future__ import annotations

import shlex

# Characters shlex reports as punctuation: every one of them chains, redirects or groups.
_OPERATORS = "();<>|&"
# Substitutions run a command from inside a word, even between double quotes.
_SUBSTITUTIONS = ("$(", "`", "<(", ">(")
PREFIX_SUFFIX = ":*"
# Commands that run whatever their arguments say: a prefix ending in one of them would allow
# anything, so it is never offered (`sudo:*`, `bash:*`, `env:*`, `xargs:*`, ...).
RUNNERS = frozenset(
    {
        *("sh", "bash", "zsh", "dash", "fish", "ksh", "env", "sudo", "doas", "su", "xargs"),
        *("eval", "exec", "command", "builtin", "nohup", "time", "timeout", "nice", "watch"),
    }
)


def simple_command_words(command: str) -> tuple[str, ...] | None:
    """The words of a simple command, or None when the command chains, redirects, groups or
    substitutes anything (or cannot be split: an open quote)."""
    if "\n" in command.strip() or any(mark in command for mark in _SUBSTITUTIONS):
        return None
    lexer = shlex.shlex(command, posix=True, punctuation_chars=_OPERATORS)
    lexer.whitespace_split = True
    try:
        words = tuple(lexer)
    except ValueError:
        return None
    if not words or any(word and set(word) <= set(_OPERATORS) for word in words):
        return None
    return words


def prefix_choices(command: str, most: int = 2) -> list[tuple[str, ...]]:
    """The word prefixes of a simple command a user may allow for the session, shortest
    first: its first word, its first two words, ... (at most `most`), never the whole
    command (that is the exact-command choice), never ending in an option (`-x`) and never
    in a command that runs other commands (RUNNERS)."""
    words = simple_command_words(command)
    if words is None:
        return []
    choices: list[tuple[str, ...]] = []
    for length in range(1, min(most, len(words) - 1) + 1):
        prefix = words[:length]
        if prefix[-1].startswith("-") or prefix[-1] in RUNNERS:
            break
        choices.append(prefix)
    return choices


def prefix_label(prefix: tuple[str, ...]) -> str:
    """`npm test:*`: how a prefix rule is written for the user."""
    return shlex.join(prefix) + PREFIX_SUFFIX


def starts_with(command: str, prefix: tuple[str, ...]) -> bool:
    """Whether `command` is a simple command whose first words are `prefix`."""
    words = simple_command_words(command)
    return words is not None and words[: len(prefix)] == prefix
