/**
 * The context meter: what `agent/usage` says, in the words and colours the view shows.
 * Pure; used by the webview and the status bar.
 */
import type { LastTurnUsage, UsageSnapshot } from '../protocol/types';

/** ok below 70 %, warn from 70 %, high from 85 %, critical from 95 % of the window. */
export type MeterLevel = 'ok' | 'warn' | 'high' | 'critical';

export const METER_THRESHOLDS = { warn: 70, high: 85, critical: 95 } as const;

export interface Meter {
  used: number;
  size: number;
  /** 0..100 (may exceed 100 when the estimate is over the window), one decimal. */
  percent: number;
  level: MeterLevel;
  /** Where compaction triggers, as a percent of the window. */
  compactAtPercent: number;
  windowNumber: number;
  cacheHitRate: number;
  cost: number;
  /** "12.3k / 32.8k (38%)" */
  label: string;
  /** "cache 87%" */
  cacheLabel: string;
  /** "$0.0123" */
  costLabel: string;
  /** Several lines for a tooltip. */
  detail: string;
  /** The context is past the compaction point: the next request compacts first. */
  pastThreshold: boolean;
}

export function meterLevel(percent: number): MeterLevel {
  if (percent >= METER_THRESHOLDS.critical) return 'critical';
  if (percent >= METER_THRESHOLDS.high) return 'high';
  if (percent >= METER_THRESHOLDS.warn) return 'warn';
  return 'ok';
}

export function meterFor(usage: UsageSnapshot | undefined): Meter | undefined {
  if (!usage || !(usage.size > 0)) return undefined;
  const percent = Math.round((usage.used / usage.size) * 1000) / 10;
  const compactAtPercent = Math.round((usage.compactAt / usage.size) * 1000) / 10;
  const cacheLabel = `cache ${Math.round((usage.cacheHitRate || 0) * 100)}%`;
  const costLabel = formatCost(usage.cost || 0);
  const label = `${formatTokens(usage.used)} / ${formatTokens(usage.size)} (${Math.round(percent)}%)`;
  const detail = [
    `Context: ${usage.used.toLocaleString('en-US')} of ${usage.size.toLocaleString('en-US')} tokens (${percent}%)`,
    usage.used > usage.compactAt
      ? `Past the compaction point (${usage.compactAt.toLocaleString('en-US')} tokens, ${compactAtPercent}%): the next request compacts the history first`
      : `Compacts at ${usage.compactAt.toLocaleString('en-US')} tokens (${compactAtPercent}%)`,
    `Cache window #${usage.windowNumber}, ${cacheLabel} of prompt tokens this session`,
    usage.lastTurn ? `Last turn: ${usageLine(usage.lastTurn)}` : undefined,
    usage.lastCall ? `Last call: ${usageLine(usage.lastCall)}` : undefined,
    `Session cost: ${costLabel}`,
  ]
    .filter((line): line is string => line !== undefined)
    .join('\n');
  return {
    used: usage.used,
    size: usage.size,
    percent,
    level: meterLevel(percent),
    compactAtPercent,
    windowNumber: usage.windowNumber,
    cacheHitRate: usage.cacheHitRate,
    cost: usage.cost,
    label,
    cacheLabel,
    costLabel,
    detail,
    pastThreshold: usage.used > usage.compactAt,
  };
}

/** "12 input, 9,000 cache read, 200 cache write, 40 output, $0.0042 (3 calls)" */
export function usageLine(u: LastTurnUsage): string {
  const n = (x: number): string => x.toLocaleString('en-US');
  const parts = [
    `${n(u.input)} input`,
    `${n(u.cacheRead)} cache read`,
    `${n(u.cacheWrite)} cache write`,
    `${n(u.output)} output`,
  ];
  if (u.cost !== undefined) parts.push(formatCost(u.cost));
  const calls = u.calls !== undefined ? ` (${u.calls} call${u.calls === 1 ? '' : 's'})` : '';
  return parts.join(', ') + calls;
}

/** "950", "12.3k", "200k", "1.25M": a figure that rounds up to the next unit rolls over to it
 * (999,999 is "1M", not "1000k"). */
export function formatTokens(n: number): string {
  if (Math.round(n) < 1000) return String(Math.round(n));
  const k = n / 1000;
  if (Math.round(k * 10) < 1000) return `${k.toFixed(1).replace(/\.0$/, '')}k`;
  if (Math.round(k) < 1000) return `${Math.round(k)}k`;
  const m = n / 1_000_000;
  return `${m.toFixed(2).replace(/\.?0+$/, '')}M`;
}

export function formatCost(usd: number): string {
  if (usd === 0) return '$0.00';
  if (usd < 0.01) return `$${usd.toFixed(4)}`;
  if (usd < 1) return `$${usd.toFixed(3)}`;
  return `$${usd.toFixed(2)}`;
}
