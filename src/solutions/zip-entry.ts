// One file out of a zip archive (APPNOTE.TXT 4.3): enough to read a template's `template.json` without a
// dependency. Stored and deflated entries only; no ZIP64, no encryption.
import { crc32, inflateRawSync } from 'node:zlib';

const END_OF_DIRECTORY = 0x06054b50;
const DIRECTORY_ENTRY = 0x02014b50;
const LOCAL_HEADER = 0x04034b50;
/** APPNOTE 4.3.16: the end record is 22 bytes plus a comment of up to 65,535. */
const END_SEARCH = 22 + 0xffff;

export class ZipError extends Error {}

/** The bytes of the entry named `name` (any folder), or undefined when the archive has none; ZipError when it is not a zip we read. */
export function readZipEntry(archive: Buffer, name: string, maxBytes: number): Buffer | undefined {
  const end = findEnd(archive);
  const count = archive.readUInt16LE(end + 10);
  let at = archive.readUInt32LE(end + 16);
  for (let i = 0; i < count; i++) {
    if (at + 46 > archive.length || archive.readUInt32LE(at) !== DIRECTORY_ENTRY) throw new ZipError('a damaged central directory');
    const flags = archive.readUInt16LE(at + 8);
    const method = archive.readUInt16LE(at + 10);
    const crc = archive.readUInt32LE(at + 16);
    const packed = archive.readUInt32LE(at + 20);
    const size = archive.readUInt32LE(at + 24);
    const nameLength = archive.readUInt16LE(at + 28);
    const skip = nameLength + archive.readUInt16LE(at + 30) + archive.readUInt16LE(at + 32);
    const local = archive.readUInt32LE(at + 42);
    const entryName = archive.toString('utf8', at + 46, at + 46 + nameLength);
    at += 46 + skip;
    if (entryName !== name && !entryName.endsWith(`/${name}`)) continue;
    if (flags & 1) throw new ZipError(`${entryName} is encrypted`);
    if (size > maxBytes) throw new ZipError(`${entryName} is larger than ${maxBytes} bytes`);
    if (local + 30 > archive.length || archive.readUInt32LE(local) !== LOCAL_HEADER) throw new ZipError('a damaged local header');
    const start = local + 30 + archive.readUInt16LE(local + 26) + archive.readUInt16LE(local + 28);
    const data = archive.subarray(start, start + packed);
    let content: Buffer;
    if (method === 0) content = Buffer.from(data);
    else if (method === 8) content = inflateRawSync(data, { maxOutputLength: Math.max(size, 1) });
    else throw new ZipError(`${entryName} is compressed with method ${method} (only stored and deflate are read)`);
    if (content.length !== size || crc32(content) !== crc) throw new ZipError(`${entryName} does not match its checksum`);
    return content;
  }
  return undefined;
}

function findEnd(archive: Buffer): number {
  for (let at = archive.length - 22; at >= Math.max(0, archive.length - END_SEARCH); at--) {
    if (archive.readUInt32LE(at) === END_OF_DIRECTORY) return at;
  }
  throw new ZipError('not a zip archive');
}
