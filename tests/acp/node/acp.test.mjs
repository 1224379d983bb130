// `agent-server acp` driven by the official ACP TypeScript client over real stdio, against the
// simulator (provider "sim", the 32k-window sim-small model): a multi-turn session with tools,
// permission questions, fs requests served by the client, a compaction, a cancel mid-stream,
// the session reloaded in a new process, and bad requests answered with JSON-RPC errors.
// The SDK validates every message it receives against the ACP schema.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { existsSync } from "node:fs";
import * as acp from "@agentclientprotocol/sdk";
import {
  Editor,
  OVERVIEW,
  SCENARIO,
  WRITE_NOTE,
  makeHome,
  startAgent,
  startSimulator,
  until,
} from "./harness.mjs";

describe("agent-server acp with the TypeScript client", () => {
  let sim;
  let home;
  let sessionId;
  let live; // what the first process showed, to compare with the replay

  before(async () => {
    sim = await startSimulator();
    home = makeHome();
  });
  after(() => sim?.stop());

  test("a session with tools, permissions, fs requests, a compaction and a cancel", async () => {
    const readme = join(home.workspace, "README.md");
    const note = join(home.workspace, "notes", "findings.md");
    const editor = new Editor({
      buffers: { [readme]: "# stockroom\n\nUNSAVED-BUFFER-MARKER\n" },
      answer: (question) => (question.toolCall.kind === "execute" ? "allow_always" : "allow_once"),
    });
    const agent = await startAgent(home, editor, ["--provider", "sim", "--base-url", sim.url]);
    try {
      assert.equal(agent.init.protocolVersion, acp.PROTOCOL_VERSION);
      assert.equal(agent.init.agentCapabilities.loadSession, true);
      assert.equal(agent.init.agentCapabilities.promptCapabilities.image, true);
      assert.equal(agent.init.agentCapabilities.promptCapabilities.embeddedContext, true);

      const session = await agent.newSession(home.workspace);
      sessionId = session.sessionId;
      assert.equal(session.modes.currentModeId, "allowReads");
      assert.deepEqual(
        session.configOptions.map((o) => [o.id, o.category]),
        [["mode", "mode"], ["model", "model"]],
      );

      // Turn 1: reads run without asking, through the editor's buffer.
      const first = await agent.prompt(sessionId, OVERVIEW);
      assert.equal(first.stopReason, "end_turn");
      assert.ok(editor.reads.includes(readme), "README.md is read through fs/read_text_file");
      const read = editor.of("tool_call").find((c) => c.title === "Read README.md");
      assert.equal(read.kind, "read");
      assert.equal(read.locations[0].path, readme);
      const shown = editor.results().get(read.toolCallId).content[0].content.text;
      assert.match(shown, /UNSAVED-BUFFER-MARKER/);
      assert.equal(editor.questions.length, 0);

      // Turn 2: the command and the write ask first; the write lands in the editor.
      const second = await agent.prompt(sessionId, WRITE_NOTE);
      assert.equal(second.stopReason, "end_turn");
      assert.deepEqual(
        editor.questions.map((q) => q.toolCall.kind),
        ["execute", "edit"],
      );
      const kinds = editor.questions[0].options.map((o) => o.kind);
      assert.equal(kinds[0], "allow_once");
      assert.ok(kinds.includes("allow_always"));
      assert.deepEqual(kinds.slice(-2), ["reject_once", "reject_always"]);
      const diff = editor.questions[1].toolCall.content[0];
      assert.equal(diff.type, "diff");
      assert.equal(diff.path, note);
      assert.equal(diff.oldText ?? null, null); // a new file
      assert.deepEqual(editor.writes, [note]);
      assert.ok(existsSync(note));

      // More turns on the 32k model: the history is compacted, and the client sees it.
      for (const prompt of SCENARIO) {
        assert.equal((await agent.prompt(sessionId, prompt)).stopReason, "end_turn");
      }
      const cards = editor.of("tool_call").filter((c) => c.toolCallId.startsWith("compaction-"));
      assert.ok(cards.length >= 1, "the scenario compacts on sim-small");
      assert.match(cards[0].title, /^Compacting the conversation/);
      const done = editor.results().get(cards[0].toolCallId);
      assert.equal(done.status, "completed");
      assert.ok(done.rawOutput.tokensAfter < done.rawOutput.tokensBefore);
      const meter = editor.of("usage_update").at(-1);
      assert.equal(meter.size, 32768);
      assert.equal(meter._meta.agentServer.windowNumber, 1 + cards.length);
      assert.equal(meter.cost.currency, "USD");

      // A cancel mid-stream: the next model call hangs until the client cancels.
      await sim.faults("slow@2:30");
      const finished = editor.results().size;
      const turn = agent.prompt(sessionId, OVERVIEW);
      await until(() => editor.results().size > finished, "a tool call of the new turn");
      await agent.agent.notify(acp.methods.agent.session.cancel, { sessionId });
      assert.equal((await turn).stopReason, "cancelled");
      await sim.faults(null);
      assert.equal((await agent.prompt(sessionId, OVERVIEW)).stopReason, "end_turn");

      live = {
        prompts: [OVERVIEW, WRITE_NOTE, ...SCENARIO, OVERVIEW, OVERVIEW],
        calls: editor.of("tool_call").map((c) => c.toolCallId),
      };
    } finally {
      await agent.stop();
    }
  });

  test("the session reloaded in a new process replays its history", async () => {
    assert.ok(sessionId, "the first test made a session");
    const editor = new Editor();
    const agent = await startAgent(home, editor, ["--provider", "sim", "--base-url", sim.url]);
    try {
      const listed = await agent.agent.request(acp.methods.agent.session.list, {
        cwd: home.workspace,
      });
      assert.deepEqual(
        listed.sessions.map((s) => s.sessionId),
        [sessionId],
      );
      const loaded = await agent.agent.request(acp.methods.agent.session.load, {
        sessionId,
        cwd: home.workspace,
        mcpServers: [],
      });
      assert.equal(loaded.modes.currentModeId, "allowReads");
      const prompts = editor.of("user_message_chunk").map((u) => u.content.text);
      // The kept history is on the current branch: every prompt, in order.
      assert.deepEqual(
        prompts.filter((p) => live.prompts.includes(p)),
        live.prompts,
      );
      const replayed = editor.of("tool_call").map((c) => c.toolCallId);
      for (const id of live.calls.filter((c) => !c.startsWith("compaction-"))) {
        assert.ok(replayed.includes(id), `tool call ${id} is replayed`);
      }
      assert.ok(replayed.some((id) => id.startsWith("compaction-")), "compactions are replayed");
      assert.ok(editor.text().length > 0);
      const again = await agent.prompt(sessionId, OVERVIEW);
      assert.equal(again.stopReason, "end_turn");
    } finally {
      await agent.stop();
    }
  });

  test("bad requests are answered with JSON-RPC errors", async () => {
    const editor = new Editor();
    const agent = await startAgent(home, editor, ["--provider", "sim", "--base-url", sim.url]);
    try {
      await assert.rejects(
        agent.prompt("no-such-session", OVERVIEW),
        (error) => error.code === -32002 && /session\/new/.test(error.message),
      );
      await assert.rejects(
        agent.agent.request(acp.methods.agent.session.new, { cwd: "not/absolute", mcpServers: [] }),
        (error) => error.code === -32602,
      );
      await assert.rejects(
        agent.agent.request("_agent-server/no-such-method", {}),
        (error) => error.code === -32601,
      );
      const session = await agent.newSession(home.workspace);
      await assert.rejects(
        agent.agent.request(acp.methods.agent.session.setMode, {
          sessionId: session.sessionId,
          modeId: "yolo",
        }),
        (error) => error.code === -32602,
      );
      assert.equal(agent.child.exitCode, null);
    } finally {
      await agent.stop();
    }
  });
});
