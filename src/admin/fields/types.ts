import type { FieldView } from "../state";

/** What every field component gets: its value, a setter, and the error the server gave it. */
export type FieldProps = { id: string; name: string; field: FieldView; value: unknown; onChange: (v: unknown) => void; readOnly: boolean; error?: string };
