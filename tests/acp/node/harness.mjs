// Start the simulator and `agent-server acp` as separate processes, and connect the official
// ACP TypeScript client (@agentclientprotocol/sdk) to the agent over its real stdio.
//
// Every message either way is checked against the official JSON schema of ACP v1 that the SDK
// ships (schema/v1/schema.json), by method and direction: the SDK's own parsing is lenient
// (a field it cannot read falls back to its default), and the Python SDK (0.12.1) the agent is
// built on has no models for ACP 1.7's newest updates, which the agent sends as plain JSON.
//
// AGENT_SERVER (default: the repository's .venv/bin/agent-server) is the command under test.
import { spawn, execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import Ajv2020 from "ajv/dist/2020.js";
import { mkdtempSync, readFileSync, writeFileSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import * as acp from "@agentclientprotocol/sdk";

const here = dirname(fileURLToPath(import.meta.url));
export const repo = resolve(here, "..", "..", "..");
export const AGENT_SERVER =
  process.env.AGENT_SERVER ?? join(repo, ".venv", "bin", "agent-server");
export const PYTHON = process.env.AGENT_SERVER_PYTHON ?? join(repo, ".venv", "bin", "python");

// --- the schema check ------------------------------------------------------------------------

const SCHEMA = JSON.parse(
  readFileSync(createRequire(import.meta.url).resolve("@agentclientprotocol/sdk/schema/v1/schema.json"), "utf8"),
);
const ajv = new Ajv2020({ strict: false, allErrors: true });
for (const name of ["int16", "int32", "int64", "uint16", "uint32", "uint64"]) {
  const unsigned = name.startsWith("u");
  ajv.addFormat(name, { type: "number", validate: (n) => Number.isInteger(n) && (!unsigned || n >= 0) });
}
ajv.addFormat("double", { type: "number", validate: (n) => Number.isFinite(n) });
ajv.addFormat("uri", (text) => {
  try {
    return Boolean(new URL(text));
  } catch {
    return false;
  }
});
ajv.addSchema(SCHEMA, "acp");
// method -> the $defs name of its params / result / notification params, from the schema's
// own `x-method` tags
const DEFS = {};
for (const [name, def] of Object.entries(SCHEMA.$defs)) {
  const method = def["x-method"];
  if (!method) continue;
  const kind = name.endsWith("Response") ? "result" : name.endsWith("Notification") ? "notification" : "params";
  DEFS[`${kind} ${method}`] = name;
}

/**
 * Checks each message of one direction ("agent" for what the agent sends, "client" for what
 * the client sends); `peer` is the other direction's checker (it knows the methods of the
 * requests this side answers). Extension methods (`_...`) have no schema: only their
 * JSON-RPC shape is checked.
 */
export class WireCheck {
  constructor(from) {
    this.from = from;
    this.sent = new Map(); // request id -> method, for the answers coming back
    this.peer = null;
    this.errors = [];
    this.count = 0;
  }

  check(message) {
    this.count += 1;
    const fail = (what, errors) =>
      this.errors.push(`${this.from} sent ${what}: ${ajv.errorsText(errors)} in ${JSON.stringify(message).slice(0, 400)}`);
    if (message.jsonrpc !== "2.0") return fail("no jsonrpc 2.0", []);
    let kind;
    let method = message.method;
    let value;
    if (typeof method === "string") {
      kind = "id" in message ? "params" : "notification";
      if (kind === "params") this.sent.set(JSON.stringify(message.id), method);
      value = message.params;
    } else {
      method = this.peer?.sent.get(JSON.stringify(message.id));
      this.peer?.sent.delete(JSON.stringify(message.id));
      if ("error" in message) {
        const ok = ajv.validate({ $ref: "acp#/$defs/Error" }, message.error);
        return ok ? undefined : fail(`a bad error for ${method}`, ajv.errors);
      }
      if (method === undefined) return fail("an answer to no request", []);
      kind = "result";
      value = message.result;
    }
    const name = DEFS[`${kind} ${method}`];
    if (name === undefined) {
      if (method.startsWith("_")) return undefined; // an extension: no schema
      return fail(`${kind} of a method the schema does not have (${method})`, []);
    }
    const validate = ajv.getSchema(`acp#/$defs/${name}`);
    if (!validate(value)) fail(`${name} that does not conform`, validate.errors);
  }

  /** The messages of `stream` (an ACP Stream's readable or writable side), checked. */
  tap() {
    return new TransformStream({
      transform: (message, controller) => {
        this.check(message);
        controller.enqueue(message);
      },
    });
  }
}

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

/**
 * A temporary home: the sample workspace, the sessions folder, a config folder; removed when
 * the test process exits. Its one setting: a busy test machine may take more than the default's
 * seconds to start a fixture MCP server, and the first request waits for it (as the Python
 * suite's agents do, tests/acp/conftest.py).
 */
export function makeHome() {
  const root = mkdtempSync(join(tmpdir(), "agent-server-acp-"));
  process.on("exit", () => rmSync(root, { recursive: true, force: true }));
  const workspace = join(root, "workspace");
  execFileSync(PYTHON, [
    "-c",
    "import sys; from agent_server.sim.workspace import write_sample_workspace as w; " +
      "w(__import__('pathlib').Path(sys.argv[1]))",
    workspace,
  ]);
  mkdirSync(join(root, "config", "agent-server"), { recursive: true });
  writeFileSync(
    join(root, "config", "agent-server", "config.json"),
    JSON.stringify({ mcp: { firstRequestWait: 120 } }),
  );
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

/**
 * `agent-server acp ARGS` on stdio, connected to `editor` and initialized, every message
 * checked against the schema (`stop()` fails on any that does not conform). `session` is the
 * client's `clientCapabilities.session` (e.g. `{ notices: {}, compaction: {} }`); `terminal`
 * declares the client's terminal (the editor then answers `terminal/*`).
 */
export async function startAgent(home, editor, args = [], { session, terminal = false } = {}) {
  const child = spawn(
    AGENT_SERVER,
    ["acp", "--sessions-dir", home.sessions, ...args],
    { stdio: ["pipe", "pipe", "inherit"], env: { ...process.env, XDG_CONFIG_HOME: home.config } },
  );
  const raw = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const fromAgent = new WireCheck("the agent");
  const fromClient = new WireCheck("the client");
  fromAgent.peer = fromClient;
  fromClient.peer = fromAgent;
  const outgoing = fromClient.tap();
  outgoing.readable.pipeTo(raw.writable).catch(() => {});
  const stream = { readable: raw.readable.pipeThrough(fromAgent.tap()), writable: outgoing.writable };
  const connection = editor.app().connect(stream);
  const agent = connection.agent;
  const capabilities = { fs: { readTextFile: true, writeTextFile: true }, terminal };
  if (session) capabilities.session = session;
  const init = await agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: capabilities,
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
    wire: { fromAgent, fromClient },
    async stop() {
      connection.close();
      child.stdin.end();
      const timer = setTimeout(() => child.kill(), 10_000);
      await exited;
      clearTimeout(timer);
      const errors = [...fromAgent.errors, ...fromClient.errors];
      if (errors.length) throw new Error(`messages off the schema:\n${errors.join("\n")}`);
      if (fromAgent.count === 0) throw new Error("no message from the agent was checked");
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
