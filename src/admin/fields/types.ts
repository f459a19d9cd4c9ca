import type { FieldView, ResourceView } from "../state";

/**
 * What every field component gets (the seed's convention: the field's attributes, its key, title,
 * value and model): `name` is the key, `field.label` the title, `value` the current value, and
 * `model` the whole record, so that a slug sees its sources and a location its longitude field.
 */
export type FieldProps = {
  id: string;
  name: string;
  field: FieldView;
  value: unknown;
  onChange: (v: unknown) => void;
  readOnly: boolean;
  error?: string;
  def: ResourceView;
  model: Record<string, unknown>;
  /** Sets another top-level field of the record (a location's longitude). */
  setField: (name: string, v: unknown) => void;
  /** The record's uuid, null while new. */
  uuid: string | null;
  /** The language being edited, for i18n fields. */
  language?: string;
  /** Where the value sits in the record (`sections[1].n`): the key of the server's 422 errors. */
  path: string;
  errors: Record<string, string>;
  /**
   * The name of the editor's control when no `<label for>` names it: one language of a translated
   * field ("Title (de)"), one entry of a list ("Tags 2"). Composite editors name their group with it.
   */
  label?: string;
};
