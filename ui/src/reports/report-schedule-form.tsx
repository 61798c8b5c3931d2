import { useId, useState, type FormEvent } from 'react';
import { call } from '../api/client';
import type { paths } from '../api/schema';
import { useAction } from '../api/use-action';
import { DateTime } from '../components/date-time';
import { ErrorMessage } from '../components/error-message';
import { formText } from '../components/form-text';
import { InputField } from '../components/input-field';
import { useSession } from '../session/session';
import type { Report, ReportPatch } from './report-types';

type Schedule = NonNullable<ReportPatch['schedule']>;
type Mailed = paths['/reports/{ref}/mail']['post']['responses'][200]['content']['application/json'];

const WEEKDAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];

/** "a@x, b@y" or one per line → the addresses. */
function addresses(text: string): string[] {
  return text
    .split(/[\s,;]+/)
    .map((address) => address.trim())
    .filter((address) => address !== '');
}

/**
 * The report's e-mail schedule (`PATCH /reports/{ref}` with `schedule`, null stops it) and "mail now" (`POST
 * /reports/{ref}/mail`). Times are UTC, as the service keeps them.
 */
export function ReportScheduleForm({ report, onSaved }: { readonly report: Report; readonly onSaved: (report: Report) => void }) {
  const id = useId();
  const { api } = useSession();
  const save = useAction();
  const mail = useAction();
  const [every, setEvery] = useState<string>(report.schedule?.every ?? '');
  const [mailed, setMailed] = useState<Mailed | undefined>(undefined);

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const schedule: Schedule | null =
      every === ''
        ? null
        : {
            every: every as Schedule['every'],
            at: formText(form, 'at') || '00:00',
            ...(every === 'week' ? { weekday: Number(formText(form, 'weekday')) } : {}),
            recipients: addresses(formText(form, 'recipients')),
            bom: form.get('bom') === 'on',
          };
    const saved = await save.run(() => call(api.PATCH('/reports/{ref}', { params: { path: { ref: report.id } }, body: { schedule } })));
    if (saved !== undefined) onSaved(saved);
  };

  const mailNow = async () => {
    setMailed(undefined);
    const sent = await mail.run(() => call(api.POST('/reports/{ref}/mail', { params: { path: { ref: report.id } }, body: {} })));
    if (sent !== undefined) setMailed(sent);
  };

  return (
    <form className="card form rep-form" onSubmit={(event) => void submit(event)} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>E-mail schedule</h2>
      <label htmlFor={`${id}-every`}>Mail the report every</label>
      <select id={`${id}-every`} name="every" value={every} onChange={(event) => setEvery(event.target.value)}>
        <option value="">never</option>
        <option value="hour">hour</option>
        <option value="day">day</option>
        <option value="week">week</option>
        <option value="month">month</option>
      </select>
      {every === '' ? null : (
        <>
          <InputField
            id={`${id}-at`}
            label="At (UTC)"
            name="at"
            type="time"
            defaultValue={report.schedule?.at ?? '00:00'}
            hint={every === 'hour' ? 'Only the minutes count: the hour ends then.' : every === 'month' ? 'On the 1st of every month.' : 'When the period ends.'}
          />
          {every === 'week' ? (
            <>
              <label htmlFor={`${id}-weekday`}>On</label>
              <select id={`${id}-weekday`} name="weekday" defaultValue={String(report.schedule?.weekday ?? 1)}>
                {WEEKDAYS.map((day, index) => (
                  <option key={day} value={index + 1}>
                    {day}
                  </option>
                ))}
              </select>
            </>
          ) : null}
          <label htmlFor={`${id}-recipients`}>Recipients</label>
          <textarea
            id={`${id}-recipients`}
            name="recipients"
            rows={2}
            required
            spellCheck={false}
            defaultValue={report.schedule?.recipients.join(', ') ?? ''}
            aria-describedby={`${id}-recipients-hint`}
          />
          <p id={`${id}-recipients-hint`} className="muted field-hint">
            Up to 20 addresses, separated by commas. Each mail carries the period’s entries as a CSV attachment.
          </p>
          <label className="rep-checkbox">
            <input type="checkbox" name="bom" defaultChecked={report.schedule?.bom ?? false} /> UTF-8 BOM (for spreadsheet programs)
          </label>
        </>
      )}
      {report.schedule ? (
        <p className="muted">
          Next mail <DateTime value={report.nextSendAt ?? undefined} />
          {report.lastSentAt ? (
            <>
              ; last sent <DateTime value={report.lastSentAt} />
            </>
          ) : null}
          .
        </p>
      ) : null}
      <ErrorMessage message={save.error ?? mail.error} />
      {mailed === undefined ? null : (
        <p className="notice" role="status">
          Mailed {mailed.rows} {mailed.rows === 1 ? 'entry' : 'entries'} to {mailed.recipients.join(', ')}
          {mailed.truncated ? ' (cut at 10 MiB)' : ''}.
        </p>
      )}
      <div className="rep-button-row">
        <button type="submit" className="button" disabled={save.busy}>
          {save.busy ? 'Saving…' : 'Save schedule'}
        </button>
        {report.schedule ? (
          <button type="button" className="button button-quiet" disabled={mail.busy} onClick={() => void mailNow()}>
            {mail.busy ? 'Mailing…' : 'Mail the last period now'}
          </button>
        ) : null}
      </div>
    </form>
  );
}
