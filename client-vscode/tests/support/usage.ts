import type { UsageSnapshot } from '../../src/protocol/types';

/** An `agent/usage` snapshot for a session: `used` tokens of a `size` window (compacting at 3/4). */
export function usageSnapshot(sessionId: string, used = 0, size = 32768): UsageSnapshot {
  return {
    sessionId,
    used,
    size,
    compactAt: (size * 3) / 4,
    windowNumber: 1,
    lastTurn: { input: 0, cacheRead: 0, cacheWrite: 0, output: 0, cost: 0 }, lastCall: { input: 0, cacheRead: 0, cacheWrite: 0, output: 0, cost: 0 }, session: { input: 0, cacheRead: 0, cacheWrite: 0, output: 0, cost: 0 },
    cacheHitRate: 0,
    cost: 0,
  };
}
