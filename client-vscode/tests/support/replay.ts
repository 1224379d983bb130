/**
 * A recorded protocol exchange (tests/fixtures/*.json) turned into reducer actions, the way the
 * session controller would dispatch them.
 */
import type { Action } from '../../src/state/reducer';

export type RecordedMessage =
  | { direction: 'notification'; method: string; params: unknown }
  | { direction: 'request'; method: string; id: number | string; params: unknown }
  | { direction: 'response'; method: string; result: unknown }
  | { direction: 'clientResponse'; method: string; id: number | string; result: unknown };

export interface Recording {
  description: string;
  workspaceUri: string;
  sessionId: string;
  messages: RecordedMessage[];
}

export function requestIdFor(id: number | string): string {
  return `rec-${id}`;
}

export function actionsFromRecording(messages: readonly RecordedMessage[]): Action[] {
  const actions: Action[] = [];
  for (const m of messages) {
    switch (m.direction) {
      case 'notification':
        switch (m.method) {
          case 'agent/update':
            actions.push({ type: 'update', params: m.params as never });
            break;
          case 'agent/usage':
            actions.push({ type: 'usage', params: m.params as never });
            break;
          case 'agent/compaction':
            actions.push({ type: 'compaction', params: m.params as never });
            break;
          case 'agent/overflow':
            actions.push({ type: 'overflow', params: m.params as never });
            break;
          default:
            throw new Error(`unexpected notification ${m.method}`);
        }
        break;
      case 'request':
        if (m.method !== 'agent/requestPermission') throw new Error(`unexpected request ${m.method}`);
        actions.push({ type: 'permissionRequested', requestId: requestIdFor(m.id), params: m.params as never });
        break;
      case 'clientResponse':
        actions.push({
          type: 'permissionResolved',
          requestId: requestIdFor(m.id),
          outcome: (m.result as { outcome: never }).outcome,
        });
        break;
      case 'response':
        if (m.method === 'agent/session/load') actions.push({ type: 'sessionLoaded', result: m.result as never });
        else if (m.method === 'agent/turn') actions.push({ type: 'turnEnded', result: m.result as never });
        else throw new Error(`unexpected response ${m.method}`);
        break;
    }
  }
  return actions;
}
