"""Shell commands as the permission rules see them: words, and whether the command is simple.

A rule "always allow `npm test:*`" must never allow `npm test; rm -rf ~`. So a prefix rule
only ever matches a simple command: one command of plain words, with no operator that runs
another (`;`, `&`, `|`, a newline), no redirection or subshell (`<`, `>`, parentheses), and
no substitution (`$(...)`, backquotes, `<(...)`). Anything else is asked about again, unless
the user allowed exactly that text.

A prefix rule trusts the command with whatever arguments follow it, so some prefixes are never
offered (`never_offered` says why; the table is `NEVER_OFFERED`): shells, interpreters and
wrappers that run their arguments as code (`python3:*` would allow `python3 -c ...`),
package runners and installers (`npx`, `npm exec`, `pip install`: they fetch and run
code), commands that destroy, overwrite or change permissions (`rm`, `dd`, `mv`, `chmod`,
`find` with its `-exec` and `-delete`), commands that reach the network (`curl`, `ssh`),
and every git subcommand but the read-only ones (`git push`, `git reset`, `git clean`,
`git config` ... are only ever allowed one exact command at a time). Tools with
subcommands (`git`, `npm`, `cargo`, `docker`, ...) are never offered alone: `npm:*` would
cover `npm exec`.

A prefix rule covers what a command does, not only its first words: the words after the
prefix must stay data in the workspace (`reaches_beyond`). An option that runs another
program or writes where its arguments do not say (`git grep --open-files-in-pager=CMD`,
`git diff --output=PATH`, `go test -exec CMD`, `cmake -E`, any `--output`, `--exec`,
`--pager` ...: the table is `RUNS_OR_WRITES`), an argument naming a path outside the
workspace (absolute, `~`, `..`) or a file that commonly holds secrets (`.env`, `id_rsa`,
`*.pem`: `base64 .env` would send them past the redaction) is never covered: such a
command is asked about again, and the question says why. A command that reaches beyond is
offered no prefix at all.
"""

from __future__ import annotations

import fnmatch
import re
import shlex

from agent_server.agent.tools.paths import SECRET_FILES, secret_file

# Characters shlex reports as punctuation: every one of them chains, redirects or groups.
_OPERATORS = "();<>|&"
# Substitutions run a command from inside a word, even between double quotes.
_SUBSTITUTIONS = ("$(", "`", "<(", ">(")
PREFIX_SUFFIX = ":*"

# First words a prefix rule is never offered for, by why: each would allow anything.
NEVER_OFFERED: dict[str, frozenset[str]] = {
    "a shell": frozenset(
        ("sh", "bash", "zsh", "dash", "fish", "ksh", "mksh", "csh", "tcsh", "ash", "busybox",
         "pwsh", "powershell", "nu", "xonsh", "elvish")
    ),
    "an interpreter": frozenset(
        ("python", "python2", "python3", "pypy", "pypy3", "node", "nodejs", "deno", "bun",
         "perl", "ruby", "irb", "php", "lua", "luajit", "tclsh", "wish", "Rscript", "R",
         "julia", "osascript", "awk", "gawk", "mawk", "nawk", "sed", "java", "jshell",
         "groovy", "scala", "kotlin", "swift", "ghci", "runghc", "erl", "elixir", "iex",
         "guile", "racket", "sbcl", "clojure", "dotnet", "pwsh", "ipython", "jupyter",
         "expect", "gdb", "lldb", "vim", "vi", "nvim", "emacs", "ed", "ex")
    ),
    "a command that runs its arguments": frozenset(
        ("env", "sudo", "doas", "su", "runuser", "pkexec", "xargs", "parallel", "eval", "exec",
         "command", "builtin", "source", ".", "nohup", "time", "timeout", "nice", "ionice",
         "watch", "setsid", "stdbuf", "flock", "chroot", "unshare", "nsenter", "strace",
         "ltrace", "valgrind", "script", "taskset", "chrt", "prlimit", "systemd-run", "entr",
         "firejail", "bwrap", "fakeroot", "proot", "make", "gmake", "just", "task", "ninja",
         "rg", "zip", "sort",  # make --eval, rg --pre, zip -TT, sort --compress-program
         # terminal multiplexers start commands; database shells run `.shell`, `\\!`;
         # editors install extensions; openers start any program
         "tmux", "screen", "byobu", "sqlite3", "sqlite", "duckdb", "psql", "mysql", "mariadb",
         "code", "code-insiders", "codium", "cursor", "open", "xdg-open", "gio")
    ),
    "a package runner or installer": frozenset(
        ("npx", "pnpx", "bunx", "uvx", "pipx", "pip", "pip3", "gem", "brew", "apt", "apt-get",
         "dnf", "yum", "apk", "pacman", "snap", "flatpak", "nix-shell", "nix-env", "conda",
         "mamba", "corepack", "volta", "asdf", "mise")
    ),
    "a command that destroys, overwrites or changes permissions": frozenset(
        ("rm", "rmdir", "unlink", "dd", "shred", "truncate", "mkfs", "wipefs", "fdisk",
         "parted", "mv", "cp", "ln", "install", "tee", "chmod", "chown", "chgrp", "chattr",
         "setfacl", "find", "fd", "kill", "pkill", "killall", "shutdown", "reboot", "halt",
         "poweroff", "systemctl", "service", "crontab", "at", "mount", "umount", "sponge",
         "patch", "tar", "unzip", "rsync")
    ),
    "a command that reaches the network": frozenset(
        ("curl", "wget", "nc", "ncat", "netcat", "socat", "ssh", "scp", "sftp", "telnet",
         "ftp", "http", "https", "xh", "aria2c", "gh", "glab")  # gh ... --body-file ~/.ssh/...
    ),
}
# Options that make a command run another program, or read or write where its arguments do
# not say: never covered by a prefix rule (`reaches_beyond`). Long options match as the word
# or `--name=value`; letters as a short option of their own or in a bundle (`-iO`). Every
# program's, then each program's own.
RUNS_OR_WRITES_EVERYWHERE = frozenset(
    ("--output", "--output-file", "--output-dir", "--out-file", "--outfile", "--out-dir",
     "--log-file", "--logfile", "--exec", "--exec-path", "--pager", "--editor", "--shell",
     "--command", "--eval", "--rcfile", "--init-file", "--upload-pack", "--receive-pack")
)
RUNS_OR_WRITES: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # git grep -O/--open-files-in-pager runs a program; diff/log --output writes anywhere;
    # --ext-diff and --textconv run the configured drivers; the others pick another repository.
    "git": (
        frozenset(("--open-files-in-pager", "--ext-diff", "--textconv", "--git-dir",
                   "--work-tree", "--namespace", "--config-env", "--no-index", "--contents")),
        frozenset("O"),
    ),
    "go": (frozenset(("-exec", "-toolexec", "-overlay", "-modfile", "-o", "-coverprofile",
                      "-cpuprofile", "-memprofile", "-trace", "-outputdir")), frozenset()),
    "cargo": (frozenset(("--config", "-Z", "--target-dir", "--manifest-path")), frozenset()),
    "cmake": (frozenset(("-E", "-P", "--build", "--install")), frozenset()),
    "rake": (frozenset(("--execute", "--execute-continue", "--execute-print", "--require",
                        "--rakefile", "--libdir", "--rakelib")), frozenset("eEprfIR")),
    "pytest": (frozenset(("--junitxml", "--junit-xml", "--basetemp", "--rootdir",
                          "--confcutdir", "--debug", "--pastebin", "--resultlog")),
               frozenset("pc")),
    "tsc": (frozenset(("--outDir", "--outFile", "--out", "--declarationDir",
                       "--tsBuildInfoFile", "--generateTrace")), frozenset()),
}
RUNS_OR_WRITES["py.test"] = RUNS_OR_WRITES["pytest"]
# Versioned interpreter names: python3.12, pypy3.10, ruby3.2, perl5.36, node20, php8.3, lua5.4.
_VERSIONED_INTERPRETER = re.compile(
    r"(?:python|pypy|ruby|perl|node|php|lua|tclsh|wish|pip|mkfs)[0-9.]*(?:\.[a-z0-9]+)?"
)
# Tools with subcommands: never offered alone (`npm:*` would cover `npm exec`). A two-word
# prefix is offered unless the subcommand runs packages or arbitrary code.
SUBCOMMAND_TOOLS = frozenset(
    ("git", "npm", "pnpm", "yarn", "bun", "deno", "uv", "poetry", "pipenv", "pdm", "hatch",
     "rye", "conda", "mamba", "bundle", "go", "cargo", "rustup", "docker", "podman",
     "kubectl", "helm", "nix", "dotnet", "gradle", "mvn", "terraform", "gh", "glab", "aws",
     "gcloud", "az", "composer", "mix", "stack", "cabal", "swift", "zig", "tox", "nox")
)
RUNNER_SUBCOMMANDS = frozenset(
    ("exec", "x", "dlx", "run", "run-script", "eval", "shell", "tool", "install", "i", "add",
     "ci", "update", "upgrade", "up", "publish", "login", "api", "apply", "destroy", "create",
     "rm", "remove", "uninstall", "prune", "script", "repl", "cp", "attach", "debug", "task")
)
# The git subcommands a prefix may cover: they only read. Every other one (push, reset,
# rebase, clean, checkout, restore, commit --amend, config, filter-branch, gc, stash, ...)
# is asked about each time, or allowed as one exact command.
GIT_READ_ONLY = frozenset(
    ("status", "diff", "log", "show", "blame", "shortlog", "describe", "rev-parse", "ls-files",
     "ls-tree", "grep", "cat-file", "whatchanged", "show-ref", "count-objects", "rev-list",
     "merge-base", "name-rev", "check-ignore", "version", "help")
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


def never_offered(program: str) -> str | None:
    """Why no prefix rule starting with `program` is ever offered (a shell, an interpreter,
    ...), or None. A path counts by its last part (`/usr/bin/python3`, `./venv/bin/pip`)."""
    name = program.rsplit("/", 1)[-1]
    if "=" in program or not name:
        return "a variable assignment"
    for why, names in NEVER_OFFERED.items():
        if name in names:
            return why
    if _VERSIONED_INTERPRETER.fullmatch(name):
        return "an interpreter"
    return None


def prefix_choices(command: str, most: int = 2) -> list[tuple[str, ...]]:
    """The word prefixes of a simple command a user may allow for the session, shortest
    first: its first word, its first two words, ... (at most `most`), never the whole
    command (that is the exact-command choice), never ending in an option (`-x`), and none
    at all for a program that `never_offered` names. A tool with subcommands (`npm test`)
    is offered with its subcommand only, and not for subcommands that run packages or code
    (`npm exec`, `cargo install`) nor, for git, any but the read-only ones."""
    words = simple_command_words(command)
    if words is None or never_offered(words[0]) is not None:
        return []
    program = words[0].rsplit("/", 1)[-1]
    if reaches_beyond(words, 1) is not None:  # no prefix rule would cover this command
        return []
    choices: list[tuple[str, ...]] = []
    for length in range(1, min(most, len(words) - 1) + 1):
        prefix = words[:length]
        if prefix[-1].startswith("-"):
            break
        if program in SUBCOMMAND_TOOLS:
            if length == 1:
                continue
            if length == 2 and not _harmless_subcommand(program, prefix[1]):
                break
        choices.append(prefix)
    return choices


def _harmless_subcommand(program: str, subcommand: str) -> bool:
    if program == "git":
        return subcommand in GIT_READ_ONLY
    return subcommand not in RUNNER_SUBCOMMANDS


def prefix_label(prefix: tuple[str, ...]) -> str:
    """`npm test:*`: how a prefix rule is written for the user."""
    return shlex.join(prefix) + PREFIX_SUFFIX


def starts_with(command: str, prefix: tuple[str, ...]) -> bool:
    """Whether a prefix rule for `prefix` covers `command`: a simple command whose first
    words are `prefix`, and whose other words do not reach beyond what the rule trusts."""
    words = simple_command_words(command)
    return (
        words is not None
        and words[: len(prefix)] == prefix
        and reaches_beyond(words, len(prefix)) is None
    )


def uncovered_by(command: str, prefix: tuple[str, ...]) -> str | None:
    """Why a simple command that starts with `prefix` is still not covered by its rule
    (the question says it); None when it is, or when it does not start with `prefix`."""
    words = simple_command_words(command)
    if words is None or words[: len(prefix)] != prefix:
        return None
    return reaches_beyond(words, len(prefix))


def reaches_beyond(words: tuple[str, ...], start: int) -> str | None:
    """Why the words of a simple command from `start` on reach beyond the data a prefix
    rule trusts them to be: an option that runs another program or reads or writes where
    the arguments do not say (`RUNS_OR_WRITES`), or a path outside the workspace; None when
    they do not."""
    program = words[0].rsplit("/", 1)[-1]
    long_options, letters = RUNS_OR_WRITES.get(program, (frozenset(), frozenset()))
    for word in words[start:]:
        name, _, value = word.partition("=")
        if name in RUNS_OR_WRITES_EVERYWHERE or name in long_options:
            return f"`{name}` runs another program or reads or writes elsewhere"
        if word.startswith("-") and not word.startswith("--"):
            # `-O`, `-Oless` (its value attached) or a bundle of flags (`-iO`).
            flags = word[1:] if word[1:].isalpha() else word[1:2]
            found = sorted(letter for letter in set(flags) if letter in letters)
            if found:
                return f"`-{found[0]}` runs another program or reads or writes elsewhere"
        for path in (word, value) if value else (word,):
            if _outside_the_workspace(path):
                return f"`{path}` is outside the workspace"
            if _names_a_secret_file(path):
                return f"`{path}` may hold secrets"
    return None


# A name of each kind SECRET_FILES lists (`*` made a letter), for a glob word to be tried on.
_SECRET_NAMES = tuple(
    name for name in (pattern.replace("*", "x") for pattern in SECRET_FILES)
    if secret_file(name)
)


def _names_a_secret_file(word: str) -> bool:
    """A path whose file commonly holds secrets (`.env`, `id_rsa`, `*.pem`: the file tools
    ask before reading one), or a glob that could match one (`.env*`, `*.pem`)."""
    name = word.rstrip("/").rsplit("/", 1)[-1]
    if not name:
        return False
    if any(mark in name for mark in "*?["):
        return any(fnmatch.fnmatchcase(secret, name) for secret in _SECRET_NAMES)
    return secret_file(name)


def _outside_the_workspace(word: str) -> bool:
    """A path that leaves the workspace: absolute (but /dev/null), in a home (`~`), or
    going up (`..`)."""
    if word.startswith("/"):
        return word != "/dev/null"
    return word.startswith("~") or ".." in word.split("/")
