/** Two vscode-jsonrpc MessageConnections joined in memory: a real wire, no process. */
import { PassThrough } from 'node:stream';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from 'vscode-jsonrpc/node';

export function connectionPair(): { client: MessageConnection; server: MessageConnection; dispose(): void } {
  const up = new PassThrough();
  const down = new PassThrough();
  const client = createMessageConnection(new StreamMessageReader(down), new StreamMessageWriter(up));
  const server = createMessageConnection(new StreamMessageReader(up), new StreamMessageWriter(down));
  client.listen();
  server.listen();
  return {
    client,
    server,
    dispose() {
      client.dispose();
      server.dispose();
      up.destroy();
      down.destroy();
    },
  };
}

export function waitFor(predicate: () => boolean, timeoutMs = 20_000): Promise<void> {
  const start = Date.now();
  return new Promise((resolve, reject) => {
    const tick = (): void => {
      if (predicate()) return resolve();
      if (Date.now() - start > timeoutMs) return reject(new Error('condition not met in time'));
      setTimeout(tick, 5);
    };
    tick();
  });
}
