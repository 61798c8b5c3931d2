import { readFileSync } from 'node:fs';

/** The product version, from package.json (found from both src/ and dist/src/). */
export const VERSION: string = (() => {
  for (const candidate of ['../package.json', '../../package.json']) {
    try {
      const parsed = JSON.parse(readFileSync(new URL(candidate, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (parsed.name === 'iotbridge' && parsed.version) return parsed.version;
    } catch {
      // try the next place
    }
  }
  return '0.0.0';
})();
