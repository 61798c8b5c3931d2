import fastJsonPatch, { type Operation } from 'fast-json-patch';
import { ScriptArgumentError } from '../namespace.js';
import type { LocalNamespace } from './local.js';

/** `json.*`: JSON Patch (RFC 6902). */
export const json: LocalNamespace = {
  /** json.patchCreate(from, to) → the operations that turn `from` into `to`. */
  patchCreate: ([from, to]) => {
    if (typeof from !== 'object' || from === null || typeof to !== 'object' || to === null) throw new ScriptArgumentError('patchCreate compares two objects or arrays');
    return fastJsonPatch.compare(from, to);
  },
  /** json.patchApply(document, operations) → the patched document (the input is not changed); a failing `test` op throws. */
  patchApply: ([document, operations]) => {
    if (!Array.isArray(operations)) throw new ScriptArgumentError('operations must be an array of RFC 6902 operations');
    try {
      return fastJsonPatch.applyPatch(structuredClone(document), operations as Operation[], true, false).newDocument;
    } catch (error) {
      throw new ScriptArgumentError(`the patch does not apply: ${(error as Error).message.split('\n')[0]}`);
    }
  },
};
