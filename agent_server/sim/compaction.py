"""The providers' own compaction, as the simulated model does it: the summary and its seals.

Both providers compact on their side (docs/simulator.md, "Provider compaction"). The
simulated provider writes the summary with its own summariser (`summary.summarise`, faithful
or lossy, the same one that answers every client's summary request): the conversation the
request renders, then one instruction, which a request's own `instructions` replace, as the
APIs document.

What comes back is sealed, so that the simulator can refuse what it did not issue:

- Anthropic's compaction block is readable (`content` is the summary). The on-demand form
  (`compaction: {type: "summarize"}`) is signed: `signature` is a MAC over the content, and a
  block whose content or signature was changed is refused (`compaction_signature_invalid`).
- OpenAI's compaction item is opaque: `encrypted_content` is the summary encrypted and
  authenticated under the simulator's key. Nobody else can read it, and an item the
  simulator did not issue (or one changed by a byte) is refused as the API refuses it
  (`invalid_encrypted_content`).

The key is fixed (this is a test double, not a vault), so a session saved against one
simulator process is read by the next, as a real provider reads its own items across days.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from typing import Literal

from agent_server.sim.summary import SummaryMode, summarise
from agent_server.sim.summary_requests import SUMMARY_CLOSE, SUMMARY_OPEN
from agent_server.sim.tokenizer import count_tokens
from agent_server.sim.transcript import TextPart, Transcript, TranscriptMessage

_KEY = b"agent-server-sim:provider-compaction:v1"
_NONCE_BYTES = 12
_MAC_BYTES = 16
_TAG_BYTES = 24
# What the simulated provider asks its summariser when the request gives no instructions of
# its own (the simulator's words; each API's default prompt is its own and unpublished in part).
DEFAULT_INSTRUCTION = (
    "Write a summary of the conversation above, so that the work can go on from the summary "
    "alone: the task and the user's requests, the state of the work, what was tried, what "
    "failed and what comes next."
)
# The transcript's view of a compaction that comes back: a summary handed over.
COMPACTION_OVERHEAD_TOKENS = 4


def compaction_summary(transcript: Transcript, instructions: str | None,
                       mode: SummaryMode) -> str:
    """The summary of `transcript` (the conversation the request renders), by the simulated
    model's summariser; `instructions` replace the default instruction."""
    instruction = instructions if instructions and instructions.strip() else DEFAULT_INSTRUCTION
    request = Transcript(
        system=transcript.system,
        tools=transcript.tools,
        messages=(*transcript.messages, TranscriptMessage("user", (TextPart(instruction),))),
    )
    text = summarise(request, mode).strip()
    if text.startswith(SUMMARY_OPEN) and text.endswith(SUMMARY_CLOSE):
        text = text[len(SUMMARY_OPEN) : -len(SUMMARY_CLOSE)].strip()
    return text or "(nothing to summarise)"


def handed_over(summary: str) -> TextPart:
    """How the model reads a compaction that comes back in a request: a summary handed over."""
    return TextPart(f"{SUMMARY_OPEN}\n{summary}\n{SUMMARY_CLOSE}")


def summary_tokens(summary: str) -> int:
    return COMPACTION_OVERHEAD_TOKENS + count_tokens(summary)


def instruction_tokens(instructions: str | None) -> int:
    return count_tokens(instructions if instructions and instructions.strip()
                        else DEFAULT_INSTRUCTION)


# --- Anthropic: a signed, readable block ---------------------------------------------------


def sign(content: str) -> str:
    """An on-demand compaction block's signature: a MAC over a digest of its content, and the
    digest, so that a changed content and a forged signature are told apart."""
    digest = hashlib.sha256(content.encode("utf-8")).digest()[:8]
    return base64.b64encode(_tag(digest) + digest).decode()


def signature_problem(content: str, signature: str) -> Literal["invalid", "mismatch"] | None:
    """What is wrong with a compaction block's signature: not one the simulator made
    ("invalid"), or made for another content ("mismatch"); None when it holds."""
    try:
        raw = base64.b64decode(signature.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        return "invalid"
    tag, digest = raw[:_TAG_BYTES], raw[_TAG_BYTES:]
    if len(digest) != 8 or not hmac.compare_digest(tag, _tag(digest)):
        return "invalid"
    if digest != hashlib.sha256(content.encode("utf-8")).digest()[:8]:
        return "mismatch"
    return None


def _tag(digest: bytes) -> bytes:
    return hmac.new(_KEY, b"anthropic:" + digest, hashlib.sha256).digest()[:_TAG_BYTES]


# --- OpenAI: an encrypted, authenticated item ----------------------------------------------


def _keystream(nonce: bytes, size: int) -> bytes:
    out = bytearray()
    counter = 0
    while len(out) < size:
        out += hashlib.sha256(_KEY + nonce + counter.to_bytes(8, "big")).digest()
        counter += 1
    return bytes(out[:size])


def seal(summary: str) -> str:
    """The `encrypted_content` of an OpenAI compaction item holding `summary`: deterministic
    (the same summary gives the same bytes), unreadable without the simulator's key."""
    plain = summary.encode("utf-8")
    nonce = hashlib.sha256(_KEY + plain).digest()[:_NONCE_BYTES]
    cipher = bytes(a ^ b for a, b in zip(plain, _keystream(nonce, len(plain)), strict=True))
    mac = hmac.new(_KEY, nonce + cipher, hashlib.sha256).digest()[:_MAC_BYTES]
    return base64.b64encode(nonce + cipher + mac).decode()


def unseal(token: str) -> str | None:
    """The summary inside an `encrypted_content` the simulator issued; None for anything else."""
    try:
        raw = base64.b64decode(token.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        return None
    if len(raw) < _NONCE_BYTES + _MAC_BYTES:
        return None
    nonce, cipher, mac = raw[:_NONCE_BYTES], raw[_NONCE_BYTES:-_MAC_BYTES], raw[-_MAC_BYTES:]
    expected = hmac.new(_KEY, nonce + cipher, hashlib.sha256).digest()[:_MAC_BYTES]
    if not hmac.compare_digest(mac, expected):
        return None
    plain = bytes(a ^ b for a, b in zip(cipher, _keystream(nonce, len(cipher)), strict=True))
    try:
        return plain.decode("utf-8")
    except UnicodeDecodeError:
        return None


def invalid_encrypted_content_message(token: str) -> str:
    """The Responses API's words for an item it cannot read (as its clients quote them)."""
    shown = f"{token[:10]}...{token[-4:]}" if len(token) > 16 else token
    return (f"The encrypted content {shown} could not be verified. Reason: Encrypted content "
            "could not be decrypted or parsed.")
