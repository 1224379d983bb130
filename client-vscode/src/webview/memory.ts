/**
 * The task's plan as a checklist and the pins in force, above the transcript: what the server
 * carries verbatim across every compaction. Each text as written, never markup.
 */
import type { ViewState } from '../state/reducer';
import { button, h, type Post } from './dom';

/** Whether the plan and the pins are open: what the user last chose, kept across reloads of
 * the view (main.ts saves it); the plan opens by default, the pins are closed. */
export interface MemoryOpen {
  plan: boolean;
  pins: boolean;
}

export const MEMORY_OPEN_DEFAULT: MemoryOpen = { plan: true, pins: false };

/** What is open now in `el` (the defaults for a part not shown). */
export function memoryOpen(el: HTMLElement, defaults: MemoryOpen): MemoryOpen {
  const open = (cls: string): boolean | undefined => el.querySelector<HTMLDetailsElement>(`details.${cls}`)?.open;
  return { plan: open('plan') ?? defaults.plan, pins: open('pins') ?? defaults.pins };
}

export function renderMemory(el: HTMLElement, state: ViewState, post: Post, defaults: MemoryOpen = MEMORY_OPEN_DEFAULT): void {
  // What the user opened or closed stays so when the plan or the pins change (a pin removed,
  // the model ticking a step off), and across reloads (`defaults`).
  const { plan: planOpen, pins: pinsOpen } = memoryOpen(el, defaults);
  el.textContent = '';
  el.hidden = state.plan.length === 0 && state.pins.length === 0 && state.removedPins.length === 0;
  if (state.plan.length > 0) {
    const done = state.plan.filter((e) => e.status === 'completed').length;
    const list = h('ul', { class: 'plan-steps', attrs: { 'aria-label': 'Plan' } });
    for (const entry of state.plan) {
      const mark = entry.status === 'completed' ? '☑' : entry.status === 'in_progress' ? '▶' : '☐';
      const step = h('li', { class: `plan-step ${entry.status}`, title: `${entry.status}, ${entry.priority} priority` });
      step.append(h('span', { class: 'plan-mark', text: `${mark} ` }), h('span', { class: 'plan-text', text: entry.content }));
      list.append(step);
    }
    const summary = h('summary', { text: `Plan · ${done} of ${state.plan.length} done` });
    const plan = h('details', { class: 'plan' }, summary, list);
    plan.open = planOpen;
    el.append(plan);
    // A long plan scrolls in its few lines: the step in progress in view, the one before it above.
    const current = list.querySelector<HTMLElement>('.plan-step.in_progress');
    if (current) list.scrollTop = Math.max(0, current.offsetTop - current.offsetHeight);
  }
  if (state.pins.length > 0 || state.removedPins.length > 0) {
    const list = h('ul', { class: 'pin-list', attrs: { 'aria-label': 'Pins' } });
    for (const pin of state.pins) {
      const item = h('li', { class: `pin ${pin.kind}`, title: `${pin.kind} ${pin.id}, pinned by the ${pin.by}` });
      const forget = button('×', () => post({ type: 'forgetPin', pinId: pin.id }), 'link pin-forget');
      forget.title = `Remove this ${pin.kind} (the agent is told it no longer holds)`;
      item.append(h('span', { class: 'pin-kind', text: `${pin.kind}: ` }), h('span', { class: 'pin-text', text: pin.text }), forget);
      list.append(item);
    }
    for (const pin of state.removedPins) {
      // A trace of what no longer holds, and the way back: pinned again as it was.
      const item = h('li', { class: `pin removed ${pin.kind}`, title: `${pin.kind} ${pin.id}, removed` });
      const undo = button('Undo', () => post({ type: 'restorePin', kind: pin.kind, text: pin.text }), 'link pin-undo');
      undo.title = `Pin this ${pin.kind} again`;
      item.append(h('span', { class: 'pin-kind', text: `removed ${pin.kind}: ` }), h('span', { class: 'pin-text', text: pin.text }), undo);
      list.append(item);
    }
    const pins = h('details', { class: 'pins' }, h('summary', { text: `Pinned · ${state.pins.length}` }), list);
    pins.open = pinsOpen;
    el.append(pins);
  }
}
