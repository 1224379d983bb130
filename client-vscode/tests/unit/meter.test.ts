import { describe, expect, it } from 'vitest';
import { formatCost, formatTokens, meterFor, meterLevel } from '../../src/state/meter';
import type { UsageSnapshot } from '../../src/protocol/types';

function usage(used: number, size = 100_000): UsageSnapshot {
  return {
    sessionId: 's',
    used,
    size,
    compactAt: size * 0.75,
    windowNumber: 2,
    lastTurn: { input: 10, cacheRead: 900, cacheWrite: 50, output: 40, cost: 0 }, lastCall: { input: 10, cacheRead: 900, cacheWrite: 50, output: 40, cost: 0 }, session: { input: 10, cacheRead: 900, cacheWrite: 50, output: 40, cost: 0 },
    cacheHitRate: 0.873,
    cost: 0.01234,
  };
}

describe('meter thresholds', () => {
  it.each([
    [0, 'ok'],
    [69.9, 'ok'],
    [70, 'warn'],
    [84.9, 'warn'],
    [85, 'high'],
    [94.9, 'high'],
    [95, 'critical'],
    [120, 'critical'],
  ] as const)('%s%% is %s', (percent, level) => {
    expect(meterLevel(percent)).toBe(level);
  });

  it('colours by used / size', () => {
    expect(meterFor(usage(69_000))?.level).toBe('ok');
    expect(meterFor(usage(70_000))?.level).toBe('warn');
    expect(meterFor(usage(85_000))?.level).toBe('high');
    expect(meterFor(usage(95_000))?.level).toBe('critical');
  });
});

describe('meter text', () => {
  it('says used / size, percent, cache hit rate, cost, window and the compaction point', () => {
    const m = meterFor(usage(24_100, 32_768));
    expect(m).toBeDefined();
    expect(m?.label).toBe('24.1k / 32.8k (74%)');
    expect(m?.percent).toBe(73.5);
    expect(m?.cacheLabel).toBe('cache 87%');
    expect(m?.costLabel).toBe('$0.012');
    expect(m?.compactAtPercent).toBe(75);
    expect(m?.detail).toContain('Compacts at 24,576 tokens');
    expect(m?.detail).toContain('Cache window #2');
  });

  it("details the last turn's own usage and cost next to the last call", () => {
    const m = meterFor({
      ...usage(24_100, 32_768),
      lastTurn: { input: 12, cacheRead: 9000, cacheWrite: 200, output: 40, cost: 0.0042, calls: 3 },
      lastCall: { input: 2, cacheRead: 3100, cacheWrite: 50, output: 20, cost: 0.0012 },
    });
    expect(m?.detail).toContain(
      'Last turn: 12 input, 9,000 cache read, 200 cache write, 40 output, $0.0042 (3 calls)',
    );
    expect(m?.detail).toContain('Last call: 2 input, 3,100 cache read, 50 cache write, 20 output, $0.0012');
  });

  it('has no meter without usage or with an unknown window', () => {
    expect(meterFor(undefined)).toBeUndefined();
    expect(meterFor({ ...usage(10), size: 0 })).toBeUndefined();
  });

  it('formats tokens and cost compactly', () => {
    expect(formatTokens(950)).toBe('950');
    expect(formatTokens(12_000)).toBe('12k');
    expect(formatTokens(12_345)).toBe('12.3k');
    expect(formatTokens(200_000)).toBe('200k');
    expect(formatTokens(1_000_000)).toBe('1M');
    expect(formatTokens(1_250_000)).toBe('1.25M');
    // A figure that rounds up to the next unit rolls over to it.
    expect(formatTokens(999.6)).toBe('1k');
    expect(formatTokens(99_960)).toBe('100k');
    expect(formatTokens(999_499)).toBe('999k');
    expect(formatTokens(999_999)).toBe('1M');
    expect(formatCost(0)).toBe('$0.00');
    expect(formatCost(0.00042)).toBe('$0.0004');
    expect(formatCost(0.5)).toBe('$0.500');
    expect(formatCost(12.345)).toBe('$12.35');
  });
});

describe('past the compaction point', () => {
  it('says the next request compacts first once the estimate is past the threshold', () => {
    expect(meterFor(usage(70_000))?.pastThreshold).toBe(false);
    const past = meterFor(usage(80_000));
    expect(past?.pastThreshold).toBe(true);
    expect(past?.detail).toContain('the next request compacts the history first');
  });
});
