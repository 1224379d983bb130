/** The user's prompts (attachments, images, "not sent") and the agent's answers (thinking,
 * markdown with workspace paths as links, the streaming cursor, an answer cut off and
 * discarded struck out). */
import type { ImageContent, PromptAttachment } from '../protocol/types';
import { rewindTarget, type AssistantItem, type Item, type UserItem } from '../state/reducer';
import { button, h, type Post, type Toggles } from './dom';
import { imageSrc } from './composer';
import { markdownView } from './markdown';

export interface MessageActions {
  post: Post;
  toggles: Toggles;
  /** Whether rewinds are offered (between turns). */
  idle: boolean;
  /** "Rewind here" / "Ask again from here" was clicked on an entry. */
  rewind(entryId: string): void;
  /** "Edit and send again" on a prompt that was not sent. */
  resend(text: string, images: readonly ImageContent[]): void;
}

export function renderUser(item: UserItem, a: MessageActions): HTMLElement {
  const body = h('div', { class: 'body plain', text: item.text });
  const images = item.images.length ? h('div', { class: 'user-images' }, ...item.images.map(imageElement)) : null;
  const attachments = item.attachments.length ? h('div', { class: 'attachments' }, ...item.attachments.map(attachmentChip)) : null;
  const failed = item.failed
    ? h('div', { class: 'not-sent' }, h('span', { class: 'meta', text: 'Not sent.' }), button('Edit and send again', () => a.resend(item.text, item.images), 'link resend'))
    : null;
  return h(
    'div',
    { class: `item user${item.pending ? ' pending' : ''}${item.failed ? ' failed' : ''}` },
    h('div', { class: 'role' }, h('span', { text: 'You' }), rewindButton(item, a)),
    attachments,
    body,
    images,
    failed,
  );
}

export function renderAssistant(item: AssistantItem, a: MessageActions, streaming: boolean): HTMLElement {
  const el = h('div', { class: `item assistant${streaming ? ' streaming' : ''}${item.discarded ? ' discarded' : ''}` });
  el.append(h('div', { class: 'role' }, h('span', { text: 'Agent' }), rewindButton(item, a)));
  if (item.discarded) el.append(h('div', { class: 'meta discarded-note', text: 'Cut off by a provider error and discarded: the retried answer below starts again.' }));
  if (item.thinking) {
    const thinking = a.toggles.collapsible(`${item.id}:thinking`, false, 'thinking', h('span', { text: 'Thinking' }));
    thinking.append(h('div', { class: 'body plain thinking-text', text: item.thinking }));
    el.append(thinking);
  }
  if (item.text) el.append(markdownView(item.text, a.post));
  if (streaming) el.append(h('span', { class: 'cursor', text: '▍' }));
  if (item.error) el.append(h('div', { class: 'notice error', text: item.error }));
  return el;
}

function rewindButton(item: Item, a: MessageActions): HTMLElement | null {
  const entryId = rewindTarget(item);
  if (!entryId || !a.idle) return null;
  const prompt = item.kind === 'user';
  return button(
    prompt ? '↶ Ask again from here' : '↶ Rewind here',
    () => a.rewind(entryId),
    'link rewind',
    prompt
      ? 'Go back to just before this message, to ask differently; the files the agent changed since can go back too (nothing is deleted)'
      : 'Continue the conversation after this answer; the files the agent changed since can go back too (nothing is deleted)',
  );
}

export function imageElement(image: ImageContent): HTMLElement {
  const src = imageSrc(image);
  if (!src) return h('span', { class: 'meta', text: `[image ${image.mimeType}]` });
  return h('img', { class: 'thumb', attrs: { alt: 'Image', src } });
}

function attachmentChip(attachment: PromptAttachment): HTMLElement {
  const label = attachment.kind === 'directory' && !attachment.path.endsWith('/') ? `@${attachment.path}/` : `@${attachment.path}`;
  return h('span', { class: `attachment kind-${attachment.kind}`, text: label, title: attachment.detail ? `Attached: ${attachment.detail}` : 'Attached' });
}
