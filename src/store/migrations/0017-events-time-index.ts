import type { Kysely, Migration } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * `events_time` goes: retention now finds the old events as the lowest seqs (events are numbered in the
 * order they were accepted), and every history search is by account first. One b-tree fewer written for
 * every event accepted.
 */
export function eventsTimeIndex(_dialect: DialectName): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema.dropIndex('events_time').execute();
    },
  };
}
