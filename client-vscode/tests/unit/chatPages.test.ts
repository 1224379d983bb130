/**
 * The chat in an editor tab (issue 47): **Agent: Open Chat in Editor** opens the same page as
 * the sidebar's view, on the same controller: both get the state, then every action; what
 * either page posts reaches the one handler; one tab at most; a closed tab gets nothing more.
 */
import { describe, expect, it } from 'vitest';
import { Uri, StubWebview, createdWebviewPanels, type StubWebviewPanel } from '../support/vscode-stub';
import { SessionController } from '../../src/controller';
import type { Action } from '../../src/state/reducer';
import { ChatViewProvider } from '../../src/view/chatViewProvider';
import type { WebviewToHost } from '../../src/view/messages';

/** A sidebar view around a stub webview. */
function stubView(): { view: unknown; webview: StubWebview } {
  const webview = new StubWebview();
  const view = {
    webview,
    visible: true,
    onDidChangeVisibility: () => ({ dispose() {} }),
    onDidDispose: () => ({ dispose() {} }),
  };
  return { view, webview };
}

const actionsOf = (w: StubWebview): Action[] => w.posted.filter((m) => m.type === 'actions').flatMap((m) => m['actions'] as Action[]);

describe('the chat in an editor tab', () => {
  it('drives the same session and state as the sidebar view', async () => {
    let provider: ChatViewProvider | undefined;
    const controller = new SessionController({
      publish: (actions) => provider?.publish(actions),
      onConfigurationError: () => undefined,
    });
    const received: WebviewToHost[] = [];
    provider = new ChatViewProvider(Uri.file('/ext') as never, controller, (m) => received.push(m));
    let resolved = 0;
    provider.onDidResolve(() => (resolved += 1));
    controller.dispatch({ type: 'serverStatus', status: 'running' }, { type: 'workspace', workspaceUri: 'file:///w' });

    const side = stubView();
    provider.resolveWebviewView(side.view as never);
    side.webview.receive({ type: 'ready' });

    provider.openInEditor();
    expect(createdWebviewPanels).toHaveLength(1);
    const panel = createdWebviewPanels[0] as StubWebviewPanel;
    expect(panel.viewType).toBe(ChatViewProvider.panelType);
    expect(resolved).toBe(2); // the server starts with whichever shows first
    // The same page: the same script and stylesheet, under the same Content-Security-Policy.
    expect(panel.webview.html).toContain('dist/webview.js');
    expect(panel.webview.html).toContain('Content-Security-Policy');
    panel.webview.receive({ type: 'ready' });
    // Each page starts from the controller's state, then gets each action.
    const reset = panel.webview.posted.find((m) => m.type === 'reset');
    expect((reset?.['state'] as { workspaceUri?: string }).workspaceUri).toBe('file:///w');
    controller.dispatch({ type: 'sessionStarted', sessionId: 's1', title: 'Fix the parser' });
    for (const page of [side.webview, panel.webview]) await expect.poll(() => actionsOf(page).map((a) => a.type)).toContain('sessionStarted');

    // What the tab posts goes to the same handler as the sidebar's.
    panel.webview.receive({ type: 'send', text: 'from the tab' });
    side.webview.receive({ type: 'send', text: 'from the sidebar' });
    expect(received).toEqual([{ type: 'send', text: 'from the tab' }, { type: 'send', text: 'from the sidebar' }]);

    // Add to Chat and focus go to the tab while it shows, else to the sidebar.
    expect(provider.visibleInEditor).toBe(true);
    provider.insertText('@src/app.py ');
    expect(panel.webview.posted.at(-1)).toEqual({ type: 'insertText', text: '@src/app.py ' });
    panel.setVisible(false);
    provider.insertText('@README.md ');
    expect(side.webview.posted.at(-1)).toEqual({ type: 'insertText', text: '@README.md ' });

    // One tab: the command again shows it; closed, it gets nothing more, and a new one opens.
    provider.openInEditor();
    expect(createdWebviewPanels).toHaveLength(1);
    expect(panel.revealed).toBe(1);
    panel.webview.receive({ type: 'ready' }); // shown again: its page loads again
    panel.dispose();
    const before = panel.webview.posted.length;
    controller.dispatch({ type: 'sessionRenamed', sessionId: 's1', title: 'Fix the journal parser' });
    // The sidebar's page gets it (both pages' batches go out together): the closed tab did not.
    await expect.poll(() => actionsOf(side.webview).map((a) => a.type)).toContain('sessionRenamed');
    expect(panel.webview.posted.length).toBe(before);
    provider.openInEditor();
    expect(createdWebviewPanels).toHaveLength(2);
    provider.dispose();
  });
});
