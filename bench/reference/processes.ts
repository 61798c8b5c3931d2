/**
 * Processes the benches start beside themselves: the service under test and the references a user would run
 * instead (a bare Fastify process, Mosquitto, libcoap's coap-server). Every child is tracked and killed when
 * the bench ends, also on failure, on SIGINT/SIGTERM and when its watchdog fires; references missing from the
 * machine are installed from Debian when the bench runs as root, otherwise the error says how.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import dgram from 'node:dgram';
import { accessSync, constants, readdirSync, readFileSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { repoRoot } from '../../scripts/repo-root.js';

/** The repository: the benches run from source (tsx) or compiled into dist/. */
export const REPO_ROOT = repoRoot(import.meta.url);
/** Compiled (`npm run bench:…`), the service runs as `npm start` runs it, from dist/; from source, under tsx. */
const COMPILED = import.meta.url.endsWith('.js');

/** A child process of the bench, with the last lines it wrote (for errors). */
export interface Child {
  readonly name: string;
  readonly process: ChildProcess;
  /** Resolves with the exit code (or signal name) once the process is gone. */
  readonly exited: Promise<number | string | null>;
  /** The last lines of its stdout and stderr, newest last. */
  tail(): string;
  /** Ends it: SIGTERM, then SIGKILL after `graceMs`. Safe to call twice or after it exited. */
  stop(graceMs?: number): Promise<void>;
}

const live = new Set<ChildProcess>();
const directories = new Set<string>();
let handlersInstalled = false;

function killAll(): void {
  for (const child of live) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const dir of directories) {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // still being written by a child that is going away: left in the temporary directory
    }
  }
}

/** A new directory under the system's temporary one, removed when the bench exits (also when it is stopped). */
export async function temporaryDirectory(prefix: string): Promise<string> {
  installHandlers();
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  directories.add(dir);
  return dir;
}

function installHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  // Whatever way the bench ends, nothing it started outlives it.
  process.on('exit', killAll);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      killAll();
      process.exit(signal === 'SIGINT' ? 130 : 143);
    });
  }
}

/**
 * Starts `command` (its output kept, not shown: `tail()` has it; `onLine` sees each line as it comes).
 * stdin is a pipe the child may watch: it ends when the bench goes away.
 */
export function startChild(
  name: string,
  command: string,
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; onLine?: (line: string) => void; showStderr?: boolean } = {},
): Child {
  installHandlers();
  const child = spawn(command, args, { env: options.env ?? process.env, cwd: options.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
  live.add(child);
  const lines: string[] = [];
  const keep = (stream: NodeJS.ReadableStream | null, show = false) => {
    let partial = '';
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      partial += chunk;
      const parts = partial.split('\n');
      partial = parts.pop()!;
      for (const line of parts) {
        options.onLine?.(line);
        if (show) process.stderr.write(`${line}\n`);
        lines.push(line);
        if (lines.length > 40) lines.shift();
      }
    });
  };
  keep(child.stdout);
  keep(child.stderr, options.showStderr);
  // A child that exits early closes its stdin: not an error of the bench.
  child.stdin?.on('error', () => undefined);
  const exited = new Promise<number | string | null>((resolve) => {
    child.once('error', (error) => {
      lines.push(`${name}: ${error.message}`);
      live.delete(child);
      resolve(null);
    });
    child.once('exit', (code, signal) => {
      live.delete(child);
      resolve(code ?? signal);
    });
  });
  return {
    name,
    process: child,
    exited,
    tail: () => lines.join('\n'),
    async stop(graceMs = 5000) {
      if (child.exitCode === null && child.signalCode === null && live.has(child)) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      }
      child.stdin?.destroy();
    },
  };
}

/** `promise`, or an error naming `what` after `ms`, or when `child` exits first. */
export async function within<T>(what: string, ms: number, promise: Promise<T>, child?: Child): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const racers: Promise<T>[] = [
    promise,
    new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms / 1000} s${child ? `; ${child.name} wrote:\n${child.tail()}` : ''}`)), ms);
    }),
  ];
  if (child) racers.push(child.exited.then((code) => Promise.reject(new Error(`${what}: ${child.name} exited (${String(code)}); it wrote:\n${child.tail()}`))));
  try {
    return await Promise.race(racers);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A port free on 127.0.0.1 right now, for programs that cannot bind port 0 and say which port they got
 * (Mosquitto, coap-server). Another process could take it before the program binds it: it then fails to
 * start and says so.
 */
export async function freePort(kind: 'tcp' | 'udp'): Promise<number> {
  if (kind === 'udp') {
    const socket = dgram.createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, '127.0.0.1', () => resolve());
    });
    const { port } = socket.address();
    await new Promise<void>((resolve) => socket.close(() => resolve()));
    return port;
  }
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The executable `command` in PATH or in the sbin directories (Mosquitto is in /usr/sbin, often not in a user's PATH). */
export function findCommand(command: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter), '/usr/local/sbin', '/usr/sbin', '/sbin'].filter(Boolean);
  for (const dir of dirs) {
    const candidate = path.join(dir, command);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/**
 * The path of `command`; when it is missing, installs the Debian package that has it if the bench runs as
 * root (`apt-get install -y <package>`, `apt-get update` first if that fails), otherwise throws an error
 * that says how to install it.
 */
export function ensureCommand(command: string, debianPackage: string): string {
  const found = findCommand(command);
  if (found) return found;
  const install = `apt-get install -y ${debianPackage}`;
  if (process.getuid?.() !== 0 || !findCommand('apt-get')) {
    throw new Error(`${command} is not installed: install it with \`sudo ${install}\` (Debian/Ubuntu package ${debianPackage}) and run the bench again`);
  }
  console.log(`# ${command} is not installed: ${install}`);
  const run = (args: string[]) =>
    spawnSync('apt-get', args, { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, timeout: 600_000 }).status === 0;
  if (!run(['install', '-y', debianPackage])) {
    run(['update']);
    run(['install', '-y', debianPackage]);
  }
  const installed = findCommand(command);
  if (!installed) throw new Error(`${command} is still missing after \`${install}\``);
  return installed;
}

/**
 * Ends the bench with an error if it is still running after `seconds` (children killed by the exit
 * handler): every run stops by itself, also when something hangs. The timer does not keep the bench alive.
 */
export function watchdog(seconds: number, what: string): void {
  installHandlers();
  setTimeout(() => {
    console.error(`!! ${what} still running after ${seconds} s (BENCH_TIMEOUT): stopped`);
    process.exit(1);
  }, seconds * 1000).unref();
}

/** The Node flags `npm start` runs the service with (package.json's `start`), so that the benches run it the same way. */
export const SERVICE_NODE_FLAGS: readonly string[] = (() => {
  const start = (JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start ?? '';
  return /node ((?:--\S+ )*)dist\/src\/cli\.js/.exec(start)?.[1]?.split(' ').filter(Boolean) ?? [];
})();

/**
 * Node arguments for the service under test: those of `npm start`, then BENCH_SERVICE_NODE_ARGS, e.g.
 * "--cpu-prof --cpu-prof-dir=/tmp/prof" to profile it (the profile is written at its graceful stop).
 */
export function serviceNodeArgs(): string[] {
  return [...SERVICE_NODE_FLAGS, ...(process.env.BENCH_SERVICE_NODE_ARGS?.split(' ').filter(Boolean) ?? [])];
}

/**
 * The service as `npm start` runs it (compiled; from source under tsx), in a process of its own, on loopback with
 * a port of the system's choice for each server; resolves once it reported its ports.
 */

export async function startBridge(env: Record<string, string>): Promise<{ child: Child; ports: Record<string, number> }> {
  const cli = path.join(REPO_ROOT, COMPILED ? 'dist/src/cli.js' : 'src/cli.ts');
  let reported: ((ports: Record<string, number>) => void) | undefined;
  const ports = new Promise<Record<string, number>>((resolve) => (reported = resolve));
  const child = startChild('the service', process.execPath, [...serviceNodeArgs(), ...(COMPILED ? [] : ['--import', 'tsx']), cli, 'serve'], {
    env: {
      ...process.env,
      IOTBRIDGE_HTTP_HOST: '127.0.0.1',
      IOTBRIDGE_COAP_HOST: '127.0.0.1',
      IOTBRIDGE_MQTT_HOST: '127.0.0.1',
      IOTBRIDGE_HTTP_PORT: '0',
      IOTBRIDGE_UDP_PORT: '0',
      IOTBRIDGE_TCP_PORT: '0',
      IOTBRIDGE_COAP_PORT: '0',
      IOTBRIDGE_COAPS_PORT: '0',
      IOTBRIDGE_MQTT_PORT: '0',
      ...env,
    },
    showStderr: true,
    onLine: (line) => {
      if (reported && line.includes('"ports"')) {
        try {
          reported((JSON.parse(line) as { ports: Record<string, number> }).ports);
          reported = undefined;
        } catch {
          // another line mentioning ports
        }
      }
    },
  });
  return { child, ports: await within('starting the service', 120_000, ports, child) };
}

/**
 * CPU seconds (user + system, all threads) a process has used so far, from Linux's /proc (clock ticks of 10 ms);
 * undefined where /proc is not there or the process is gone.
 */
export function cpuSecondsOf(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const fields = statFieldsOf(pid);
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime
  } catch {
    return undefined;
  }
}

/** The fields of /proc/<pid>/stat after the command (in parentheses, which may hold spaces): [0] is the state. */
function statFieldsOf(pid: number | string): string[] {
  return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
}

/**
 * CPU seconds of every process whose command is `command` (a database server on this machine: PostgreSQL runs a
 * process per connection), with what their exited children used (a backend that ended counts in its parent's).
 */
export function serverCpuSecondsOf(command: string): number | undefined {
  try {
    let seconds = 0;
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      try {
        if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== command) continue;
        const fields = statFieldsOf(pid);
        seconds += (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / 100; // utime, stime, cutime, cstime
      } catch {
        // Gone meanwhile.
      }
    }
    return seconds;
  } catch {
    return undefined;
  }
}

/** The same for a process's children whose command line contains `named` (the service's script workers), summed. */
export function childrenCpuSecondsOf(pid: number, named: string): number | undefined {
  try {
    let seconds = 0;
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      for (const child of readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean)) {
        if (!readFileSync(`/proc/${child}/cmdline`, 'utf8').includes(named)) continue;
        seconds += cpuSecondsOf(Number(child)) ?? 0;
      }
    }
    return seconds;
  } catch {
    return undefined;
  }
}
