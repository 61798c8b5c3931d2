/**
 * The reference broker of bench/mqtt.ts: a Mosquitto of its own, started fresh for the run (not a system one),
 * on a free loopback port, from a temporary configuration: anonymous clients, no persistence, and
 * `max_queued_messages 0` (no limit) so that it delivers every QoS 1 message to a slow subscriber instead of
 * dropping what exceeds its default queue of 1,000. Installed with `apt-get install -y mosquitto` when missing
 * and the bench runs as root.
 */
import { spawnSync } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { ensureCommand, freePort, startChild, temporaryDirectory, within, type Child } from './processes.js';

export interface Mosquitto {
  readonly url: string;
  /** e.g. "Mosquitto 2.0.11". */
  readonly version: string;
  readonly child: Child;
  /** Lines of its log saying it dropped messages (none expected with max_queued_messages 0). */
  dropped(): number;
  stop(): Promise<void>;
}

async function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export async function startMosquitto(): Promise<Mosquitto> {
  const bin = ensureCommand('mosquitto', 'mosquitto');
  const help = spawnSync(bin, ['-h'], { encoding: 'utf8' });
  const version = /mosquitto version (\S+)/.exec(`${help.stdout}${help.stderr}`)?.[1];
  const dir = await temporaryDirectory('iotbridge-bench-mosquitto-');
  try {
    const port = await freePort('tcp');
    const config = path.join(dir, 'mosquitto.conf');
    await writeFile(
      config,
      [`listener ${port} 127.0.0.1`, 'allow_anonymous true', 'max_queued_messages 0', 'persistence false', 'log_dest stderr', 'log_type error', 'log_type warning', 'log_type notice', ''].join('\n'),
    );
    let dropped = 0;
    const child = startChild('Mosquitto', bin, ['-c', config], { onLine: (line) => void (/dropped/i.test(line) && dropped++) });
    const stop = async () => {
      await child.stop();
      await rm(dir, { recursive: true, force: true });
    };
    try {
      await within(
        'starting Mosquitto',
        11_000,
        (async () => {
          // Bounded, and ended when Mosquitto exits.
          const until = Date.now() + 10_000;
          while (!(await accepts(port))) {
            if (Date.now() > until || child.process.exitCode !== null || child.process.signalCode !== null) {
              throw new Error(`Mosquitto does not accept connections on port ${port}; it wrote:\n${child.tail()}`);
            }
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
        })(),
        child,
      );
    } catch (error) {
      await stop();
      throw error;
    }
    return { url: `mqtt://127.0.0.1:${port}`, version: `Mosquitto ${version ?? '(version unknown)'}`, child, dropped: () => dropped, stop };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}
