// Start the simulator and `agent-server acp` as separate processes, and connect the official
// ACP TypeScript client (@agentclientprotocol/sdk) to the agent over its real stdio.
//
// AGENT_SERVER (default: the repository's .venv/bin/agent-server) is the command under test.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import * as acp from "@agentclientprotocol/sdk";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..", "..", "..");
export const AGENT_SERVER =
  process.env.AGENT_SERVER ?? join(repo, ".venv", "bin", "agent-server");
const PYTHON = process.env.AGENT_SERVER_PYTHON ?? join(repo, ".venv", "bin", "python");

export const OVERVIEW =
  "Give me an overview of this repository: what it does and how it is laid out.";
export const WRITE_NOTE = "Write a scratch note with the three most important findings so far.";
export const SCENARIO = [
  "How are stock items modelled? Walk me through the models module.",
  "Where is the data persisted and in what format?",
  "The application log has errors. Find out what fails most often.",
  "Read further into the log and explain the storage failure traceback.",
  "Which row of the CSV is broken, and is anything else wrong with the file?",
];

/** A temporary home: the sample workspace, the sessions folder, an empty config folder. */
export function makeHome() {
  const root = mkdtempSync(join(tmpdir(), "agent-server-acp-"));
  const workspace = join(root, "workspace");
  execFileSync(PYTHON, [
    "-c",
    "import sys; from agent_server.sim.workspace import write_sample_workspace as w; " +
      "w(__import__('pathlib').Path(sys.argv[1]))",
    workspace,
  ]);
  mkdirSync(join(root, "config"));
  return { root, workspace, sessions: join(root, "sessions"), config: join(root, "config") };
}

/** `agent-server sim --port 0 ARGS`: resolves with its base URL once it listens. */
export function startSimulator(args = []) {
  const child = spawn(AGENT_SERVER, ["sim", "--port", "0", ...args], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  return new Promise((resolveUrl, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`simulator did not start: ${seen}`)), 60_000);
    child.stderr.on("data", (chunk) => {
      seen += chunk.toString();
      const match = /listening on (http:\/\/[^\s]+)/.exec(seen);
      if (match) {
        clearTimeout(timer);
        resolveUrl({
          url: match[1],
          stop: () => child.kill(),
          faults: (spec) =>
            fetch(`${match[1]}/_sim/faults`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ spec }),
            }).then((r) => r.json()),
        });
      }
    });
    child.on("exit", (code) => reject(new Error(`simulator exited (${code}): ${seen}`)));
  });
}

/**
 * An editor: records every session/update, answers permission questions with `answer`,
 * serves fs requests from `buffers` (path -> unsaved text) or the disk, and saves writes.
 */
export class Editor {
  constructor({ answer = () => "allow_once", buffers = {} } = {}) {
    this.answer = answer;
    this.buffers = { ...buffers };
    this.updates = [];
    this.questions = [];
    this.reads = [];
    this.writes = [];
  }

  app() {
    return acp
      .client({ name: "agent-server-e2e" })
      .onNotification(acp.methods.client.session.update, ({ params }) => {
        this.updates.push(params);
      })
      .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
        this.questions.push(params);
        const choice = await this.answer(params);
        return choice
          ? { outcome: { outcome: "selected", optionId: choice } }
          : { outcome: { outcome: "cancelled" } };
      })
      .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
        this.reads.push(params.path);
        const content = this.buffers[params.path] ?? readFileSync(params.path, "utf8");
        return { content };
      })
      .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
        this.writes.push(params.path);
        this.buffers[params.path] = params.content;
        writeFileSync(params.path, params.content);
        return {};
      });
  }

  of(kind, sessionId) {
    return this.updates
      .filter((n) => n.update.sessionUpdate === kind && (!sessionId || n.sessionId === sessionId))
      .map((n) => n.update);
  }

  text(sessionId) {
    return this.of("agent_message_chunk", sessionId)
      .map((u) => u.content.text)
      .join("");
  }

  /** The final update (completed or failed) of each tool call, by id. */
  results() {
    const last = new Map();
    for (const u of this.of("tool_call_update")) {
      if (u.status === "completed" || u.status === "failed") last.set(u.toolCallId, u);
    }
    return last;
  }
}

/** `agent-server acp ARGS` on stdio, connected to `editor` and initialized. */
export async function startAgent(home, editor, args = [], { terminal = false } = {}) {
  const child = spawn(
    AGENT_SERVER,
    ["acp", "--sessions-dir", home.sessions, ...args],
    { stdio: ["pipe", "pipe", "inherit"], env: { ...process.env, XDG_CONFIG_HOME: home.config } },
  );
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const connection = editor.app().connect(stream);
  const agent = connection.agent;
  const init = await agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal },
    clientInfo: { name: "agent-server-e2e", version: "1" },
  });
  const exited = new Promise((done) => child.on("exit", done));
  return {
    agent,
    init,
    child,
    async newSession(cwd) {
      const session = await agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
      return session;
    },
    prompt(sessionId, text) {
      return agent.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: "text", text }],
      });
    },
    async stop() {
      connection.close();
      child.stdin.end();
      const timer = setTimeout(() => child.kill(), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Resolves once `condition()` holds (polled), or rejects after a minute. */
export async function until(condition, what) {
  const deadline = Date.now() + 60_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
