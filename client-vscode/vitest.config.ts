import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const vscodeStub = fileURLToPath(new URL('./tests/support/vscode-stub.ts', import.meta.url));

export default defineConfig({
  test: {
    projects: [
      {
        resolve: { alias: { vscode: vscodeStub } },
        test: { name: 'unit', include: ['tests/unit/**/*.test.ts'], environment: 'node' },
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
