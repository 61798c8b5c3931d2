/** The installation's one licence record (migration 0038), written once licensing is first switched on. */
export interface LicenceRecord {
  /** The installed licence text as given (`payload.signature`), or null before one is installed. */
  readonly licence: string | null;
  /** When the grace period began (epoch ms): the first start with licensing on. Never moved. */
  readonly graceStartedAt: number;
  readonly updatedAt: number;
}

export interface LicenceStore {
  /** The record, or undefined before licensing was first switched on. */
  read(): Promise<LicenceRecord | undefined>;
  /** Makes the record with grace starting `now` unless there is one (a restart never moves it); returns it as stored. */
  startGrace(now: number): Promise<LicenceRecord>;
  /** Stores a verified licence text in place of the one before. */
  install(text: string, now: number): Promise<void>;
}

/** In-process default (embedders, unit tests): the record lives as long as the object. */
export class MemoryLicenceStore implements LicenceStore {
  #record: LicenceRecord | undefined;

  async read(): Promise<LicenceRecord | undefined> {
    return this.#record;
  }

  async startGrace(now: number): Promise<LicenceRecord> {
    return (this.#record ??= { licence: null, graceStartedAt: now, updatedAt: now });
  }

  async install(text: string, now: number): Promise<void> {
    this.#record = { licence: text, graceStartedAt: this.#record?.graceStartedAt ?? now, updatedAt: now };
  }
}
