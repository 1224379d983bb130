// Bash through the editor's terminal, with the official ACP TypeScript client: an editor that
// offers `terminal: true` and runs each `terminal/create` itself (its own environment plus
// the request's `env`, output kept up to `outputByteLimit`, as Zed does). The SDK checks
// every message it receives against the ACP schema (its zod schemas, generated from
// schema/v1/schema.json) before a handler sees it, so each terminal request, each
// session/update and each answer below is a valid one.
//
// Checked: the command line is the sandboxed one (bubblewrap, the protected paths, the
// model's command last), no secret of the agent's and nothing of the editor's environment
// reaches the command, the tool call shows the terminal, the exit code and output reach the
// model, and the timeout and a cancel kill and release the terminal.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { Editor, makeHome, startAgent, startSimulator, until } from "./harness.mjs";

const AGENT_SECRET = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2";
const EDITOR_SECRET = "editor-only-value-7f3a";
const FAILING = "Run the failing command.";
const SLOW = "Run the slow command.";
const WAIT = "Wait a while.";
const COMMANDS = {
  [FAILING]: { command: "echo out; echo err >&2; env | grep -c -e EDITOR_TOKEN -e GITHUB_TOKEN; exit 3" },
  [SLOW]: { command: "echo started; sleep 120", timeout: 2 },
  [WAIT]: { command: "sleep 120" },
};

/** An editor with terminals, running each command itself. */
class TerminalEditor extends Editor {
  constructor(options) {
    super(options);
    this.created = [];
    this.calls = [];
    this.terminals = new Map();
    this.released = new Map();
  }

  methods(terminalId) {
    return this.calls.filter(([, id]) => id === terminalId).map(([method]) => method);
  }

  terminal(method, terminalId) {
    this.calls.push([method, terminalId]);
    const run = this.terminals.get(terminalId);
    if (!run) throw acp.RequestError.invalidParams({ terminalId });
    return run;
  }

  app() {
    const status = (run) => ({ exitCode: run.code, signal: run.signal });
    return super
      .app()
      .onRequest(acp.methods.client.terminal.create, ({ params }) => {
        this.created.push(params);
        const env = Object.fromEntries((params.env ?? []).map((v) => [v.name, v.value]));
        const child = spawn(params.command, params.args ?? [], {
          cwd: params.cwd,
          env: { ...process.env, EDITOR_TOKEN: EDITOR_SECRET, ...env },
          stdio: ["pipe", "pipe", "pipe"],
        });
        const run = { child, output: Buffer.alloc(0), truncated: false, code: null, signal: null };
        const limit = params.outputByteLimit ?? 1 << 20;
        const keep = (chunk) => {
          run.output = Buffer.concat([run.output, chunk]);
          if (run.output.length > limit) {
            run.output = run.output.subarray(run.output.length - limit);
            run.truncated = true;
          }
        };
        child.stdout.on("data", keep);
        child.stderr.on("data", keep);
        run.exited = new Promise((done) =>
          child.on("close", (code, signal) => {
            run.code = code;
            run.signal = signal;
            done();
          }),
        );
        const terminalId = `term-${this.created.length}`;
        this.terminals.set(terminalId, run);
        return { terminalId };
      })
      .onRequest(acp.methods.client.terminal.output, ({ params }) => {
        const run = this.terminal("output", params.terminalId);
        const done = run.code !== null || run.signal !== null;
        return {
          output: run.output.toString("utf8"),
          truncated: run.truncated,
          ...(done ? { exitStatus: status(run) } : {}),
        };
      })
      .onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) => {
        const run = this.terminal("wait_for_exit", params.terminalId);
        await run.exited;
        return status(run);
      })
      .onRequest(acp.methods.client.terminal.kill, ({ params }) => {
        this.terminal("kill", params.terminalId).child.kill("SIGKILL");
        return {};
      })
      .onRequest(acp.methods.client.terminal.release, ({ params }) => {
        const run = this.terminal("release", params.terminalId);
        run.child.kill("SIGKILL");
        this.released.set(params.terminalId, run);
        this.terminals.delete(params.terminalId);
        return {};
      });
  }
}

describe("bash in the editor's terminal, with the TypeScript client", () => {
  let sim;
  let home;

  before(async () => {
    home = makeHome();
    const turns = Object.entries(COMMANDS).map(([user, args]) => ({
      user,
      steps: [{ tools: [{ name: "bash", arguments: args }] }, { text: `Done: ${user}` }],
    }));
    const scenario = join(home.root, "scenario.json");
    writeFileSync(scenario, JSON.stringify({ turns }));
    sim = await startSimulator(["--scenario", scenario]);
  });
  after(() => sim?.stop());

  async function withAgent(run) {
    const editor = new TerminalEditor();
    const args = ["--provider", "sim", "--base-url", sim.url, "--mode", "allowAll"];
    process.env.GITHUB_TOKEN = AGENT_SECRET; // the agent's environment: never the command's
    const agent = await startAgent(home, editor, args, { terminal: true });
    delete process.env.GITHUB_TOKEN;
    try {
      const { sessionId } = await agent.newSession(home.workspace);
      await run(agent, editor, sessionId);
    } finally {
      await agent.stop();
    }
  }

  test("the sandboxed command line runs in the editor's terminal, shown in the card", async () => {
    await withAgent(async (agent, editor, sessionId) => {
      const answer = await agent.prompt(sessionId, FAILING);
      assert.equal(answer.stopReason, "end_turn");
      assert.equal(editor.created.length, 1);
      const [created] = editor.created;
      const args = created.args;
      const bwrap = args.findIndex((a) => a.endsWith("/bwrap"));
      assert.ok(bwrap > 0, `bubblewrap in ${JSON.stringify(args)}`);
      assert.ok(args.includes("--unshare-net"));
      const protectedAt = args.indexOf(join(home.workspace, ".mcp.json"));
      assert.equal(args[protectedAt - 2], "--ro-bind");
      assert.equal(args.at(-1), COMMANDS[FAILING].command);
      assert.equal(created.cwd, home.workspace);
      const env = Object.fromEntries(created.env.map((v) => [v.name, v.value]));
      assert.equal(env.GITHUB_TOKEN, undefined);
      assert.ok(!JSON.stringify(created).includes(AGENT_SECRET));

      const id = "term-1";
      const shown = editor
        .of("tool_call_update", sessionId)
        .find((u) => u.status === "in_progress" && u.content?.[0]?.type === "terminal");
      assert.equal(shown.content[0].terminalId, id);
      const [result] = [...editor.results().values()];
      assert.equal(result.status, "failed");
      assert.deepEqual(result.content, [{ type: "terminal", terminalId: id }]);
      assert.equal(result.rawOutput.exitCode, 3);
      assert.equal(editor.methods(id).at(-1), "release");
      // What the command printed (stderr merged): no variable of either environment.
      assert.equal(editor.released.get(id).output.toString("utf8"), "out\nerr\n0\n");
    });
  });

  test("the timeout kills and releases the terminal", async () => {
    await withAgent(async (agent, editor, sessionId) => {
      const answer = await agent.prompt(sessionId, SLOW);
      assert.equal(answer.stopReason, "end_turn");
      const methods = editor.methods("term-1");
      assert.ok(methods.includes("kill"), methods.join());
      assert.equal(methods.at(-1), "release");
      const [result] = [...editor.results().values()];
      assert.equal(result.status, "failed");
      assert.equal(result.rawOutput.timedOut, true);
    });
  });

  test("a cancel kills and releases the terminal", async () => {
    await withAgent(async (agent, editor, sessionId) => {
      const running = agent.prompt(sessionId, WAIT);
      await until(() => editor.methods("term-1").includes("wait_for_exit"), "the command");
      const child = editor.terminals.get("term-1").child;
      await agent.agent.notify(acp.methods.agent.session.cancel, { sessionId });
      assert.equal((await running).stopReason, "cancelled");
      await until(() => editor.methods("term-1").includes("release"), "the release");
      assert.ok(editor.methods("term-1").includes("kill"));
      await until(() => child.exitCode !== null || child.signalCode !== null, "the exit");
      const results = editor.results();
      assert.ok(editor.of("tool_call", sessionId).every((c) => results.has(c.toolCallId)));
    });
  });
});
