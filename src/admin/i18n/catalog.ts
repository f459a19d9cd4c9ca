/** A language of the admin: its texts keyed by their English wording. */
export type Catalog = Record<string, string>;
