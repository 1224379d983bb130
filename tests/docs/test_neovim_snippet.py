"""The README's Neovim snippet, run as Lua (lupa) against a stand-in for the parts of Neovim's
API it calls: Neovim 0.11 cannot be installed here (Debian has 0.7), so the editor is the one
part stood in for. It checks what users saw go wrong: the streamed answer must accumulate in
one buffer instead of printing each piece as its own message."""

from __future__ import annotations

import re
from pathlib import Path

from lupa import LuaRuntime

README = Path(__file__).resolve().parents[2] / "README.md"

FAKE_NEOVIM = r"""
lines = { "" }
messages = {}
requests = {}
vim = {
  api = {
    nvim_create_buf = function() return 7 end,
    nvim_buf_line_count = function(_) return #lines end,
    nvim_buf_get_lines = function(_, s, e, _)
      local out = {}
      for i = s + 1, e do out[#out + 1] = lines[i] end
      return out
    end,
    nvim_buf_set_lines = function(_, s, e, _, replacement)
      local new = {}
      for i = 1, s do new[#new + 1] = lines[i] end
      for _, l in ipairs(replacement) do new[#new + 1] = l end
      for i = e + 1, #lines do new[#new + 1] = lines[i] end
      lines = new
    end,
    nvim_echo = function(chunks) messages[#messages + 1] = chunks[1][1] end,
  },
  cmd = function(_) end,
  split = function(s, sep, _)
    local out, start = {}, 1
    while true do
      local i = string.find(s, sep, start, true)
      if not i then out[#out + 1] = string.sub(s, start); return out end
      out[#out + 1] = string.sub(s, start, i - 1)
      start = i + #sep
    end
  end,
  fn = {
    getcwd = function() return "/w" end,
    confirm = function() return 1 end,
    expand = function(path) return (string.gsub(path, "^~", "/home/me")) end,
  },
  fs = { root = function() return "/w" end },
  uri_from_fname = function(f) return "file://" .. f end,
}
client = { config = { root_dir = "/w" } }
function client:request(method, params, callback)
  requests[#requests + 1] = { method = method, params = params, callback = callback }
end
vim.lsp = {
  start = function(config) started = config; return 1 end,
  get_client_by_id = function(_) return client end,
}
print = function(text) messages[#messages + 1] = text end
"""


def snippet() -> tuple[str, str]:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### In Neovim") : text.index("### In Emacs")]
    lua = re.search(r"```lua\n(.*?)```", section, re.S)
    assert lua is not None
    return section[: lua.start()], lua.group(1)


def test_the_snippet_says_it_needs_neovim_0_11_before_the_code() -> None:
    prose, _ = snippet()
    assert "Neovim 0.11 or newer" in prose
    # Where it goes and how it runs.
    assert "~/.config/nvim/lua/agent.lua" in prose and ':lua require("agent")' in prose


def test_streamed_pieces_accumulate_in_one_buffer() -> None:
    lua = LuaRuntime(unpack_returned_tuples=True)
    lua.execute(FAKE_NEOVIM)
    lua.execute(snippet()[1])
    g = lua.globals()
    started = g.started
    assert started.cmd[1] == "/home/me/agent-server/.venv/bin/agent-server"
    assert started.cmd[2] == "serve"
    assert started.init_options.clientCapabilities.requestPermission is True
    # agent/session/new was asked; its answer starts the turn.
    new = g.requests[1]
    assert new.method == "agent/session/new" and new.params.workspaceUri == "file:///w"
    new.callback(None, lua.table_from({"sessionId": "s1"}))
    turn = g.requests[2]
    assert turn.method == "agent/turn" and turn.params.sessionId == "s1"

    update = started.handlers["agent/update"]
    for piece in ("Hello, ", "wor", "ld.\nSecond ", "line."):
        update(None, lua.table_from({"update": lua.table_from({"kind": "messageChunk", "content": lua.table_from({"text": piece})})}))
    update(None, lua.table_from({"update": lua.table_from({"kind": "toolCall", "title": "Read README.md"})}))
    turn.callback(None, lua.table_from({"stopReason": "end_turn"}))
    lines = list(g.lines.values())
    assert lines[:4] == ["Hello, world.", "Second line.", "[Read README.md]", ""]
    assert "-- turn ended: end_turn" in lines
    # Nothing streamed was printed as a message of its own.
    assert list(g.messages.values()) == []

    answer = started.handlers["agent/requestPermission"](
        None, lua.table_from({"toolCall": lua.table_from({"title": "Run: ls", "rawInput": lua.table_from({"command": "ls"})})})
    )
    assert answer.outcome.selected == "allow_once"
