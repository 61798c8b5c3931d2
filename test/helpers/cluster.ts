import { setTimeout as sleep } from 'node:timers/promises';

/** Something answering HTTP on a base URL: a service started in this process or a spawned one. */
interface Node {
  readonly baseUrl: string;
}

/**
 * Waits until the nodes have shared out the event bus's 64 shards (each `/ready` says its share): a node that
 * joins or leaves moves shards, and handling pauses on the nodes whose shares change until their in-flight events end.
 */
export async function clusterSettled(nodes: readonly Node[], timeoutMs = 30_000): Promise<number[]> {
  // Each node takes up to ceil(64 / n); the last one gets what is left.
  const fair = 64 - (nodes.length - 1) * Math.ceil(64 / nodes.length);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const shares = await Promise.all(
      nodes.map(async (node) => {
        const answer = await fetch(`${node.baseUrl}/ready`).catch(() => undefined);
        const body = answer?.ok ? ((await answer.json()) as { shards?: number; liveNodes?: number }) : undefined;
        return body?.liveNodes === nodes.length ? (body.shards ?? 0) : -1;
      }),
    );
    if (shares.every((share) => share >= fair) && shares.reduce((a, b) => a + b, 0) === 64) return shares;
    if (Date.now() > deadline) throw new Error(`the nodes did not share the bus's shards: ${shares.join(', ')}`);
    await sleep(200);
  }
}
