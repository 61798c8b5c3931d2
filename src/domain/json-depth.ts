/** How deep JSON the service accepts from a request body or a script's call nests (objects and arrays). */
export const MAX_JSON_DEPTH = 100;

/**
 * Whether `value` nests objects or arrays deeper than `max` levels (`{}` is one level). Iterative, so a
 * value deep enough to overflow a recursive walk — or the JSON.stringify that would store it — is measured
 * safely. Stops at the first branch that is too deep.
 */
export function nestsDeeperThan(value: unknown, max = MAX_JSON_DEPTH): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  for (let next = stack.pop(); next; next = stack.pop()) {
    const [current, depth] = next;
    if (typeof current !== 'object' || current === null) continue;
    if (depth > max) return true;
    for (const child of Array.isArray(current) ? current : Object.values(current)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}
