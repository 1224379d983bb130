// `agent-server acp` driven by the official ACP TypeScript client over real stdio, against the
// simulator (provider "sim", the 32k-window sim-small model): a multi-turn session with tools,
// permission questions, fs requests served by the client, a compaction, a cancel mid-stream,
// the session reloaded in a new process, and bad requests answered with JSON-RPC errors.
// The SDK validates every message it receives against the ACP schema.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { existsSync, writeFileSync } from "node:fs";
import * as acp from "@agentclientprotocol/sdk";
import {
  Editor,
  OVERVIEW,
  PYTHON,
  SCENARIO,
  WRITE_NOTE,
  WireCheck,
  makeHome,
  repo,
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
        [["mode", "mode"], ["model", "model"], ["thinking", "thought_level"]],
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
      // A client without session.compaction / session.notices gets none of those updates.
      assert.deepEqual(
        ["notice", "compaction_update", "compaction_summary_chunk"].map((k) => editor.of(k).length),
        [0, 0, 0],
      );
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

// ACP 1.7 (issue 28): each stable feature the agent serves, through the official client,
// every message checked against the schema by the harness.
const PLAN = "plan the fix";
const ATTACHED = "Look at what I attached.";
const WAIT = "Wait a while.";
const FEATURES = {
  name: "acp-features",
  turns: [
    {
      user: PLAN,
      steps: [
        {
          tools: [
            {
              name: "plan",
              arguments: {
                entries: [
                  { content: "reproduce", status: "completed" },
                  { content: "fix the parser", status: "in_progress", priority: "high" },
                ],
              },
            },
          ],
        },
        { text: "Planned." },
      ],
    },
    {
      user: WAIT,
      steps: [
        { tools: [{ name: "bash", arguments: { command: "sleep 120" } }] },
        { text: "Done waiting." },
      ],
    },
    { user: "Go on.", steps: [{ text: "Going on." }] },
    {
      user: ATTACHED,
      steps: [
        { tools: [{ name: "mcp__fx__shout", arguments: { text: "seen" } }] },
        { text: "Seen." },
      ],
    },
  ],
};
// The Python tests' MCP fixture server (stdio): its `shout` tool upper-cases its text.
const FIXTURE_MCP = {
  name: "fx",
  command: PYTHON,
  args: [join(repo, "tests", "agent", "mcp_tools", "fixture_server.py")],
  env: [],
};
// A 1x1 PNG.
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgAAACAAFUok9dAAAAAElFTkSuQmCC";
// A stdio MCP server that exits at once: the agent tells the editor.
const BROKEN_MCP = { name: "broken", command: "/bin/false", args: [], env: [] };

describe("ACP 1.7 features with the TypeScript client", () => {
  let sim;
  let scripted;
  let home;

  before(async () => {
    home = makeHome();
    sim = await startSimulator();
    const scenario = join(home.root, "features.json");
    writeFileSync(scenario, JSON.stringify(FEATURES));
    scripted = await startSimulator(["--scenario", scenario]);
  });
  after(() => {
    sim?.stop();
    scripted?.stop();
  });

  test("the schema check refuses what the schema refuses", () => {
    const check = new WireCheck("the agent");
    const update = (u) => ({
      jsonrpc: "2.0",
      method: "session/update",
      params: { sessionId: "s", update: u },
    });
    check.check(update({ sessionUpdate: "notice", severity: "info", title: "Hello" }));
    assert.deepEqual(check.errors, []);
    check.check(update({ sessionUpdate: "notice", severity: "info", title: "" }));
    check.check(update({ sessionUpdate: "compaction_update", status: "completed" }));
    check.check({ jsonrpc: "2.0", id: 9, result: {} }); // answers nothing sent
    assert.equal(check.errors.length, 3);
  });

  test("notices and compactions as their own updates for a client that advertises them", async () => {
    const capable = { notices: {}, compaction: {} };
    const editor = new Editor({
      answer: (q) => (q.toolCall.kind === "execute" ? "allow_always" : "allow_once"),
    });
    const agent = await startAgent(home, editor, ["--provider", "sim", "--base-url", sim.url], {
      session: capable,
    });
    let sessionId;
    try {
      const session = await agent.agent.request(acp.methods.agent.session.new, {
        cwd: home.workspace,
        mcpServers: [BROKEN_MCP],
      });
      sessionId = session.sessionId;
      await until(() => editor.of("notice").length > 0, "a notice about the MCP server");
      const notice = editor.of("notice")[0];
      assert.equal(notice.severity, "error");
      assert.match(notice.title, /^MCP server broken (failed|stopped)\.$/);
      for (const prompt of [OVERVIEW, WRITE_NOTE, ...SCENARIO]) {
        assert.equal((await agent.prompt(sessionId, prompt)).stopReason, "end_turn");
      }
      const updates = editor.of("compaction_update");
      assert.ok(updates.length >= 2, "the scenario compacts on sim-small");
      const id = updates[0].compactionId;
      const mine = updates.filter((u) => u.compactionId === id);
      assert.equal(mine[0].status, "in_progress");
      assert.equal(mine.at(-1).status, "completed");
      const figures = mine.at(-1)._meta.agentServer;
      assert.ok(figures.tokensAfter < figures.tokensBefore);
      const chunks = editor.of("compaction_summary_chunk").filter((c) => c.compactionId === id);
      assert.equal(chunks.length, 1);
      assert.match(chunks[0].content.text, /^```/); // the summary shown literally
      // Nothing the older clients get instead.
      assert.ok(!editor.of("tool_call").some((c) => c.toolCallId.startsWith("compaction-")));
      assert.ok(!editor.of("agent_message_chunk").some((c) => c.messageId?.startsWith("notice-")));
    } finally {
      await agent.stop();
    }
    // Reloaded by a client that takes compactions: each one completed, its summary in it.
    const again = new Editor();
    const reloaded = await startAgent(home, again, ["--provider", "sim", "--base-url", sim.url], {
      session: capable,
    });
    try {
      await reloaded.agent.request(acp.methods.agent.session.load, {
        sessionId,
        cwd: home.workspace,
        mcpServers: [],
      });
      const replayed = again.of("compaction_update");
      assert.ok(replayed.length >= 1);
      assert.ok(replayed.every((u) => u.status === "completed" && u.summary[0].type === "text"));
      assert.ok(!again.of("tool_call").some((c) => c.toolCallId.startsWith("compaction-")));
    } finally {
      await reloaded.stop();
    }
  });

  test("without the capabilities a notice is a quoted message", async () => {
    const editor = new Editor();
    const agent = await startAgent(home, editor, ["--provider", "sim", "--base-url", sim.url]);
    try {
      await agent.agent.request(acp.methods.agent.session.new, {
        cwd: home.workspace,
        mcpServers: [BROKEN_MCP],
      });
      const quoted = () =>
        editor.of("agent_message_chunk").filter((c) => c.messageId?.startsWith("notice-"));
      await until(() => quoted().length > 0, "a quoted notice");
      assert.match(quoted()[0].content.text, /> MCP server broken (failed|stopped)\./);
      assert.equal(editor.of("notice").length, 0);
    } finally {
      await agent.stop();
    }
  });

  test("thinking, pins, plan, $/cancel_request, close, resume and delete", async () => {
    const editor = new Editor({ answer: () => "allow_once" });
    const args = ["--provider", "sim", "--base-url", scripted.url];
    const agent = await startAgent(home, editor, args);
    try {
      const session = await agent.newSession(home.workspace);
      const sessionId = session.sessionId;
      const option = (options, id) => options.find((o) => o.id === id);

      // The thinking level beside the model: every value offered is taken, no other.
      const thinking = option(session.configOptions, "thinking");
      assert.equal(thinking.category, "thought_level");
      for (const { value } of thinking.options) {
        const set = await agent.agent.request(acp.methods.agent.session.setConfigOption, {
          sessionId,
          configId: "thinking",
          value,
        });
        assert.equal(option(set.configOptions, "thinking").currentValue, value);
      }
      await assert.rejects(
        agent.agent.request(acp.methods.agent.session.setConfigOption, {
          sessionId,
          configId: "thinking",
          value: "max",
        }),
        (error) => error.code === -32602,
      );

      // The model: every value offered is taken (back to the first one at the end).
      const model = option(session.configOptions, "model");
      for (const value of [...model.options.map((o) => o.value), model.currentValue]) {
        const set = await agent.agent.request(acp.methods.agent.session.setConfigOption, {
          sessionId,
          configId: "model",
          value,
        });
        assert.equal(option(set.configOptions, "model").currentValue, value);
      }
      await assert.rejects(
        agent.agent.request(acp.methods.agent.session.setConfigOption, {
          sessionId,
          configId: "model",
          value: "no-such-model",
        }),
        (error) => error.code === -32602,
      );

      // Pins through slash commands; none reaches the model.
      const commands = editor.of("available_commands_update")[0].availableCommands;
      assert.ok(["remember", "forget", "pins"].every((n) => commands.some((c) => c.name === n)));
      await agent.prompt(sessionId, "/remember never edit CHANGELOG");
      const pinned = /Pinned rule (\S+)/.exec(editor.text(sessionId));
      assert.ok(pinned, "the pin's id is given");
      await agent.prompt(sessionId, "/pins");
      assert.match(editor.text(sessionId), /rule, by the user: never edit CHANGELOG/);
      await agent.prompt(sessionId, `/forget ${pinned[1]}`);
      assert.match(editor.text(sessionId), /no longer holds/);

      // The model's plan as a plan update.
      assert.equal((await agent.prompt(sessionId, PLAN)).stopReason, "end_turn");
      const plan = editor.of("plan", sessionId).at(-1);
      assert.deepEqual(
        plan.entries.map((e) => [e.content, e.status, e.priority]),
        [
          ["reproduce", "completed", "medium"],
          ["fix the parser", "in_progress", "high"],
        ],
      );

      // $/cancel_request for the running prompt: the turn stops, its tool call is closed.
      const abort = new AbortController();
      const running = agent.agent.request(
        acp.methods.agent.session.prompt,
        { sessionId, prompt: [{ type: "text", text: WAIT }] },
        { cancellationSignal: abort.signal },
      );
      const bash = () => editor.of("tool_call").find((c) => c.kind === "execute");
      await until(
        () => bash() && editor.of("tool_call_update").some((u) => u.toolCallId === bash().toolCallId && u.status === "in_progress"),
        "the command running",
      );
      abort.abort();
      assert.equal((await running).stopReason, "cancelled");
      const closed = editor.results().get(bash().toolCallId);
      assert.equal(closed.status, "failed");
      const started = editor.of("tool_call").map((c) => c.toolCallId);
      assert.ok(started.every((id) => editor.results().has(id)), "no tool call left open");

      // Close: the session is gone from this connection; resume opens it without replay.
      await agent.agent.request(acp.methods.agent.session.close, { sessionId });
      await assert.rejects(agent.prompt(sessionId, "Go on."), (error) => error.code === -32002);
      const seen = editor.updates.length;
      await agent.agent.request(acp.methods.agent.session.resume, {
        sessionId,
        cwd: home.workspace,
        mcpServers: [],
      });
      assert.ok(!editor.updates.slice(seen).some((n) => n.update.sessionUpdate === "user_message_chunk"));
      assert.equal((await agent.prompt(sessionId, "Go on.")).stopReason, "end_turn");

      // Delete: gone from the list and from disk.
      await agent.agent.request(acp.methods.agent.session.delete, { sessionId });
      const listed = await agent.agent.request(acp.methods.agent.session.list, {
        cwd: home.workspace,
      });
      assert.ok(!listed.sessions.some((s) => s.sessionId === sessionId));
      // (Deleting it again answers -32002, which this SDK resolves as done: idempotent.)
    } finally {
      await agent.stop();
    }
  });

  test("authenticate, a client's MCP server, a prompt with an image, a file and a mention, reloaded as sent", async () => {
    const args = ["--provider", "sim", "--base-url", scripted.url];
    const editor = new Editor();
    const agent = await startAgent(home, editor, args);
    const readme = join(home.workspace, "README.md");
    const prompt = [
      { type: "text", text: ATTACHED },
      { type: "image", mimeType: "image/png", data: PNG },
      {
        type: "resource",
        resource: { uri: `file://${readme}`, mimeType: "text/markdown", text: "# <b>stockroom</b>\n" },
      },
      { type: "resource_link", uri: `file://${join(home.workspace, "src")}`, name: "src" },
    ];
    let sessionId;
    try {
      const method = agent.init.authMethods[0];
      assert.equal(method.id, "api-key");
      assert.deepEqual(await agent.agent.request(acp.methods.agent.authenticate, { methodId: method.id }), {});
      const session = await agent.agent.request(acp.methods.agent.session.new, {
        cwd: home.workspace,
        mcpServers: [FIXTURE_MCP],
      });
      sessionId = session.sessionId;
      const answer = await agent.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt });
      assert.equal(answer.stopReason, "end_turn");
      assert.deepEqual(editor.questions.map((q) => q.toolCall.title), ["fx: shout seen"]);
      const [result] = editor.results().values();
      assert.equal(result.status, "completed");
      assert.match(result.content[0].content.text, /SEEN/);
    } finally {
      await agent.stop();
    }
    const again = new Editor();
    const reloaded = await startAgent(home, again, args);
    try {
      await reloaded.agent.request(acp.methods.agent.session.load, {
        sessionId,
        cwd: home.workspace,
        mcpServers: [FIXTURE_MCP],
      });
      const shown = again.of("user_message_chunk").map((u) => u.content);
      assert.deepEqual(
        shown.map((c) => c.type),
        ["text", "image", "resource", "resource_link"],
      );
      assert.equal(shown[2].resource.text, "# <b>stockroom</b>\n");
      assert.equal(shown[3].uri, prompt[3].uri);
    } finally {
      await reloaded.stop();
    }
  });
});
