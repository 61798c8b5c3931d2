import { useCallback, useId, useState, type FormEvent } from 'react';
import { call, messageOf } from '../api/client';
import { useResource } from '../api/use-resource';
import { ErrorMessage } from '../components/error-message';
import { formText } from '../components/form-text';
import { href } from '../router/hash-location';
import { useSession } from '../session/session';
import { formatBytes, splitTags } from '../files/file-api';
import type { FotaJob, FotaJobWrite } from './fota-types';

/** How many files and services the form offers (the API's largest page). */
const LISTED = 1000;

type Target = 'selection' | 'list';
type Mode = NonNullable<FotaJobWrite['mode']>;
type Protocol = NonNullable<FotaJobWrite['protocol']>;

/** "a, b\nk.c" → ["a", "b", "k.c"]: endpoint ids or `k.<key>`s, one a line or separated by commas or spaces. */
function splitEndpoints(text: string): string[] {
  return text.split(/[\s,]+/).filter((item) => item !== '');
}

/** A whole number from a field, undefined when it is empty. */
function optionalNumber(form: FormData, name: string): number | undefined {
  const text = formText(form, name).trim();
  return text === '' ? undefined : Number(text);
}

/** The body of `POST /fota/jobs` from the form: the API checks it and its message is shown. */
function jobBody(form: FormData, target: Target, mode: Mode): FotaJobWrite {
  const protocol = formText(form, 'protocol');
  const selection: Partial<FotaJobWrite> =
    target === 'list'
      ? { endpoints: splitEndpoints(formText(form, 'endpoints')) }
      : {
          ...(splitTags(formText(form, 'tags')).length > 0 ? { tags: splitTags(formText(form, 'tags')) } : {}),
          ...(formText(form, 'serviceId') === '' ? {} : { serviceId: formText(form, 'serviceId') }),
          ...(formText(form, 'keyPrefix').trim() === '' ? {} : { keyPrefix: formText(form, 'keyPrefix').trim() }),
        };
  const pull = mode !== 'push';
  const rate = optionalNumber(form, 'ratePerMinute');
  return {
    file: formText(form, 'file'),
    mode,
    ...(pull && protocol !== '' ? { protocol: protocol as Protocol } : {}),
    ...(pull ? { appendFileName: form.get('appendFileName') !== null, includePortInUrl: form.get('includePortInUrl') !== null } : {}),
    timeout: optionalNumber(form, 'timeout'),
    concurrency: optionalNumber(form, 'concurrency'),
    ratePerMinute: rate ?? null,
    ...selection,
  };
}

/** Starts a campaign: a repository file, the endpoints (by tags / service / key prefix, or a list), the mode and its options. */
export function JobForm({ onStarted }: { readonly onStarted: (job: FotaJob) => void }) {
  const id = useId();
  const { api } = useSession();
  const load = useCallback(async () => {
    const [files, services] = await Promise.all([
      call(api.GET('/file', { params: { query: { limit: LISTED } } })),
      call(api.GET('/services', { params: { query: { limit: LISTED } } })),
    ]);
    return { files: files.items, services: services.items.filter((service) => service.type === 'lwm2m') };
  }, [api]);
  const choices = useResource(load);
  const [target, setTarget] = useState<Target>('selection');
  const [mode, setMode] = useState<Mode>('auto');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setBusy(true);
    setError(undefined);
    try {
      onStarted(await call(api.POST('/fota/jobs', { body: jobBody(form, target, mode) })));
    } catch (failure) {
      setError(messageOf(failure));
      setBusy(false);
    }
  };

  const files = choices.data?.files;
  const pull = mode !== 'push';
  return (
    <form className="card form job-form" onSubmit={(event) => void submit(event)} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>New campaign</h2>
      <ErrorMessage message={choices.error} />
      <label htmlFor={`${id}-file`}>Firmware file</label>
      <select id={`${id}-file`} name="file" required disabled={files === undefined || files.length === 0}>
        {files?.map((file) => (
          <option key={file.name} value={file.name}>
            {`${file.name}${file.version === null ? '' : ` (${file.version})`}, ${formatBytes(file.size)}`}
          </option>
        ))}
      </select>
      {files?.length === 0 ? (
        <p className="muted field-hint">
          No files yet: <a href={href('/files')}>upload the image</a> first.
        </p>
      ) : null}

      <fieldset className="choice">
        <legend>Devices</legend>
        <label>
          <input type="radio" name="target" value="selection" checked={target === 'selection'} onChange={() => setTarget('selection')} /> By tags, service or key
        </label>
        <label>
          <input type="radio" name="target" value="list" checked={target === 'list'} onChange={() => setTarget('list')} /> A list of endpoints
        </label>
      </fieldset>
      {target === 'selection' ? (
        <>
          <label htmlFor={`${id}-tags`}>Tags</label>
          <input id={`${id}-tags`} name="tags" spellCheck={false} placeholder="site:berlin, model:x2" aria-describedby={`${id}-tags-hint`} />
          <p id={`${id}-tags-hint`} className="muted field-hint">
            Separated by commas; an endpoint needs every one.
          </p>
          <label htmlFor={`${id}-service`}>Service</label>
          <select id={`${id}-service`} name="serviceId">
            <option value="">Any LwM2M service</option>
            {choices.data?.services.map((service) => (
              <option key={service.id} value={service.id}>
                {service.name}
              </option>
            ))}
          </select>
          <label htmlFor={`${id}-prefix`}>Key starts with</label>
          <input id={`${id}-prefix`} name="keyPrefix" spellCheck={false} />
        </>
      ) : (
        <>
          <label htmlFor={`${id}-endpoints`}>Endpoints</label>
          <textarea id={`${id}-endpoints`} name="endpoints" rows={3} spellCheck={false} className="mono" required aria-describedby={`${id}-endpoints-hint`} />
          <p id={`${id}-endpoints-hint`} className="muted field-hint">
            Ids or <span className="mono">k.&lt;key&gt;</span>, one a line or separated by commas.
          </p>
        </>
      )}

      <label htmlFor={`${id}-mode`}>Mode</label>
      <select id={`${id}-mode`} name="mode" value={mode} onChange={(event) => setMode(event.target.value as Mode)} aria-describedby={`${id}-mode-hint`}>
        <option value="auto">auto</option>
        <option value="push">push</option>
        <option value="pull">pull</option>
      </select>
      <p id={`${id}-mode-hint`} className="muted field-hint">
        Push writes the package block-wise; pull has the device download a link (it needs the service’s public host,{' '}
        <span className="mono">IOTBRIDGE_PUBLIC_HOST</span>); auto goes by each device’s Delivery Method.
      </p>
      {pull ? (
        <>
          <label htmlFor={`${id}-protocol`}>Download protocol</label>
          <select id={`${id}-protocol`} name="protocol" defaultValue="" aria-describedby={`${id}-protocol-hint`}>
            <option value="">default</option>
            <option value="coap">CoAP</option>
            <option value="coaps">CoAPS</option>
            <option value="http">HTTP</option>
          </select>
          <p id={`${id}-protocol-hint`} className="muted field-hint">
            Default: CoAPS for devices registered over DTLS, else CoAP.
          </p>
          <label className="check">
            <input type="checkbox" name="appendFileName" /> Append the file name to the URL
          </label>
          <label className="check">
            <input type="checkbox" name="includePortInUrl" /> Write the port even when default
          </label>
        </>
      ) : null}
      <div className="number-fields">
        <div className="field">
          <label htmlFor={`${id}-timeout`}>Step timeout (s)</label>
          <input id={`${id}-timeout`} name="timeout" type="number" min={1} max={604800} defaultValue={600} required />
        </div>
        <div className="field">
          <label htmlFor={`${id}-concurrency`}>Devices at once</label>
          <input id={`${id}-concurrency`} name="concurrency" type="number" min={1} max={10000} defaultValue={10} required />
        </div>
        <div className="field">
          <label htmlFor={`${id}-rate`}>Starts per minute</label>
          <input id={`${id}-rate`} name="ratePerMinute" type="number" min={1} placeholder="no limit" />
        </div>
      </div>
      <ErrorMessage message={error} />
      <button type="submit" className="button" disabled={busy || files === undefined || files.length === 0}>
        {busy ? 'Starting…' : 'Start campaign'}
      </button>
    </form>
  );
}
