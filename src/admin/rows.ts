/** A record as the overview holds it: the API's record, keyed by its uuid. */
export type Row = Record<string, unknown> & { uuid: string };
