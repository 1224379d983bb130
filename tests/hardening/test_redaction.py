"""Redaction of text that arrives in pieces: a secret split anywhere is caught like a whole one."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from agent_server.redaction import REDACTED, StreamRedactor, looks_like_key, redact

KEY = "sk-ant-api03-" + "Q7xZ" * 20  # the provider key
PHRASE = "correct horse battery"  # a secret with spaces in it

fragments = st.one_of(
    st.sampled_from([KEY, PHRASE, "sk-", "sk-ant", "ghp_" + "a1" * 12, "AKIA" + "Z" * 16]),
    st.builds(lambda k: KEY[:k], st.integers(1, len(KEY))),
    st.builds(lambda k: PHRASE[:k], st.integers(1, len(PHRASE))),
    st.text(alphabet="ab-_ sk\n:=Q7xZ", max_size=12),
)


def stream(text: str, cuts: list[int], secrets: tuple[str, ...], max_hold: int) -> str:
    redactor = StreamRedactor(secrets, max_hold=max_hold)
    points = sorted({c % (len(text) + 1) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    return "".join(redactor.feed(p) for p in pieces) + redactor.finish()


@settings(max_examples=400, deadline=None)
@given(
    parts=st.lists(fragments, max_size=12),
    cuts=st.lists(st.integers(0, 10_000), max_size=12),
    max_hold=st.sampled_from([4096, 16]),
)
def test_pieces_are_redacted_as_the_whole_text(
    parts: list[str], cuts: list[int], max_hold: int
) -> None:
    text = "".join(parts)
    streamed = stream(text, cuts, (KEY, PHRASE), max_hold)
    if max_hold == 4096:
        assert streamed == redact(text, KEY, PHRASE)
    assert KEY not in streamed and PHRASE not in streamed


def test_the_key_split_at_a_flush_boundary_is_caught() -> None:
    # What leaked before: a key straddling the 4096-character flush of one long line.
    line = "x" * 4090 + " " + KEY + " tail\n"
    redactor = StreamRedactor((KEY,))
    out = redactor.feed(line[:4096]) + redactor.feed(line[4096:]) + redactor.finish()
    assert KEY not in out and KEY[:12] not in out
    assert out == "x" * 4090 + f" {REDACTED} tail\n"


def test_a_run_longer_than_the_hold_is_dropped_to_its_end() -> None:
    redactor = StreamRedactor((), max_hold=8)
    out = redactor.feed("token sk-" + "A" * 30) + redactor.feed("B" * 10 + " next") + redactor.finish()
    assert out == f"token {REDACTED} next"


def test_plain_text_passes_through_and_only_an_unfinished_line_waits() -> None:
    # The unfinished line may still become an assignment to a secret-looking name.
    redactor = StreamRedactor((KEY,))
    assert redactor.feed("line one\nline two\n") == "line one\nline two\n"
    assert redactor.feed("partial wor") == ""
    assert redactor.feed("d\nnext") == "partial word\n"
    assert redactor.finish() == "next"


def test_key_shapes() -> None:
    for value in (KEY, "ghp_" + "a" * 36, "AKIAIOSFODNN7EXAMPLE", "xoxb-1234567890-abc"):
        assert looks_like_key(value), value
    for value in ("sk-short", "hello world", "/usr/bin", "AKIA-not"):
        assert not looks_like_key(value), value


# --- issue 24: secret-looking values in files, not only key shapes ------------------------

ENV_FILE = (
    "# database\n"
    "DB_HOST=localhost\n"
    "DB_PASSWORD=postgres-s3cret\n"
    "AWS_ACCESS_KEY_ID=AKIAQ7XZ2MQ9VR4TY8WZ\n"
    "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"
    "export STRIPE_SECRET=sk_live_4eC39HqLyjWDarjtT1zdp7dc\n"
    "SESSION_TOKEN: 3f9a1c27b8e04d6a9c5b2e7f10d8a4c6\n"
    'config = {"client_secret": "Gx7kP2mQ9vR4tY8wZ1aB3cD5"}\n'
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
    "jwt=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U\n"
    "PORT=3000\n"
)
SECRET_VALUES = (
    "postgres-s3cret", "AKIAQ7XZ2MQ9VR4TY8WZ", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "3f9a1c27b8e04d6a9c5b2e7f10d8a4c6",
    "Gx7kP2mQ9vR4tY8wZ1aB3cD5", "b3BlbnNzaC1rZXkt", "eyJhbGciOiJIUzI1NiJ9",
)
# Code and settings that only look like it: left alone, so that the model can edit them.
NOT_SECRETS = (
    'password = request.form["password"]\n'
    'api_key = os.environ["API_KEY"]\n'
    'SORT_KEY = "name"\n'
    "token = get_token_for(user)\n"
    "token = defaultTokenValue\n"
    "PASSWORD=${DB_PASSWORD}\n"
    'password: "<your password>"\n'
    'PRIMARY_KEY="user_id_column"\n'
    "key_count=12\n"
)


def test_secret_values_in_an_env_file_are_redacted_and_the_names_kept() -> None:
    out = redact(ENV_FILE)
    for value in SECRET_VALUES:
        assert value not in out, value
    for kept in ("DB_HOST=localhost", "DB_PASSWORD=[redacted]", "AWS_SECRET_ACCESS_KEY=",
                 "PORT=3000", "# database", '"client_secret": "[redacted]"'):
        assert kept in out, kept


def test_code_that_only_looks_secret_is_left_alone() -> None:
    assert redact(NOT_SECRETS) == NOT_SECRETS


@settings(max_examples=300, deadline=None)
@example(cuts=[586], max_hold=4096)  # right after the BEGIN line: the block was let through
@given(cuts=st.lists(st.integers(0, 10_000), max_size=16), max_hold=st.sampled_from([4096, 64]))
def test_an_env_file_in_pieces_is_redacted_as_a_whole(cuts: list[int], max_hold: int) -> None:
    text = NOT_SECRETS + ENV_FILE + NOT_SECRETS
    streamed = stream(text, cuts, (), max_hold)
    if max_hold == 4096:
        assert streamed == redact(text)
    for value in SECRET_VALUES:
        assert value not in streamed, value


def test_a_private_key_block_longer_than_the_hold_is_dropped_to_its_end() -> None:
    body = "\n".join("A" * 64 for _ in range(400))  # 26 KB: more than any real key
    text = f"before\n-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----\nafter\n"
    redactor = StreamRedactor(())
    out = "".join(redactor.feed(text[i : i + 1000]) for i in range(0, len(text), 1000))
    out += redactor.finish()
    assert out == f"before\n{REDACTED}\nafter\n"
