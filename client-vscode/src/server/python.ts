/**
 * Which Python runs the server: the setting `agentServer.python`, else the Python extension's
 * active interpreter when that extension is installed (no hard dependency), else `python3`.
 * Modelled on Microsoft's vscode-python-tools-extension-template (src/common/python.ts).
 */
import * as vscode from 'vscode';
import type { InterpreterSource } from './launchFailure';

export interface Interpreter {
  path: string;
  source: InterpreterSource;
}

/** The slice of ms-python.python's API used here (`environments`, or the older `environment`). */
interface EnvironmentPath {
  readonly id: string;
  readonly path: string;
}
interface ResolvedEnvironment {
  readonly executable: { readonly uri: vscode.Uri | undefined };
}
interface EnvironmentsApi {
  getActiveEnvironmentPath(resource?: vscode.Uri | vscode.WorkspaceFolder): EnvironmentPath;
  resolveEnvironment(env: EnvironmentPath | string): Promise<ResolvedEnvironment | undefined>;
  readonly onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
}
interface PythonExtensionApi {
  ready?: Promise<void>;
  environments?: EnvironmentsApi;
  environment?: EnvironmentsApi;
}

const PYTHON_EXTENSION_ID = 'ms-python.python';

async function pythonEnvironments(): Promise<EnvironmentsApi | undefined> {
  const extension = vscode.extensions.getExtension<PythonExtensionApi>(PYTHON_EXTENSION_ID);
  if (!extension) return undefined;
  const api = extension.isActive ? extension.exports : await extension.activate();
  await api?.ready;
  return api?.environments ?? api?.environment;
}

export async function resolveInterpreter(folder: vscode.WorkspaceFolder | undefined, log: vscode.LogOutputChannel): Promise<Interpreter> {
  const configured = vscode.workspace.getConfiguration('agentServer', folder).get<string>('python')?.trim();
  if (configured) return { path: substituteVariables(configured, folder), source: 'setting' };
  try {
    const envs = await pythonEnvironments();
    if (envs) {
      const active = envs.getActiveEnvironmentPath(folder?.uri);
      const resolved = await envs.resolveEnvironment(active);
      const path = resolved?.executable.uri?.fsPath ?? active.path;
      if (path) return { path, source: 'python-extension' };
    }
  } catch (error) {
    log.warn(`Could not ask the Python extension for its interpreter: ${String(error)}`);
  }
  return { path: process.platform === 'win32' ? 'python' : 'python3', source: 'default' };
}

/** `${workspaceFolder}` and `~` in the setting, as users write them. */
export function substituteVariables(value: string, folder: vscode.WorkspaceFolder | undefined): string {
  let out = value;
  if (folder) out = out.replace(/\$\{workspaceFolder\}/g, folder.uri.fsPath);
  const home = process.env['HOME'] ?? process.env['USERPROFILE'];
  if (home && (out === '~' || out.startsWith('~/'))) out = home + out.slice(1);
  return out;
}

/** Fires when the Python extension's active interpreter changes (if it is installed). */
export async function onPythonInterpreterChange(listener: () => void): Promise<vscode.Disposable | undefined> {
  try {
    const envs = await pythonEnvironments();
    const event = envs?.onDidChangeActiveEnvironmentPath;
    return event ? event(() => listener()) : undefined;
  } catch {
    return undefined;
  }
}
