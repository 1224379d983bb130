import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const vscodeStub = fileURLToPath(new URL('./tests/support/vscode-stub.ts', import.meta.url));

export default defineConfig({
  test: {
    projects: [
      {
        resolve: { alias: { vscode: vscodeStub } },
        // Bounds, not timing asserts: a loaded CI machine (make test runs beside the Python
        // suite) has taken more than vitest's 5 s for a unit test that waits on a pipe.
        test: { name: 'unit', include: ['tests/unit/**/*.test.ts'], environment: 'node', testTimeout: 30_000 },
      },
      {
        test: {
          name: 'webview',
          include: ['tests/webview/**/*.test.ts'],
          environment: 'node',
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'protocol',
          include: ['tests/protocol/**/*.test.ts'],
          environment: 'node',
          testTimeout: 120_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
