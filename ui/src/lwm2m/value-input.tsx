import type { ResourceDefinition } from './lwm2m-types';

/** What a typed field holds, as the API takes it for a write (numbers as numbers, booleans as booleans). */
export function typedValue(type: ResourceDefinition['type'], text: string): string | number | boolean {
  switch (type) {
    case 'integer':
    case 'unsigned':
    case 'float':
      return text.trim() === '' ? Number.NaN : Number(text);
    case 'boolean':
      return text === 'true';
    default:
      return text;
  }
}

const PLACEHOLDERS: Partial<Record<ResourceDefinition['type'], string>> = {
  time: '2026-03-02T14:05:09Z',
  opaque: 'base64',
  objlnk: '3:0',
  corelnk: '</3/0>',
};

/** A field for a value of the resource's type: a number field, true/false, or text with a hint of the format. */
export function ValueInput({ id, type, value, onChange }: { readonly id: string; readonly type: ResourceDefinition['type']; readonly value: string; readonly onChange: (text: string) => void }) {
  if (type === 'boolean') {
    return (
      <select id={id} value={value === '' ? 'false' : value} onChange={(event) => onChange(event.target.value)}>
        <option value="true">true</option>
        <option value="false">false</option>
      </select>
    );
  }
  if (type === 'integer' || type === 'unsigned' || type === 'float') {
    return <input id={id} type="number" step={type === 'float' ? 'any' : 1} min={type === 'unsigned' ? 0 : undefined} value={value} onChange={(event) => onChange(event.target.value)} required />;
  }
  return <input id={id} value={value} onChange={(event) => onChange(event.target.value)} placeholder={PLACEHOLDERS[type]} spellCheck={false} />;
}
